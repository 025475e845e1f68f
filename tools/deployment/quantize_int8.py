"""Int8 model of a trained recognizer for CPUs: export, static quantisation calibrated on
training clips, and a parity report on the test list.

    python tools/deployment/quantize_int8.py CONFIG CHECKPOINT --out model_int8.onnx
        [--calib-clips 64] [--max-test N] [--format QDQ|QOperator] [--exclude NODE ...]
        [--input-dtype uint8|float32] [--no-progress]

Writes ``--out`` (the int8 graph), the float graph beside it (``<out>.float.onnx``) and the
report (``<out>.json``): operators kept in float, top-1 of the float and int8 models on the
config's test list (``--max-test`` clips spread over it) and how often their top-1 agree, and
the two graphs' file names (beside the report). All three are written whole or not at all: a run
that fails leaves an earlier run's files as they were. The calibration clips are spread over the
config's training list and go through its test pipeline. An ``--out`` that would replace the
config, the checkpoint, a list or one of its videos, or whose folder cannot be made or written,
is refused before any work.
Either ``.onnx`` runs where a checkpoint does: ``init_recognizer(config, 'model_int8.onnx')``,
``tools/stream_infer.py CONFIG model_int8.onnx ...``.
"""
import argparse
import json
import os
import sys
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from hyperframes_mm.utils import int_argument

#: the dataloaders whose lists the run reads: calibration clips, parity clips
LISTS = {'train_dataloader': 'the training list', 'test_dataloader': 'the test list'}


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
    parser.add_argument('--no-progress', action='store_true',
                        help='no progress bars (reading, calibrating, scoring clips)')
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
    from hyperframes_mm.utils import check_output_folder, refuse_overwrite
    from hyperframes_mm.utils.paths import written_beside
    out = Path(args.out)
    float_path, report_path = out.with_suffix('.float.onnx'), out.with_suffix('.json')
    outputs = {'--out': args.out, 'the float graph': float_path, 'the report': report_path}
    progress = not args.no_progress
    try:
        refuse_overwrite(outputs, {'the config': args.config, 'the checkpoint': args.checkpoint})
        # the graphs are written only after every clip was read and calibrated: a folder that
        # cannot take them is refused before that work, not after it
        check_output_folder('--out', args.out)
        model = init_recognizer(args.config, args.checkpoint, 'cpu', args.cfg_options,
                                allow_onnx=False)
        cfg = model.cfg
        lists = {key: dataset_list(cfg[key], f'{args.config}: {key}') for key in LISTS}
        videos = {key: labelled_videos(*found, num_classes=model.cls_head.num_classes)
                  for key, found in lists.items()}
        # the lists and their videos are the run's inputs too, as stream_infer's sources are
        refuse_overwrite(outputs, {
            **{LISTS[key]: found[0] for key, found in lists.items()},
            **{f'video {number} of {LISTS[key]}': path for key in LISTS
               for number, (path, _) in enumerate(videos[key], 1)}})
        train = spread(videos['train_dataloader'], args.calib_clips)
        test = spread(videos['test_dataloader'], args.max_test)
        calibration = [inputs for inputs, _ in tqdm_clips(pipeline_samples(cfg, train), train,
                                                          'calibration clips', progress)]
        samples = list(tqdm_clips(pipeline_samples(cfg, test), test, 'test clips', progress))
        example = ({key: value[None].float() for key, value in calibration[0].items()}
                   if isinstance(calibration[0], dict) else calibration[0][None].float())
        # Each file is written beside its target and moved into place only once all three are
        # (the moves in the reverse order of the with: the report last); a failure or a kill
        # before then leaves an earlier run's files as they were
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            with written_beside(report_path, '.json') as report_partial, \
                    written_beside(out, '.onnx') as int8_partial, \
                    written_beside(float_path, '.onnx') as float_partial:
                export_onnx(model, float_partial, example, args.input_dtype)
                done = quantize_int8(float_partial, int8_partial, calibration, args.format,
                                     args.exclude, progress=progress)
                # the report's paths are read from its folder (the graphs are beside it), so that
                # they hold wherever the run was started and wherever the folder is moved
                report = dict(done, format=args.format, float_model=float_path.name,
                              int8_model=out.name,
                              **parity_report(OnnxRecognizer(float_partial, cfg),
                                              OnnxRecognizer(int8_partial, cfg), samples,
                                              progress=progress))
                report_partial.write_text(json.dumps(report, indent=1) + '\n')
                # the report marks a finished run: an earlier one's goes before the graphs it
                # describes are replaced, so a kill between the moves leaves graphs without a
                # report, never a report beside graphs it was not written for
                report_path.unlink(missing_ok=True)
        except OSError as error:
            # a folder the check above passed can still refuse the files (a file system
            # that refuses even root, a full disk): name --out, not a temporary file. Other
            # errors (onnxruntime's temporary folder filling up) keep their own message
            if not names_output_folder(error, out.parent):
                raise
            raise ValueError(f'--out {args.out}: {error.strerror or error}') from error
    except (FileNotFoundError, ValueError, BadVideoError, CheckpointRefusedError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    print(f'wrote {out} ({args.format}, {done["calibration_clips"]} calibration clips; kept in '
          f'float: {", ".join(done["float_operators"]) or "nothing"})')
    print(f'test list, {report["clips"]} clips: top-1 float {report["top1_float"]:.3f}, int8 '
          f'{report["top1_int8"]:.3f}; top-1 agreement {report["agreement"]:.3f}')
    return 0


def names_output_folder(error: OSError, folder: Path) -> bool:
    """Whether ``error`` names a file of ``folder`` (the outputs and their temporary files) or
    ``folder`` itself or one above it (the folders made for them)."""
    folder = folder.absolute()
    # an error of a file descriptor names no path (its filename is None or a number)
    names = [Path(name).absolute() for name in (error.filename, error.filename2)
             if isinstance(name, (str, os.PathLike))]
    return any(name.parent == folder or name == folder or name in folder.parents
               for name in names)


def tqdm_clips(samples: Iterable, clips: Sequence, desc: str, progress: bool) -> Iterable:
    """``samples``, one for each of ``clips``, counted on a progress bar on stderr."""
    from tqdm import tqdm
    return tqdm(samples, total=len(clips), desc=desc, unit='clip', file=sys.stderr,
                disable=not progress, dynamic_ncols=True)


if __name__ == '__main__':
    sys.exit(main())
