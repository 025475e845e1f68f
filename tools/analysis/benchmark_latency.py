"""Latency of a config's model on CPU or CUDA (whole test-time model, random pixels).

    python tools/analysis/benchmark_latency.py CONFIG [CHECKPOINT] [--device cuda] \\
        [--batch 1] [--repeats 30] [--warmup 5] [--threads 2] [--video-size 256 340]
    # an exported graph (float or int8, tools/deployment/), in onnxruntime on the CPU
    python tools/analysis/benchmark_latency.py CONFIG model_int8.onnx --threads 2

Times the normalisation, backbone(s), head and clip averaging on ``--batch`` samples shaped
by the config's test pipeline (``[B, K, 3T, H, W]`` per stream); prints the median and the
quartiles per call and the median per sample. Same code on CUDA and CPU (CUDA timings
synchronise). An ``.onnx`` CHECKPOINT is timed as deployment runs it (the graph's scores of the
uint8 samples the test pipeline packs, ``--threads`` onnxruntime threads). For side-by-side
comparisons use the scripts in benchmarks/.
"""
import argparse
import sys
from typing import List, Optional

from mmengine.config import DictAction

from hyperframes_mm.utils import int_argument


def device_argument(text: str) -> str:
    """An ``argparse`` ``type`` for ``--device``: a device this machine has, so that a missing
    GPU is a usage error naming the option rather than a traceback from moving the model."""
    import torch
    try:
        device = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not a device (cpu, cuda, cuda:1...)') from None
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f'{text}: no CUDA device is visible (use cpu)')
    if device.type == 'cuda' and (device.index or 0) >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f'{text}: only {torch.cuda.device_count()} CUDA device(s) are visible')
    return text


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint', nargs='?',
                        help='weights (latency does not need them), or an exported .onnx graph')
    parser.add_argument('--device', type=device_argument,
                        help='cpu, cuda, cuda:1... (default: cuda if present)')
    parser.add_argument('--batch', type=int_argument(1), default=1)
    parser.add_argument('--repeats', type=int_argument(1), default=30)
    parser.add_argument('--warmup', type=int_argument(0), default=5)
    parser.add_argument('--threads', type=int_argument(1),
                        help='intra-op threads on the CPU (torch, or onnxruntime for a graph)')
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
    from hyperframes_mm.engine import CheckpointRefusedError
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        result = measure_latency(args.config, args.checkpoint, args.device, args.batch,
                                 args.repeats, args.warmup, tuple(args.video_size), args.fps,
                                 args.cfg_options)
    except (FileNotFoundError, ValueError, CheckpointRefusedError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    shapes = describe_inputs(result['inputs'])
    print(f'{result["runtime"]} on {result["device"]} ({torch.get_num_threads()} threads), '
          f'inputs {shapes}: median {result["median_ms"]:.2f} ms per call (quartiles '
          f'{result["q1_ms"]:.2f}-{result["q3_ms"]:.2f}), {result["per_sample_ms"]:.2f} ms per '
          f'sample, {args.repeats} calls after {args.warmup} warm-up')
    return 0


if __name__ == '__main__':
    sys.exit(main())
