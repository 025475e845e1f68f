"""Choose the frames of hyperframes: T picks at an interval (in frames or seconds) or spread
uniformly over the clip; one or several named streams; random (train) or fixed (test) positions.

The index arithmetic lives in pure functions (``pick_offsets``, ``clip_starts``,
``uniform_indices``, ``stream_indices``, ``resolve_out_of_bound``) that take the random draws as
arguments, so tests can state exact indices; :class:`HyperframeSampleFrames` draws the random
numbers (numpy's global generator, which mmengine seeds per run and per data-loader worker) and
writes the result into the pipeline's ``results``.
"""
import logging
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform
from mmengine.logging import print_log

from ...utils.checks import finite_number, flag

SAMPLING_MODES = ('interval', 'uniform')
OUT_OF_BOUND = ('loop', 'repeat_last', 'error')
STREAM_ALIGN = ('center', 'start')
_STREAM_KEYS = {'num_frames', 'interval', 'mode'}
_STREAM_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


def pick_offsets(num_frames: int, interval: float, fps: Optional[float] = None) -> np.ndarray:
    """Frame offsets of T picks from the first pick.

    Args:
        num_frames (int): T, picks per clip.
        interval (float): distance between picks: in frames (an int) when ``fps`` is None, in
            seconds otherwise.
        fps (float, optional): frame rate of the video, for picks by timestamp: pick ``t`` is
            the frame shown at ``t * interval`` seconds, ``floor(t * interval * fps + 0.5)``.
            Defaults to None.

    Returns:
        np.ndarray: ``[T]`` int64, starting at 0, non-decreasing.
    """
    steps = np.arange(num_frames, dtype=np.float64) * interval
    if fps is not None:
        steps = np.floor(steps * fps + 0.5)
    if steps[-1] >= 2.0 ** 63:
        # astype would wrap past int64 into negative, non-monotonic picks
        raise ValueError(f'HyperframeSampleFrames: {num_frames} picks {interval} '
                         f'{"s" if fps is not None else "frames"} apart reach frame '
                         f'{steps[-1]:.3g}, past any video; use a smaller interval')
    return steps.astype(np.int64)


def clip_starts(total_frames: int, span: int, num_clips: int,
                jitter: Optional[np.ndarray] = None) -> np.ndarray:
    """First frame of each of K clips of ``span`` frames, spread evenly over the video.

    The possible starts ``0 .. max(total_frames - span, 0)`` are cut into K equal segments;
    clip k starts at the fraction ``jitter[k]`` of its segment (training) or at the segment's
    middle (test, ``jitter=None``). A video shorter than the span gives start 0 for every clip.

    Args:
        total_frames (int): frames in the video.
        span (int): frames from the first to the last pick of a clip, both included.
        num_clips (int): K.
        jitter (np.ndarray, optional): ``[K]`` floats in ``[0, 1)``. Defaults to None (0.5 each).

    Returns:
        np.ndarray: ``[K]`` int64 starts, non-decreasing.
    """
    positions = max(total_frames - span, 0) + 1
    fraction = np.full(num_clips, 0.5) if jitter is None else np.asarray(jitter, np.float64)
    return np.floor((np.arange(num_clips) + fraction) * positions / num_clips).astype(np.int64)


def uniform_indices(total_frames: int, num_frames: int, num_clips: int,
                    jitter: Optional[np.ndarray] = None) -> np.ndarray:
    """K clips of T picks spread over the whole video (TSN-style segments).

    The video is cut into T equal segments; pick t of a clip lies in segment t. Training
    (``jitter`` given) places each pick at a random fraction of its segment; test
    (``jitter=None``) gives K evenly shifted clips: clip k takes the fraction ``(k + 0.5) / K``
    of every segment, so K=1 takes the segment middles. Picks never leave the video, and a
    video shorter than T repeats frames.

    Args:
        total_frames (int): frames in the video.
        num_frames (int): T.
        num_clips (int): K.
        jitter (np.ndarray, optional): ``[K, T]`` floats in ``[0, 1)``. Defaults to None.

    Returns:
        np.ndarray: ``[K, T]`` int64 indices in ``[0, total_frames)``.
    """
    if jitter is None:
        fraction = ((np.arange(num_clips) + 0.5) / num_clips)[:, None]
    else:
        fraction = np.asarray(jitter, np.float64).reshape(num_clips, num_frames)
    segment = total_frames / num_frames
    return np.floor((np.arange(num_frames)[None, :] + fraction) * segment).astype(np.int64)


def stream_indices(starts: np.ndarray, envelope: int, offsets: Sequence[np.ndarray],
                   align: str = 'center') -> List[np.ndarray]:
    """Place every stream's picks inside the envelope of each clip.

    Args:
        starts (np.ndarray): ``[K]`` first frame of each clip's envelope.
        envelope (int): span of the envelope, the longest stream span.
        offsets (Sequence[np.ndarray]): per stream, its ``[T_s]`` pick offsets.
        align (str): ``'center'``: every stream is centred on the envelope's centre frame
            ``start + (envelope - 1) // 2`` (a longer-interval stream covers a longer range with
            the shorter ones in its middle); ``'start'``: every stream begins at ``start``.
            Defaults to ``'center'``.

    Returns:
        list[np.ndarray]: per stream, ``[K, T_s]`` int64 indices (may leave the video when the
        video is shorter than the envelope; see :func:`resolve_out_of_bound`).
    """
    starts = np.asarray(starts, np.int64)
    placed = []
    for offset in offsets:
        shift = (envelope - 1) // 2 - (int(offset[-1]) // 2) if align == 'center' else 0
        placed.append(starts[:, None] + shift + np.asarray(offset, np.int64)[None, :])
    return placed


def resolve_out_of_bound(indices: np.ndarray, total_frames: int, policy: str) -> np.ndarray:
    """Map indices outside ``[0, total_frames)`` back into the video.

    Args:
        indices (np.ndarray): int indices of any shape.
        total_frames (int): frames in the video, at least 1.
        policy (str): ``'loop'``: wrap around (index mod total_frames); ``'repeat_last'``: clamp,
            so picks past the end repeat the last frame and picks before the start repeat the
            first; ``'error'``: return them unchanged (the caller raises).

    Returns:
        np.ndarray: int64 indices of the same shape.
    """
    indices = np.asarray(indices, np.int64)
    if policy == 'loop':
        return np.mod(indices, total_frames)
    if policy == 'repeat_last':
        return np.clip(indices, 0, total_frames - 1)
    return indices


def _check_count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f'HyperframeSampleFrames: {name} must be an integer >= 1, got {value!r}')
    return int(value)


def _check_interval(value, name: str, time_based: bool) -> float:
    if time_based:
        # an infinite interval puts every pick past the first on one frame far outside the video
        return float(finite_number(value, f'{name} (seconds, time_based=True)',
                                   'HyperframeSampleFrames', above=0))
    return _check_count(value, name)


@TRANSFORMS.register_module()
class HyperframeSampleFrames(BaseTransform):
    """Sample the frame indices of hyperframes: T frames per clip, K clips, one or more streams.

    Modes:

    - ``mode='interval'``: T picks ``interval`` frames apart (or ``interval`` seconds apart with
      ``time_based=True``, using the video's fps, so videos of different frame rates give the
      same time span). Training draws each clip's position at random inside its share of the
      video; test mode spreads the K clips evenly and takes the middle of each share.
    - ``mode='uniform'``: T picks spread over the whole video, one in each of T equal segments,
      at a random place in the segment (training) or at K evenly spaced places (test).

    With ``streams``, one call samples several named streams of the same clip (for the
    fast/slow model), e.g. ``streams=dict(fast=dict(interval=1), slow=dict(interval=4))``; a
    stream dict may set ``num_frames``, ``interval`` and ``mode`` (defaults: the top-level
    values). The interval streams share one random draw: they are placed inside the longest
    one's span, centred on the same frame (``stream_align='center'``: the slow stream covers
    the longer range, the fast one sits in its middle) or starting on the same frame
    (``stream_align='start'``). A uniform stream spreads over the whole video, so
    ``streams=dict(fast=dict(interval=2), slow=dict(mode='uniform'))`` pairs a short window of
    detail with the whole clip's course (segmented action clips).

    When ``results`` carries ``center_frame`` (an int, set by frame-label datasets) each clip is
    centred on that frame (``center - (span - 1) // 2`` is the first pick), in training and test
    mode alike.

    Picks outside the video follow ``out_of_bound``: ``'loop'`` wraps around, ``'repeat_last'``
    clamps (the last frame repeats; before the start, the first), ``'error'`` raises. A video
    shorter than the span is logged once per file and handled by that policy; it never causes an
    index error. Note that a centred window near the start of a video wraps to its end under
    ``'loop'``; frame-label data usually wants ``'repeat_last'``.

    Randomness comes from numpy's global generator, drawn in every call: mmengine seeds it from
    ``randomness=dict(seed=...)`` and re-seeds it differently in each data-loader worker.

    Required Keys:

        - total_frames (int): frames in the video.
        - avg_fps (float, optional): needed when ``time_based=True``.
        - start_index (int, optional): added to every index (0 for videos). Defaults to 0.
        - center_frame (int, optional): centre every clip on this frame.
        - annotated_frames (int, optional): the frame count the sample's annotation gives
          (frame-label datasets); one more than a frame off ``total_frames`` is logged once per
          file (and data-loader worker). Tools count a video's frames a frame apart often.
        - filename (str, optional): named in log lines and errors.

    Added Keys:

        - frame_inds (np.ndarray): int64 ``[sum_s K * T_s]``: streams in the given order, each
          clip-major (clip 0's T picks, then clip 1's, ...).
        - clip_len (int): T of the first stream.
        - num_clips (int): K.
        - frame_interval (int | float): distance between picks of the first stream in frames:
          ``interval``; ``interval * fps`` when time-based; the segment length
          ``total_frames / T`` in uniform mode.
        - hyperframe_streams (list[dict]): only with ``streams``:
          ``[dict(name=..., clip_len=T_s, num_clips=K), ...]`` in the given order.

    The sampler's streams are ``self.streams``: ``(name, T, interval)`` per stream, ``name``
    None without ``streams`` and ``interval`` None for a uniform stream.

    Args:
        num_frames (int): T, frames per hyperframe.
        interval (int | float, optional): frames between picks (seconds with
            ``time_based=True``). Interval mode only. Defaults to None (1 frame).
        mode (str): ``'interval'`` or ``'uniform'``. Defaults to ``'interval'``.
        time_based (bool): read ``interval`` as seconds and pick by timestamp. Defaults to False.
        num_clips (int): K, hyperframes per sample (test-time clips). Defaults to 1.
        test_mode (bool): fixed, evenly spaced positions instead of random ones.
            Defaults to False.
        out_of_bound (str): ``'loop'``, ``'repeat_last'`` or ``'error'``. Defaults to ``'loop'``.
        streams (dict, optional): stream name -> ``dict(num_frames=..., interval=...,
            mode=...)``, in order. Names must be identifiers (they become ``imgs_<name>``).
            Defaults to None.
        stream_align (str): ``'center'`` or ``'start'``, see above. Defaults to ``'center'``.
    """

    def __init__(self,
                 num_frames: int,
                 interval: Optional[float] = None,
                 mode: str = 'interval',
                 time_based: bool = False,
                 num_clips: int = 1,
                 test_mode: bool = False,
                 out_of_bound: str = 'loop',
                 streams: Optional[Dict[str, Dict]] = None,
                 stream_align: str = 'center') -> None:
        if mode not in SAMPLING_MODES:
            raise ValueError(f'HyperframeSampleFrames: mode must be one of {SAMPLING_MODES}, '
                             f'got {mode!r}')
        if out_of_bound not in OUT_OF_BOUND:
            raise ValueError(f'HyperframeSampleFrames: out_of_bound must be one of '
                             f'{OUT_OF_BOUND}, got {out_of_bound!r}')
        if stream_align not in STREAM_ALIGN:
            raise ValueError(f'HyperframeSampleFrames: stream_align must be one of '
                             f'{STREAM_ALIGN}, got {stream_align!r}')
        # a config's 'False' is a true string, and would turn the switch on
        time_based = flag(time_based, 'time_based', 'HyperframeSampleFrames')
        test_mode = flag(test_mode, 'test_mode', 'HyperframeSampleFrames')
        if mode == 'uniform' and time_based:
            raise ValueError('HyperframeSampleFrames: time_based=True needs mode=\'interval\' '
                             '(uniform picks already span the whole video)')
        if mode == 'uniform' and interval is not None:
            raise ValueError(f'HyperframeSampleFrames: interval={interval!r} has no meaning with '
                             'mode=\'uniform\' (picks spread over the whole video); drop it')
        self.num_frames = _check_count(num_frames, 'num_frames')
        self.num_clips = _check_count(num_clips, 'num_clips')
        self.mode = mode
        self.time_based = bool(time_based)
        self.interval = None if mode == 'uniform' else _check_interval(
            1 if interval is None else interval, 'interval', self.time_based)
        self.test_mode = bool(test_mode)
        self.out_of_bound = out_of_bound
        self.stream_align = stream_align
        self.streams = self._parse_streams(streams)
        #: the most picks a uniform stream spreads over a video (0: none), read per sample
        self._uniform_picks = max((count for _, count, gap in self.streams if gap is None),
                                  default=0)
        self._warned_short = set()
        self._warned_shared = set()
        self._warned_count = set()

    def _parse_streams(self, streams: Optional[Dict[str, Dict]]) -> List[Tuple]:
        """``[(name | None, T, interval | None)]``: one unnamed stream without ``streams``;
        interval None for a uniform stream."""
        if streams is None:
            return [(None, self.num_frames, self.interval)]
        if not isinstance(streams, dict) or not streams:
            raise ValueError('HyperframeSampleFrames: streams must be a non-empty dict of '
                             f'name -> dict(num_frames=..., interval=...), got {streams!r}')
        parsed = []
        for name, spec in streams.items():
            if not isinstance(name, str) or not _STREAM_NAME.match(name):
                raise ValueError(f'HyperframeSampleFrames: stream name {name!r} must be an '
                                 'identifier (it becomes the results key imgs_<name>)')
            if spec is not None and not isinstance(spec, dict):
                # dict(fast=5) reads as five frames to the eye, and dict(5) fails naming nothing
                raise ValueError(f'HyperframeSampleFrames: streams.{name} must be a dict of '
                                 f'{sorted(_STREAM_KEYS)} (e.g. streams=dict({name}=dict('
                                 f'num_frames=..., interval=...))) or None, got {spec!r}')
            spec = {} if spec is None else dict(spec)
            unknown = set(spec) - _STREAM_KEYS
            if unknown:
                raise ValueError(f'HyperframeSampleFrames: stream {name!r} has unknown keys '
                                 f'{sorted(unknown)}; allowed: {sorted(_STREAM_KEYS)}')
            num_frames = _check_count(spec.get('num_frames', self.num_frames),
                                      f'streams.{name}.num_frames')
            mode = spec.get('mode', self.mode)
            if mode not in SAMPLING_MODES:
                raise ValueError(f'HyperframeSampleFrames: streams.{name}.mode must be one of '
                                 f'{SAMPLING_MODES}, got {mode!r}')
            if mode == 'interval' and self.mode == 'uniform':
                raise ValueError(f'HyperframeSampleFrames: streams.{name}.mode=\'interval\' '
                                 'needs the top-level mode=\'interval\' (its interval and '
                                 'time_based settings)')
            if mode == 'uniform':
                if 'interval' in spec:
                    raise ValueError(f'HyperframeSampleFrames: streams.{name}.interval has no '
                                     'meaning with mode=\'uniform\'')
                interval = None
            else:
                interval = _check_interval(spec.get('interval', self.interval),
                                           f'streams.{name}.interval', self.time_based)
            parsed.append((name, num_frames, interval))
        return parsed

    def _fps(self, results: Dict, filename: str) -> Optional[float]:
        if not self.time_based:
            return None
        fps = results.get('avg_fps')
        if not fps or not np.isfinite(fps) or fps <= 0:
            raise ValueError(f'HyperframeSampleFrames: {filename} has no usable frame rate '
                             f'(avg_fps={fps!r}) but time_based=True needs one; set '
                             'time_based=False or fix the video\'s header')
        return float(fps)

    def _check_total(self, results: Dict, filename: str) -> int:
        if 'total_frames' not in results:
            raise KeyError('HyperframeSampleFrames needs results["total_frames"]: put DecordInit, '
                           'PyAVInit or FrameCacheInit before it in the pipeline')
        total = results['total_frames']
        if isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 1:
            raise ValueError(f'HyperframeSampleFrames: {filename} has total_frames={total!r}; '
                             'a video needs at least one frame')
        return int(total)

    def _center(self, results: Dict, total: int, filename: str) -> Optional[int]:
        center = results.get('center_frame')
        if center is None:
            return None
        if isinstance(center, bool) or not isinstance(center, (int, np.integer)) or \
                not 0 <= center < total:
            annotated, where = results.get('annotated_frames'), results.get('annotation')
            cause = ''
            if isinstance(center, (int, np.integer)) and annotated is not None and \
                    annotated > total:
                # the annotation was made on a longer copy of the video: its windows past the
                # end stopped an epoch midway, the message naming neither line nor counts
                cause = (f': its annotation{f" ({where})" if where else ""} gives {annotated} '
                         f'frames and the video decodes to {total}; annotate this copy of the '
                         'video, or list the copy the annotation was made on')
            raise ValueError(f'HyperframeSampleFrames: {filename}: center_frame={center!r} is '
                             f'not a frame of this {total}-frame video{cause}')
        return int(center)

    def _sample(self, total: int, fps: Optional[float],
                center: Optional[int]) -> Tuple[List[np.ndarray], int]:
        """Per stream ``[K, T_s]`` raw indices, and the envelope span the interval streams were
        placed in (the whole video when every stream is uniform)."""
        interval_streams = [(num_frames, interval) for _, num_frames, interval in self.streams
                            if interval is not None]
        placed: List[np.ndarray] = []
        envelope = total
        if interval_streams:
            offsets = [pick_offsets(num_frames, interval, fps)
                       for num_frames, interval in interval_streams]
            envelope = max(int(offset[-1]) + 1 for offset in offsets)
            if center is not None:
                starts = np.full(self.num_clips, center - (envelope - 1) // 2, np.int64)
            else:
                jitter = None if self.test_mode else np.random.random(self.num_clips)
                starts = clip_starts(total, envelope, self.num_clips, jitter)
            placed = stream_indices(starts, envelope, offsets, self.stream_align)
        indices = []
        for _, num_frames, interval in self.streams:
            if interval is not None:
                indices.append(placed.pop(0))
                continue
            jitter = None if self.test_mode else np.random.random((self.num_clips, num_frames))
            indices.append(uniform_indices(total, num_frames, self.num_clips, jitter))
        return indices, envelope

    def _check_shared_picks(self, total: int, fps: Optional[float], filename: str,
                            raw: Sequence[np.ndarray]) -> None:
        """Picks that share frames make the hyperframe hold still steps (zero differences),
        which no pick leaving the video shows, so the span check above never sees them: a
        uniform stream's T picks in a video of fewer frames (refused under
        ``out_of_bound='error'``), or time-based picks closer than a frame at this video's fps,
        which round onto the same frame (read on the picks just drawn, ``raw``). Else logged
        once per file."""
        picks = self._uniform_picks
        if total < picks:
            if self.out_of_bound == 'error':
                raise ValueError(f'HyperframeSampleFrames: {filename} has {total} frames, fewer '
                                 f'than the {picks} uniform picks ({self._describe()}), and '
                                 'out_of_bound=\'error\'; leave out videos shorter than '
                                 f'{picks} frames, or lower num_frames')
            reason = f'{filename} has {total} frames, fewer than the {picks} uniform picks'
        elif self.time_based and any((np.diff(index, axis=-1) == 0).any() for index in raw):
            reason = f'{filename} at {fps:g} fps rounds time-based picks onto the same frame'
        else:
            return
        if filename not in self._warned_shared:
            self._warned_shared.add(filename)
            print_log(f'HyperframeSampleFrames: {reason} ({self._describe()}): picks share '
                      'frames, so the hyperframe holds still steps', logger='current',
                      level=logging.WARNING)

    def _describe(self) -> str:
        return ', '.join(f'{name or "stream"}: num_frames={num_frames}, ' + (
            'uniform' if interval is None else
            f'interval={interval}{" s" if self.time_based else ""}')
            for name, num_frames, interval in self.streams)

    def transform(self, results: Dict) -> Dict:
        """Add ``frame_inds`` (and the clip layout keys) to ``results``."""
        filename = str(results.get('filename', results.get('frame_dir', 'the video')))
        total = self._check_total(results, filename)
        fps = self._fps(results, filename)
        center = self._center(results, total, filename)
        annotated = results.get('annotated_frames')
        if annotated is not None and abs(annotated - total) > 1 and \
                filename not in self._warned_count:
            # an annotation of another copy of the video (another frame rate, a cut) places
            # its labels on other frames: windows are labelled by frames the video does not show
            self._warned_count.add(filename)
            print_log(f'HyperframeSampleFrames: {filename}: its annotation gives {annotated} '
                      f'frames and the video decodes to {total}: the frame labels may not be '
                      'those of the frames shown (was the annotation made on another copy, at '
                      'another frame rate?)', logger='current', level=logging.WARNING)
        raw, envelope = self._sample(total, fps, center)
        outside = any(((index < 0) | (index >= total)).any() for index in raw)
        if outside and self.out_of_bound == 'error':
            raise ValueError(f'HyperframeSampleFrames: {filename} has {total} frames, too few '
                             f'for a {envelope}-frame span ({self._describe()}) and '
                             'out_of_bound=\'error\'; use out_of_bound=\'loop\' or '
                             '\'repeat_last\', or a smaller interval / num_frames')
        if total < envelope and filename not in self._warned_short:
            self._warned_short.add(filename)
            print_log(f'HyperframeSampleFrames: {filename} has {total} frames, fewer than the '
                      f'{envelope}-frame span ({self._describe()}); picks past the end are '
                      f'handled by out_of_bound={self.out_of_bound!r}', logger='current',
                      level=logging.WARNING)
        self._check_shared_picks(total, fps, filename, raw)
        start_index = int(results.get('start_index', 0))
        resolved = [resolve_out_of_bound(index, total, self.out_of_bound).reshape(-1)
                    for index in raw]
        results['frame_inds'] = np.concatenate(resolved) + start_index
        results['clip_len'] = self.streams[0][1]
        results['num_clips'] = self.num_clips
        first_interval = self.streams[0][2]
        if first_interval is None:
            results['frame_interval'] = total / self.streams[0][1]
        elif self.time_based:
            results['frame_interval'] = first_interval * fps
        else:
            results['frame_interval'] = first_interval
        if self.streams[0][0] is not None:
            results['hyperframe_streams'] = [
                dict(name=name, clip_len=num_frames, num_clips=self.num_clips)
                for name, num_frames, _ in self.streams]
        return results

    def __repr__(self) -> str:
        streams = None if self.streams[0][0] is None else {
            name: dict(num_frames=num_frames, interval=interval) if interval is not None else
            dict(num_frames=num_frames, mode='uniform')
            for name, num_frames, interval in self.streams}
        return (f'{self.__class__.__name__}(num_frames={self.num_frames}, '
                f'interval={self.interval}, mode={self.mode!r}, time_based={self.time_based}, '
                f'num_clips={self.num_clips}, test_mode={self.test_mode}, '
                f'out_of_bound={self.out_of_bound!r}, streams={streams}, '
                f'stream_align={self.stream_align!r})')
