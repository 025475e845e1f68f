"""Sliding windows over videos with frame-level (or segment) labels.

Annotation file: JSON lines, one video per line (docs/frame_labels.md)::

    {"video": "cam1/0001.mp4", "num_frames": 300, "fps": 30, "segments": [[40, 95, 1]]}
    {"video": "cam2/0002.mp4", "frame_labels": [0, 0, 2, 2, 2, 0]}

Each video becomes windows of ``window`` frames every ``stride`` frames; each window is one
sample centred on its centre frame and labelled by ``label_mode``.
"""
import json
import logging
import os
import os.path as osp
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np
from mmaction.datasets import BaseActionDataset
from mmaction.registry import DATASETS
from mmengine.logging import print_log

from ..utils import int_at_least, is_int
from ..utils.checks import finite_number
from .annotations import read_list_lines

LABEL_MODES = ('center', 'any', 'video')
_KEYS = {'video', 'num_frames', 'fps', 'segments', 'frame_labels', 'label'}
#: the most frames a line may give: its labels are allocated whole, one int64 per frame, and a
#: mistyped count (a few zeros too many) asked for hundreds of GiB instead of naming the line
MAX_FRAMES = 10 ** 8
#: the largest label: labels are stored as int64, and a larger JSON int overflowed unnamed
_MAX_LABEL = np.iinfo(np.int64).max


def _is_label(value) -> bool:
    """An int label that int64 holds (a class index is never near the bound)."""
    return is_int(value) and 0 <= value <= _MAX_LABEL


@dataclass
class FrameAnnotation:
    """One video's annotation, with a label for every frame.

    Attributes:
        video (str): path relative to the video root.
        labels (np.ndarray): int64 ``[num_frames]``, the label of every frame.
        video_label (int): the video's own label (``label``, or derived: see
            :func:`load_frame_annotations`).
        fps (float, optional): frame rate, when the annotation gives it.
        line (int): line number in the annotation file.
    """

    video: str
    labels: np.ndarray
    video_label: int
    fps: Optional[float]
    line: int

    @property
    def num_frames(self) -> int:
        """Frames in the video."""
        return len(self.labels)


def _parse_line(record, where: str, background_label: int) -> Dict:
    if not isinstance(record, dict):
        raise ValueError(f'{where}: expected a JSON object, got {type(record).__name__}')
    unknown = sorted(set(record) - _KEYS)
    if unknown:
        raise ValueError(f'{where}: unknown keys {unknown}; allowed: {sorted(_KEYS)}')
    video = record.get('video')
    if not isinstance(video, str) or not video:
        raise ValueError(f'{where}: "video" must be a non-empty path, got {video!r}')
    if osp.isabs(video):
        raise ValueError(f'{where}: "video" {video!r} must be relative to the video root')
    num_frames = record.get('num_frames')
    if num_frames is not None and not (is_int(num_frames) and 1 <= num_frames <= MAX_FRAMES):
        raise ValueError(f'{where}: "num_frames" must be a positive int of at most '
                         f'{MAX_FRAMES} frames, got {num_frames!r}')
    fps = record.get('fps')
    if fps is not None:
        finite_number(fps, '"fps"', where, above=0)
    label = record.get('label')
    if label is not None and not _is_label(label):
        raise ValueError(f'{where}: "label" must be an int >= 0 that int64 holds, got {label!r}')
    if ('segments' in record) == ('frame_labels' in record):
        raise ValueError(f'{where}: give exactly one of "segments" and "frame_labels"')
    if 'segments' in record:
        if num_frames is None:
            raise ValueError(f'{where}: "segments" need "num_frames"')
        labels = _segment_labels(record['segments'], num_frames, background_label, where)
    else:
        labels = record['frame_labels']
        if not isinstance(labels, list) or not labels or not all(_is_label(x) for x in labels):
            raise ValueError(f'{where}: "frame_labels" must be a non-empty list of ints >= 0 '
                             'that int64 holds')
        if num_frames is not None and num_frames != len(labels):
            raise ValueError(f'{where}: "num_frames" is {num_frames} but "frame_labels" has '
                             f'{len(labels)} entries')
        labels = np.asarray(labels, dtype=np.int64)
    return dict(video=osp.normpath(video), labels=labels, label=label,
                fps=None if fps is None else float(fps))


def _segment_labels(segments, num_frames: int, background_label: int,
                    where: str) -> np.ndarray:
    if not isinstance(segments, list):
        raise ValueError(f'{where}: "segments" must be a list of [start, end, label]')
    labels = np.full(num_frames, background_label, dtype=np.int64)
    taken = np.zeros(num_frames, dtype=bool)
    for index, segment in enumerate(segments):
        if not (isinstance(segment, list) and len(segment) == 3 and all(
                is_int(x) for x in segment)):
            raise ValueError(f'{where}: segment {index} must be [start, end, label] ints, got '
                             f'{segment!r}')
        start, end, label = segment
        if not 0 <= start < end <= num_frames:
            raise ValueError(f'{where}: segment {index} {segment} needs 0 <= start < end <= '
                             f'num_frames ({num_frames}); end is exclusive')
        if not _is_label(label):
            raise ValueError(f'{where}: segment {index} {segment} needs a label >= 0 that int64 '
                             'holds')
        if taken[start:end].any():
            raise ValueError(f'{where}: segment {index} {segment} overlaps an earlier segment')
        taken[start:end] = True
        labels[start:end] = label
    return labels


def derive_video_label(labels: np.ndarray, background_label: int) -> int:
    """The most frequent non-background frame label (the smallest on a tie), else background."""
    counts = Counter(int(x) for x in labels if x != background_label)
    if not counts:
        return background_label
    top = max(counts.values())
    return min(label for label, count in counts.items() if count == top)


def load_frame_annotations(ann_file: Union[str, os.PathLike],
                           background_label: int = 0) -> List[FrameAnnotation]:
    """Read and check a frame-label annotation file (JSON lines, one video per line).

    Per line: ``video`` (required), and either ``segments`` (``[[start, end, label], ...]`` in
    frames, end exclusive, not overlapping; ``num_frames`` required; uncovered frames get
    ``background_label``) or ``frame_labels`` (one int per frame). Optional: ``num_frames``,
    ``fps``, ``label`` (the video's label; when absent it is derived by
    :func:`derive_video_label`). Blank lines are skipped.

    Args:
        ann_file (str | PathLike): the annotation file.
        background_label (int): label of frames no segment covers. Defaults to 0.

    Returns:
        list[FrameAnnotation]: one per video, in file order.

    Raises:
        ValueError: naming ``file:line`` and what is wrong.
    """
    annotations: List[FrameAnnotation] = []
    seen: Dict[str, int] = {}
    # the list reader: a file that is not UTF-8 text is refused naming its file:line
    for number, text, _ in read_list_lines(ann_file):
        if not text.strip():
            continue
        where = f'{ann_file}:{number}'
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f'{where}: not valid JSON: {error}') from error
        parsed = _parse_line(record, where, background_label)
        if parsed['video'] in seen:
            raise ValueError(f'{where}: video {parsed["video"]!r} is already annotated on '
                             f'line {seen[parsed["video"]]}')
        seen[parsed['video']] = number
        label = parsed['label']
        annotations.append(FrameAnnotation(
            video=parsed['video'], labels=parsed['labels'], fps=parsed['fps'], line=number,
            video_label=derive_video_label(parsed['labels'], background_label)
            if label is None else label))
    if not annotations:
        raise ValueError(f'{ann_file}: annotates no videos')
    return annotations


def window_starts(num_frames: int, window: int, stride: int) -> np.ndarray:
    """First frames of the windows: ``0, stride, 2 * stride, ...`` while the window fits.

    A video shorter than ``window`` gives one window starting at 0 (it is cut to the video).
    """
    if num_frames <= window:
        return np.zeros(1, dtype=np.int64)
    return np.arange(0, num_frames - window + 1, stride, dtype=np.int64)


def window_label(labels: np.ndarray, start: int, end: int, label_mode: str,
                 stable_radius: int = 0, positive_labels: Optional[Sequence[int]] = None,
                 background_label: int = 0, video_label: int = 0) -> Optional[int]:
    """The label of the window ``[start, end)`` of a video with frame labels ``labels``.

    Args:
        labels (np.ndarray): the video's frame labels.
        start (int): first frame of the window.
        end (int): one past its last frame.
        label_mode (str): ``'center'``: the label of the centre frame ``(start + end) // 2``;
            ``'any'``: 1 if any frame's label is positive, else 0; ``'video'``: ``video_label``.
        stable_radius (int): ``'center'`` only: the window is skipped (None) unless every frame
            within this distance of the centre (inside the video) has the centre's label.
            Defaults to 0.
        positive_labels (Sequence[int], optional): ``'any'`` only: the positive labels.
            Defaults to every label but ``background_label``.
        background_label (int): Defaults to 0.
        video_label (int): ``'video'`` only. Defaults to 0.

    Returns:
        int | None: the label, or None for a skipped window.
    """
    if label_mode == 'center':
        center = (start + end) // 2
        low, high = max(0, center - stable_radius), min(len(labels), center + stable_radius + 1)
        if (labels[low:high] != labels[center]).any():
            return None
        return int(labels[center])
    if label_mode == 'any':
        frames = labels[start:end]
        positive = frames != background_label if positive_labels is None else np.isin(
            frames, list(positive_labels))
        return int(positive.any())
    if label_mode == 'video':
        return int(video_label)
    raise ValueError(f'label_mode must be one of {LABEL_MODES}, got {label_mode!r}')


def make_windows(annotation: FrameAnnotation, window: int, stride: int, label_mode: str,
                 stable_radius: int = 0, positive_labels: Optional[Sequence[int]] = None,
                 background_label: int = 0) -> List[Dict]:
    """The labelled windows of one video (skipped windows left out).

    Returns:
        list[dict]: ``dict(window_start, window_end, center_frame, label)`` per window, in order;
        ``window_end`` is exclusive and ``center_frame = (window_start + window_end) // 2``.
    """
    windows = []
    for start in window_starts(annotation.num_frames, window, stride):
        start = int(start)
        end = min(start + window, annotation.num_frames)
        label = window_label(annotation.labels, start, end, label_mode, stable_radius,
                             positive_labels, background_label, annotation.video_label)
        if label is not None:
            windows.append(dict(window_start=start, window_end=end,
                                center_frame=(start + end) // 2, label=label))
    return windows


@DATASETS.register_module()
class FrameLabelVideoDataset(BaseActionDataset):
    """Windows over videos annotated frame by frame, for frame-level recognition.

    Every video of the annotation (see :func:`load_frame_annotations` and docs/frame_labels.md)
    is cut into windows of ``window`` frames starting every ``stride`` frames (while a whole
    window fits; a video shorter than ``window`` is one window over the whole video). Each
    window is one sample, labelled by ``label_mode``:

    - ``'center'``: the label of the centre frame; with ``stable_radius=r`` a window is skipped
      when any frame within ``r`` of its centre has another label (label transitions are
      ambiguous to train on). Keep ``r=0`` for test sets so every window is scored.
    - ``'any'``: 1 when any frame of the window has a label in ``positive_labels``, else 0 —
      for anomaly detection, where a window with an event must be recalled.
    - ``'video'``: the video's label for every window (``label`` in the annotation, or its most
      frequent non-background frame label).

    Each data info has ``filename`` (``data_prefix['video']`` joined with the annotation's
    path), ``label``, ``center_frame`` (``HyperframeSampleFrames`` centres its clips on it),
    ``window_start`` / ``window_end`` (frame range, end exclusive) and ``total_frames`` (the
    annotation's frame count; the loading transform replaces it with the decoded count, and
    ``annotated_frames`` keeps it for the sampler to compare) and ``annotation`` (the
    annotation's ``file:line``, which the run's checks name rather than a window's index).

    Args:
        ann_file (str): the JSON-lines annotation file.
        pipeline (list[dict | callable]): the data transforms.
        window (int): frames per window.
        stride (int, optional): frames between window starts. Defaults to None (``window``:
            windows that touch but do not overlap).
        label_mode (str): ``'center'``, ``'any'`` or ``'video'``. Defaults to ``'center'``.
        stable_radius (int): ``'center'`` only, see above. Defaults to 0 (no window skipped).
        positive_labels (Sequence[int], optional): ``'any'`` only: labels that count as
            positive. Defaults to None (every label but ``background_label``).
        background_label (int): the label of frames no segment covers. Defaults to 0.
        data_prefix (dict): ``dict(video=dir)``, the directory the annotation paths are
            relative to. Defaults to ``dict(video='')``.
        test_mode (bool): Defaults to False.
        **kwargs: passed to ``BaseActionDataset`` (``start_index``, ``modality``, ...).
    """

    def __init__(self,
                 ann_file: str,
                 pipeline: List[Union[dict, Callable]],
                 window: int,
                 stride: Optional[int] = None,
                 label_mode: str = 'center',
                 stable_radius: int = 0,
                 positive_labels: Optional[Sequence[int]] = None,
                 background_label: int = 0,
                 data_prefix: dict = dict(video=''),
                 test_mode: bool = False,
                 **kwargs) -> None:
        if label_mode not in LABEL_MODES:
            raise ValueError(f'FrameLabelVideoDataset: label_mode must be one of {LABEL_MODES}, '
                             f'got {label_mode!r}')
        owner = 'FrameLabelVideoDataset'
        self.window = int_at_least(window, 'window', 1, owner)
        self.stride = self.window if stride is None else int_at_least(stride, 'stride', 1, owner)
        self.stable_radius = int_at_least(stable_radius, 'stable_radius', 0, owner)
        self.background_label = int_at_least(background_label, 'background_label', 0, owner)
        if self.stable_radius and label_mode != 'center':
            raise ValueError(f'FrameLabelVideoDataset: stable_radius={stable_radius} applies to '
                             f"label_mode='center' only, not {label_mode!r}")
        if positive_labels is not None:
            if label_mode != 'any':
                raise ValueError('FrameLabelVideoDataset: positive_labels applies to '
                                 f"label_mode='any' only, not {label_mode!r}")
            if not positive_labels or not all(is_int(x) for x in positive_labels):
                raise ValueError('FrameLabelVideoDataset: positive_labels must be a non-empty '
                                 f'list of ints, got {positive_labels!r}')
            positive_labels = sorted(set(positive_labels))
        self.label_mode = label_mode
        self.positive_labels = positive_labels
        super().__init__(
            ann_file, pipeline=pipeline, data_prefix=data_prefix, test_mode=test_mode, **kwargs)

    def load_data_list(self) -> List[dict]:
        """One data info per kept window of every annotated video."""
        annotations = load_frame_annotations(self.ann_file, self.background_label)
        prefix = self.data_prefix.get('video') or ''
        data_list, skipped = [], 0
        for annotation in annotations:
            windows = make_windows(annotation, self.window, self.stride, self.label_mode,
                                   self.stable_radius, self.positive_labels,
                                   self.background_label)
            skipped += len(window_starts(annotation.num_frames, self.window,
                                         self.stride)) - len(windows)
            filename = osp.join(prefix, annotation.video)
            data_list.extend(
                dict(filename=filename, total_frames=annotation.num_frames,
                     annotated_frames=annotation.num_frames,
                     annotation=f'{self.ann_file}:{annotation.line}', **window)
                for window in windows)
        if not data_list:
            raise ValueError(f'{self.ann_file}: no window left ({skipped} skipped as unstable '
                             f'with stable_radius={self.stable_radius})')
        print_log(f'FrameLabelVideoDataset: {len(data_list)} windows of {self.window} frames '
                  f'(stride {self.stride}) over {len(annotations)} videos from {self.ann_file}, '
                  f'{skipped} skipped as unstable', logger='current', level=logging.INFO)
        return data_list
