"""benchmarks/bench_gpu.py in its ``--tiny`` CPU mode: it runs end to end in a subprocess and
writes under ``$OUT`` a JSON and a markdown report with every row, mode and key, positive
timings, and ratios and targets computed from that run's own numbers. Timings are not judged."""
import json
import math
import os
import subprocess
import sys
import time

import pytest
import torch

from benchmarks import bench_gpu as bench
from benchmarks.lib.rows import Row

from ..conftest import REPO

NAMES = [row.name for row in bench.ROWS]


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory):
    """One ``--tiny`` run, its report read back."""
    root = tmp_path_factory.mktemp('bench_gpu')
    out = root / 'out'
    env = dict(os.environ, OUT=str(out), PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    result = subprocess.run(
        [sys.executable, 'benchmarks/bench_gpu.py', '--tiny', '--data', str(root / 'data')],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f'{result.stdout[-3000:]}\n{result.stderr[-5000:]}'
    report = json.loads((out / 'gpu_bench.json').read_text())
    markdown = (out / 'gpu_bench.md').read_text()
    return report, markdown, result.stdout


def test_every_model_trains_through_the_loader_and_on_the_device(tiny_run):
    report, _, _ = tiny_run
    assert [entry['model'] for entry in report['train']] == NAMES
    for entry in report['train']:
        assert entry['batch'] == 2 and entry['steps'] == 3
        assert entry['clips_per_s'] > 0 and entry['clips_per_s_on_gpu'] > 0
        assert entry['loader_vs_on_gpu'] == pytest.approx(
            entry['clips_per_s'] / entry['clips_per_s_on_gpu'])
        assert 0 <= entry['data_wait_frac'] <= 1
        assert math.isfinite(entry['loss']) and entry['loss'] > 0
        assert math.isfinite(entry['loss_on_gpu']) and entry['loss_on_gpu'] > 0
        # no GPU: no utilisation or memory reading, and nothing invented in their place
        assert entry['gpu_busy_pct'] is None and entry['peak_mem_gib'] is None
        assert entry['config'].startswith('configs/hyperframes/synthetic/')
        assert (REPO / entry['config']).is_file()
    inputs = {entry['model']: entry['input'] for entry in report['train']}
    assert inputs[bench.HYPERFRAME] == '[1, 15, 32, 32]'
    assert inputs[bench.FAST_SLOW] == '[1, 30, 32, 32]'  # both streams in one hyperframe
    assert inputs[bench.TSN] == inputs[bench.TSM] == '[5, 3, 32, 32]'


def test_inference_has_every_mode_and_says_why_one_was_skipped(tiny_run):
    report, _, _ = tiny_run
    batch = report['meta']['infer_batch']
    entries = {(e['model'], e['mode'], e['batch']): e for e in report['inference']}
    assert set(entries) == {(name, mode, size) for name in NAMES for mode in bench.MODES
                            for size in (1, batch)}
    for name in NAMES:
        for size in (1, batch):
            eager = entries[name, 'eager', size]
            assert eager['median_ms'] > 0 and eager['q1_ms'] <= eager['q3_ms']
            assert eager['clips_per_s'] == pytest.approx(size / eager['median_ms'] * 1e3)
            for mode in ('compile', 'cuda_graph'):
                skipped = entries[name, mode, size]
                assert skipped['median_ms'] is None and skipped['note'] == 'skipped: --tiny'


def test_ratios_come_from_the_same_run(tiny_run):
    report, _, _ = tiny_run
    ratios, batch = report['ratios'], report['meta']['infer_batch']
    assert report['reference'] == bench.TSM
    train = {entry['model']: entry for entry in report['train']}
    for field in ('clips_per_s', 'clips_per_s_on_gpu'):
        for name in NAMES:
            assert ratios[f'train_{field}'][name] == pytest.approx(
                train[name][field] / train[bench.TSM][field])
        assert ratios[f'train_{field}'][bench.TSM] == pytest.approx(1.0)
    eager = {(e['model'], e['batch']): e for e in report['inference'] if e['mode'] == 'eager'}
    for name in NAMES:  # eager is the only timed mode in --tiny, so it is the best
        assert ratios['infer_b1_ms'][name] == pytest.approx(
            eager[name, 1]['median_ms'] / eager[bench.TSM, 1]['median_ms'])
        assert ratios['infer_batch_clips_per_s'][name] == pytest.approx(
            eager[name, batch]['clips_per_s'] / eager[bench.TSM, batch]['clips_per_s'])


def test_targets_sit_beside_the_numbers(tiny_run):
    report, _, _ = tiny_run
    targets = report['targets']
    assert len(targets) == 3
    train = targets[0]
    assert train['measured'] == pytest.approx(report['ratios']['train_clips_per_s'][
        bench.HYPERFRAME])
    assert train['reached'] is None  # no GPU reading on the CPU: neither reached nor missed
    eager = {e['model']: e for e in report['inference'] if e['mode'] == 'eager' and
             e['batch'] == 1}
    for target, (name, seed_ms) in zip(targets[1:], ((bench.HYPERFRAME, 3.2),
                                                     (bench.FAST_SLOW, 6.5))):
        assert target['seed_ms'] == seed_ms
        assert target['measured'] == pytest.approx(eager[name]['median_ms'])
        assert target['ratio'] == pytest.approx(target['measured'] / seed_ms)


def test_markdown_shows_every_row_and_ratio(tiny_run):
    report, markdown, stdout = tiny_run
    assert 'not results' in markdown.splitlines()[0]
    assert markdown in stdout  # the table printed is the table written
    for heading in ('## Training', '## Inference', "## The issue's targets"):
        assert heading in markdown
    ratios = report['ratios']
    for name in NAMES:
        line = next(line for line in markdown.splitlines()
                    if line.startswith(f'| {name} |') and 'clips/s' not in line
                    and '[' in line)
        assert f'{ratios["train_clips_per_s"][name]:.2f}x' in line
        assert f'{ratios["train_clips_per_s_on_gpu"][name]:.2f}x' in line
    machine = markdown.splitlines()[2]  # the library's machine line, then the command
    assert machine.startswith('Machine: ') and '; device cpu. Command: `python benchmarks/' \
        'bench_gpu.py --tiny --data ' in machine
    assert report['meta']['machine'] in machine
    assert "the seeds' 3.2 ms (TensorRT FP16, one stream)" in markdown
    assert "the seeds' 6.5 ms (TensorRT FP16, two streams)" in markdown
    assert report['meta']['tiny'] is True and report['meta']['amp'] is None


def test_rows_are_configs_with_the_run_sizes_edited_in(tmp_path):
    args = bench.parse_args(['--tiny', '--size', '24', '--batch', '3', '--workers', '2',
                             '--prefetch-factor', '5', '--short-side', '48'])
    assert all(isinstance(row, Row) and row.edits == () for row in bench.ROWS)
    for row in bench.ROWS:
        cfg = bench.row_config(row._replace(edits=bench.run_edits(args, tmp_path)))
        loader = cfg.train_dataloader
        assert loader.dataset.ann_file == str(tmp_path / 'train.txt')
        assert loader.dataset.data_prefix == dict(video=str(tmp_path))
        steps = {step['type']: step for step in loader.dataset.pipeline}
        assert steps['ConsistentClipAugment']['size'] == 24
        assert (steps['FrameCacheInit']['short_side'], steps['FrameCacheInit']['on_stale']) == (
            48, 'error')
        assert (loader.batch_size, loader.num_workers, loader.prefetch_factor) == (3, 2, 5)
        assert loader.persistent_workers is False
        assert loader.sampler == dict(type='InfiniteSampler', shuffle=True)


def test_a_row_without_the_frame_cache_is_refused(tmp_path):
    config = tmp_path / 'no_cache.py'
    config.write_text(f"_base_ = ['{bench.ROWS[-1].config}']\n"
                      "train_dataloader = dict(dataset=dict(pipeline=[dict(type='DecordInit')]))\n")
    with pytest.raises(ValueError, match=r"no_cache.py: its train pipeline lacks "
                       r"\['ConsistentClipAugment', 'FrameCacheDecode', 'FrameCacheInit'\]"):
        bench.row_config(Row('no cache', config, ''))


def test_compute_ratios_against_tsm():
    train = [dict(model=bench.HYPERFRAME, clips_per_s=300.0, clips_per_s_on_gpu=600.0),
             dict(model=bench.TSM, clips_per_s=100.0, clips_per_s_on_gpu=150.0)]
    infer = [dict(model=name, mode=mode, batch=batch, median_ms=ms,
                  clips_per_s=None if ms is None else batch / ms * 1e3)
             for name, mode, batch, ms in (
                 (bench.HYPERFRAME, 'eager', 1, 4.0), (bench.HYPERFRAME, 'cuda_graph', 1, 2.0),
                 (bench.HYPERFRAME, 'compile', 1, None), (bench.TSM, 'eager', 1, 8.0),
                 (bench.HYPERFRAME, 'eager', 8, 10.0), (bench.TSM, 'eager', 8, 40.0))]
    ratios = bench.compute_ratios(train, infer, 8)
    assert ratios['train_clips_per_s'] == {bench.HYPERFRAME: 3.0, bench.TSM: 1.0}
    assert ratios['train_clips_per_s_on_gpu'][bench.HYPERFRAME] == 4.0
    assert ratios['infer_b1_ms'][bench.HYPERFRAME] == 0.25  # the CUDA graph, its best mode
    assert ratios['infer_batch_clips_per_s'][bench.HYPERFRAME] == 4.0
    targets = bench.compute_targets([dict(train[0], gpu_busy_pct=95.0)] + train[1:], infer,
                                    ratios, 'fp16')
    assert targets[0]['reached'] is True
    assert targets[1]['measured'] == 2.0 and targets[1]['ratio'] == pytest.approx(2.0 / 3.2)
    assert 'cuda_graph' in targets[1]['target']
    targets = bench.compute_targets([dict(train[0], gpu_busy_pct=80.0)] + train[1:], infer,
                                    ratios, 'fp16')
    assert targets[0]['reached'] is False  # 3x, but with the GPU idle a fifth of the time


def test_time_limit_interrupts_and_tells():
    with pytest.raises(TimeoutError, match='the wait took longer'):
        with bench.TimeLimit(0.2, 'the wait') as limit:
            deadline = time.perf_counter() + 5
            while time.perf_counter() < deadline:
                pass
    assert limit.fired
    with bench.TimeLimit(5, 'nothing') as limit:
        pass
    assert not limit.fired


@pytest.mark.parametrize('argv, name', [(['--batch', '0'], '--batch'),
                                        (['--workers', '-1'], '--workers'),
                                        (['--size', '224', '--short-side', '128'], '--short-side'),
                                        (['--compile-timeout', '0'], '--compile-timeout')])
def test_bad_arguments_name_the_flag(argv, name):
    with pytest.raises(ValueError, match=name):
        bench.parse_args(argv)


def test_util_sampler_reads_nothing_on_the_cpu():
    sampler = bench.UtilSampler(torch.device('cpu'))
    with sampler:
        time.sleep(0.05)
    assert sampler.source is None and sampler.mean is None
