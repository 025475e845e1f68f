"""Alerts from per-window class scores: a threshold with hysteresis, per stream.

A single threshold makes an alert flicker on and off while a score hovers around it. With
hysteresis an alert starts when the score reaches ``threshold`` and ends only when it falls
below ``release`` (``release <= threshold``), so one event gives one alert.
"""
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..apis.inference import head_classes


def check_score_thresholds(cfg, thresholds: Dict[str, Optional[float]]) -> None:
    """Refuse thresholds outside 0..1 for a model whose scores are probabilities (its head
    averages clips as ``'prob'``, as the plugin's configs do): such a threshold is never
    reached, and a stream would run to its end without one alert and without a word. A head
    averaging logits (``'score'``, None) gives unbounded scores, and any threshold stands.

    Args:
        cfg (Config): the model's config.
        thresholds (dict): the option that set each threshold (``'--threshold'``) -> its value
            (None: not given).

    Raises:
        ValueError: naming the option, its value and the head's averaging.
    """
    head = cfg.model.get('cls_head') or {}
    # a head that wraps another (AuxFrameHead) scores as the wrapped one
    averaging = head.get('average_clips', (head.get('head') or {}).get('average_clips'))
    if averaging != 'prob':
        return
    for option, value in thresholds.items():
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f'{option} {value:g}: the model\'s scores are probabilities '
                             f'({head.get("type", "its head")} average_clips=\'prob\'), in '
                             '0..1, so it would never be reached')


def check_alert_classes(cfg, classes: Optional[Sequence[int]],
                        option: str = '--alert-classes') -> None:
    """Refuse alert classes the model's head does not score, before any stream is opened:
    :meth:`AlertRule.score` finds out at the first window, after every source was opened and
    the output file emptied. A config whose head names no class count is not checked here.

    Args:
        cfg (Config): the config of the model whose scores the rule reads.
        classes (Sequence[int], optional): the alerting labels (None: every class).
        option (str): the option that set them, for the message.

    Raises:
        ValueError: naming the option, the label and the head's class count.
    """
    count = head_classes(cfg)
    if classes and count is not None and max(classes) >= count:
        raise ValueError(f'{option} {max(classes)}: the model of {cfg.filename} scores '
                         f'{count} classes (labels 0..{count - 1})')


class AlertRule:
    """When a window's scores count as an alert.

    Args:
        threshold (float): an alert starts when the alert score reaches it.
        release (float, optional): an alert ends when the score falls below it; must not
            exceed ``threshold``. Defaults to None (= ``threshold``: no hysteresis).
        classes (Sequence[int], optional): the classes that alert; the alert score is the
            highest score among them. Defaults to None (every class: the top score).
    """

    def __init__(self, threshold: float, release: Optional[float] = None,
                 classes: Optional[Sequence[int]] = None) -> None:
        release = threshold if release is None else release
        if not 0.0 <= release <= threshold:
            raise ValueError(f'AlertRule: need 0 <= release <= threshold, got '
                             f'threshold={threshold}, release={release}')
        if classes is not None:
            classes = [int(label) for label in classes]
            if not classes or min(classes) < 0:
                raise ValueError(f'AlertRule: classes must be non-negative labels, got {classes}')
        self.threshold = float(threshold)
        self.release = float(release)
        self.classes = classes

    def score(self, scores: Sequence[float]) -> float:
        """The alert score of one window: the top score among :attr:`classes`."""
        scores = np.asarray(scores, np.float64)
        if self.classes is None:
            return float(scores.max())
        if max(self.classes) >= len(scores):
            raise ValueError(f'AlertRule: class {max(self.classes)} is not among the model\'s '
                             f'{len(scores)} classes')
        return float(scores[self.classes].max())

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(threshold={self.threshold}, release={self.release}, '
                f'classes={self.classes})')


class Hysteresis:
    """The alert state of one stream, fed one alert score per window.

    Args:
        rule (AlertRule): thresholds.
    """

    def __init__(self, rule: AlertRule) -> None:
        self.rule = rule
        self.active = False

    def update(self, score: float) -> Optional[str]:
        """Feed a window's alert score; returns ``'start'``, ``'end'`` or None (no change)."""
        if not self.active and score >= self.rule.threshold:
            self.active = True
            return 'start'
        if self.active and score < self.rule.release:
            self.active = False
            return 'end'
        return None


def alert_events(scores: Sequence[float], rule: AlertRule) -> List[Dict]:
    """Run :class:`Hysteresis` over a sequence of alert scores.

    Returns:
        list[dict]: ``dict(event='start' | 'end', window=i)`` in order.
    """
    state = Hysteresis(rule)
    events = []
    for index, score in enumerate(scores):
        change = state.update(score)
        if change is not None:
            events.append(dict(event=change, window=index))
    return events
