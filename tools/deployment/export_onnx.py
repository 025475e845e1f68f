"""Export a hyperframe recognizer (single-stream or fast/slow) to ONNX, with a parity check.

    python tools/deployment/export_onnx.py CONFIG CHECKPOINT --out model.onnx \\
        [--video-size 256 340] [--static-batch --batch 4] \\
        [--input-dtype float32|uint8] [--opset 17] [--verify]

The graph takes raw RGB pixels (0..255) ``[B, K, 3T, H, W]`` per stream (``imgs`` or
``imgs_fast`` / ``imgs_slow``), normalises them as the config's data preprocessor does, and
returns ``scores`` ``[B, num_classes]`` (the test step's ``pred_score``); the batch is dynamic,
or ``--batch`` with ``--static-batch``. K, T, H, W come from the config's test pipeline applied
to frames of ``--video-size``. ``--verify`` compares onnxruntime with PyTorch at batch 1 and 3
(at ``--batch`` with ``--static-batch``; max abs diff <= 1e-4).
See docs/deployment.md.
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional

from mmengine.config import DictAction

from hyperframes_mm.utils import int_argument


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--out', required=True, help='the .onnx file to write')
    parser.add_argument('--video-size', type=int_argument(1), nargs=2, default=(256, 340),
                        metavar=('H', 'W'), help='decoded frame size the test pipeline sees')
    parser.add_argument('--fps', type=float, default=30.0, help='for time-based samplers')
    parser.add_argument('--input-dtype', default='float32', choices=['float32', 'uint8'])
    parser.add_argument('--opset', type=int_argument(1), default=17)
    parser.add_argument('--batch', type=int_argument(1), default=2,
                        help='batch of the example input (of every run, with --static-batch)')
    parser.add_argument('--static-batch', action='store_true', help='fix the batch size')
    parser.add_argument('--verify', action='store_true',
                        help='check onnxruntime against PyTorch (<= 1e-4) at batch 1 and 3')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.analysis.complexity import describe_inputs
    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.deploy.export import check_parity, export_onnx, random_pixels
    from hyperframes_mm.engine import CheckpointRefusedError
    from hyperframes_mm.engine.class_count import head_classes
    from hyperframes_mm.utils import check_output_folder, refuse_overwrite
    try:
        refuse_overwrite({'--out': args.out},
                         {'the config': args.config, 'the checkpoint': args.checkpoint})
        check_output_folder('--out', args.out)
        model = init_recognizer(args.config, args.checkpoint, 'cpu', args.cfg_options,
                                allow_onnx=False)
    except (FileNotFoundError, ValueError, CheckpointRefusedError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    example = example_inputs(model.cfg, tuple(args.video_size), fps=args.fps)
    shapes = ({key: tuple(value.shape) for key, value in example.items()}
              if isinstance(example, dict) else tuple(example.shape))
    # export_onnx writes beside --out and moves the graph there once written and checked
    # (with --verify): a kill, a full disk or a failed check leaves --out as it was
    out = Path(args.out)
    diffs = {}

    def verify(graph: Path) -> None:
        for batch in [args.batch] if args.static_batch else [1, 3]:
            diffs[batch] = check_parity(model, graph, random_pixels(shapes, batch, seed=batch))

    try:
        export_onnx(model, out, random_pixels(shapes, args.batch), args.input_dtype,
                    args.opset, dynamic_batch=not args.static_batch,
                    check=verify if args.verify else None)
    except AssertionError as error:
        print(f'error: {error}: the graph fails the parity check and is not written',
              file=sys.stderr)
        return 1
    except OSError as error:
        print(f'error: --out {out}: {error.strerror or error}', file=sys.stderr)
        return 1
    # the graph's own input shapes: the example's batch of 1 is not the graph's batch
    graph_batch = args.batch if args.static_batch else 'batch'
    inputs = {key: (graph_batch, ) + shape[1:] for key, shape in
              (shapes.items() if isinstance(shapes, dict) else [('imgs', shapes)])}
    # the class count the head scores: a graph that averages clips leaves its width unnamed
    classes = head_classes(model)
    print(f'wrote {out}: inputs {describe_inputs(inputs)} '
          f'({"fixed" if args.static_batch else "dynamic"} batch), {args.input_dtype} pixels '
          f'0..255; output scores [{graph_batch}, {classes or "classes"}]')
    for batch, diff in diffs.items():
        print(f'parity at batch {batch}: max |onnxruntime - pytorch| = {diff:.2e} (<= 1e-4)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
