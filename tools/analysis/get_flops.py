"""FLOPs and parameters of a hyperframe config's model (single-stream or fast/slow).

    python tools/analysis/get_flops.py CONFIG [--video-size 256 340] [--fps 30] [--table]

Counts mmengine's complexity analysis (multiply-adds, as mmaction2's model zoo) of the whole
test-time model (normalisation, backbone(s), head) on one sample as the config's test pipeline
makes it from frames of ``--video-size``: ``[1, K, 3T, H, W]`` per stream.
"""
import argparse
import sys
from typing import List, Optional

from mmengine.config import DictAction

from hyperframes_mm.utils import int_argument


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('--video-size', type=int_argument(1), nargs=2, default=(256, 340),
                        metavar=('H', 'W'), help='decoded frame size the test pipeline sees')
    parser.add_argument('--fps', type=float, default=30.0, help='for time-based samplers')
    parser.add_argument('--table', action='store_true', help='print the per-module table')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.analysis.complexity import describe_inputs, model_complexity
    info = model_complexity(args.config, tuple(args.video_size), args.fps, args.cfg_options,
                            show_table=args.table)
    if args.table:
        print(info['table'])
    shapes = describe_inputs(info['inputs'])
    print(f'inputs: {shapes}\n'
          f'GFLOPs: {info["flops"] / 1e9:.4f} per sample ({info["clips"]} clips: '
          f'{info["flops"] / 1e9 / info["clips"]:.4f} per clip)\n'
          f'parameters: {info["params"] / 1e6:.3f} M')
    return 0


if __name__ == '__main__':
    sys.exit(main())
