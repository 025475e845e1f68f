"""A pre-decoded frame cache: one memory-mappable uint8 file per video.

Decoding is the bottleneck of a video pipeline: a clip of K*T frames costs a container open, a
seek to a keyframe and the decoding of every frame up to the ones asked for. The cache decodes
each video once and stores its frames raw, so a sample reads exactly its K*T frames from a
memory map.

Entry layout (format version 3), one file per video, ``<cache_root>/<relative video path>.hfc``::

    bytes 0..7            magic b'HFCACHE\\0'
    bytes 8..11           header length L, uint32 little-endian
    bytes 12..12+L        header: UTF-8 JSON object (the fields of FrameCacheHeader)
    next 9 bytes          b'\\n' and the CRC-32 of the header's L bytes, 8 hex digits; then
                          spaces up to data_offset
    data_offset..end      frames: uint8 [num_frames, height, width, 3], RGB, C order;
                          data_offset is a multiple of 4096 (page aligned)

An entry is written under a temporary name beside its final name and renamed into place once
complete, so a killed or failed build never leaves a partial entry under the final name. A
reader checks the magic, the format version, the header's checksum (a header edited in place,
height and width swapped or another frame rate, would describe the same bytes as other frames),
that the file size is exactly ``data_offset`` plus the frame bytes (a truncated entry is
refused), and that the source video still has the size, modification time and checksum of its
first and last 64 KiB recorded at build time (a stale entry is refused; a copy that kept size and
time, as ``cp -p`` or ``rsync -a`` keep them, differs in its container's index at one end).
Every read checks the CRC-32 of each frame it copies against the header's (:func:`check_frames`):
damage inside the frame data, which leaves size and header intact, is refused rather than
handed to training.
"""
import json
import os
import re
import struct
import time
import zlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..utils.checks import positive_int
from ..utils.paths import claim, host_temp_name
from ..utils.paths import remove_orphan_temps
from ..utils.processes import map_unordered
from .annotations import read_list_lines
from .video_io import BadVideoError, open_video

#: 2 added the per-frame checksums, 3 the header's checksum and the source's probe checksum; an
#: entry of another version reads as stale (rebuilt, or decoded).
FORMAT_VERSION = 3
MAGIC = b'HFCACHE\0'
ENTRY_SUFFIX = '.hfc'
_PREFIX = struct.Struct('<8sI')
_HEX8 = re.compile(r'[0-9a-f]{8}')
#: after the header's JSON: a line break and its CRC-32 in 8 hex digits
_HEADER_CRC = struct.Struct('<c8s')
#: bytes of each end of a source video its probe checksum covers (:func:`source_probe`)
_PROBE_BYTES = 64 << 10
_ALIGN = 4096
# Bytes of source frames decoded per batch while building: bounds memory for long or 4K videos.
_CHUNK_BYTES = 64 << 20

PathLike = Union[str, Path]


class FrameCacheError(RuntimeError):
    """A frame cache entry cannot be used; the message names the entry file."""


class MissingFrameCacheError(FrameCacheError, FileNotFoundError):
    """No entry exists for a video."""


class CorruptFrameCacheError(FrameCacheError):
    """An entry is truncated, has extra bytes, or its header or data are damaged."""


class StaleFrameCacheError(FrameCacheError):
    """An entry is intact but out of date: its source changed, or it was built differently."""


class UndecodableVideoError(FrameCacheError):
    """The source video cannot be opened or decoded: the video is bad, not the cache (a
    pipeline that decodes it instead fails on it the same way)."""


@dataclass
class FrameCacheHeader:
    """What an entry records about its frames and its source.

    Attributes:
        num_frames (int): frames stored.
        height (int): stored frame height.
        width (int): stored frame width.
        fps (float): the source's average frame rate (decord's ``get_avg_fps``).
        source (str): the video's path relative to the video root, as given to the builder.
        source_size (int): the source's size in bytes when it was decoded.
        source_mtime_ns (int): the source's modification time (ns) when it was decoded.
        source_probe_crc32 (str): CRC-32 of the source's first and last 64 KiB when it was
            decoded (:func:`source_probe`), 8 hex digits.
        source_shape (list[int]): ``[height, width]`` of the decoded source frames.
        short_side (int, optional): the short side frames were resized to; None if not resized.
        data_offset (int): byte offset of the first frame.
        crc32 (str): CRC-32 of the frame bytes, 8 hex digits.
        frame_crc32 (list[str]): CRC-32 of each frame's bytes, 8 hex digits each: a read checks
            the frames it copies without reading the rest of the entry.
        version (int): format version.
    """

    num_frames: int
    height: int
    width: int
    fps: float
    source: str
    source_size: int
    source_mtime_ns: int
    source_probe_crc32: str
    source_shape: List[int]
    short_side: Optional[int]
    data_offset: int
    crc32: str = '00000000'
    frame_crc32: List[str] = field(default_factory=list)
    version: int = FORMAT_VERSION
    channels: int = field(default=3, init=False)

    @property
    def shape(self) -> Tuple[int, int, int, int]:
        """``(num_frames, height, width, 3)``."""
        return (self.num_frames, self.height, self.width, self.channels)

    @property
    def frame_bytes(self) -> int:
        """Bytes of one stored frame."""
        return self.height * self.width * self.channels

    @property
    def file_size(self) -> int:
        """The exact size in bytes of a complete entry with this header."""
        return self.data_offset + self.num_frames * self.frame_bytes

    def payload(self) -> bytes:
        """The header's JSON, UTF-8."""
        return json.dumps(asdict(self), sort_keys=True).encode('utf-8')

    def encode(self) -> bytes:
        """The header block: magic, length, JSON, its checksum, spaces to ``data_offset``."""
        payload = self.payload()
        block = (_PREFIX.pack(MAGIC, len(payload)) + payload +
                 _HEADER_CRC.pack(b'\n', f'{zlib.crc32(payload):08x}'.encode()))
        if len(block) > self.data_offset:
            raise ValueError(f'frame cache header of {len(block)} bytes does not fit before '
                             f'data_offset={self.data_offset}')
        return block + b' ' * (self.data_offset - len(block))


def entry_path(cache_root: PathLike, relative: PathLike) -> Path:
    """The entry file of the video at ``relative`` (to the video root): ``<root>/<rel>.hfc``.

    Args:
        cache_root (str | Path): the cache's root directory.
        relative (str | Path): the video's path relative to the video root.

    Returns:
        Path: ``cache_root / (relative + '.hfc')``.
    """
    relative = os.path.normpath(str(relative))
    if os.path.isabs(relative) or relative == '.' or relative.split(os.sep)[0] == '..':
        raise ValueError(f'frame cache: video path {relative!r} must name a file inside the '
                         'video root (relative to it)')
    return Path(cache_root) / (relative + ENTRY_SUFFIX)


def source_stamp(source: PathLike) -> Tuple[int, int]:
    """``(size in bytes, mtime in ns)`` of a source video, the pair an entry is checked against."""
    stat = os.stat(source)
    return stat.st_size, stat.st_mtime_ns


def source_probe(source: PathLike) -> str:
    """CRC-32 (8 hex digits) of a source video's first and last 64 KiB (the whole file when it
    is smaller): a video container keeps its index (every frame's size and place) at one end,
    so another video of the same size differs there, for two reads of a read's cost."""
    with open(source, 'rb') as handle:
        size = os.fstat(handle.fileno()).st_size
        crc = zlib.crc32(handle.read(_PROBE_BYTES))
        if size > _PROBE_BYTES:
            handle.seek(max(_PROBE_BYTES, size - _PROBE_BYTES))
            crc = zlib.crc32(handle.read(_PROBE_BYTES), crc)
    return f'{crc:08x}'


def _parse_header(entry: Path, handle) -> FrameCacheHeader:
    prefix = handle.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size or prefix[:8] != MAGIC:
        raise CorruptFrameCacheError(f'{entry}: not a frame cache entry (bad magic or truncated '
                                     'header)')
    length = _PREFIX.unpack(prefix)[1]
    payload = handle.read(length)
    if len(payload) < length:
        raise CorruptFrameCacheError(f'{entry}: truncated header ({len(payload)} of {length} '
                                     'bytes)')
    try:
        values = json.loads(payload.decode('utf-8'))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptFrameCacheError(f'{entry}: unreadable header: {error}') from error
    if not isinstance(values, dict):
        raise CorruptFrameCacheError(f'{entry}: header is not a JSON object')
    if values.get('version') != FORMAT_VERSION:
        raise StaleFrameCacheError(f'{entry}: format version {values.get("version")}, this code '
                                   f'reads version {FORMAT_VERSION}; rebuild the entry')
    names = [f.name for f in fields(FrameCacheHeader) if f.init]
    missing = [name for name in names if name not in values]
    if missing:
        raise CorruptFrameCacheError(f'{entry}: header lacks {missing}')
    for name in ('num_frames', 'height', 'width', 'data_offset'):
        value = values[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CorruptFrameCacheError(f'{entry}: header field {name}={value!r} is not a '
                                         'positive int')
    checksums = values['frame_crc32']
    if (not isinstance(checksums, list) or len(checksums) != values['num_frames'] or
            not all(isinstance(value, str) and _HEX8.fullmatch(value) for value in checksums)):
        raise CorruptFrameCacheError(f'{entry}: header field frame_crc32 is not one 8-digit hex '
                                     f'checksum per frame ({values["num_frames"]} frames)')
    if values['data_offset'] < _PREFIX.size + length + _HEADER_CRC.size:
        raise CorruptFrameCacheError(f'{entry}: data_offset={values["data_offset"]} lies inside '
                                     'the header')
    mark = handle.read(_HEADER_CRC.size)
    crc = f'{zlib.crc32(payload):08x}'
    if len(mark) < _HEADER_CRC.size or _HEADER_CRC.unpack(mark) != (b'\n', crc.encode()):
        raise CorruptFrameCacheError(f'{entry}: the header\'s checksum {mark[1:]!r} is not its '
                                     f'CRC-32 {crc}: the header was changed after it was written')
    return FrameCacheHeader(**{name: values[name] for name in names})


def read_header(entry: PathLike) -> FrameCacheHeader:
    """Read and check an entry's header and size (not its source, not its data checksum).

    Raises:
        MissingFrameCacheError: no file at ``entry``.
        CorruptFrameCacheError: bad magic or header, or a size other than the header's.
        StaleFrameCacheError: another format version.
    """
    entry = Path(entry)
    with _open_entry(entry) as handle:
        header = _parse_header(entry, handle)
        _check_size(entry, header, os.fstat(handle.fileno()).st_size)
    return header


def _open_entry(entry: Path):
    try:
        return open(entry, 'rb')
    except FileNotFoundError:
        raise MissingFrameCacheError(
            f'{entry}: no frame cache entry; build it with tools/build_frame_cache.py') from None
    except OSError as error:
        # a directory or another user's file where the entry should be: not an entry to read,
        # and a FrameCacheError, so that a build writes it again and a reader can decode instead
        raise FrameCacheError(f'{entry}: cannot open the frame cache entry: {error}') from error


def _check_size(entry: Path, header: FrameCacheHeader, size: int) -> None:
    if size < header.file_size:
        raise CorruptFrameCacheError(f'{entry}: truncated: {size} bytes, its header says '
                                     f'{header.file_size} ({header.num_frames} frames)')
    if size > header.file_size:
        raise CorruptFrameCacheError(f'{entry}: {size} bytes, more than the {header.file_size} '
                                     'its header says')


def check_source(entry: PathLike, header: FrameCacheHeader, source: PathLike) -> None:
    """Refuse an entry whose source video changed since it was built.

    A source that does not exist is not checked: the cache may outlive its videos.

    Raises:
        StaleFrameCacheError: the source's size, modification time or probe checksum
            (:func:`source_probe`) differ from the header's.
    """
    if not os.path.exists(source):
        return
    size, mtime_ns = source_stamp(source)
    rebuild = 'rebuild it with tools/build_frame_cache.py or BuildFrameCacheHook'
    if (size, mtime_ns) != (header.source_size, header.source_mtime_ns):
        raise StaleFrameCacheError(
            f'{entry}: stale: its source {source} changed (size {header.source_size} -> {size}, '
            f'mtime_ns {header.source_mtime_ns} -> {mtime_ns}); {rebuild}')
    probe = source_probe(source)
    if probe != header.source_probe_crc32:
        raise StaleFrameCacheError(
            f'{entry}: stale: its source {source} has other contents of the same size and '
            f'modification time (checksum of its ends {header.source_probe_crc32} -> {probe}: '
            f'a copy that kept the time, as cp -p or rsync -a keep it); {rebuild}')


def check_short_side(entry: PathLike, header: FrameCacheHeader,
                     short_side: Optional[int]) -> None:
    """Refuse an entry built at another short side than the one expected.

    Raises:
        StaleFrameCacheError: ``header.short_side != short_side``.
    """
    if header.short_side != short_side:
        raise StaleFrameCacheError(
            f'{entry}: built with short_side={header.short_side}, expected '
            f'short_side={short_side}; rebuild it, or expect the size it was built with')


def verify_data(entry: PathLike, header: Optional[FrameCacheHeader] = None) -> None:
    """Recompute the CRC-32 of an entry's frames (reads the whole entry).

    Raises:
        CorruptFrameCacheError: the checksum differs from the header's.
    """
    entry = Path(entry)
    header = header or read_header(entry)
    crc = 0
    with open(entry, 'rb') as handle:
        handle.seek(header.data_offset)
        for block in iter(lambda: handle.read(_CHUNK_BYTES), b''):
            crc = zlib.crc32(block, crc)
    if f'{crc:08x}' != header.crc32:
        raise CorruptFrameCacheError(f'{entry}: frame data checksum {crc:08x} differs from its '
                                     f'header\'s {header.crc32}')


def open_entry(entry: PathLike, source: Optional[PathLike] = None,
               short_side: Union[int, None, str] = 'any') -> Tuple[FrameCacheHeader, np.memmap]:
    """Check an entry and map its frames read-only.

    The header, the size check and the map use one open file, so an entry replaced by a
    concurrent rebuild is never read half old, half new. The map touches no frame until indexed.

    Args:
        entry (str | Path): the entry file.
        source (str | Path, optional): the source video to check freshness against.
        short_side (int | None | str): the short side the entry must have been built with
            (None: not resized); ``'any'`` accepts any. Defaults to ``'any'``.

    Returns:
        tuple: the header and a read-only ``np.memmap`` of shape ``header.shape``.

    Raises:
        MissingFrameCacheError, CorruptFrameCacheError, StaleFrameCacheError.
    """
    entry = Path(entry)
    with _open_entry(entry) as handle:
        header = _parse_header(entry, handle)
        _check_size(entry, header, os.fstat(handle.fileno()).st_size)
        if short_side != 'any':
            check_short_side(entry, header, short_side)
        if source is not None:
            check_source(entry, header, source)
        frames = np.memmap(handle, dtype=np.uint8, mode='r', offset=header.data_offset,
                           shape=header.shape)
    return header, frames


def check_frames(frames: np.ndarray, frame_inds: np.ndarray, header: FrameCacheHeader,
                 entry: PathLike) -> None:
    """Check frames copied out of an entry against the header's per-frame checksums.

    Args:
        frames (np.ndarray): ``[len(frame_inds), H, W, 3]``, what :func:`read_frames` returned.
        frame_inds (np.ndarray): the entry's indices they were read at.
        header (FrameCacheHeader): the entry's header.
        entry (str | Path): the entry file, for the message.

    Raises:
        CorruptFrameCacheError: a frame's bytes differ from what the builder wrote (names the
            entry, its source video and the frame).
    """
    checked = set()
    for frame, index in zip(frames, np.asarray(frame_inds).reshape(-1).tolist()):
        if index in checked:
            continue
        checked.add(index)
        crc = f'{zlib.crc32(np.ascontiguousarray(frame).data):08x}'
        if crc != header.frame_crc32[index]:
            raise CorruptFrameCacheError(
                f'{entry}: frame {index} of {header.source} is damaged (checksum {crc}, its '
                f'header says {header.frame_crc32[index]}); rebuild the entry with '
                'tools/build_frame_cache.py --verify')


def read_frames(frames: np.ndarray, frame_inds: np.ndarray,
                name: str = 'frame cache') -> np.ndarray:
    """Copy the frames at ``frame_inds`` out of a mapped entry: only those frames are read.

    Args:
        frames (np.ndarray): ``[N, H, W, 3]``, typically the map from :func:`open_entry`.
        frame_inds (np.ndarray): integer indices in ``[0, N)``, any order, repeats allowed.
        name (str): what to name in errors (the entry or video). Defaults to ``'frame cache'``.

    Returns:
        np.ndarray: ``[len(frame_inds), H, W, 3]`` uint8, an in-memory copy.
    """
    inds = np.asarray(frame_inds)
    if inds.size == 0:
        raise IndexError(f'{name}: no frame indices given')
    if not np.issubdtype(inds.dtype, np.integer):
        raise TypeError(f'{name}: frame indices must be integers, got {inds.dtype}')
    inds = inds.reshape(-1)
    low, high = int(inds.min()), int(inds.max())
    if low < 0 or high >= len(frames):
        bad = low if low < 0 else high
        raise IndexError(f'{name}: frame index {bad} out of range for {len(frames)} frames')
    return np.asarray(frames[inds])


def resize_short_side(frames: np.ndarray, short_side: int) -> np.ndarray:
    """Resize ``[N, H, W, 3]`` frames so the short side is ``short_side``, keeping the ratio.

    Same size arithmetic and bilinear interpolation as mmaction2's
    ``Resize(scale=(-1, short_side))``, so a cache built at a short side holds exactly the frames
    that decoding then resizing would give.
    """
    import mmcv
    height, width = frames.shape[1:3]
    new_w, new_h = mmcv.rescale_size((width, height), (np.inf, short_side))
    if (new_h, new_w) == (height, width):
        return frames
    return np.stack([mmcv.imresize(frame, (new_w, new_h), interpolation='bilinear')
                     for frame in frames])


def write_entry(source: PathLike, entry: PathLike, relative: Optional[str] = None,
                short_side: Optional[int] = None) -> FrameCacheHeader:
    """Decode ``source`` with decord (once, in order) and write its entry atomically.

    Frames go to a temporary file beside ``entry`` (``.<name>.<host>.<pid>.tmp``), which is
    flushed to disk and renamed onto ``entry`` only when complete; on any failure it is deleted
    and an existing entry under the final name is left untouched.

    Args:
        source (str | Path): the video file.
        entry (str | Path): the entry file to write.
        relative (str, optional): the source path to record in the header. Defaults to
            ``str(source)``.
        short_side (int, optional): resize so the short side is this (as
            ``Resize(scale=(-1, short_side))``); None stores decoded frames unchanged.

    Returns:
        FrameCacheHeader: the header written.

    Raises:
        ValueError: a bad ``short_side``.
        FileNotFoundError: no source file.
        UndecodableVideoError: the source cannot be opened or decoded (names the file and
            frames).
        FrameCacheError: the entry cannot be written (names the entry).
    """
    import decord
    source, entry = Path(source), Path(entry)
    positive_int(short_side, 'short_side', optional=True)
    if not source.is_file():
        raise FileNotFoundError(f'{source}: source video not found (for frame cache {entry})')
    # Stamp before decoding: a source modified during the build then reads as stale.
    size, mtime_ns = source_stamp(source)
    probe = source_probe(source)
    try:
        reader = open_video(str(source))
        num_frames, fps = len(reader), float(reader.get_avg_fps())
    except (decord.DECORDError, RuntimeError) as error:
        detail = error.__cause__ if isinstance(error, BadVideoError) else error
        raise UndecodableVideoError(f'{source}: cannot open the video: {detail}') from error
    entry.parent.mkdir(parents=True, exist_ok=True)
    remove_orphan_temps(entry.parent, entry.name)
    temp = host_temp_name(entry)
    stamp = dict(source=relative or str(source), source_size=size, source_mtime_ns=mtime_ns,
                 source_probe_crc32=probe)
    try:
        with open(temp, 'wb') as handle:
            claim(handle)
            header = _write_frames(handle, reader, source, num_frames, fps, short_side, stamp)
            handle.seek(0)
            handle.write(header.encode())
            handle.flush()
            os.fsync(handle.fileno())
            os.replace(temp, entry)  # still open, so still locked: no sweep between
    except OSError as error:
        raise FrameCacheError(f'{entry}: writing the entry failed: {error}') from error
    finally:
        if temp.exists():
            temp.unlink()
    return header


def decode_in_order(reader, source: PathLike, stop: int) -> Iterator[Tuple[int, np.ndarray]]:
    """Frames ``0 .. stop - 1`` of an open decord reader as ``(first index, [n, H, W, 3])``
    chunks, decoded in order (decord's random access into some containers returns a
    neighbouring frame now and then), the first chunk one frame, the others about
    ``_CHUNK_BYTES`` each, so a long video never sits in memory whole.

    Raises:
        FrameCacheError: a frame cannot be decoded (names the file and the frames).
    """
    import decord
    start, chunk = 0, 1
    while start < stop:
        end = min(stop, start + chunk)
        try:
            frames = reader.get_batch(list(range(start, end))).asnumpy()
        except (decord.DECORDError, RuntimeError) as error:
            raise UndecodableVideoError(f'{source}: decoding frames {start}..{end - 1} of '
                                        f'{len(reader)} failed: {error}') from error
        yield start, frames
        chunk = max(1, _CHUNK_BYTES // frames[0].nbytes)
        start = end


def _write_frames(handle, reader, source: Path, num_frames: int, fps: float,
                  short_side: Optional[int], stamp: Dict) -> FrameCacheHeader:
    """Write the frames after a reserved header block; return the header, checksum included."""
    header, crc = None, 0
    for _, frames in decode_in_order(reader, source, num_frames):
        if header is None:
            source_shape = list(frames.shape[1:3])
        if short_side is not None:
            frames = _resized(frames, short_side, source)
        frames = np.ascontiguousarray(frames)
        if header is None:
            header = FrameCacheHeader(
                num_frames=num_frames, height=frames.shape[1], width=frames.shape[2], fps=fps,
                source_shape=source_shape, short_side=short_side, data_offset=0, **stamp)
            # The checksums have a fixed width: 8 hex digits and 4 bytes of JSON around each
            # per-frame one; 20 bytes leave room for data_offset's digits.
            needed = (_PREFIX.size + len(header.payload()) + _HEADER_CRC.size +
                      12 * num_frames + 20)
            header.data_offset = -(-needed // _ALIGN) * _ALIGN
            handle.seek(header.data_offset)
        crc = zlib.crc32(frames.data, crc)
        header.frame_crc32.extend(f'{zlib.crc32(frame.data):08x}' for frame in frames)
        handle.write(frames.data)
    header.crc32 = f'{crc:08x}'
    return header


def _resized(frames: np.ndarray, short_side: int, source: Path) -> np.ndarray:
    """:func:`resize_short_side` whose failure (a size past memory: OpenCV's allocation
    error) is this video's entry failing, named, not an error that stops every other build."""
    import cv2
    try:
        return resize_short_side(frames, short_side)
    except (cv2.error, MemoryError) as error:
        raise FrameCacheError(f'{source}: resizing its frames to short side {short_side} '
                              f'failed: {str(error).strip().splitlines()[-1]}') from error


def entry_problem(entry: PathLike, source: PathLike, short_side: Optional[int],
                  verify: bool = False) -> Optional[str]:
    """Why ``entry`` must be (re)built, or None when it is fresh.

    Args:
        entry (str | Path): the entry file.
        source (str | Path): its source video.
        short_side (int, optional): the short side it must have.
        verify (bool): also recompute the data checksum. Defaults to False.

    Returns:
        str | None: ``'missing'`` or the reason it is stale or corrupt; None if usable.
    """
    try:
        header, frames = open_entry(entry, source, short_side)
        del frames
        if verify:
            verify_data(entry, header)
    except MissingFrameCacheError:
        return 'missing'
    except FrameCacheError as error:
        return str(error)
    return None


@dataclass
class BuildSummary:
    """Counts of one :func:`build_frame_cache` run.

    Attributes:
        videos (int): videos listed.
        built (int): entries written that did not exist.
        rebuilt (int): stale or corrupt entries written again.
        why_rebuilt (dict): relative video path -> why its entry was written again (the
            video changed, another short side, damaged data), so that two configs that keep
            rewriting each other's entries, or a disk that damages them, can be told apart
            from new videos.
        fresh (int): entries already up to date, left alone.
        failed (dict): relative video path -> error message, for videos that could not be cached.
        undecodable (list): those of ``failed`` whose video cannot be opened or decoded (the
            others could not be written: a read-only or full disk, or a lost worker).
        lost (list): those of ``failed`` whose worker process died building the entry, even
            alone (killed, out of memory say: the machine's state, or the video's).
        frames (int): frames held by the cache for the listed videos after the run.
        bytes (int): bytes of those entries.
        bytes_written (int): bytes written by this run.
        seconds (float): wall time.
    """

    videos: int = 0
    built: int = 0
    rebuilt: int = 0
    why_rebuilt: Dict[str, str] = field(default_factory=dict)
    fresh: int = 0
    failed: Dict[str, str] = field(default_factory=dict)
    undecodable: List[str] = field(default_factory=list)
    lost: List[str] = field(default_factory=list)
    frames: int = 0
    bytes: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    def rebuilt_lines(self, shown: int = 5) -> List[str]:
        """``rebuilt VIDEO: why`` for the first ``shown`` entries written again (sorted), and
        how many more, for a log."""
        names = sorted(self.why_rebuilt)
        lines = [f'rebuilt {name}: {self.why_rebuilt[name]}' for name in names[:shown]]
        if len(names) > shown:
            lines.append(f'... and {len(names) - shown} more entries rebuilt')
        return lines

    def __str__(self) -> str:
        return (f'{self.videos} videos: {self.built} built, {self.rebuilt} rebuilt, '
                f'{self.fresh} fresh, {len(self.failed)} failed; {self.frames} frames, '
                f'{self.bytes / 2**20:.1f} MiB cached ({self.bytes_written / 2**20:.1f} MiB '
                f'written) in {self.seconds:.1f} s')


def rebuilt_because(problem: str, entry: PathLike) -> str:
    """Why an entry was written again, from the reader's refusal of it: without the entry's
    path (the log line names the video) and without the advice to rebuild it, which the
    builder has just followed."""
    reason = problem[len(f'{entry}: '):] if problem.startswith(f'{entry}: ') else problem
    return reason.split('; rebuild', 1)[0]


def _build_one(task: Tuple[str, str, str, Optional[int], bool]) -> Dict:
    relative, video_root, cache_root, short_side, verify = task
    entry = entry_path(cache_root, relative)
    source = Path(video_root) / relative
    result = dict(video=relative, status='fresh', written=0)
    try:
        problem = entry_problem(entry, source, short_side, verify)
        if problem is not None:
            header = write_entry(source, entry, relative, short_side)
            result.update(status='built' if problem == 'missing' else 'rebuilt',
                          written=header.file_size, problem=rebuilt_because(problem, entry))
        else:
            header = read_header(entry)
    except (FrameCacheError, OSError, ValueError) as error:
        return dict(video=relative, status='failed', error=str(error), written=0,
                    undecodable=isinstance(error, UndecodableVideoError))
    result.update(frames=header.num_frames, size=header.file_size)
    return result


def _init_worker() -> None:
    # One OpenCV thread per worker process: the workers already use every core.
    import cv2
    cv2.setNumThreads(1)


def build_frame_cache(videos: Sequence[str], video_root: PathLike, cache_root: PathLike,
                      short_side: Optional[int] = None, workers: int = 1, verify: bool = False,
                      progress: bool = True) -> BuildSummary:
    """Decode each video once into ``cache_root``; skip fresh entries, rebuild stale ones.

    Safe to run again (idempotent) and to interrupt: entries are written atomically. One bad
    video does not stop the others; its error is collected in ``summary.failed``. Under
    distributed training, call it on one rank only (the others wait on a barrier).

    Args:
        videos (Sequence[str]): video paths relative to ``video_root`` (duplicates are built once).
        video_root (str | Path): directory the paths are relative to.
        cache_root (str | Path): directory the entries go to, mirroring the videos' paths.
        short_side (int, optional): resize frames so the short side is this; None keeps them.
        workers (int): processes decoding in parallel. Defaults to 1.
        verify (bool): recompute the checksum of existing entries before calling them fresh.
            Defaults to False.
        progress (bool): show a tqdm progress bar. Defaults to True.

    Returns:
        BuildSummary: what was built, skipped and failed, with totals.
    """
    from tqdm import tqdm
    positive_int(workers, 'workers')
    positive_int(short_side, 'short_side', optional=True)
    start = time.perf_counter()
    unique = list(dict.fromkeys(os.path.normpath(v) for v in videos))
    for relative in unique:
        entry_path(cache_root, relative)
    tasks = [(v, str(video_root), str(cache_root), short_side, verify) for v in unique]
    summary = BuildSummary(videos=len(unique))
    bar = tqdm(total=len(tasks), desc='frame cache', unit='video', disable=not progress)
    if workers == 1:
        results = ((task, _build_one(task), None) for task in tasks)
    else:
        # Workers share no handles: each opens its own videos and entries.
        results = map_unordered(_build_one, tasks, workers, preload=[__name__],
                                initializer=_init_worker)
    try:
        for task, result, lost in results:
            if lost is not None:  # no entry was finished: its temporary file is cleaned later
                summary.failed[os.path.normpath(task[0])] = str(lost)
                summary.lost.append(os.path.normpath(task[0]))
            elif result['status'] == 'failed':
                summary.failed[result['video']] = result['error']
                if result['undecodable']:
                    summary.undecodable.append(result['video'])
            else:
                setattr(summary, result['status'], getattr(summary, result['status']) + 1)
                if result['status'] == 'rebuilt':
                    summary.why_rebuilt[result['video']] = result['problem']
                summary.frames += result['frames']
                summary.bytes += result['size']
                summary.bytes_written += result['written']
            bar.update(1)
            bar.set_postfix(failed=len(summary.failed), refresh=False)
    finally:
        bar.close()
        results.close()
    summary.seconds = time.perf_counter() - start
    return summary


def read_video_list(ann_file: PathLike, delimiter: str = ' ') -> List[str]:
    """The video paths of an annotation file, in order.

    Two formats: an mmaction2 ``VideoDataset`` list (``relative/path label`` per line, the path
    is the first field) or, for a ``.jsonl`` file, the frame-label annotation of
    :class:`~hyperframes_mm.datasets.FrameLabelVideoDataset` (its ``video`` fields).

    Args:
        ann_file (str | Path): the annotation file.
        delimiter (str): field separator of a ``VideoDataset`` list. Defaults to ``' '``.

    Returns:
        list[str]: relative video paths.

    Raises:
        AnnotationError: a blank line in a ``VideoDataset`` list, as the datasets refuse it;
            the first byte that is not UTF-8 text.
        ValueError: an absolute video path; no video listed.
    """
    ann_file = Path(ann_file)
    if ann_file.suffix == '.jsonl':
        from .frame_label_dataset import load_frame_annotations
        return [record.video for record in load_frame_annotations(ann_file)]
    videos = []
    # blank lines refused as the datasets refuse them: a list the cache accepted then stopped
    # training at its last line
    for line in read_list_lines(ann_file, delimiter, blank_lines=False):
        if line.blank:  # a list of blank lines alone: it lists no videos
            continue
        video = line.fields[0]
        if os.path.isabs(video):
            raise ValueError(f'{ann_file}:{line.number}: video path {video!r} must be relative '
                             'to the video root')
        videos.append(video)
    if not videos:
        raise ValueError(f'{ann_file}: lists no videos')
    return videos
