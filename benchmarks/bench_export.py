"""PyTorch vs onnxruntime CPU latency of an exported hyperframe model, side by side in one run.

Exports the whole test-time model (normalisation, HyperResNet-18 T=5, a 400-class TSN head)
with ``hyperframes_mm.deploy.export_onnx`` and times, in interleaved rounds (each round calls
both runtimes once, alternating which goes first), PyTorch (``inference_mode``) and an
onnxruntime CPU session (not spinning: ``onnx_session(spin=False)``) on the same pixels at each
thread count (1 and 2 by default). Prints the
median latencies, their ratios and the target (onnxruntime <= PyTorch), checks parity, writes
``benchmarks/results/export.md``.

    python benchmarks/bench_export.py                       # HyperResNet-18 T=5, 224 px
    python benchmarks/bench_export.py --config CONFIG [--checkpoint CKPT] --batch 4
"""
import argparse
import logging
import sys
import tempfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import heading, markdown_table, print_and_write

RESULTS = REPO / 'benchmarks' / 'results' / 'export.md'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--config', help='a model config (default: HyperResNet-18 T=5, 224 px, '
                        '400 classes, built here)')
    parser.add_argument('--checkpoint', help='its weights (latency does not depend on them)')
    parser.add_argument('--size', type=int, default=224, help='input side without --config')
    parser.add_argument('--frames', type=int, default=5, help='T without --config')
    parser.add_argument('--batch', type=int, default=1, help='samples per call')
    parser.add_argument('--threads', type=int, nargs='+', default=[1, 2],
                        help='intra-op thread counts to compare at (both runtimes)')
    parser.add_argument('--repeats', type=int, default=30, help='timed rounds')
    parser.add_argument('--warmup', type=int, default=3, help='untimed rounds first')
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def default_config(size: int, frames: int):
    from mmengine.config import Config
    return Config(dict(
        default_scope='mmaction',
        model=dict(type='Recognizer2D',
                   backbone=dict(type='HyperResNet', depth=18, num_frames=frames),
                   cls_head=dict(type='TSNHead', num_classes=400, in_channels=512,
                                 average_clips='prob'),
                   data_preprocessor=dict(type='HyperframeDataPreprocessor',
                                          mean=[123.675, 116.28, 103.53],
                                          std=[58.395, 57.12, 57.375])),
        test_pipeline=[dict(type='HyperframeSampleFrames', num_frames=frames, interval=2,
                            test_mode=True),
                       dict(type='Resize', scale=(size, size), keep_ratio=False),
                       dict(type='HyperframeStack'), dict(type='PackActionInputs')]))


def main(argv=None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope

    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.deploy.export import (ExportWrapper, as_tuple, check_parity, export_onnx,
                                            onnx_session, random_pixels, run_onnx)
    from hyperframes_mm.utils.timing import interleaved_timing
    load_at_start = load_average()
    init_default_scope('mmaction')
    # Random initialisation logs every layer at INFO; the numbers are what matters here.
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    config = args.config or default_config(args.size, args.frames)
    name = Path(args.config).stem if args.config else \
        f'HyperResNet-18 T={args.frames} {args.size}x{args.size}, 400 classes'
    model = init_recognizer(config, args.checkpoint, 'cpu')
    sample = example_inputs(model.cfg)
    shapes = ({k: tuple(v.shape) for k, v in sample.items()} if isinstance(sample, dict)
              else tuple(sample.shape))
    pixels = random_pixels(shapes, args.batch)
    import onnxruntime
    wrapper = ExportWrapper(model).eval()
    tensors = as_tuple(model, pixels)
    with tempfile.TemporaryDirectory() as folder:
        path = export_onnx(model, Path(folder) / 'model.onnx', pixels)
        parity = check_parity(model, path, pixels)
        # no spinning pool threads: they would hold the cores into the next timed call
        sessions = {threads: onnx_session(path, threads=threads, spin=False)
                    for threads in args.threads}
        runners = {}
        for threads in args.threads:
            runners['pytorch', threads] = lambda: wrapper(*tensors)
            runners['onnxruntime', threads] = (
                lambda session=sessions[threads]: run_onnx(session, model, pixels))
        # the thread count is set outside the timed call; a key is (runtime, threads)
        times = interleaved_timing(runners, args.repeats, args.warmup,
                                   before=lambda key, _: torch.set_num_threads(key[1]))
    machine = machine_line(f'onnxruntime {onnxruntime.__version__}', threads=args.threads,
                           load_at_start=load_at_start)
    lines = heading(f'Export: PyTorch vs onnxruntime on the CPU, {name}',
                    f'Batch {args.batch}, input {shapes} float32 pixels; median of '
                    f'{args.repeats} interleaved rounds (every runtime and thread count once '
                    f'per round, rotating order) after {args.warmup} warm-up; onnxruntime\'s '
                    'pool threads not spinning after a run (they would hold the cores into the '
                    'next call, PyTorch\'s).', machine)
    quartiles = {key: times.quartiles(key) for key in runners}
    lines += markdown_table(('runtime', 'threads', 'median ms', 'IQR ms'), 'lrrr', [
        (key[0], str(key[1]), f'{times.median(key) * 1e3:.1f}',
         f'{quartiles[key][0] * 1e3:.1f}-{quartiles[key][1] * 1e3:.1f}') for key in runners])
    ratios = {threads: times.ratio(('onnxruntime', threads), ('pytorch', threads))
              for threads in args.threads}
    lines += [''] + markdown_table(
        ('threads', 'onnxruntime / PyTorch', 'target <= 1.00'), 'rrl',
        [(str(threads), f'{ratio:.2f}x', 'met' if ratio <= 1.0 else 'NOT met')
         for threads, ratio in ratios.items()])
    lines += ['', f'Parity: max |onnxruntime - PyTorch test step| = {parity:.1e} (<= 1e-4)', '',
              'Reproduce: `python benchmarks/bench_export.py' +
              ''.join(f' {flag} {value}' for flag, value in (
                  ('--config', args.config), ('--batch', args.batch if args.batch != 1 else None))
                  if value) + '`']
    text = '\n'.join(lines) + '\n'
    print_and_write(text, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
