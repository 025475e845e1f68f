"""Streaming inference: per-window predictions for video files, URLs and cameras, as JSON lines.

    python tools/stream_infer.py CONFIG CHECKPOINT SOURCE [SOURCE ...] [--stride 4] \\
        [--out preds.jsonl] [--threshold 0.8 --release 0.6 --alert-classes 2]
    # cascade: a cheap screening model on every window, the confirmer on flagged ones
    python tools/stream_infer.py SCREEN_CONFIG SCREEN_CKPT video.mp4 --alert-classes 2 \\
        --threshold 0.7 --confirm-config FS_CONFIG --confirm-checkpoint FS_CKPT \\
        --screen-threshold 0.3
    # frame count chosen per window by motion (a T=5 model run at T=3/5/7)
    python tools/stream_infer.py CONFIG CKPT rtsp://camera/live --dynamic-frames 3 5 7

Every window gives one JSON line (stream, window, frames, timestamps, scores, label, alert
state); alert starts and ends are lines of their own; the last line is the run's summary.
Per-stage timing is printed at the end. The exit status is 1 when a stream failed (the others
still ran to their end). See docs/deployment.md.
"""
import argparse
import json
import os
import sys
from typing import List, Optional

from mmengine.config import DictAction

from hyperframes_mm.utils import int_argument


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config', help='model config (the screening model of a cascade)')
    parser.add_argument('checkpoint', help='its checkpoint, or its exported .onnx (float or '
                        'int8: tools/deployment/), run by onnxruntime on the CPU')
    parser.add_argument('sources', nargs='+', help='video files, URLs or /dev/videoN')
    parser.add_argument('--names', nargs='+', help='stream names (default: the sources)')
    parser.add_argument('--stride', type=int_argument(1), default=4,
                        help='frames between windows')
    parser.add_argument('--window', type=int_argument(1),
                        help='frames per window (default: the test sampler\'s clip span times its '
                        'number of clips)')
    parser.add_argument('--batch-size', type=int_argument(1), default=8,
                        help='windows per model call')
    parser.add_argument('--device', help='cpu, cuda, cuda:1... (default: cuda if present)')
    parser.add_argument('--threads', type=int_argument(1),
                        help='torch intra-op threads of the model on the CPU (on a 2-core '
                        'machine 1 leaves a core to decoding; see docs/deployment.md)')
    parser.add_argument('--backend', default='auto', choices=['auto', 'decord', 'pyav'],
                        help='decoder for files (auto: the config\'s own decoder)')
    parser.add_argument('--threshold', type=float, help='alert when the alert score reaches it')
    parser.add_argument('--release', type=float, help='end an alert below it (hysteresis)')
    parser.add_argument('--alert-classes', type=int, nargs='+',
                        help='labels that alert (default: any class)')
    parser.add_argument('--confirm-config', help='confirming model config (cascade)')
    parser.add_argument('--confirm-checkpoint', help='confirming model checkpoint')
    parser.add_argument('--screen-threshold', type=float,
                        help='screening alert score that sends a window to the confirmer')
    parser.add_argument('--dynamic-frames', type=int_argument(1), nargs=3,
                        metavar=('LOW', 'MID', 'HIGH'),
                        help='frame counts for low/medium/high motion (re-inflated copies)')
    parser.add_argument('--motion-thresholds', type=float, nargs=2, metavar=('LOW', 'HIGH'),
                        help='motion scores between the dynamic frame counts')
    parser.add_argument('--reconnect', type=int_argument(0), default=3,
                        help='reconnection attempts in a row for URLs and cameras')
    parser.add_argument('--reconnect-delay', type=float, default=1.0)
    parser.add_argument('--open-timeout', type=float, default=10.0)
    parser.add_argument('--read-timeout', type=float, default=10.0,
                        help='seconds without data before a URL counts as stalled')
    parser.add_argument('--out', help='JSON-lines file (default: stdout)')
    parser.add_argument('--no-progress', action='store_true', help='no live progress line')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='overrides for the (screening) config')
    args = parser.parse_args(argv)
    cascade = (args.confirm_config, args.confirm_checkpoint, args.screen_threshold)
    if any(value is not None for value in cascade) and any(value is None for value in cascade):
        parser.error('a cascade needs --confirm-config, --confirm-checkpoint and '
                     '--screen-threshold')
    if args.confirm_config and (args.threshold is None or not args.alert_classes):
        parser.error('a cascade needs --threshold and --alert-classes (the event classes)')
    if args.release is not None and args.threshold is None:
        parser.error('--release needs --threshold')
    if args.alert_classes and args.threshold is None:
        # without a threshold no alert rule is built, and the classes would go unread
        parser.error('--alert-classes needs --threshold')
    if args.names and len(args.names) != len(args.sources):
        parser.error(f'--names: {len(args.names)} names for {len(args.sources)} sources')
    # a record carries its stream's name only: two streams of one name cannot be told apart
    named = args.names or args.sources
    repeated = sorted({name for name in named if named.count(name) > 1})
    if repeated:
        parser.error(f'{"--names" if args.names else "sources"}: {", ".join(repeated)} given '
                     'more than once; every stream needs a name of its own'
                     + ('' if args.names else ' (--names)'))
    if args.motion_thresholds and not args.dynamic_frames:
        parser.error('--motion-thresholds needs --dynamic-frames')
    return args


def build_engine(args: argparse.Namespace, sink):
    """The :class:`StreamEngine` the arguments describe."""
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.apis.inference import head_classes
    from hyperframes_mm.deploy import (AlertRule, ModelStage, StreamEngine, check_alert_classes,
                                       check_score_thresholds)
    # the dynamic frame counts re-inflate the PyTorch model's conv1: a graph has none to inflate
    model = init_recognizer(args.config, args.checkpoint, args.device, args.cfg_options,
                            allow_onnx=not args.dynamic_frames, threads=args.threads)
    # in a cascade the screening scores meet --screen-threshold, the confirmer's the alert rule
    alert_rule = {'--threshold': args.threshold, '--release': args.release}
    check_score_thresholds(model.cfg, {'--screen-threshold': args.screen_threshold}
                           if args.confirm_config else alert_rule)
    if args.dynamic_frames:
        from hyperframes_mm.deploy.dynamic_frames import DEFAULT_THRESHOLDS, DynamicFrameStage
        stage = DynamicFrameStage(model, tuple(args.dynamic_frames),
                                  tuple(args.motion_thresholds or DEFAULT_THRESHOLDS),
                                  name='screen' if args.confirm_config else 'dynamic',
                                  window=args.window)
    else:
        stage = ModelStage(model, name='screen' if args.confirm_config else 'model')
    confirm = None
    if args.confirm_config:
        confirm = ModelStage.from_config(args.confirm_config, args.confirm_checkpoint,
                                         args.device, name='confirm', threads=args.threads)
        check_score_thresholds(confirm.model.cfg, alert_rule)
        # a record's label is the confirmer's where it confirmed and the screen's elsewhere
        counts = [head_classes(stage_model.cfg) for stage_model in (model, confirm.model)]
        if None not in counts and counts[0] != counts[1]:
            raise ValueError(f'the screening model scores {counts[0]} classes and the '
                             f'confirming model ({args.confirm_config}) {counts[1]}: a cascade '
                             'needs two models of the same classes')
    # the screening model's scores are read by the same classes as the confirmer's
    for stage_model in (model, ) + ((confirm.model, ) if confirm else ()):
        check_alert_classes(stage_model.cfg, args.alert_classes)
    if args.window is None:
        # a sampler that spreads its picks over the whole video has no window of its own;
        # each stream would fail at its first window
        for each in filter(None, (stage, confirm)):
            spread = each.spreading_pipeline()
            if spread is not None:
                raise ValueError(f'--window: the sampler of stage {each.name!r} '
                                 f'({spread.sampler_cfg}) spreads its picks over the whole '
                                 'video; give the window length in frames')
    else:
        for each in filter(None, (stage, confirm)):
            each.check_window(args.window, '--window')
    alert = None if args.threshold is None else AlertRule(args.threshold, args.release,
                                                          args.alert_classes)
    return StreamEngine(stage, stride=args.stride, window=args.window,
                        batch_size=args.batch_size, alert=alert, confirm=confirm,
                        screen_threshold=args.screen_threshold, backend=args.backend,
                        reconnect=args.reconnect, reconnect_delay=args.reconnect_delay,
                        open_timeout=args.open_timeout, read_timeout=args.read_timeout,
                        sink=sink, progress=not args.no_progress)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.deploy import report_dict
    from hyperframes_mm.engine import CheckpointRefusedError
    from hyperframes_mm.utils import check_output_folder, refuse_overwrite
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.out:
        try:  # before the file is opened for writing, which empties it
            refuse_overwrite({'--out': args.out},
                             {'the config': args.config, 'the checkpoint': args.checkpoint,
                              'the confirming config': args.confirm_config,
                              'the confirming checkpoint': args.confirm_checkpoint,
                              **{f'source {source}': source for source in args.sources
                                 if os.path.isfile(source)}})
            check_output_folder('--out', args.out)
        except ValueError as error:
            print(f'error: {error}', file=sys.stderr)
            return 1

    def sink(record):
        out.write(json.dumps(record) + '\n')
        out.flush()

    try:  # the models and options, before --out is opened (which empties it)
        engine = build_engine(args, sink)
    except (FileNotFoundError, ValueError, CheckpointRefusedError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    try:
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        out = open(args.out, 'w', encoding='utf-8') if args.out else sys.stdout
    except OSError as error:
        print(f'error: --out {args.out}: {error.strerror or error}', file=sys.stderr)
        return 1
    # The summary goes where the JSON lines do not.
    text = sys.stderr if out is sys.stdout else sys.stdout
    try:
        report = engine.run(args.sources, args.names)
        sink(dict(event='summary', **report_dict(report)))
    finally:
        if out is not sys.stdout:
            out.close()
    print(report.summary(), file=text)
    return 1 if report.failed else 0


if __name__ == '__main__':
    sys.exit(main())
