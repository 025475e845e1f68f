"""Video files in and out: :func:`open_video` is the one place the plugin opens a video to read
its frames (decord, as mmaction2's ``DecordInit``; a file that is missing, that it cannot read or
whose frames it returns out of place (:func:`decord_misread`) is a :class:`BadVideoError` naming
it), :func:`write_video` writes real video files (H.264 through PyAV, mp4v as the fallback),
atomically. Kept free of mmaction2 imports, so that frame-cache build workers load it cheaply."""
import functools
import io
import os
from pathlib import Path
from typing import List, Optional, Tuple, Union

import numpy as np

from ..utils.paths import claim, host_temp_name

_CODECS = ('libx264', 'mpeg4')


class BadVideoError(RuntimeError):
    """A video that cannot be loaded; the message names the file (and the sample index).

    Attributes:
        filename (str): the video.
        index (int, optional): the sample index in its dataset.
    """

    def __init__(self, message: str, filename: str = '', index: Optional[int] = None) -> None:
        super().__init__(message)
        self.filename = filename
        self.index = index


def _bad_video_errors() -> Tuple[type, ...]:
    """Exceptions that mean "this sample's data is broken", as opposed to a bug in the code.

    decord raises ``RuntimeError`` / ``DECORDError``, PyAV ``av.error.FFmpegError`` (an
    ``OSError`` / ``ValueError``), file access ``OSError``; the plugin's transforms raise
    ``ValueError`` naming the file and ``IndexError`` for frames a cache does not have.
    """
    errors: List[type] = [BadVideoError, OSError, EOFError, RuntimeError, ValueError, IndexError]
    try:
        from decord._ffi.base import DECORDError
        errors.append(DECORDError)
    except ImportError:
        pass
    try:
        import av
        errors.append(av.error.FFmpegError)
    except ImportError:
        pass
    return tuple(errors)


#: decord messages that say nothing of their cause, and what it is
_DECORD_HINTS = {
    'DECORDArrayCopyFromTo': ' (decord 0.6 cannot copy out the frames of some narrow widths, '
                             '16, 24, 48 and 72 pixels among them: re-encode the video at '
                             'another width)',
}


def _first_line(error: BaseException) -> str:
    """The first non-empty line of an error message (decord's run over many lines), with
    what it means where decord's words do not say."""
    hint = next((text for marker, text in _DECORD_HINTS.items() if marker in str(error)), '')
    for line in str(error).splitlines():
        if line.strip():
            return f'{type(error).__name__}: {line.strip()}{hint}'
    return type(error).__name__ + hint


#: containers (PyAV's format names) whose frames decord returns out of place, intact or
#: truncated, where their video stream has B-frames (pictures stored out of display order):
#: later frames in place of the first ones, then the last frame it reached repeated for the
#: rest ("recovered from nearest frames"). Only its own stderr says so, and a model learns from
#: and is scored on the wrong frames and a frozen image as if they were the video's. The same
#: container without B-frames (MPEG-4 Part 2, or H.264 as many cameras write it) reads right.
DECORD_MISREADS = {'mpegts': 'MPEG-TS'}
#: verdicts kept per process: the size of a Kinetics-400 training list, so that a DataLoader
#: worker probes each video of such a set once, not at every epoch's open of it
_VERDICTS = 2 ** 18


def decord_misread(source: Union[str, os.PathLike, io.BytesIO]) -> Optional[str]:
    """The container's description (``'MPEG-TS'``) if it is one of :data:`DECORD_MISREADS` and
    holds a video stream with B-frames, else None; also None where PyAV cannot open it either
    (decord's own open then says what is wrong).

    The header is probed with PyAV, since a name's suffix does not tell (an MPEG-TS named
    ``.mp4``): the decoder's reorder delay (``has_b_frames``), which FFmpeg's stream probe sets
    from the first frames, is what tells a stream decord misreads from one it reads right. A
    file's verdict is kept per (path, size, modification time), so that the probe runs once a
    process, not at every open of a training sample. An in-memory file is probed from where it
    stands and left there, since decord reads it from there.
    """
    if hasattr(source, 'read'):
        position = source.tell()
        try:
            return _probe_misread(source)
        finally:
            source.seek(position)
    path = os.fspath(source)
    try:
        stat = os.stat(path)
    except OSError:  # decord's own open says what is wrong
        return None
    return _misread_on_disk(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=_VERDICTS)
def _misread_on_disk(path: str, size: int, mtime_ns: int) -> Optional[str]:
    """:func:`_probe_misread` of a file; size and time are in the key so that a file written
    anew is probed anew."""
    return _probe_misread(path)


def _probe_misread(source: Union[str, io.BytesIO]) -> Optional[str]:
    import av
    try:
        with av.open(source) as container:
            misread = DECORD_MISREADS.get(container.format.name)
            reordered = any(stream.codec_context.has_b_frames
                            for stream in container.streams.video)
            return misread if reordered else None
    except av.error.FFmpegError:
        return None


def open_video(source: Union[str, io.BytesIO], num_threads: int = 1,
               name: Optional[str] = None, refuse_misread: bool = True):
    """A ``decord.VideoReader`` on ``source`` (a path, or an in-memory file named ``name``).

    Every reader the plugin makes comes from here, so that a broken file fails the same way
    everywhere: as a :class:`BadVideoError` naming the file, not as decord's many-line
    ``RuntimeError`` naming neither file nor sample. A local path that does not exist says so:
    decord reports it as a read error, which reads as a damaged file. A container whose frames
    decord returns out of place (:func:`decord_misread`) is refused, saying how to remux it:
    decord would hand out wrong frames without an error. ``refuse_misread=False`` opens it all
    the same, for a caller that reads only its frame count and rate (the doctor, for a pipeline
    that decodes with another library).
    """
    import decord
    name = name or str(source)
    path = isinstance(source, (str, os.PathLike))
    where = '' if not path or name == str(source) else f' ({source})'
    url = path and '://' in str(source)
    if path and not url and not os.path.exists(source):
        raise BadVideoError(f'{name}: video file not found{where}', name)
    # a URL is decord's to open: a probe of it could wait on the network
    misread = None if url or not refuse_misread else decord_misread(source)
    if misread is not None:
        # the reason is the cause, as decord's error is for a file it cannot read: the doctor
        # and the frame-cache builder report the cause
        reason = ValueError(
            f'{misread} with B-frames (pictures stored out of display order), whose frames '
            'decord 0.6 returns out of place (later frames first, then one frame repeated): '
            'remux it into mp4 without re-encoding (ffmpeg -i IN -c copy OUT.mp4) and list the '
            'mp4')
        raise BadVideoError(f'{name}{where}: {reason}', name) from reason
    try:
        return decord.VideoReader(source, num_threads=num_threads)
    except _bad_video_errors() as error:
        raise BadVideoError(f'{name}: decord cannot read it as a video (truncated, not a video, '
                            f'or no video stream): {_first_line(error)}', name) from error


def write_video(path: Union[str, Path], frames: np.ndarray, fps: float = 25.0,
                crf: int = 18) -> str:
    """Encode ``[N, H, W, 3]`` uint8 RGB frames into ``path``; returns the codec used.

    H.264 (libx264) where PyAV's FFmpeg has it, else MPEG-4 Part 2 ('mp4v'). The file is written
    to a temporary name beside ``path`` (``.NAME.HOST.PID.tmp``,
    :func:`~hyperframes_mm.utils.paths.host_temp_name`), locked while it is written, and renamed
    into place: a killed run never leaves a half-written video under the final name, and a sweep
    (:func:`~hyperframes_mm.utils.paths.remove_orphan_temps`) tells a killed writer's file from
    a live one's. The container is the one FFmpeg names by ``path``'s suffix. Odd sizes are
    refused (yuv420p needs even H and W).
    """
    import av
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f'{path}: expected uint8 frames [N, H, W, 3], got {frames.dtype} '
                         f'{frames.shape}')
    height, width = frames.shape[1:3]
    if height % 2 or width % 2:
        raise ValueError(f'{path}: H.264/yuv420p needs even sizes, got {height}x{width}')
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the temporary name ends in .tmp, which names no container: the format is the one FFmpeg
    # guesses from the final name (a container made for writing opens no file until it writes)
    try:
        with av.open(str(path), mode='w') as named:
            container_format = named.format.name
    except ValueError as error:
        raise ValueError(f'{path}: FFmpeg names no container by the suffix {path.suffix!r} '
                         f'({error})') from error
    temp = host_temp_name(path)
    last_error = None
    try:
        # PyAV writes the file through its own descriptor, by name; this handle, open on the
        # same file, holds the lock that tells a sweep the file is a live writer's
        with open(temp, 'wb') as handle:
            claim(handle)
            for codec in _CODECS:
                try:
                    _encode(str(temp), frames, fps, codec, crf, container_format)
                except (av.error.FFmpegError, av.codec.codec.UnknownCodecError,
                        ValueError) as error:
                    last_error = error
                    continue
                os.replace(temp, path)  # still open, so still locked: no sweep between
                return codec
    finally:
        temp.unlink(missing_ok=True)
    raise RuntimeError(f'{path}: no usable video encoder among {_CODECS}: {last_error}')


def _encode(path: str, frames: np.ndarray, fps: float, codec: str, crf: int,
            container_format: str) -> None:
    import av
    from fractions import Fraction
    with av.open(path, mode='w', format=container_format) as container:
        stream = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = 'yuv420p'
        if codec == 'libx264':
            # Fixed settings and one thread make the bytes depend only on the frames. PyAV
            # opens the codec with its own thread count and type (automatic, sliced), which
            # override a 'threads' option, so both are set on the codec context. x264's
            # macroblock tree is off: with it, the same frames encoded after other videos in
            # one process gave other bytes (its SIMD code reads memory it did not write).
            stream.options = {'crf': str(crf), 'preset': 'veryfast', 'threads': '1',
                              'x264-params': 'mbtree=0'}
            stream.codec_context.thread_count = 1
            stream.codec_context.thread_type = 'NONE'
        else:
            stream.options = {'qscale': '2'}
        rate = Fraction(fps).limit_denominator(1001)
        for index, frame in enumerate(frames):
            picture = av.VideoFrame.from_ndarray(frame, format='rgb24')
            picture.pts, picture.time_base = index, 1 / rate  # x264's rate control reads them
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
