"""The motion classes: each is a trajectory of the actor object, nothing else.

Every class shares one appearance distribution; a class only decides how the actor's offset,
size and orientation change over time. Units: positions and distances in frame widths (the
frame is a torus of side 1, so an object leaving one edge re-enters at the opposite one),
time in seconds, angles in radians with y pointing down (a positive angle turns clockwise on
screen).

Fast classes differ only inside short events (``FAST_EVENT_S`` seconds, repeating every
``FAST_PERIOD_S`` at a random phase); slow classes differ only through a steady change over the
whole clip. In label order (:func:`actor_motion` is the definition):

* fast: ``swipe_left`` / ``swipe_right`` (quick steps of ``FAST_STEP`` sideways, resting in
  between), ``fall`` (accelerates down, stops dead, rests), ``hop`` (up by ``HOP_HEIGHT`` and
  back), ``shake`` (a horizontal wiggle of ``SHAKE_AMPLITUDE``, either way first);
* slow: ``drift_left`` / ``drift_right`` and ``lie_down`` (a steady ``SLOW_SPEED``),
  ``approach`` / ``recede`` (the radius doubles / halves over the clip), ``rotate_cw`` /
  ``rotate_ccw`` (a steady ``ROTATION_SPEED``).
"""
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Sequence

import numpy as np

#: length of one quick event of a fast class, seconds
FAST_EVENT_S = 0.35
#: fast events repeat with a period drawn per clip from this range (seconds) at a random
#: phase, so that most windows of ~0.3-0.5 s hold (part of) an event
FAST_PERIOD_S = (0.5, 0.7)
#: steady speed of drift and lie-down, frame widths per second: ~4 px per 0.5 s at 32 px, so a
#: short window barely shows it and a long one does
SLOW_SPEED = 0.25
#: distance of one swipe or fall step, frame widths: a quick, large move that any window
#: holding part of an event shows, unlike the slow drift in the same direction
FAST_STEP = 0.3
HOP_HEIGHT = 0.2
SHAKE_AMPLITUDE = 0.1
#: steady rotation speed of rotate_cw / rotate_ccw, radians per second
ROTATION_SPEED = np.pi / 2


@dataclass(frozen=True)
class MotionClass:
    """One class of the benchmark.

    Args:
        name (str): class name, as written in ``classes.txt``.
        group (str): ``'fast'`` (decided by one short event) or ``'slow'`` (decided only over
            the whole clip).
        mirror (str): the class a clip of this class becomes under a horizontal flip (its own
            name when the flip keeps the class).
    """
    name: str
    group: str
    mirror: str


#: group name -> the class names of that group, over every class, in label order
CLASS_GROUPS: Dict[str, List[str]] = {
    'fast': ['swipe_left', 'swipe_right', 'fall', 'hop', 'shake'],
    'slow': ['drift_left', 'drift_right', 'lie_down', 'approach', 'recede', 'rotate_cw',
             'rotate_ccw'],
}
#: the classes a horizontal flip turns into each other; every other class it keeps
_MIRROR_PAIRS = (('swipe_left', 'swipe_right'), ('drift_left', 'drift_right'),
                 ('rotate_cw', 'rotate_ccw'))
_MIRRORS = {**dict(_MIRROR_PAIRS), **{b: a for a, b in _MIRROR_PAIRS}}
#: every class the generator can draw, by name, in label order
MOTION_CLASSES: Dict[str, MotionClass] = {
    name: MotionClass(name, group, _MIRRORS.get(name, name))
    for group, names in CLASS_GROUPS.items() for name in names}


class ActorMotion(NamedTuple):
    """The class-dependent part of the actor's trajectory, sampled at ``times``.

    Attributes:
        offset (np.ndarray): ``[N, 2]`` (dy, dx) displacement from the start position, frame
            widths.
        scale_phase (np.ndarray): ``[N]`` in [0, 1]; the radius is ``r0 * 2 ** scale_phase``.
            Classes that do not change size hold one value drawn from U(0, 1), so the radius
            of a single frame has the same distribution in every class.
        turn (np.ndarray): ``[N]`` rotation from the start orientation, radians.
    """
    offset: np.ndarray
    scale_phase: np.ndarray
    turn: np.ndarray


def check_classes(classes: Sequence[str]) -> List[str]:
    """Return ``classes`` as a list after checking every name is known and appears once.

    Raises:
        ValueError: unknown or repeated class name, or an empty list.
    """
    classes = list(classes)
    if not classes:
        raise ValueError('classes: empty class list')
    unknown = [name for name in classes if name not in MOTION_CLASSES]
    if unknown:
        raise ValueError(f'classes: unknown {unknown}; known: {list(MOTION_CLASSES)}')
    if len(set(classes)) != len(classes):
        raise ValueError(f'classes: repeated names in {classes}')
    return classes


def class_groups(classes: Sequence[str]) -> Dict[str, List[str]]:
    """Group name -> the names of ``classes`` in that group (groups with no class are kept)."""
    classes = check_classes(classes)
    return {group: [c for c in classes if MOTION_CLASSES[c].group == group]
            for group in CLASS_GROUPS}


def flip_label_map(classes: Sequence[str]) -> Dict[int, int]:
    """Label -> label for the classes that swap under a horizontal flip.

    The dict has an entry for every label whose class changes under the flip (e.g.
    ``swipe_left`` <-> ``swipe_right``); labels that a flip keeps are absent, which is the form
    mmaction2's ``Flip(flip_label_map=...)`` expects.

    Args:
        classes (Sequence[str]): class names in label order.

    Returns:
        Dict[int, int]: e.g. ``{0: 1, 1: 0}`` for ``['swipe_left', 'swipe_right', 'fall']``.

    Raises:
        ValueError: a class's mirror image is not in ``classes``, so no label fits a flipped
            clip; train such a class list without horizontal flips.
    """
    classes = check_classes(classes)
    label = {name: index for index, name in enumerate(classes)}
    mapping = {}
    for index, name in enumerate(classes):
        mirror = MOTION_CLASSES[name].mirror
        if mirror not in label:
            raise ValueError(f'classes: {name!r} becomes {mirror!r} under a horizontal flip, '
                             f'which is not in {classes}; do not flip this class list')
        if mirror != name:
            mapping[index] = label[mirror]
    return mapping


def smoothstep(x: np.ndarray) -> np.ndarray:
    """``3x^2 - 2x^3`` on x clipped to [0, 1]: 0 before, 1 after, zero speed at both ends."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def actor_motion(name: str, times: np.ndarray, duration: float,
                 rng: np.random.Generator) -> ActorMotion:
    """Sample the class-dependent trajectory of the actor of one clip of class ``name``.

    Every class draws the same random values in the same order (event period and phase,
    wiggle signs, a constant size phase), whether it uses them or not.

    Args:
        name (str): class name, a key of :data:`MOTION_CLASSES`.
        times (np.ndarray): ``[N]`` frame times in seconds.
        duration (float): clip length in seconds; at least one full event period plus one
            event, so every clip of a fast class holds a complete event.
        rng (np.random.Generator): draws the event period, phase and signs and, for classes of
            constant size, the size phase.

    Returns:
        ActorMotion: offset, scale phase and turn at every time.

    Raises:
        ValueError: unknown class, or a clip too short for a complete event.
    """
    if name not in MOTION_CLASSES:
        raise ValueError(f'class {name!r} unknown; known: {list(MOTION_CLASSES)}')
    shortest = FAST_PERIOD_S[1] + FAST_EVENT_S
    if duration < shortest:
        raise ValueError(f'duration {duration} s too short: a clip needs {shortest} s to hold '
                         'a complete fast event')
    times = np.asarray(times, dtype=np.float64)
    period = rng.uniform(*FAST_PERIOD_S)
    starts = rng.uniform(-period, 0.0) + period * np.arange(int(np.ceil(duration / period)) + 1)
    signs = rng.choice([-1.0, 1.0], size=len(starts))
    constant_phase = rng.uniform(0.0, 1.0)
    s = (times[:, None] - starts[None, :]) / FAST_EVENT_S
    inside = (s >= 0) & (s <= 1)
    step = FAST_STEP
    dy = np.zeros_like(times)
    dx = np.zeros_like(times)
    scale_phase = np.full_like(times, constant_phase)
    turn = np.zeros_like(times)
    if name == 'swipe_left':
        dx = -step * smoothstep(s).sum(axis=1)
    elif name == 'swipe_right':
        dx = step * smoothstep(s).sum(axis=1)
    elif name == 'fall':
        dy = step * (np.clip(s, 0.0, 1.0) ** 2).sum(axis=1)
    elif name == 'hop':
        dy = -HOP_HEIGHT * np.where(inside, 4.0 * s * (1.0 - s), 0.0).sum(axis=1)
    elif name == 'shake':
        wiggle = np.sin(2 * np.pi * s) * np.sin(np.pi * s)
        dx = SHAKE_AMPLITUDE * np.where(inside, signs * wiggle, 0.0).sum(axis=1)
    elif name == 'drift_left':
        dx = -SLOW_SPEED * times
    elif name == 'drift_right':
        dx = SLOW_SPEED * times
    elif name == 'lie_down':
        dy = SLOW_SPEED * times
    elif name == 'approach':
        scale_phase = np.clip(times / duration, 0.0, 1.0)
    elif name == 'recede':
        scale_phase = np.clip(1.0 - times / duration, 0.0, 1.0)
    elif name == 'rotate_cw':
        turn = ROTATION_SPEED * times
    elif name == 'rotate_ccw':
        turn = -ROTATION_SPEED * times
    return ActorMotion(np.stack([dy, dx], axis=1), scale_phase, turn)
