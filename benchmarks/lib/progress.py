"""Progress of runs that train side by side: each row's phase and its training log's newest
epoch, loss and ETA, shown as one status line (rewritten in place on a terminal, throttled
lines on a pipe) under permanent phase lines."""
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, TextIO


class RowStatus:
    """Where one row (anything with a ``name``) is: ``queued``, ``training``, ``testing``, ``done`` or ``failed``, and
    the latest epoch, iteration, loss and ETA of its training log."""

    def __init__(self, row, work_dir: Path, max_epochs: int) -> None:
        self.row, self.work_dir, self.max_epochs = row, work_dir, max_epochs
        self.phase = 'queued'
        self.epoch = self.iteration = self.iterations = 0
        self.loss = self.eta = ''
        self._follower: Optional['LogFollower'] = None

    @property
    def train_log(self) -> Path:
        return self.work_dir / 'train.log'

    def begin(self, phase: str) -> Callable[[], None]:
        """A callback that moves the row to ``phase`` (for :func:`run`'s ``on_start``)."""
        def enter() -> None:
            self.phase = phase
        return enter

    def read_log(self) -> None:
        """Take the newest mmengine training line of ``train.log`` (only while training)."""
        if self.phase != 'training':
            return
        if self._follower is None:
            self._follower = LogFollower(self.train_log)
        for line in self._follower.new_lines():
            progress = parse_train_line(line)
            if progress:
                self.epoch, self.iteration, self.iterations, self.eta, self.loss = progress

    def describe(self) -> str:
        if self.phase == 'testing':
            return f'{self.row.name}: testing'
        if not self.epoch:
            return f'{self.row.name}: starting'
        text = (f'{self.row.name}: epoch {self.epoch}/{self.max_epochs} '
                f'[{self.iteration}/{self.iterations}]')
        if self.loss:
            text += f' loss {self.loss}'
        return text + (f' eta {self.eta}' if self.eta else '')


#: mmengine's training log line: ``Epoch(train)  [3][20/27]  lr: ..  eta: 0:05:12 .. loss: 1.23``
_TRAIN_LINE = re.compile(r'Epoch\(train\)\s*\[\s*(\d+)\]\[\s*(\d+)/(\d+)\]')
_ETA = re.compile(r'\beta: (\S+)')
_LOSS = re.compile(r'\bloss: (\S+)')


def parse_train_line(line: str) -> Optional[tuple]:
    """``(epoch, iteration, iterations, eta, loss)`` of an mmengine training line, else None."""
    match = _TRAIN_LINE.search(line)
    if match is None:
        return None
    eta, loss = _ETA.search(line), _LOSS.search(line)
    return (int(match[1]), int(match[2]), int(match[3]), eta[1] if eta else '',
            loss[1] if loss else '')


class LogFollower:
    """The complete lines a running tool has appended to its log since the last call."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, b''

    def new_lines(self) -> List[str]:
        try:
            with open(self.path, 'rb') as log:
                log.seek(self.offset)
                data = log.read()
        except FileNotFoundError:
            return []
        if not data and self.path.stat().st_size < self.offset:  # rewritten by a new run
            self.offset, self.partial = 0, b''
            return self.new_lines()
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b'\n')
        return [line.decode(errors='replace') for line in lines]


class Display:
    """The main job's terminal: permanent phase lines, and one status line for the rows in
    training (epoch, loss, ETA of each).

    On a terminal the status line is rewritten in place at every update. On a pipe (a CI log,
    ``| tee``) it is printed as a line of its own when a row has started a new epoch, at most
    once per ``interval`` seconds, and always when a row starts its last epoch, so that a log
    file stays short and still shows the end of every training.

    Args:
        stream (TextIO): where to write. Defaults to stdout.
        live (bool, optional): rewrite the status line in place. Defaults to whether
            ``stream`` is a terminal.
        interval (float): seconds between status lines on a pipe. Defaults to 30.
    """

    def __init__(self, stream: Optional[TextIO] = None, live: Optional[bool] = None,
                 interval: float = 30.0) -> None:
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval
        self._shown = ''  # the status line now on screen (live mode)
        self._epochs: Dict[str, int] = {}  # epoch of each row in the last status line (pipe)
        self._printed = float('-inf')

    def line(self, text: str) -> None:
        """Print a permanent line (above the live status line, which is redrawn)."""
        shown = self._shown
        self._clear()
        print(text, file=self.stream, flush=True)
        if shown:
            self._draw(shown)

    def status(self, rows: List[RowStatus]) -> None:
        """Show the rows that are training or testing."""
        active = [row for row in rows if row.phase in ('training', 'testing')]
        text = ' | '.join(row.describe() for row in active)
        if self.live:
            if text != self._shown:
                self._clear()
                if text:
                    self._draw(text)
            return
        advanced = [row for row in active if row.epoch > self._epochs.get(row.row.name, 0)]
        if not advanced:
            return
        last_epoch = any(row.epoch >= row.max_epochs for row in advanced)
        if last_epoch or time.monotonic() - self._printed >= self.interval:
            print(f'[main job] {text}', file=self.stream, flush=True)
            self._printed = time.monotonic()
            self._epochs.update({row.row.name: row.epoch for row in active})

    def _draw(self, text: str) -> None:
        width = shutil.get_terminal_size().columns - 1
        text = text if len(text) <= width else text[:max(0, width - 1)] + '…'
        self.stream.write(text)
        self.stream.flush()
        self._shown = text

    def _clear(self) -> None:
        if self._shown:
            self.stream.write('\r\x1b[K')
            self.stream.flush()
            self._shown = ''
