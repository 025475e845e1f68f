"""benchmarks/lib/costing.py: the machine line every micro-benchmark table prints."""
import torch

from benchmarks.lib import costing
from benchmarks.lib.kernels import KERNEL_VARIABLES


def _fixed_machine(monkeypatch, load: float) -> str:
    """Fix what the line reads of this machine; the line's start, ``{}`` for the threads."""
    monkeypatch.setattr(costing, 'cpu_name', lambda: 'Test CPU 9000')
    monkeypatch.setattr(costing.os, 'cpu_count', lambda: 16)
    monkeypatch.setattr(costing, 'load_average', lambda: load)
    for name in KERNEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', 'AVX2')
    return (f'Machine: Test CPU 9000, 16 CPUs, torch {torch.__version__} with {{}} thread(s), '
            f'kernels {torch.backends.cpu.get_cpu_capability()} (ONEDNN_MAX_CPU_ISA=AVX2), ')


def test_the_line_names_cpu_torch_threads_kernels_load_and_the_extras(monkeypatch):
    head = _fixed_machine(monkeypatch, 2.5)
    line = costing.machine_line('onnxruntime 1.32.0', 'batch 4', threads=[1, 2],
                                load_at_start=1.25)
    assert line == (head.format('1/2') + 'load average 1.25 at the start, 2.50 at the end; '
                    'onnxruntime 1.32.0, batch 4.')


def test_without_extras_it_reports_torch_threads_and_the_load_now(monkeypatch):
    head = _fixed_machine(monkeypatch, 0.5)
    threads = torch.get_num_threads()
    assert costing.machine_line() == head.format(threads) + 'load average 0.50.'
    assert costing.machine_line(threads=3) == head.format(3) + 'load average 0.50.'


def test_a_report_heading_is_the_title_then_each_paragraph_and_a_blank_line():
    from benchmarks.lib.tables import heading
    assert heading('Speed', 'Batch 1.', 'Machine: x.') == [
        '# Speed', '', 'Batch 1.', '', 'Machine: x.', '']
    assert heading('Speed') == ['# Speed', '']
