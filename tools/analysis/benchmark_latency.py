"""Latency of a config's model on CPU or CUDA (whole test-time model, random pixels).

    python tools/analysis/benchmark_latency.py CONFIG [CHECKPOINT] [--device cuda] \\
        [--batch 1] [--repeats 30] [--warmup 5] [--threads 2] [--video-size 256 340]

Times the normalisation, backbone(s), head and clip averaging on ``--batch`` samples shaped
by the config's test pipeline (``[B, K, 3T, H, W]`` per stream); prints the median and the
quartiles per call and the median per sample. Same code on CUDA and CPU (CUDA timings
synchronise). For side-by-side comparisons use the scripts in benchmarks/.
"""
import argparse
import sys
from typing import List, Optional

from mmengine.config import DictAction

from hyperframes_mm.utils import int_argument


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint', nargs='?', help='weights (latency does not need them)')
    parser.add_argument('--device', help='cpu, cuda, cuda:1... (default: cuda if present)')
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--repeats', type=int, default=30)
    parser.add_argument('--warmup', type=int, default=5)
    parser.add_argument('--threads', type=int, help='torch intra-op threads on the CPU')
    parser.add_argument('--video-size', type=int_argument(1), nargs=2, default=(256, 340),
                        metavar=('H', 'W'))
    parser.add_argument('--fps', type=float, default=30.0)
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.analysis.complexity import describe_inputs, measure_latency
    if args.threads:
        torch.set_num_threads(args.threads)
    result = measure_latency(args.config, args.checkpoint, args.device, args.batch,
                             args.repeats, args.warmup, tuple(args.video_size), args.fps,
                             args.cfg_options)
    shapes = describe_inputs(result['inputs'])
    print(f'{result["device"]} ({torch.get_num_threads()} threads), inputs {shapes}: median '
          f'{result["median_ms"]:.2f} ms per call (quartiles {result["q1_ms"]:.2f}-'
          f'{result["q3_ms"]:.2f}), {result["per_sample_ms"]:.2f} ms per sample, '
          f'{args.repeats} calls after {args.warmup} warm-up')
    return 0


if __name__ == '__main__':
    sys.exit(main())
