"""One training step of HyperResNet-18 with mmcv's plain convs vs PadAwareConv2d, side by side.

At small inputs ResNet's last stage works on 1x1 maps, where a 3x3 conv with padding 1 spends
eight of its nine taps on padding; ``PadAwareConv2d`` (``conv_cfg`` of the 32x32 synthetic
configs) skips them with the same outputs. This times a full step — forward, cross-entropy, backward,
fused AdamW update — of the synthetic recipe's model (T=5, 10 classes, batch 16) at each input
size, both conv types in interleaved rounds (each round runs every row once, rotating the
order), on one thread unless ``--threads``. Prints the median step times and their ratio, checks
the targets (faster at 32x32, no slower where nothing is skipped), writes
``benchmarks/results/train_step.md``.

    OMP_NUM_THREADS=1 python benchmarks/bench_train_step.py [--sizes 32 64 112] [--batch 16]
"""
import argparse
import logging
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import heading, print_and_write

RESULTS = REPO / 'benchmarks' / 'results' / 'train_step.md'
RECIPE = (REPO / 'configs' / 'hyperframes' / 'synthetic' /
          'hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py')
CONV_TYPES = {'mmcv Conv2d': 'Conv', 'PadAwareConv2d': 'PadAwareConv2d'}
#: a size whose last stage still has 1x1 maps must gain at least this much
TARGET_SPEEDUP = 1.3
#: elsewhere the check per conv call must cost no more than this
TARGET_OVERHEAD = 1.05


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--sizes', type=int, nargs='+', default=[32, 64, 112],
                        help='input sides to time at')
    parser.add_argument('--batch', type=int, default=16, help='samples per step')
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--repeats', type=int, default=15, help='timed rounds')
    parser.add_argument('--warmup', type=int, default=3, help='untimed rounds first')
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def last_stage_side(size: int) -> int:
    """ResNet's layer4 side for an input side: stem conv, max pool, three stride-2 stages."""
    for _ in range(5):
        size = (size + 1) // 2
    return size


def make_step(model_cfg, conv_type: str, size: int, batch: int):
    """A no-argument training step of the model with ``conv_type`` convs, on fixed data."""
    from mmaction.registry import MODELS
    torch.manual_seed(0)
    cfg = model_cfg.copy()
    cfg['backbone'] = dict(cfg['backbone'], conv_cfg=dict(type=conv_type))
    model = MODELS.build(cfg).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    frames = 3 * cfg['backbone']['num_frames']
    inputs = torch.randn(batch, frames, size, size)
    labels = torch.arange(batch) % cfg['cls_head']['num_classes']

    def step():
        scores = model.cls_head(model.backbone(inputs), num_segs=1)
        loss = torch.nn.functional.cross_entropy(scores, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def main(argv=None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    from mmengine.config import Config
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    from hyperframes_mm.utils.timing import interleaved_timing
    load_at_start = load_average()
    init_default_scope('mmaction')
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    torch.set_num_threads(args.threads)
    model_cfg = Config.fromfile(str(RECIPE)).model.to_dict()
    steps = {(size, name): make_step(model_cfg, conv_type, size, args.batch)
             for size in args.sizes for name, conv_type in CONV_TYPES.items()}
    times = interleaved_timing(steps, args.repeats, args.warmup, inference=False)
    lines = heading(
        'Training step: plain convs vs PadAwareConv2d',
        f'HyperResNet-18 T=5 with the synthetic recipe\'s head (10 classes), batch {args.batch}, '
        f'forward + cross-entropy + backward + fused AdamW step; median of {args.repeats} '
        f'interleaved rounds after {args.warmup} warm-up.',
        machine_line(threads=args.threads, load_at_start=load_at_start)) + [
        '| input | layer4 maps | mmcv Conv2d (ms) | PadAwareConv2d (ms) | speed-up | target |',
        '|---|---|---:|---:|---:|---|']
    met = True
    for size in args.sizes:
        side = last_stage_side(size)
        plain, aware = (times.median((size, name)) * 1e3 for name in CONV_TYPES)
        speedup = times.ratio((size, 'mmcv Conv2d'), (size, 'PadAwareConv2d'))
        if side == 1:
            target, ok = f'>= {TARGET_SPEEDUP:.2f}x', speedup >= TARGET_SPEEDUP
        else:
            target, ok = f'>= {1 / TARGET_OVERHEAD:.2f}x', speedup >= 1 / TARGET_OVERHEAD
        met &= ok
        lines.append(f'| {size}x{size} | {side}x{side} | {plain:.1f} | {aware:.1f} | '
                     f'{speedup:.2f}x | {target}: {"met" if ok else "NOT met"} |')
    lines += ['', 'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_train_step.py' +
              (f' --sizes {" ".join(map(str, args.sizes))}' if args.sizes != [32, 64, 112] else '')
              + (f' --batch {args.batch}' if args.batch != 16 else '') + '`']
    print_and_write('\n'.join(lines) + '\n', args.out)
    return 0 if met else 1


if __name__ == '__main__':
    sys.exit(main())
