"""Frame sources for streaming inference: video files (decord or PyAV), URLs and cameras (PyAV).

A source yields ``(index, time_s, frame)`` in display order, ``frame`` an ``H x W x 3`` uint8
RGB array, and raises :class:`SourceError` naming the stream when it cannot open or goes on.

* Files decode with decord by default, the decoder of mmaction2's ``DecordDecode``: a stream
  then sees the very pixels offline testing sees. decord stops at a corrupt packet (the stream
  ends there with a :class:`SourceError`); the PyAV backend skips the packet, logs it, and
  decodes on. An MPEG-TS file is read with PyAV whatever the backend, with a logged note:
  decord gives later frames in place of its first ones and repeats one frame for the rest.
* URLs (``rtsp://``, ``http://``, ``tcp://``...) and cameras (``/dev/videoN``) decode with PyAV,
  with an open timeout and a read timeout: a stream that stalls longer than ``read_timeout``
  raises :class:`SourceError` (the streaming engine then reconnects or stops that stream).
"""
import logging
import os
import re
from typing import Iterator, Optional, Tuple

import numpy as np
from mmengine.logging import print_log

BACKENDS = ('auto', 'decord', 'pyav')
_URL = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')

Frame = Tuple[int, float, np.ndarray]


class SourceError(RuntimeError):
    """A stream that cannot be opened or read; the message names the stream and the source."""


def is_live(uri: str) -> bool:
    """True for a URL or a camera device: sources that may stall, end and come back."""
    return bool(_URL.match(uri)) or uri.startswith('/dev/video')


class VideoSource:
    """One stream's frames, in order.

    Args:
        uri (str): a video file, a URL (``rtsp://``, ``http(s)://``, ``tcp://``, ``udp://``...)
            or a V4L2 camera (``/dev/video0``).
        name (str, optional): the stream's name in logs and outputs. Defaults to ``uri``.
        backend (str): ``'decord'`` or ``'pyav'``; ``'auto'`` takes decord for files and PyAV
            for URLs and cameras. Defaults to ``'auto'``. A file in a container whose frames
            decord returns out of place
            (:func:`~hyperframes_mm.datasets.video_io.decord_misread`) is read with PyAV
            either way (logged at :meth:`open`).
        open_timeout (float): seconds to wait for a URL to open. Defaults to 10.
        read_timeout (float): seconds without data before a URL counts as stalled.
            Defaults to 10.
        fps (float, optional): frame rate to use when the source does not tell (a camera) or
            to override it. Defaults to None.
    """

    def __init__(self, uri: str, name: Optional[str] = None, backend: str = 'auto',
                 open_timeout: float = 10.0, read_timeout: float = 10.0,
                 fps: Optional[float] = None) -> None:
        if backend not in BACKENDS:
            raise ValueError(f'VideoSource: backend must be one of {BACKENDS}, got {backend!r}')
        self.uri = str(uri)
        self.name = name or self.uri
        self.live = is_live(self.uri)
        if backend == 'decord' and self.live:
            raise ValueError(f'{self.name}: decord reads files only; use backend=\'pyav\' for '
                             f'{self.uri}')
        self.backend = ('pyav' if self.live else 'decord') if backend == 'auto' else backend
        self.open_timeout = open_timeout
        self.read_timeout = read_timeout
        self.fps_override = fps
        self.fps: Optional[float] = None
        self.skipped_packets = 0
        self._reader = None

    def _fail(self, what: str, error: BaseException) -> SourceError:
        first = next((line.strip() for line in str(error).splitlines() if line.strip()),
                     type(error).__name__)
        return SourceError(f'{self.name}: {what} ({self.uri}): {type(error).__name__}: {first}')

    def open(self) -> None:
        """Open the source and read its frame rate.

        Raises:
            SourceError: the file does not exist or is empty, the URL does not resolve or
                refuses, or the data is not a video.
        """
        self.close()
        if not self.live:
            if not os.path.isfile(self.uri):
                raise SourceError(f'{self.name}: video file not found: {self.uri}')
            if os.path.getsize(self.uri) == 0:
                raise SourceError(f'{self.name}: video file is empty (0 bytes): {self.uri}')
        if self.backend == 'decord':
            self._avoid_decord_misreads()
        try:
            fps = self._open_decord() if self.backend == 'decord' else self._open_pyav()
        except SourceError:
            raise
        except Exception as error:  # decord and FFmpeg raise many unrelated types
            self.close()
            raise self._fail('cannot open', error) from error
        self.fps = self.fps_override or fps

    def _avoid_decord_misreads(self) -> None:
        """Read a container decord returns frames of out of place
        (:func:`~hyperframes_mm.datasets.video_io.decord_misread`) with PyAV, saying so: a
        stream never scores frames other than the video's. (``open_video`` refuses such a
        file: ``DecordDecode`` needs decord's reader, a stream does not.)"""
        from ..datasets.video_io import decord_misread
        misread = decord_misread(self.uri)
        if misread is not None:
            print_log(f'{self.name}: {self.uri} is {misread}, whose frames decord returns out of '
                      'place (later frames first, then one frame repeated); reading it with '
                      'PyAV', logger='current', level=logging.WARNING)
            self.backend = 'pyav'

    def _open_decord(self) -> Optional[float]:
        from ..datasets.video_io import open_video
        self._reader = open_video(self.uri, name=self.name)
        if len(self._reader) == 0:
            raise SourceError(f'{self.name}: the video has no frames: {self.uri}')
        return float(self._reader.get_avg_fps())

    def _open_pyav(self) -> Optional[float]:
        import av
        options = dict(format='v4l2') if self.uri.startswith('/dev/video') else {}
        self._reader = av.open(self.uri, timeout=(self.open_timeout, self.read_timeout),
                               **options)
        if not self._reader.streams.video:
            raise SourceError(f'{self.name}: no video stream in {self.uri}')
        stream = self._reader.streams.video[0]
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        return float(rate) if rate else None

    def frames(self) -> Iterator[Frame]:
        """Decoded frames ``(index, time in seconds, H x W x 3 uint8 RGB)`` from the start.

        Raises:
            SourceError: decoding cannot go on (decord at a corrupt packet, a stalled or
                dropped URL).
        """
        if self._reader is None:
            raise SourceError(f'{self.name}: frames() before open()')
        if self.backend == 'decord':
            yield from self._decord_frames()
        else:
            yield from self._pyav_frames()

    def _decord_frames(self) -> Iterator[Frame]:
        reader = self._reader
        for index in range(len(reader)):
            try:
                image = reader.next().asnumpy()
                time_s = float(reader.get_frame_timestamp(index)[0])
            except StopIteration:
                return
            except Exception as error:  # DECORDError at a corrupt packet
                raise self._fail(f'decoding stopped at frame {index}', error) from error
            if image.ndim != 3 or image.shape[-1] != 3:
                # decord 0.6's sequential reader returns 4- or 6-channel garbage at some narrow
                # widths where its batch reader raises; the model would refuse it by channel
                # count, naming neither the file nor the cause, and end every stream's run
                raise SourceError(
                    f'{self.name}: decord decoded frame {index} as {image.shape}, not H x W x 3 '
                    f'RGB ({self.uri}): decord 0.6 cannot decode some narrow widths, 16, 24, 48 '
                    'and 72 pixels among them; re-encode the video at another width, or read '
                    'it with backend=\'pyav\' (stream_infer.py --backend pyav)')
            yield index, time_s, image

    def _pyav_frames(self) -> Iterator[Frame]:
        import av
        container = self._reader
        stream = container.streams.video[0]
        index = 0
        try:
            for packet in container.demux(stream):
                try:
                    decoded = packet.decode()
                except av.error.InvalidDataError as error:
                    # One corrupt packet spoils at most the frames up to the next keyframe;
                    # the decoder resynchronises by itself.
                    self.skipped_packets += 1
                    print_log(f'{self.name}: skipped a corrupt packet after frame {index} '
                              f'({error})', logger='current', level=logging.WARNING)
                    continue
                for frame in decoded:
                    time_s = frame.time if frame.time is not None else \
                        index / (self.fps or 1.0)
                    yield index, float(time_s), frame.to_ndarray(format='rgb24')
                    index += 1
        except av.error.FFmpegError as error:
            # av raises ExitError when the read timeout interrupts a stalled read.
            stalled = isinstance(error, av.error.ExitError)
            what = (f'no data for {self.read_timeout:g} s (stalled)' if stalled else
                    'reading failed') + f' after frame {index}'
            raise self._fail(what, error) from error

    def close(self) -> None:
        """Release the decoder (safe to call twice)."""
        reader, self._reader = self._reader, None
        if reader is not None and hasattr(reader, 'close'):
            reader.close()

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.uri!r}, name={self.name!r}, ' \
               f'backend={self.backend!r})'
