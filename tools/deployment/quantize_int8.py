"""Int8 model of a trained recognizer for CPUs: export, static quantisation calibrated on
training clips, and a parity report on the test list.

    python tools/deployment/quantize_int8.py CONFIG CHECKPOINT --out model_int8.onnx
        [--calib-clips 64] [--max-test N] [--format QDQ|QOperator] [--exclude NODE ...]
        [--input-dtype uint8|float32]

Writes ``--out`` (the int8 graph), the float graph beside it (``<out>.float.onnx``) and the
report (``<out>.json``): operators kept in float, top-1 of the float and int8 models on the
config's test list (``--max-test`` clips spread over it) and how often their top-1 agree. The
calibration clips are spread over the config's training list and go through its test pipeline.
Either ``.onnx`` runs where a checkpoint does: ``init_recognizer(config, 'model_int8.onnx')``,
``tools/stream_infer.py CONFIG model_int8.onnx ...``.
"""
import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from hyperframes_mm.utils import int_argument


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    from mmengine.config import DictAction

    from hyperframes_mm.deploy.export import INPUT_DTYPES
    from hyperframes_mm.deploy.quantize import CALIBRATION_CLIPS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--out', required=True, help='the int8 .onnx file to write')
    parser.add_argument('--calib-clips', type=int_argument(1), default=CALIBRATION_CLIPS,
                        help='training clips whose activations set the int8 ranges')
    parser.add_argument('--max-test', type=int_argument(1),
                        help='test clips of the parity report (all)')
    parser.add_argument('--format', default='QDQ', choices=['QDQ', 'QOperator'],
                        help='onnxruntime\'s int8 encoding (docs/deployment.md: which is faster)')
    parser.add_argument('--exclude', nargs='*', default=[], metavar='NODE',
                        help='graph nodes to keep in float')
    parser.add_argument('--input-dtype', default='uint8', choices=INPUT_DTYPES,
                        help='pixels as cameras and decoders give them (uint8: the int8 kernels '
                        'read them without a conversion pass) or as float32')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.datasets.video_io import BadVideoError
    from hyperframes_mm.deploy.export import export_onnx
    from hyperframes_mm.deploy.quantize import (dataset_list, labelled_videos, parity_report,
                                                pipeline_samples, quantize_int8, spread)
    from hyperframes_mm.engine import CheckpointRefusedError
    from hyperframes_mm.utils import refuse_overwrite
    out = Path(args.out)
    float_path = out.with_suffix('.float.onnx')
    try:
        refuse_overwrite({'--out': args.out, 'the float graph': float_path,
                          'the report': out.with_suffix('.json')},
                         {'the config': args.config, 'the checkpoint': args.checkpoint})
        model = init_recognizer(args.config, args.checkpoint, 'cpu', args.cfg_options,
                                allow_onnx=False)
        cfg = model.cfg
        lists = {key: labelled_videos(*dataset_list(cfg[key], f'{args.config}: {key}'),
                                      num_classes=model.cls_head.num_classes)
                 for key in ('train_dataloader', 'test_dataloader')}
        train = spread(lists['train_dataloader'], args.calib_clips)
        test = spread(lists['test_dataloader'], args.max_test)
        calibration = [inputs for inputs, _ in pipeline_samples(cfg, train)]
        # the test clips are read before anything is written: a bad one stops the run with
        # nothing half done (it left the two graphs without their report)
        samples = list(pipeline_samples(cfg, test))
        example = ({key: value[None].float() for key, value in calibration[0].items()}
                   if isinstance(calibration[0], dict) else calibration[0][None].float())
        export_onnx(model, float_path, example, args.input_dtype)
        try:
            done = quantize_int8(float_path, out, calibration, args.format, args.exclude)
        except BaseException:
            # the float graph is half of this run's output: without the int8 graph and the
            # report it would pass for a finished run's
            float_path.unlink(missing_ok=True)
            raise
    except (FileNotFoundError, ValueError, BadVideoError, CheckpointRefusedError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    report = dict(done, format=args.format, float_model=str(float_path), int8_model=str(out),
                  **parity_report(OnnxRecognizer(float_path, cfg), OnnxRecognizer(out, cfg),
                                  samples))
    out.with_suffix('.json').write_text(json.dumps(report, indent=1) + '\n')
    print(f'wrote {out} ({args.format}, {done["calibration_clips"]} calibration clips; kept in '
          f'float: {", ".join(done["float_operators"]) or "nothing"})')
    print(f'test list, {report["clips"]} clips: top-1 float {report["top1_float"]:.3f}, int8 '
          f'{report["top1_int8"]:.3f}; top-1 agreement {report["agreement"]:.3f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
