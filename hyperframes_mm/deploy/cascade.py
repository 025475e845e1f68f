"""Cascade alerting: a cheap screening model on every window, a confirming model on few.

The cascade itself runs inside :class:`~hyperframes_mm.deploy.stream.StreamEngine`
(``confirm=`` and ``screen_threshold=``). This module builds it from two configs
(:func:`build_cascade`) and checks it against the confirmer alone
(:func:`compare_with_confirmer`); ``benchmarks/bench_streaming.py`` writes the test streams.
"""
from typing import Dict, List, Optional, Sequence

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
