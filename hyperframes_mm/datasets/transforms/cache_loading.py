"""The frame cache's loading transforms, drop-in replacements for DecordInit / DecordDecode.

They only read: the cache format and its builder are ``datasets/frame_cache.py``, and entries
are written by the builder alone (``tools/build_frame_cache.py``, or ``BuildFrameCacheHook``
before a run), never from inside a data pipeline, where a half-failed epoch or many workers
would share the writing.
"""
import logging
import os
from pathlib import Path
from typing import Dict, Optional

import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform
from mmengine.logging import print_log

from ...utils import positive_int
from ..frame_cache import (CorruptFrameCacheError, FrameCacheError, FrameCacheHeader,
                           MissingFrameCacheError, check_frames, decode_in_order, entry_path,
                           open_entry, read_frames, resize_short_side)
from ..video_io import open_video

_ON_STALE = ('error', 'decode')


class SourceFrames:
    """A video's frames indexed like an entry's map, decoded from the video itself: what
    ``FrameCacheInit(on_stale='decode')`` reads when the entry cannot be used.

    Indexing decodes as the builder does (:func:`decode_in_order`, up to the last index asked
    for, keeping only the frames asked for) and resizes as it would, so the frames are the
    entry's, bit for bit.
    """

    def __init__(self, source: str, short_side: Optional[int]) -> None:
        import mmcv
        self.source = source
        self.short_side = short_side
        self.reader = open_video(source)
        height, width = self.reader[0].shape[:2]
        if short_side is not None:
            width, height = mmcv.rescale_size((width, height), (np.inf, short_side))
        self.shape = (len(self.reader), height, width, 3)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, inds: np.ndarray) -> np.ndarray:
        inds = np.asarray(inds)
        wanted = set(inds.tolist())
        kept = {}
        for start, frames in decode_in_order(self.reader, self.source, int(inds.max()) + 1):
            # copies, so a chunk is freed once the next is decoded
            kept.update((index, frame.copy()) for index, frame in enumerate(frames, start)
                        if index in wanted)
        decoded = np.stack([kept[index] for index in inds.tolist()])
        return decoded if self.short_side is None else resize_short_side(decoded,
                                                                         self.short_side)


class CheckedFrames:
    """An entry's mapped frames, indexed like the map, whose every read is checked against
    the entry's per-frame checksums (:func:`check_frames`).

    A size and header check cannot see bytes damaged inside the frame data; without this, such
    an entry hands training frames that differ from the video's. A damaged frame raises
    ``CorruptFrameCacheError``, or, with a ``fallback`` (``on_stale='decode'``), is read from the
    video instead, with a warning naming the entry: the read never returns the damaged bytes.

    Args:
        frames (np.memmap): the entry's map, ``[N, H, W, 3]``.
        header (FrameCacheHeader): the entry's header.
        entry (Path): the entry file.
        fallback (callable, optional): makes the :class:`SourceFrames` to read instead.
    """

    def __init__(self, frames: np.ndarray, header: FrameCacheHeader, entry: Path,
                 fallback=None) -> None:
        self.frames = frames
        self.header = header
        self.entry = entry
        self.fallback = fallback
        self.shape = frames.shape

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, inds) -> np.ndarray:
        # any numpy index of the frame axis (an int, a slice, an array) as an array of frames
        chosen = np.arange(len(self))[inds]
        flat = np.atleast_1d(chosen)
        copied = np.asarray(self.frames[flat])
        try:
            check_frames(copied, flat, self.header, self.entry)
        except CorruptFrameCacheError as error:
            if self.fallback is None:
                raise
            print_log(f'FrameCacheDecode: {error}; decoding the video instead',
                      logger='current', level=logging.WARNING)
            copied = self.fallback()[flat]
        return copied.reshape(np.shape(chosen) + copied.shape[1:])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        frames = self[:]
        return frames if dtype is None else frames.astype(dtype)


@TRANSFORMS.register_module()
class FrameCacheInit(BaseTransform):
    """Open a video's frame cache entry in place of ``DecordInit``.

    The entry of ``results['filename']`` is ``<cache_root>/<path relative to video_root>.hfc``,
    as ``tools/build_frame_cache.py`` writes it, or, without ``cache_root``, ``<filename>.hfc``
    beside the video (what the builder writes with the cache root set to the video root: a
    config then names no cache path, and follows the dataset wherever its root is). The entry
    is checked before use: complete (its size matches its header), of the expected
    ``short_side``, and, when the source video exists, built from the source as it is now (same
    size and modification time); every frame read is checked against the entry's per-frame
    checksum (:class:`CheckedFrames`), so damaged bytes are never returned. A missing, truncated,
    stale or differently sized entry raises an error naming the entry file, or, with
    ``on_stale='decode'``, is read from the source video instead (the same frames, decoded per
    sample: slower, and nothing is written). Missing entries are then logged once per process,
    truncated or stale ones one warning each; ``BuildFrameCacheHook`` builds them before the
    run.

    The entry is memory-mapped here, per call, in the process running the pipeline: no file
    handle is opened in ``__init__`` or shared across DataLoader worker forks. Nothing is read
    until ``FrameCacheDecode`` indexes the frames.

    Required Keys:

        - filename

    Added Keys:

        - frame_cache (CheckedFrames | SourceFrames): the entry's frames ``[N, H, W, 3]``,
          read-only (a :class:`SourceFrames` of the video when ``'decode'`` falls back).
        - total_frames
        - avg_fps
        - original_shape: ``(H, W)`` of the stored frames.

    Args:
        cache_root (str, optional): the cache's root directory. None: every entry is beside
            its video. Defaults to None.
        video_root (str, optional): the directory the cache's video paths are relative to
            (the dataset's ``data_prefix['video']``). None: ``filename`` itself must be relative
            and is the path inside the cache. Only with ``cache_root``. Defaults to None.
        short_side (int, optional): the ``--short-side`` the cache was built with; an entry of
            another size counts as stale (with ``on_stale='decode'`` the video is read and
            resized to this size instead). None: frames stored at their decoded size. Defaults
            to None.
        on_stale (str): ``'error'`` raises ``FrameCacheError`` (``MissingFrameCacheError``,
            ``CorruptFrameCacheError`` or ``StaleFrameCacheError``); ``'decode'`` reads the
            frames from the source video, logging a warning. Defaults to ``'error'``.
    """

    def __init__(self,
                 cache_root: Optional[str] = None,
                 video_root: Optional[str] = None,
                 short_side: Optional[int] = None,
                 on_stale: str = 'error') -> None:
        if on_stale == 'rebuild':
            raise ValueError("FrameCacheInit: on_stale='rebuild' is gone: loading transforms "
                             "no longer write entries. Use on_stale='decode' and build the "
                             "entries before the run with custom_hooks=[dict(type="
                             "'BuildFrameCacheHook')] or tools/build_frame_cache.py")
        if on_stale not in _ON_STALE:
            raise ValueError(f'FrameCacheInit: on_stale must be one of {_ON_STALE}, got '
                             f'{on_stale!r}')
        if cache_root is None and video_root is not None:
            raise ValueError(f'FrameCacheInit: video_root={video_root!r} needs a cache_root; '
                             'without one every entry is beside its video')
        self.cache_root = cache_root
        self.video_root = video_root
        self.short_side = positive_int(short_side, 'short_side', 'FrameCacheInit', optional=True)
        self.on_stale = on_stale
        self._told_missing = False

    def relative_path(self, filename: str) -> str:
        """The path of ``filename`` inside the cache (relative to ``video_root``)."""
        if self.video_root is None:
            if os.path.isabs(filename):
                raise ValueError(f'FrameCacheInit: {filename} is absolute; set video_root to '
                                 'the directory the frame cache was built from')
            return os.path.normpath(filename)
        relative = os.path.relpath(os.path.abspath(filename), os.path.abspath(self.video_root))
        if relative.split(os.sep)[0] == '..':
            raise ValueError(f'FrameCacheInit: {filename} is not under video_root '
                             f'{self.video_root}')
        return relative

    def entry_of(self, filename: str) -> Path:
        """The entry file of a video."""
        if self.cache_root is None:  # beside the video: its own directory is the cache root
            return entry_path(os.path.dirname(filename), os.path.basename(filename))
        return entry_path(self.cache_root, self.relative_path(filename))

    def transform(self, results: Dict) -> Dict:
        """Check and map the entry of ``results['filename']``."""
        source = results['filename']
        entry = self.entry_of(source)
        unusable = None
        try:
            header, mapped = open_entry(entry, source, self.short_side)
        except FrameCacheError as error:
            if self.on_stale == 'error':
                raise
            unusable = error
        if unusable is None:
            fallback = (None if self.on_stale == 'error' else
                        lambda: SourceFrames(source, self.short_side))
            frames = CheckedFrames(mapped, header, entry, fallback)
            fps = header.fps
        else:
            # opened outside the except clause: a video that cannot be opened is the error, not
            # raised "during handling of" the entry's, whose advice (build the cache) does not
            # help a video that does not exist
            self._tell(entry, source, unusable)
            frames = SourceFrames(source, self.short_side)
            fps = float(frames.reader.get_avg_fps())
        results['frame_cache'] = frames
        results['total_frames'] = len(frames)
        results['avg_fps'] = fps
        results['original_shape'] = tuple(frames.shape[1:3])
        return results

    def _tell(self, entry: Path, source: str, error: FrameCacheError) -> None:
        """Log why a video is decoded: each unusable entry, and missing ones once."""
        if not isinstance(error, MissingFrameCacheError):
            print_log(f'FrameCacheInit: decoding {source}, its entry is unusable: {error}',
                      logger='current', level=logging.WARNING)
        elif not self._told_missing:
            self._told_missing = True
            where = (f'under {self.cache_root}' if self.cache_root is not None else
                     'beside their videos')
            print_log(f'FrameCacheInit: no frame cache entries {where} for some videos (first: '
                      f'{entry}); decoding them per sample. BuildFrameCacheHook or '
                      'tools/build_frame_cache.py builds them before the run',
                      logger='current', level=logging.INFO)

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(cache_root={self.cache_root!r}, '
                f'video_root={self.video_root!r}, short_side={self.short_side}, '
                f'on_stale={self.on_stale!r})')


@TRANSFORMS.register_module()
class FrameCacheDecode(BaseTransform):
    """Read the frames at ``frame_inds`` from the entry ``FrameCacheInit`` mapped.

    Gives exactly what ``DecordDecode`` gives for the same indices (the cache holds decord's
    frames bit for bit, or their ``Resize(scale=(-1, short_side))``), reading only those frames.
    Indices outside ``[0, total_frames)`` raise ``IndexError`` naming the video.

    Required Keys:

        - frame_cache
        - frame_inds

    Modified Keys:

        - frame_cache: removed (the map is released, as ``DecordDecode`` releases
          ``video_reader``).

    Added Keys:

        - imgs: list of ``[H, W, 3]`` uint8 RGB frames, one per index.
        - original_shape
        - img_shape
    """

    def transform(self, results: Dict) -> Dict:
        """Copy the indexed frames out of the entry and release it."""
        frames = results.pop('frame_cache')
        imgs = read_frames(frames, np.asarray(results['frame_inds']),
                           name=str(results.get('filename', 'frame cache')))
        del frames
        results['imgs'] = list(imgs)
        results['original_shape'] = imgs.shape[1:3]
        results['img_shape'] = imgs.shape[1:3]
        return results

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}()'
