"""Streaming speed, side by side in one run: each stage alone vs the whole pipeline; cascades.

``throughput`` (default): 4 concurrent video files through ``StreamEngine``. Each stage is
also timed alone with the parallelism it has in the pipeline, on the same windows: decoding
(one thread per stream, frames only), preprocessing (one thread per stream, the config's test
pipeline on already decoded frames), the model (batches on prepared windows). Rounds rotate
the order of the four measurements; medians over rounds. Target: end-to-end windows/s within
1.3x of the slowest stage's. Writes ``benchmarks/results/streaming.md``.

``cascade``: a long stream of synthetic clips, one in ``--event-every`` an event
(``make_event_stream``), run through the screening model alone, the confirming model alone
and the cascade, interleaved over rounds. Reports how many windows each stage ran, the model
cost per window (screening + confirmer preprocessing + confirmer) against the screening model
alone (target <= 1.3x), and the alerts against the confirmer alone. Writes
``benchmarks/results/cascade.md``.

    python benchmarks/bench_streaming.py                      # ~2 min on 2 shared cores
    python benchmarks/bench_streaming.py throughput --config CFG --checkpoint CKPT --stride 8
    python benchmarks/bench_streaming.py cascade SCREEN_CFG SCREEN_CKPT CONFIRM_CFG CONFIRM_CKPT \\
        --screen-cfg-options test_pipeline.1.num_clips=1 --screen-rate 0.1 --threshold 0.5
"""
import argparse
import json
import logging
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from mmengine.config import DictAction

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import print_and_write
from hyperframes_mm.utils.timing import interleaved_timing

SHARED_VIDEOS = REPO.parent / 'shared' / 'videos'
RESULTS = REPO / 'benchmarks' / 'results'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(dest='command')
    speed = commands.add_parser('throughput', help='stages alone vs the pipeline (default)')
    speed.add_argument('--config', help='model config (default: HyperResNet-18 T=5, 224 px '
                       'centre crop of a 256 short side, 400 classes, random weights)')
    speed.add_argument('--checkpoint')
    speed.add_argument('--videos', type=Path, help='folder of videos (default: the shared '
                       'sample videos when present, else 4 generated 256x340 clips)')
    speed.add_argument('--streams', type=int, default=4)
    speed.add_argument('--stride', type=int, default=8)
    speed.add_argument('--batch-size', type=int, default=8)
    speed.add_argument('--rounds', type=int, default=3)
    speed.add_argument('--out', type=Path, default=RESULTS / 'streaming.md')
    cascade = commands.add_parser('cascade', help='screening + confirming models')
    cascade.add_argument('screen_config')
    cascade.add_argument('screen_checkpoint')
    cascade.add_argument('confirm_config')
    cascade.add_argument('confirm_checkpoint')
    cascade.add_argument('--screen-cfg-options', nargs='+', action=DictAction)
    cascade.add_argument('--confirm-cfg-options', nargs='+', action=DictAction)
    cascade.add_argument('--event', default='fall', help='event class of the stream')
    cascade.add_argument('--background', nargs='+', default=['drift_left', 'drift_right'])
    cascade.add_argument('--clips', type=int, default=40, help='2-s clips in the stream')
    cascade.add_argument('--event-every', type=int, default=10)
    screening = cascade.add_mutually_exclusive_group()
    screening.add_argument('--screen-threshold', type=float, default=0.2)
    screening.add_argument('--screen-rate', type=float,
                           help='instead of a threshold: the share of windows the screen '
                           'should flag, read on a calibration stream (another seed), never '
                           'on the measured one (screen_threshold_for_rate)')
    cascade.add_argument('--threshold', type=float, default=0.5, help='alert threshold')
    cascade.add_argument('--release', type=float, help='alert release (hysteresis)')
    cascade.add_argument('--stride', type=int, default=4)
    cascade.add_argument('--batch-size', type=int, default=8)
    cascade.add_argument('--rounds', type=int, default=3)
    cascade.add_argument('--out', type=Path, default=RESULTS / 'cascade.md')
    for sub in (speed, cascade):
        sub.add_argument('--threads', type=int, default=1,
                         help='torch intra-op threads of the model thread (1 leaves the other '
                         'core to decoding on a 2-core machine)')
        sub.add_argument('--device', default='cpu')
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ('throughput', 'cascade', '-h', '--help'):
        argv = ['throughput'] + argv
    args = parser.parse_args(argv)
    if getattr(args, 'screen_rate', None) is not None and not 0 < args.screen_rate < 1:
        # before two models load and a stream is rendered
        parser.error(f'--screen-rate must be in (0, 1), got {args.screen_rate}')
    args.command_line = list(sys.argv[1:] if argv is None else argv)  # for the results file
    return args


def environment(args, load_at_start: float) -> str:
    import decord
    return machine_line(f'decord {decord.__version__}', f'device {args.device}',
                        f'batch {args.batch_size}', f'stride {args.stride}',
                        threads=args.threads, load_at_start=load_at_start)


# ----------------------------------------------------------------------------- throughput
def default_config():
    from mmengine.config import Config
    return Config(dict(
        default_scope='mmaction',
        model=dict(type='Recognizer2D', backbone=dict(type='HyperResNet', depth=18, num_frames=5),
                   cls_head=dict(type='TSNHead', num_classes=400, in_channels=512,
                                 average_clips='prob'),
                   data_preprocessor=dict(type='HyperframeDataPreprocessor',
                                          mean=[123.675, 116.28, 103.53],
                                          std=[58.395, 57.12, 57.375])),
        test_pipeline=[dict(type='SafeDecordInit'),
                       dict(type='HyperframeSampleFrames', num_frames=5, interval=2,
                            test_mode=True),
                       dict(type='DecordDecode'), dict(type='Resize', scale=(-1, 256)),
                       dict(type='CenterCrop', crop_size=224), dict(type='HyperframeStack'),
                       dict(type='PackActionInputs')]))


def pick_videos(args, folder: Path) -> List[str]:
    """``args.streams`` video paths: the given folder's, the shared samples, or generated."""
    source = args.videos or (SHARED_VIDEOS if SHARED_VIDEOS.is_dir() else None)
    if source is not None:
        found = sorted(p for p in Path(source).iterdir() if p.suffix in ('.mp4', '.avi'))
        if not found:
            raise FileNotFoundError(f'no .mp4/.avi videos in {source}')
        import decord
        # longest first, so every stream has many windows; repeat files if there are few
        found.sort(key=lambda p: -len(decord.VideoReader(str(p))))
        return [str(found[i % len(found)]) for i in range(args.streams)]
    from hyperframes_mm.datasets.video_io import write_video
    rng = np.random.default_rng(0)
    paths = []
    for index in range(args.streams):
        texture = rng.integers(0, 256, (256 + 300, 340 + 300, 3), dtype=np.uint8)
        frames = np.stack([texture[t:t + 256, t:t + 340] for t in range(300)])
        path = folder / f'stream_{index}.mp4'
        write_video(path, frames, fps=30)
        paths.append(str(path))
    return paths


def seconds_in_threads(run, count: int) -> float:
    """Wall time of ``run(0) ... run(count - 1)``, each in a thread of its own, all at once (as
    the engine runs one stream per thread)."""
    start = time.perf_counter()
    threads = [threading.Thread(target=run, args=(index, )) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def decode_alone(paths, backend) -> Dict:
    from hyperframes_mm.deploy import VideoSource
    frames = [None] * len(paths)

    def run(index):
        source = VideoSource(paths[index], backend=backend)
        source.open()
        try:
            frames[index] = [image for _, _, image in source.frames()]
        finally:
            source.close()

    return dict(seconds=seconds_in_threads(run, len(paths)), frames=frames)


def window_ends(count: int, window: int, stride: int) -> List[int]:
    """End frames of a stream's windows, as StreamEngine places them."""
    return [end for end in range(stride - 1, count, stride) if end >= window - 1]


def preprocess_alone(stage, frames, fps, stride) -> Dict:
    prepared = [None] * len(frames)

    def run(index):
        window = stage.window_length(fps[index])
        prepared[index] = [stage.prepare(frames[index][end - window + 1:end + 1], fps[index])
                           for end in window_ends(len(frames[index]), window, stride)]

    return dict(seconds=seconds_in_threads(run, len(frames)),
                prepared=[item for stream in prepared for item in stream])


def model_alone(stage, prepared, batch_size) -> float:
    start = time.perf_counter()
    for offset in range(0, len(prepared), batch_size):
        chunk = prepared[offset:offset + batch_size]
        stage.predict(chunk[0][0], [packed for _, packed in chunk])
    return time.perf_counter() - start


def throughput(args) -> str:
    from hyperframes_mm.deploy import ModelStage, StreamEngine, VideoSource
    load_at_start = load_average()
    config = args.config or default_config()
    stage = ModelStage.from_config(config, args.checkpoint, args.device)
    with tempfile.TemporaryDirectory() as folder:
        paths = pick_videos(args, Path(folder))
        fps = []
        for path in paths:
            source = VideoSource(path, backend=stage.decoder)
            source.open()
            fps.append(source.fps)
            source.close()
        rates: Dict[str, List[float]] = {key: [] for key in
                                         ('decode', 'preprocess', 'model', 'end to end')}
        windows = None

        def pipeline():
            report = StreamEngine(stage, stride=args.stride, batch_size=args.batch_size,
                                  progress=False).run(paths)
            rates['end to end'].append(report.windows / report.wall_s)
            if report.failed:
                raise RuntimeError(f'a stream failed: {report.failed}')

        def stages():
            nonlocal windows
            decoded = decode_alone(paths, stage.decoder)
            prepared = preprocess_alone(stage, decoded['frames'], fps, args.stride)
            windows = len(prepared['prepared'])
            model_s = model_alone(stage, prepared['prepared'], args.batch_size)
            rates['decode'].append(windows / decoded['seconds'])
            rates['preprocess'].append(windows / prepared['seconds'])
            rates['model'].append(windows / model_s)

        # The rounds alternate which goes first; each part measures its own rates (the stages
        # one by one), run in the autograd mode the stream runs them in.
        interleaved_timing(dict(stages=stages, pipeline=pipeline), args.rounds, warmup=0,
                           inference=False)
    median = {key: statistics.median(values) for key, values in rates.items()}
    slowest = min(('decode', 'preprocess', 'model'), key=median.get)
    ratio = median[slowest] / median['end to end']
    names = ', '.join(Path(p).name for p in paths)
    model = Path(args.config).stem if args.config else \
        'HyperResNet-18 T=5, 224 px centre crop of a 256 short side, random weights'
    lines = [f'# Streaming: {args.streams} concurrent files, stages alone vs the pipeline', '',
             environment(args, load_at_start), '',
             f'Model: {model}; videos: {names}; {windows} windows per pass; median of '
             f'{args.rounds} rounds.',
             '', '| stage | windows/s |', '|---|---:|']
    for key in ('decode', 'preprocess', 'model', 'end to end'):
        lines.append(f'| {key} | {median[key]:.2f} |')
    lines += ['', f'Slowest stage: {slowest}. Its windows/s over end-to-end windows/s: '
              f'**{ratio:.2f}x** (target <= 1.3: {"met" if ratio <= 1.3 else "NOT met"})', '',
              'Reproduce: `python benchmarks/bench_streaming.py throughput' +
              (f' --config {args.config}' if args.config else '') +
              f' --stride {args.stride} --threads {args.threads}`']
    return '\n'.join(lines) + '\n'


# -------------------------------------------------------------------------------- cascade
def make_event_stream(out_path: Union[str, Path], num_clips: int = 20, event_every: int = 10,
                      event: str = 'fall', background: Sequence[str] = ('drift_left',
                                                                        'drift_right'),
                      classes: Optional[Sequence[str]] = None, size: int = 64,
                      fps: float = 25.0, duration: float = 2.0, seed: int = 0) -> Dict:
    """Write a long video of synthetic clips, every ``event_every``-th one an event.

    Clips are rendered by the synthetic benchmark's generator (one frame rate for the whole
    stream) and concatenated; clip ``i`` is the event when ``i % event_every ==
    event_every // 2``, otherwise a background class in turn. The annotation is written next
    to the video as ``<name>.jsonl`` in the frame-label format (``docs/frame_labels.md``):
    one line with the event clips as segments.

    Args:
        out_path (str | Path): the video to write (``.mp4``).
        num_clips (int): clips in the stream. Defaults to 20.
        event_every (int): one clip in this many is the event (10: 10% of the time).
            Defaults to 10.
        event (str): the event's class name. Defaults to ``'fall'``.
        background (Sequence[str]): background class names, used in turn.
        classes (Sequence[str], optional): the label space (segment labels are indices in it).
            Defaults to the synthetic benchmark's default classes.
        size (int): frame side in pixels. Defaults to 64.
        fps (float): frame rate. Defaults to 25.
        duration (float): seconds per clip. Defaults to 2.
        seed (int): clip ``i`` is a function of ``(seed, i)``. Defaults to 0.

    Returns:
        dict: ``video``, ``annotation``, ``num_frames``, ``fps``, ``segments``
        (``[[start, end, label], ...]``, end exclusive), ``label`` (the event's label).
    """
    from hyperframes_mm.datasets.synthetic import clip_rng, render_clip
    from hyperframes_mm.datasets.synthetic.generate import DEFAULT_CLASSES
    from hyperframes_mm.datasets.video_io import write_video
    if num_clips < 1 or event_every < 1:
        raise ValueError(f'make_event_stream: num_clips ({num_clips}) and event_every '
                         f'({event_every}) must be >= 1')
    classes = list(classes or DEFAULT_CLASSES)
    for name in [event] + list(background):
        if name not in classes:
            raise ValueError(f'make_event_stream: class {name!r} is not in {classes}')
    out_path = Path(out_path)
    label = classes.index(event)
    clips, segments, start = [], [], 0
    for index in range(num_clips):
        is_event = index % event_every == event_every // 2
        name = event if is_event else background[index % len(background)]
        frames, _ = render_clip(name, clip_rng(seed, 'stream', name, index), size, duration,
                                (fps, ))
        if is_event:
            segments.append([start, start + len(frames), label])
        clips.append(frames)
        start += len(frames)
    write_video(out_path, np.concatenate(clips), fps)
    annotation = out_path.with_suffix('.jsonl')
    line = dict(video=out_path.name, num_frames=start, fps=fps, segments=segments)
    annotation.write_text(json.dumps(line) + '\n')
    return dict(video=str(out_path), annotation=str(annotation), num_frames=start, fps=fps,
                segments=segments, label=label)


def windows_with_event(records: Sequence[Dict], segments: Sequence[Sequence[int]]) -> List:
    """``(stream, window)`` keys of window records whose frames overlap an event segment."""
    return [(record['stream'], record['window']) for record in records if 'scores' in record
            and any(record['start_frame'] < end and start <= record['end_frame']
                    for start, end, _ in segments)]


#: the seeds of the measured stream and of the stream a screening threshold is calibrated on
MEASURED_SEED, CALIBRATION_SEED = 0, 1


def threshold_for_rate(scores: Sequence[float], rate: float) -> float:
    """The lowest screening threshold that flags at most ``rate`` of windows whose alert scores
    are ``scores`` (a window is flagged at a score >= the threshold)."""
    if not 0 < rate < 1:
        raise ValueError(f'threshold_for_rate: the share of windows must be in (0, 1), got {rate}')
    if not scores:
        raise ValueError('threshold_for_rate: no window was scored')
    ranked = sorted(scores, reverse=True)
    # just above the first score left unflagged (rate < 1, so there is one): ties with it stay
    # unflagged too, so at most that share is flagged
    return float(np.nextafter(ranked[int(rate * len(ranked))], np.inf))


def screen_threshold_for_rate(screen, rule, args, folder: Path) -> float:
    """The threshold at which the screen flags ``args.screen_rate`` of the windows of a
    calibration stream: the measured stream's generator and event rate at
    :data:`CALIBRATION_SEED`, run through the screen alone. Read on the measured stream, the
    threshold would be fitted to the very windows the cascade is then scored on."""
    from hyperframes_mm.deploy import StreamEngine
    stream = make_event_stream(folder / 'calibration.mp4', num_clips=args.clips,
                               event_every=args.event_every, event=args.event,
                               background=args.background, seed=CALIBRATION_SEED)
    report = StreamEngine(screen, stride=args.stride, batch_size=args.batch_size, alert=rule,
                          keep_records=True, progress=False).run([stream['video']],
                                                                 names=['calibration'])
    return threshold_for_rate([rule.score(record['scores']) for record in report.records
                               if 'scores' in record], args.screen_rate)


def cascade(args) -> str:
    from hyperframes_mm.deploy import AlertRule, ModelStage, StreamEngine
    from hyperframes_mm.deploy.cascade import compare_with_confirmer
    load_at_start = load_average()
    screen = ModelStage.from_config(args.screen_config, args.screen_checkpoint, args.device,
                                    name='screen', cfg_options=args.screen_cfg_options)
    confirm = ModelStage.from_config(args.confirm_config, args.confirm_checkpoint, args.device,
                                     name='confirm', cfg_options=args.confirm_cfg_options)
    with tempfile.TemporaryDirectory() as folder:
        stream = make_event_stream(Path(folder) / 'stream.mp4', num_clips=args.clips,
                                   event_every=args.event_every, event=args.event,
                                   background=args.background, seed=MEASURED_SEED)
        rule = AlertRule(args.threshold, args.release, [stream['label']])
        if args.screen_rate is not None:
            args.screen_threshold = screen_threshold_for_rate(screen, rule, args, Path(folder))
        runs = dict(
            screen=lambda: StreamEngine(screen, stride=args.stride, batch_size=args.batch_size,
                                        alert=AlertRule(args.screen_threshold, None,
                                                        [stream['label']]),
                                        keep_records=True, progress=False),
            confirm=lambda: StreamEngine(confirm, stride=args.stride,
                                         batch_size=args.batch_size, alert=rule,
                                         keep_records=True, progress=False),
            cascade=lambda: StreamEngine(screen, stride=args.stride,
                                         batch_size=args.batch_size, alert=rule,
                                         confirm=confirm, screen_threshold=args.screen_threshold,
                                         keep_records=True, progress=False))
        reports: Dict[str, list] = {key: [] for key in runs}
        # each run's report carries its own model and wall times
        interleaved_timing(
            {key: (lambda key=key: reports[key].append(
                runs[key]().run([stream['video']], names=['stream']))) for key in runs},
            args.rounds, warmup=0, inference=False)

    def cost(report) -> float:
        """Model-thread seconds per window: screening (or only) model, confirmer input
        preparation and confirmer."""
        return (report.model_s + report.confirm_prepare_s + report.confirm_model_s) / \
            report.windows

    median_cost = {key: statistics.median(cost(r) for r in values)
                   for key, values in reports.items()}
    median_wall = {key: statistics.median(r.wall_s / r.windows for r in values)
                   for key, values in reports.items()}
    last = {key: values[-1] for key, values in reports.items()}
    comparison = compare_with_confirmer(last['cascade'].records, last['confirm'].records, rule)
    events = set(windows_with_event(last['cascade'].records, stream['segments']))
    flagged = {(r['stream'], r['window']) for r in last['cascade'].records
               if r.get('flagged')}
    ratio = median_cost['cascade'] / median_cost['screen']
    cascade_alerts = comparison['cascade_alerts']['stream']
    confirm_alerts = comparison['confirm_alerts']['stream']

    def in_event(end_frame):
        return any(start <= end_frame < end + 30 for start, end, _ in stream['segments'])

    lines = [
        '# Cascade alerting: screening on every window, confirming on flagged ones', '',
        environment(args, load_at_start), '',
        f'Stream: {args.clips} synthetic clips of 2 s at 25 fps ({stream["num_frames"]} frames), '
        f'one in {args.event_every} a `{args.event}` event (label {stream["label"]}), the others '
        f'{", ".join(args.background)}; {last["cascade"].windows} windows, '
        f'{len(events)} of them overlap an event. Screening: `{args.screen_config}`'
        f'{" " + str(args.screen_cfg_options) if args.screen_cfg_options else ""}; confirming: '
        f'`{args.confirm_config}`. Screen threshold {args.screen_threshold:.4g}'
        + (f' (flags {args.screen_rate:g} of the windows of a calibration stream: the same '
           f'generator at seed {CALIBRATION_SEED}, this one is seed {MEASURED_SEED})'
           if args.screen_rate is not None else '') + f', alert threshold '
        f'{args.threshold} (release {rule.release}). Median of {args.rounds} interleaved rounds. '
        'Each model alone starts at its own window length, the cascade at the longer one, '
        'hence slightly different window counts; all runs end windows on the same frames.',
        '', '| run | windows screened | windows confirmed | model cost ms/window | '
        'x screening alone | wall ms/window |', '|---|---:|---:|---:|---:|---:|']
    for key in ('screen', 'confirm', 'cascade'):
        report = last[key]
        screened = report.windows if key != 'confirm' else 0
        confirmed = report.confirm_windows if key == 'cascade' else (
            report.windows if key == 'confirm' else 0)
        lines.append(f'| {key} alone |' if key != 'cascade' else '| cascade |')
        lines[-1] += (f' {screened} | {confirmed} | {median_cost[key] * 1e3:.2f} | '
                      f'{median_cost[key] / median_cost["screen"]:.2f}x | '
                      f'{median_wall[key] * 1e3:.2f} |')
    lines += [
        '', f'Mean cost per window, cascade / screening alone: **{ratio:.2f}x** (target <= 1.3: '
        f'{"met" if ratio <= 1.3 else "NOT met"}); the confirmer ran on '
        f'{comparison["flagged"]} of {comparison["windows"]} windows '
        f'({100 * comparison["flagged"] / comparison["windows"]:.1f}%, in '
        f'{last["cascade"].confirm_batches} batches), '
        f'{len(events & flagged)} of the {len(events)} event windows among them.', '',
        f'Against the confirmer alone on the flagged windows: max score difference '
        f'{comparison["max_score_diff"]:.1e}, decision mismatches '
        f'{comparison["decision_mismatches"]} (target 0). Windows the confirmer alone calls '
        f'positive but the screen did not flag: {comparison["missed_positives"]}.', '',
        f'Alerts raised (end frame of the window that starts each): cascade {cascade_alerts} '
        f'({sum(map(in_event, cascade_alerts))} within an event or 30 frames after it); '
        f'confirmer alone {confirm_alerts} ({sum(map(in_event, confirm_alerts))} within an '
        f'event).', '',
        'Reproduce: `python benchmarks/bench_streaming.py ' + ' '.join(
            shlex.quote(arg) for arg in args.command_line) + '`']
    return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    init_default_scope('mmaction')
    # Building models logs every layer at INFO; the numbers are what matters here.
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    torch.set_num_threads(args.threads)
    text = throughput(args) if args.command == 'throughput' else cascade(args)
    print_and_write(text, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
