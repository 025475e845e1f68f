"""Streaming inference: per-window predictions from video files, URLs and cameras, live.

Each stream has a reader thread that decodes frames into a ring buffer of the last ``window``
frames and, every ``stride`` frames, prepares the window's model input with the config's own
test pipeline (:class:`~hyperframes_mm.apis.inference.WindowPipeline`). Prepared windows of
all streams meet in one bounded queue; the model thread takes up to ``batch_size`` of them at
once, scores them, applies the alert rule, and emits one record per window. Decoding and
preprocessing (in the reader threads) overlap the model (decord, PyAV, OpenCV and torch
release the GIL while they work).

Windows end on frames ``stride - 1, 2 * stride - 1, ...`` of a stream (from the first one with
a whole window before it). A window ending at frame ``f`` is the virtual video
``f - window + 1 .. f``; its frames are the ones the test sampler picks from a video of
``window`` frames, so the prediction equals offline testing given the same frame indices
(``tests/deploy/test_stream.py`` checks it to 1e-5). In a cascade each model takes its own
window length, ending at the same frame.

Cascade (``confirm=...``): the screening stage runs on every window; the confirming stage only
on windows whose screening alert score reaches ``screen_threshold``. Its input is prepared in
the model thread from the window's frames, kept by reference, so unflagged windows cost the
confirmer nothing. Flagged windows wait for a fuller confirmer batch (:func:`should_confirm`);
each stream's records still come out in window order. Alerts then follow the confirmer's
scores; an unflagged window counts as score 0.

Bad input stops only its own stream, with one log line: a missing file, a URL that does not
resolve or refuses, a file that ends early or holds a corrupt packet (decord stops there,
PyAV skips the packet). URLs and cameras reconnect up to ``reconnect`` times in a row when they
fail, stall (no data for ``read_timeout`` s) or end.
"""
import logging
import queue
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Hashable, List, NamedTuple, Optional, Sequence, Union

import numpy as np
from mmengine.logging import print_log

from ..utils import positive_int
from .alerts import AlertRule, Hysteresis
from .sources import SourceError, VideoSource, is_live
from .stages import ModelStage


@dataclass
class StreamStats:
    """What happened to one stream."""
    name: str
    uri: str
    frames: int = 0
    windows: int = 0
    dropped_windows: int = 0
    skipped_packets: int = 0
    reconnects: int = 0
    status: str = 'running'
    message: str = ''


@dataclass
class StreamReport:
    """Totals of a run: streams, windows, per-stage seconds, alerts.

    ``decode_s`` and ``preprocess_s`` add up the reader threads' time (they run side by side);
    ``model_s`` is the screening (or only) model's time in the model thread,
    ``confirm_prepare_s`` / ``confirm_model_s`` the confirmer's; ``wall_s`` is end to end.
    """
    streams: List[StreamStats]
    windows: int = 0
    confirm_windows: int = 0
    confirm_batches: int = 0
    wall_s: float = 0.0
    decode_s: float = 0.0
    preprocess_s: float = 0.0
    model_s: float = 0.0
    confirm_prepare_s: float = 0.0
    confirm_model_s: float = 0.0
    batches: int = 0
    alerts: List[Dict] = field(default_factory=list)
    records: List[Dict] = field(default_factory=list)

    @property
    def windows_per_s(self) -> float:
        return self.windows / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def failed(self) -> List[StreamStats]:
        return [stats for stats in self.streams if stats.status == 'failed']

    def summary(self) -> str:
        """Lines for the end of a run: streams, per-stage timing, cascade counts, alerts."""
        frames = sum(stats.frames for stats in self.streams)
        per_window = max(self.windows, 1)
        lines = [f'{len(self.streams)} streams, {frames} frames, {self.windows} windows in '
                 f'{self.wall_s:.2f} s: {self.windows_per_s:.1f} windows/s end to end '
                 f'({self.batches} model batches)']
        for stats in self.streams:
            extra = ''.join(f', {value} {label}' for value, label in (
                (stats.dropped_windows, 'windows dropped'),
                (stats.skipped_packets, 'corrupt packets skipped'),
                (stats.reconnects, 'reconnects')) if value)
            lines.append(f'  {stats.name}: {stats.status}, {stats.frames} frames, '
                         f'{stats.windows} windows{extra}'
                         f'{": " + stats.message if stats.message else ""}')
        lines.append(f'stage timing (s total, ms/window): decode {self.decode_s:.2f} '
                     f'({1e3 * self.decode_s / per_window:.2f}), preprocess '
                     f'{self.preprocess_s:.2f} ({1e3 * self.preprocess_s / per_window:.2f}), '
                     f'model {self.model_s:.2f} ({1e3 * self.model_s / per_window:.2f})')
        if self.confirm_windows or self.confirm_model_s:
            combined = self.model_s + self.confirm_prepare_s + self.confirm_model_s
            lines.append(f'cascade: screening ran on {self.windows} windows, confirming on '
                         f'{self.confirm_windows} ({100 * self.confirm_windows / per_window:.1f}'
                         f'%, {self.confirm_batches} batches); confirm preprocess '
                         f'{self.confirm_prepare_s:.2f} s, confirm model '
                         f'{self.confirm_model_s:.2f} s; combined model latency '
                         f'{1e3 * combined / per_window:.2f} ms/window')
        starts = [alert for alert in self.alerts if alert['event'] == 'alert_start']
        lines.append(f'alerts raised: {len(starts)}' + ''.join(
            f'\n  {alert["stream"]}: t={alert["t"]:.2f} s (window {alert["window"]}, '
            f'score {alert["score"]:.3f})' for alert in starts))
        return '\n'.join(lines)


@dataclass
class _Window:
    stream: int
    index: int
    start_frame: int
    end_frame: int
    t_start: float
    t_end: float
    fps: Optional[float]
    key: Hashable
    packed: Dict
    confirm_frames: Optional[List[np.ndarray]] = None


@dataclass
class _StreamEnd:
    stream: int


class SourcePolicy(NamedTuple):
    """How the engine opens a source it is given by name, and reopens a live one that ended.

    Attributes: the :class:`StreamEngine` arguments of the same names.
    """
    backend: str
    open_timeout: float
    read_timeout: float
    reconnect: int
    reconnect_delay: float

    def open(self, uri: str, name: Optional[str], decoder: str) -> VideoSource:
        """A source for ``uri``: URLs and cameras through PyAV, files through ``backend``
        (``'auto'``: the model's ``decoder``)."""
        backend = decoder if self.backend == 'auto' else self.backend
        return VideoSource(uri, name, 'auto' if is_live(uri) else backend, self.open_timeout,
                           self.read_timeout)


class StreamEngine:
    """Run one model (or a screening/confirming cascade) over several live streams.

    Args:
        stage (ModelStage): the model run on every window (the screening model of a cascade).
        stride (int): frames between consecutive windows of a stream. Defaults to 4.
        window (int, optional): frames a window spans. Defaults to the longest window of the
            stages at the stream's fps (K clip spans of the test sampler). One shorter than a
            stage's clip is refused here (:meth:`ModelStage.check_window`).
        batch_size (int): windows per model call, taken from all streams. Defaults to 8.
        alert (AlertRule, optional): raise alerts from the (confirming) scores, with
            hysteresis. Defaults to None.
        confirm (ModelStage, optional): a confirming model for a cascade. Defaults to None.
        screen_threshold (float, optional): a window goes to ``confirm`` when its screening
            alert score (top score among ``alert.classes``) reaches this. Required with
            ``confirm``.
        confirm_wait (float): seconds a flagged window may wait for a fuller confirmer batch
            (see :func:`should_confirm`). Defaults to 1.
        backend (str): decoder for files: ``'decord'``, ``'pyav'`` or ``'auto'`` (the decoder
            of the config's test pipeline, so a stream sees offline testing's pixels); URLs
            and cameras always use PyAV. Defaults to ``'auto'``.
        reconnect (int): reconnection attempts in a row for URLs and cameras. Defaults to 3.
        reconnect_delay (float): seconds before a reconnection attempt. Defaults to 1.
        open_timeout (float): seconds a URL may take to open. Defaults to 10.
        read_timeout (float): seconds without data before a URL counts as stalled.
            Defaults to 10.
        queue_size (int, optional): prepared windows waiting for the model. Files wait when it
            is full; live sources drop the window (counted). Defaults to ``4 * batch_size``.
        sink (callable, optional): called with every window record and event record (dicts,
            JSON-serialisable), in the model thread. Defaults to None.
        keep_records (bool): keep the records in the report. Defaults to False.
        progress (bool): a live progress line on stderr. Defaults to True.
    """

    def __init__(self,
                 stage: ModelStage,
                 stride: int = 4,
                 window: Optional[int] = None,
                 batch_size: int = 8,
                 alert: Optional[AlertRule] = None,
                 confirm: Optional[ModelStage] = None,
                 screen_threshold: Optional[float] = None,
                 confirm_wait: float = 1.0,
                 backend: str = 'auto',
                 reconnect: int = 3,
                 reconnect_delay: float = 1.0,
                 open_timeout: float = 10.0,
                 read_timeout: float = 10.0,
                 queue_size: Optional[int] = None,
                 sink: Optional[Callable[[Dict], None]] = None,
                 keep_records: bool = False,
                 progress: bool = True) -> None:
        if window is not None and window < 1:
            raise ValueError(f'StreamEngine: window must be >= 1 frame, got {window!r}')
        if window is not None:
            for each in filter(None, (stage, confirm)):
                each.check_window(window, 'StreamEngine: window')
        if reconnect < 0:
            raise ValueError(f'StreamEngine: reconnect must be >= 0, got {reconnect}')
        if confirm_wait < 0:
            raise ValueError(f'StreamEngine: confirm_wait must be >= 0 s, got {confirm_wait}')
        if (confirm is None) != (screen_threshold is None):
            raise ValueError('StreamEngine: a cascade needs both confirm and screen_threshold')
        if confirm is not None and (alert is None or alert.classes is None):
            raise ValueError('StreamEngine: a cascade needs an AlertRule with classes (the '
                             'event classes the screening model flags and the confirmer checks)')
        self.stage = stage
        self.confirm = confirm
        self.screen_threshold = screen_threshold
        self.confirm_wait = confirm_wait
        self.stride = positive_int(stride, 'stride', 'StreamEngine')
        self.window = window
        self.batch_size = positive_int(batch_size, 'batch_size', 'StreamEngine')
        self.alert = alert
        self.sources = SourcePolicy(backend, open_timeout, read_timeout, reconnect,
                                    reconnect_delay)
        self.queue_size = queue_size or 4 * batch_size
        self.sink = sink
        self.keep_records = keep_records
        self.progress = progress

    # ------------------------------------------------------------------ public entry
    def run(self, sources: Sequence[Union[str, VideoSource]],
            names: Optional[Sequence[str]] = None) -> StreamReport:
        """Stream every source to its end (or until interrupted); returns the report.

        Every thread is joined before this returns, also when the model raises or the run is
        interrupted (KeyboardInterrupt), which then propagates.
        """
        if not sources:
            raise ValueError('StreamEngine.run: no sources given')
        if names is not None and len(names) != len(sources):
            raise ValueError(f'StreamEngine.run: {len(names)} names for {len(sources)} sources')
        resolved = [source if isinstance(source, VideoSource) else
                    self.sources.open(str(source), names[index] if names else None,
                                      self.stage.decoder)
                    for index, source in enumerate(sources)]
        report = StreamReport([StreamStats(source.name, source.uri) for source in resolved])
        self._queue: queue.Queue = queue.Queue(self.queue_size)
        self._confirm_fits: set = set()  # streams whose frames the confirming graph takes
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._report = report
        threads = [threading.Thread(target=self._read, args=(index, source), daemon=True,
                                    name=f'stream-{source.name}')
                   for index, source in enumerate(resolved)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        try:
            self._model_loop(len(resolved))
        finally:
            self._stop.set()
            self._drain()
            for thread in threads:
                thread.join()
            report.wall_s = time.perf_counter() - start
        return report

    # ----------------------------------------------------------------- reader threads
    def _window_length(self, fps: Optional[float]) -> int:
        if self.window is not None:
            return self.window
        stages = [self.stage] + ([self.confirm] if self.confirm is not None else [])
        return max(stage.window_length(fps) for stage in stages)

    def _put(self, item, live: bool) -> bool:
        """Queue ``item``; files wait for room, live sources drop it when the queue is full."""
        if live:
            try:
                self._queue.put_nowait(item)
                return True
            except queue.Full:
                return False
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _read(self, stream: int, source: VideoSource) -> None:
        stats = self._report.streams[stream]
        attempts = 0  # reconnections in a row without a frame in between
        # Frame numbers and times continue across reconnections: [next frame, time offset].
        position = [0, 0.0]
        try:
            while not self._stop.is_set():
                error_text, first_frame = None, position[0]
                try:
                    source.open()
                    self._read_frames(stream, source, stats, position)
                except SourceError as error:
                    error_text = str(error)
                    print_log(error_text, logger='current', level=logging.ERROR)
                except Exception as error:  # a pipeline step refused this stream's frames
                    stats.status, stats.message = 'failed', f'{source.name}: {error!r}'
                    print_log(stats.message, logger='current', level=logging.ERROR)
                    return
                finally:
                    stats.skipped_packets = source.skipped_packets
                    source.close()
                if self._stop.is_set():
                    stats.status = 'stopped'
                    return
                if position[0] > first_frame:
                    attempts = 0
                if not source.live or attempts >= self.sources.reconnect:
                    stats.status = 'failed' if error_text else 'ended'
                    stats.message = error_text or stats.message
                    if source.live and self.sources.reconnect:
                        stats.message = (f'{error_text or source.name + ": the stream ended"} '
                                         f'(gave up after {attempts} reconnection attempts)')
                    return
                attempts += 1
                stats.reconnects += 1
                print_log(f'{error_text or source.name + ": the stream ended"}; reconnecting in '
                          f'{self.sources.reconnect_delay:g} s (attempt {attempts} of '
                          f'{self.sources.reconnect})', logger='current', level=logging.WARNING)
                self._stop.wait(self.sources.reconnect_delay)
        finally:
            self._put(_StreamEnd(stream), live=False)

    def _read_frames(self, stream: int, source: VideoSource, stats: StreamStats,
                     position: list) -> None:
        """Decode one connection of ``source``, advancing ``position`` frame by frame. The
        ring buffer starts empty: frames of two connections are not one video."""
        fps = source.fps
        window = self._window_length(fps)
        buffer: deque = deque(maxlen=window)
        times: deque = deque(maxlen=window)
        frames = source.frames()
        first_frame, time_offset = position
        step = 1.0 / fps if fps else 0.0
        count = made = 0
        local_decode = local_prepare = 0.0
        try:
            while not self._stop.is_set():
                tick = time.perf_counter()
                try:
                    _, time_s, image = next(frames)
                except StopIteration:
                    break
                local_decode += time.perf_counter() - tick
                frame_index = first_frame + count
                count += 1
                buffer.append(image)
                times.append(time_offset + time_s)
                position[0], position[1] = frame_index + 1, time_offset + time_s + step
                stats.frames += 1
                # Windows end on frames stride-1, 2*stride-1, ... of the connection (once a
                # whole window is buffered), whatever the window length: runs of different
                # models over one stream score windows that end on the same frames.
                if count < window or count % self.stride:
                    continue
                tick = time.perf_counter()
                self._queue_window(stream, stats, source, buffer, times, frame_index, window, fps)
                made += 1
                local_prepare += time.perf_counter() - tick
            if count >= window and not made and not source.live and not self._stop.is_set():
                # a file that holds a whole window but ends before a window's end frame (a
                # stride longer than what follows the first window) would end with no
                # prediction and no word, read as a clip with no event: score its last window
                tick = time.perf_counter()
                self._queue_window(stream, stats, source, buffer, times, first_frame + count - 1,
                                   window, fps)
                local_prepare += time.perf_counter() - tick
            if count < window and not self._stop.is_set():
                note = f'{count} frames, fewer than one {window}-frame window: no prediction'
                if not source.live:
                    # in the summary too: a short file otherwise reads as a stream that ended
                    # normally with no event in it (a live source's note would outlast the
                    # connection it was about)
                    stats.message = note
                print_log(f'{source.name}: {note}', logger='current', level=logging.WARNING)
        finally:
            frames.close()
            with self._lock:
                self._report.decode_s += local_decode
                self._report.preprocess_s += local_prepare

    def _queue_window(self, stream: int, stats: StreamStats, source: VideoSource,
                      buffer: deque, times: deque, end_frame: int, window: int,
                      fps: Optional[float]) -> None:
        """Queue the window of the buffered frames, which ends on ``end_frame``."""
        item = self._prepare(stream, stats.windows, list(buffer), times[0], times[-1],
                             end_frame, window, fps, source.name)
        if self._put(item, source.live):
            stats.windows += 1
        else:
            stats.dropped_windows += 1

    def _prepare(self, stream: int, index: int, frames: List[np.ndarray], t_start: float,
                 t_end: float, end_frame: int, window: int, fps: Optional[float],
                 name: str) -> _Window:
        own = self.stage.window_length(fps) if self.window is None else window
        key, packed = self.stage.prepare(frames[-own:], fps, name)
        item = _Window(stream, index, end_frame - window + 1, end_frame, t_start, t_end, fps,
                       key, packed)
        if self.confirm is not None:
            own = self.confirm.window_length(fps) if self.window is None else window
            item.confirm_frames = frames[-own:]
            if stream not in self._confirm_fits and hasattr(self.confirm.model, 'check_sample'):
                # the confirmer prepares flagged windows in the model thread, where a graph's
                # refusal of this stream's frame size would end every stream: its first
                # window is prepared here, once, so that this stream alone fails
                self.confirm.prepare(item.confirm_frames, fps, name)
                self._confirm_fits.add(stream)
        return item

    def _drain(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

    # --------------------------------------------------------------------- model thread
    def _model_loop(self, num_streams: int) -> None:
        from tqdm import tqdm
        report = self._report
        self._states = [Hysteresis(self.alert) if self.alert else None
                        for _ in range(num_streams)]
        # Per stream, its screened windows in order, emitted once their confirmation (if
        # any) is in: [window, screening scores, confirming scores, done].
        self._waiting: List[deque] = [deque() for _ in range(num_streams)]
        self._deferred: List[list] = []  # entries waiting for a confirmer batch
        self._oldest_deferred = 0.0
        ended = 0
        with tqdm(desc='streaming', unit='win', file=sys.stderr, disable=not self.progress,
                  dynamic_ncols=True) as bar:
            self._bar = bar
            while ended < num_streams:
                if self._deferred and should_confirm(
                        len(self._deferred), self.batch_size, self._queue.empty(),
                        time.perf_counter() - self._oldest_deferred, self.confirm_wait):
                    self._confirm_deferred()
                try:
                    first = self._queue.get(timeout=0.05 if self._deferred else 0.2)
                except queue.Empty:
                    continue
                items = [first]
                while len(items) < self.batch_size:
                    try:
                        items.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                windows = [item for item in items if isinstance(item, _Window)]
                ended += len(items) - len(windows)
                if windows:
                    self._screen(windows)
            if self._deferred:
                self._confirm_deferred()

    def _predict(self, stage: ModelStage, keys: List[Hashable], packed: List[Dict]) -> np.ndarray:
        """Scores of samples whose keys may differ (batched per key), in the given order."""
        scores: List[Optional[np.ndarray]] = [None] * len(packed)
        for key in dict.fromkeys(keys):
            members = [index for index, other in enumerate(keys) if other == key]
            result = stage.predict(key, [packed[index] for index in members]).numpy()
            for index, row in zip(members, result):
                scores[index] = row
        return np.stack(scores)

    def _screen(self, windows: List[_Window]) -> None:
        """Score a batch with the (screening) stage; queue flagged windows for the
        confirmer; emit what is complete."""
        report = self._report
        tick = time.perf_counter()
        screen = self._predict(self.stage, [w.key for w in windows], [w.packed for w in windows])
        report.model_s += time.perf_counter() - tick
        report.batches += 1
        touched = set()
        for window, row in zip(windows, screen):
            flagged = self.confirm is not None and \
                self.alert.score(row) >= self.screen_threshold
            entry = [window, row, None, not flagged]
            self._waiting[window.stream].append(entry)
            touched.add(window.stream)
            if flagged:
                if not self._deferred:
                    self._oldest_deferred = time.perf_counter()
                self._deferred.append(entry)
        for stream in touched:
            self._emit_ready(stream)

    def _confirm_deferred(self) -> None:
        """Run the confirmer on every deferred window (one batch per ``batch_size``)."""
        report = self._report
        entries, self._deferred = self._deferred, []
        for offset in range(0, len(entries), self.batch_size):
            chunk = entries[offset:offset + self.batch_size]
            tick = time.perf_counter()
            prepared = [self.confirm.prepare(entry[0].confirm_frames, entry[0].fps,
                                             report.streams[entry[0].stream].name)
                        for entry in chunk]
            report.confirm_prepare_s += time.perf_counter() - tick
            tick = time.perf_counter()
            scores = self._predict(self.confirm, [key for key, _ in prepared],
                                   [packed for _, packed in prepared])
            report.confirm_model_s += time.perf_counter() - tick
            report.confirm_windows += len(chunk)
            report.confirm_batches += 1
            for entry, row in zip(chunk, scores):
                entry[2], entry[3] = row, True
        for stream in {entry[0].stream for entry in entries}:
            self._emit_ready(stream)

    def _emit_ready(self, stream: int) -> None:
        waiting = self._waiting[stream]
        emitted = 0
        while waiting and waiting[0][3]:
            window, scores, confirm, _ = waiting.popleft()
            self._emit(window, scores, confirm, self._states[stream])
            emitted += 1
        if emitted:
            report = self._report
            report.windows += emitted
            self._bar.update(emitted)
            self._bar.set_postfix_str(
                f'queue {self._queue.qsize()}, {report.confirm_windows} confirmed, '
                f'{sum(1 for a in report.alerts if a["event"] == "alert_start")} alerts',
                refresh=False)

    def _emit(self, window: _Window, scores: np.ndarray, confirm: Optional[np.ndarray],
              state: Optional[Hysteresis]) -> None:
        report = self._report
        name = report.streams[window.stream].name
        final = confirm if confirm is not None else scores
        record = dict(stream=name, window=window.index, start_frame=window.start_frame,
                      end_frame=window.end_frame, t_start=round(window.t_start, 6),
                      t_end=round(window.t_end, 6), label=int(final.argmax()),
                      score=float(final.max()), scores=[float(v) for v in scores])
        record.update(self.stage.key_fields(window.key))
        if self.confirm is not None:
            record['flagged'] = confirm is not None
            record['confirm_scores'] = (None if confirm is None else
                                        [float(v) for v in confirm])
        events = []
        if state is not None:
            if self.confirm is not None:
                alert_score = self.alert.score(confirm) if confirm is not None else 0.0
            else:
                alert_score = self.alert.score(scores)
            change = state.update(alert_score)
            record['alert_score'] = alert_score
            record['alert'] = state.active
            if change is not None:
                events.append(dict(event=f'alert_{change}', stream=name, window=window.index,
                                   end_frame=window.end_frame, t=round(window.t_end, 6),
                                   score=alert_score))
        for item in [record] + events:
            if self.keep_records:
                report.records.append(item)
            if self.sink is not None:
                self.sink(item)
        report.alerts.extend(events)


def should_confirm(deferred: int, batch_size: int, queue_empty: bool, waited: float,
                   max_wait: float) -> bool:
    """Whether to run the confirmer on the deferred flagged windows now.

    Flagged windows are few, so confirming each screening batch's share alone would run the
    confirmer at batch 1 or 2, at several times its batch-8 cost per window
    (``benchmarks/bench_streaming.py``). They wait for a full
    batch, but not when no more input is waiting (nothing to gain; a live stream's alert
    would only be late) nor longer than ``max_wait`` seconds.
    """
    return deferred >= batch_size or queue_empty or waited >= max_wait


def report_dict(report: StreamReport) -> Dict:
    """The report as plain data (for a JSON summary line), without the records."""
    data = asdict(report)
    data.pop('records')
    data['windows_per_s'] = report.windows_per_s
    return data
