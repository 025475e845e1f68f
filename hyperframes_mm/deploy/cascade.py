"""Cascade alerting: a cheap screening model on every window, a confirming model on few.

The cascade itself runs inside :class:`~hyperframes_mm.deploy.stream.StreamEngine`
(``confirm=`` and ``screen_threshold=``). This module builds it from two configs
(:func:`build_cascade`), checks it against the confirmer alone (:func:`compare_with_confirmer`),
and writes test streams in which a known fraction of the time holds an event
(:func:`make_event_stream`: synthetic clips concatenated, annotated in the frame-label format
of ``docs/frame_labels.md``).
"""
import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .alerts import AlertRule, alert_events
from .stages import ModelStage
from .stream import StreamEngine


def build_cascade(screen_config, screen_checkpoint: Optional[str], confirm_config,
                  confirm_checkpoint: Optional[str], classes: Sequence[int],
                  screen_threshold: float, threshold: float, release: Optional[float] = None,
                  device: Optional[str] = None, **engine_kwargs) -> StreamEngine:
    """A :class:`StreamEngine` that screens every window and confirms the flagged ones.

    Args:
        screen_config, confirm_config (str | Path | Config): the two models' configs.
        screen_checkpoint, confirm_checkpoint (str, optional): their checkpoints.
        classes (Sequence[int]): the event classes (labels of both models).
        screen_threshold (float): screening alert score that sends a window to the confirmer.
        threshold (float): confirming alert score that starts an alert.
        release (float, optional): score below which an alert ends. Defaults to ``threshold``.
        device (str, optional): defaults to CUDA when present, else the CPU.
        **engine_kwargs: the rest of :class:`StreamEngine`'s arguments (stride, batch_size...).
    """
    screen = ModelStage.from_config(screen_config, screen_checkpoint, device, name='screen')
    confirm = ModelStage.from_config(confirm_config, confirm_checkpoint, device, name='confirm')
    return StreamEngine(screen, alert=AlertRule(threshold, release, classes), confirm=confirm,
                        screen_threshold=screen_threshold, **engine_kwargs)


def _by_end_frame(records: Sequence[Dict]) -> Dict:
    return {(record['stream'], record['end_frame']): record for record in records
            if 'scores' in record}


def compare_with_confirmer(cascade_records: Sequence[Dict], confirm_records: Sequence[Dict],
                           rule: AlertRule) -> Dict:
    """Check a cascade run against the confirming model run alone on the same streams.

    Windows are matched by stream and end frame (both runs end windows on the same frames; the
    confirmer alone may start earlier when its window is shorter) over the windows the cascade
    scored.

    Args:
        cascade_records (Sequence[dict]): window records of the cascade run.
        confirm_records (Sequence[dict]): window records of the confirmer alone, same stride.
        rule (AlertRule): the alert rule of both runs.

    Returns:
        dict: ``windows``, ``flagged`` (windows the confirmer ran on in the cascade),
        ``max_score_diff`` (largest difference of confirming scores on flagged windows),
        ``decision_mismatches`` (flagged windows whose decision ``score >= threshold``
        differs), ``missed_positives`` (windows the confirmer alone calls positive that the
        screen did not flag), ``cascade_alerts`` / ``confirm_alerts`` (per stream, the end
        frames of the windows that start an alert under the rule's hysteresis).
    """
    cascade, alone = _by_end_frame(cascade_records), _by_end_frame(confirm_records)
    unmatched = set(cascade) - set(alone)
    if unmatched:
        raise ValueError(f'the runs scored different windows: {len(unmatched)} of the '
                         f'cascade\'s {len(cascade)} windows are not among the {len(alone)} of '
                         'the confirmer alone (same streams and stride?)')
    flagged = [key for key, record in cascade.items() if record.get('flagged')]
    diffs = [float(np.abs(np.subtract(cascade[key]['confirm_scores'],
                                      alone[key]['scores'])).max()) for key in flagged]
    mismatches = [key for key in flagged
                  if (rule.score(cascade[key]['confirm_scores']) >= rule.threshold) !=
                  (rule.score(alone[key]['scores']) >= rule.threshold)]
    missed = [key for key in cascade if key not in flagged and
              rule.score(alone[key]['scores']) >= rule.threshold]

    def starts(scores_of) -> Dict[str, List[int]]:
        result = {}
        for stream in sorted({key[0] for key in cascade}):
            keys = sorted(key for key in cascade if key[0] == stream)
            events = alert_events([scores_of(key) for key in keys], rule)
            result[stream] = [keys[event['window']][1] for event in events
                              if event['event'] == 'start']
        return result

    return dict(
        windows=len(cascade), flagged=len(flagged),
        max_score_diff=max(diffs) if diffs else 0.0,
        decision_mismatches=len(mismatches), missed_positives=len(missed),
        cascade_alerts=starts(lambda key: rule.score(cascade[key]['confirm_scores'])
                              if cascade[key].get('flagged') else 0.0),
        confirm_alerts=starts(lambda key: rule.score(alone[key]['scores'])))


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
    from ..datasets.synthetic import clip_rng, render_clip
    from ..datasets.synthetic.generate import DEFAULT_CLASSES
    from ..datasets.video_io import write_video
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
