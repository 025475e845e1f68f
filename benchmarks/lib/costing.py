"""What a model costs, side by side: GFLOPs and parameters (mmengine's count, multiply-adds as
mmaction2's model zoo) and CPU latency with every model of a table timed in interleaved rounds
(so that a change of load on a shared machine hits every row alike); and the machine a timing
was taken on, in one line every benchmark table prints."""
import os
import platform
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple, Union

from .kernels import kernel_label, kernel_setting
from .views import view_options


def side_by_side(configs: Dict[str, object], video_size: Tuple[int, int], per_view: bool = False,
                 repeats: int = 20, warmup: int = 3, progress: bool = False) -> Dict[str, Dict]:
    """``{name: dict(gflops, params_m, latency_ms)}`` of each config, on one torch thread.

    Args:
        configs (dict): name -> config (path or ``Config``), in table order.
        video_size (tuple): decoded frame size the test pipeline sees.
        per_view (bool): count GFLOPs and params on one view (the model zoo's convention,
            :func:`benchmarks.lib.views.view_options`) instead of one whole test sample. Latency
            is always of one test sample (all its clips, batch 1). Defaults to False.
        repeats (int): timed rounds. Defaults to 20.
        warmup (int): untimed rounds. Defaults to 3.
        progress (bool): show a progress bar while timing. Defaults to False.
    """
    import torch
    from mmengine.config import Config
    from hyperframes_mm.analysis.complexity import compare_latency, model_complexity
    torch.set_num_threads(1)
    out = {}
    for name, config in configs.items():
        options = None
        if per_view:
            cfg = config if isinstance(config, Config) else Config.fromfile(str(config))
            options = view_options(cfg)
        count = model_complexity(config, video_size=video_size, cfg_options=options)
        out[name] = dict(gflops=count['flops'] / 1e9, params_m=count['params'] / 1e6)
    latency = compare_latency(configs, repeats=repeats, warmup=warmup, video_size=video_size,
                              progress=progress)
    for name, timing in latency.items():
        out[name]['latency_ms'] = timing['median_ms']
    return out


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path('/proc/cpuinfo')
    if cpuinfo.is_file():
        names = [line.split(':', 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith('model name')]
        cpu = names[0] if names else cpu
    return cpu


def load_average() -> float:
    """The 1-minute load average (NaN where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan')


def machine_line(*extras: str, threads: Union[int, Sequence[int], None] = None,
                 load_at_start: Optional[float] = None) -> str:
    """``Machine: <CPU model>, <n> CPUs, torch <version> with <threads> thread(s), kernels
    <label>, load average <now>; <extras>.``

    The kernels are part of it because ATen, oneDNN, MKL and OpenBLAS pick them per CPU and
    the timings depend on them (:func:`benchmarks.lib.kernels.kernel_label`); the load average
    because the machines are shared.

    Args:
        *extras (str): what else the timing depends on, in words (``'onnxruntime 1.32.0'``,
            ``'device cpu'``, ``'batch 8'``).
        threads (int | Sequence[int], optional): torch intra-op threads of the timed calls,
            several where a table has a row per count. Defaults to torch's current setting.
        load_at_start (float, optional): :func:`load_average` when the timing began.
    """
    import torch
    if threads is None:
        threads = torch.get_num_threads()
    counts = [threads] if isinstance(threads, int) else list(threads)
    load = f'load average {load_average():.2f}' if load_at_start is None else \
        f'load average {load_at_start:.2f} at the start, {load_average():.2f} at the end'
    parts = [cpu_name(), f'{os.cpu_count()} CPUs',
             f'torch {torch.__version__} with {"/".join(map(str, counts))} thread(s)',
             f'kernels {kernel_label(kernel_setting())}', load]
    return f'Machine: {", ".join(parts)}' + (f'; {", ".join(extras)}' if extras else '') + '.'
