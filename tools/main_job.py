"""The main job: build the synthetic motion benchmark, train and test each model, print the table.

    python tools/main_job.py                 # the README's table; its time is printed
    python tools/main_job.py --full          # longer schedule, the larger preset and TSM-5

Every model trains through ``tools/train.py`` and tests through ``tools/test.py`` (mmaction2's
own tools) on the same videos with the same schedule. Results (a markdown table, JSON and a
bar chart) go to ``<work-dir>/results.{md,json,png}``, each model's test metrics to
``<work-dir>/zoo_results/<config name>.json`` (for ``tools/analysis/zoo_table.py --results``). A model whose test predictions already
exist in the work dir, made after the benchmark's clips were, is not trained again
(``--force`` retrains), so a killed run resumes.

The terminal shows one line per phase and, while models train, their epoch, latest loss and
ETA, read from each row's ``train.log`` (the full output of ``tools/train.py`` and
``tools/test.py`` stays in ``<work-dir>/<row>/{train,test}.log``).
"""
import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, TextIO

from hyperframes_mm.utils import slug

REPO = Path(__file__).resolve().parents[1]
SYNTHETIC = 'configs/hyperframes/synthetic'


class Row(NamedTuple):
    """One model of the table: a config of the synthetic family, what it shows, its training
    cost relative to one hyperframe (to start the longest first), and whether it is the
    reference the others are compared with (marked on the chart)."""
    name: str
    config: str
    note: str
    cost: float = 1.0
    reference: bool = False


ROWS = [
    Row('single frame (T=1)', f'{SYNTHETIC}/singleframe_scratch-r18_1xb16-1x1x1-60e_synthetic-rgb.py',
        'a 2D model: at chance when only motion separates the classes', cost=0.9),
    Row('hyperframe T=5', f'{SYNTHETIC}/hyperframe_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'the recipe chosen on real video: one hyperframe of picks over the clip, consistent '
        'augmentation, diff input encoding'),
    Row('hyperframe T=5, per-frame aug',
        f'{SYNTHETIC}/hyperframe-indepaug_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'the same with independent per-frame augmentation (the seeds\' bug)'),
    Row('fast/slow T=5+5',
        f'{SYNTHETIC}/fastslow_scratch-r18_1xb16-5x4x1-1x1x5-60e_synthetic-rgb.py',
        'fast (4/30 s) and slow (over the clip) hyperframes stacked for one backbone pass',
        cost=1.3),
]
FULL_ROWS = [
    Row('TSM-5 (mmaction2)', f'{SYNTHETIC}/tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'mmaction2\'s temporal shift ResNet-18 over 5 segments', cost=2.7, reference=True),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work-dir', default='work_dirs/main_job', help='outputs go here')
    parser.add_argument('--data-root', default='data/synthetic',
                        help='where the benchmark videos are written (reused if complete)')
    parser.add_argument('--full', action='store_true',
                        help='the full preset, twice the epochs, and the TSM-5 row')
    parser.add_argument('--preset', choices=('tiny', 'default', 'full'),
                        help='synthetic preset (default: default, or full with --full)')
    parser.add_argument('--epochs', type=int, help='override every row\'s epochs')
    parser.add_argument('--only', nargs='+', help='train only the rows whose name has one of '
                        'these words (the table still shows every finished row)')
    parser.add_argument('--seed', type=int, default=0,
                        help='randomness.seed of every row (the README table is over seeds)')
    parser.add_argument('--force', action='store_true', help='retrain rows already done')
    parser.add_argument('--readme', action='store_true',
                        help='also put the table into README.md (between its main_job markers)')
    parser.add_argument('--jobs', type=int, default=2,
                        help='models trained at once (each on one thread: on a small CPU, two '
                        'single-thread runs beat one two-thread run, whose OpenMP threads spin '
                        'against the data-loader workers)')
    return parser.parse_args(argv)


class ToolFailed(Exception):
    """A tool of a row exited non-zero; the message ends with the last lines of its log."""

    def __init__(self, tool: str, code: int, log: Path, tail: int = 30) -> None:
        lines = log.read_text(errors='replace').splitlines()[-tail:]
        super().__init__(f'{tool} failed (exit {code}); last lines of {log}:\n' +
                         '\n'.join(lines))
        self.log = log


def run(cmd: List[str], env: Dict[str, str], log: Path,
        on_start: Optional[Callable[[], None]] = None) -> None:
    """Run a tool with its output in ``log`` (which starts with the command).

    Args:
        cmd (list[str]): the command, run in the repository.
        env (dict): its environment.
        log (Path): the log file, overwritten.
        on_start (callable, optional): called once the log is fresh, before the tool starts
            (so that a reader of the log never sees the previous run's). Defaults to None.

    Raises:
        ToolFailed: the tool exited non-zero.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, 'w') as out:
        out.write('+ ' + ' '.join(cmd) + '\n')
        out.flush()
        if on_start:
            on_start()
        code = subprocess.run(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        raise ToolFailed(cmd[1], code, log)


class RowStatus:
    """Where one row is: ``queued``, ``training``, ``testing``, ``done`` or ``failed``, and
    the latest epoch, iteration, loss and ETA of its training log."""

    def __init__(self, row: Row, work_dir: Path, max_epochs: int) -> None:
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


def train_and_test(status: RowStatus, args, env: Dict[str, str], epochs: Optional[int]) -> str:
    """Train the row's config, test its last checkpoint; returns what to report."""
    row, work_dir = status.row, status.work_dir
    predictions = work_dir / 'predictions.pkl'
    from hyperframes_mm.datasets.synthetic import written_after_dataset
    if written_after_dataset(predictions, args.data_root) and not args.force:
        status.phase = 'done'
        return f'{row.name}: done before, {predictions}'
    predictions.unlink(missing_ok=True)  # of older clips: not a finished row any more
    options = [f'randomness.seed={args.seed}'] + (schedule_options(row.config, epochs) if epochs else [])
    start = time.time()
    run([sys.executable, 'tools/train.py', row.config, '--work-dir', str(work_dir),
         '--cfg-options'] + options, env, status.train_log, on_start=status.begin('training'))
    trained = time.time() - start
    checkpoint = (work_dir / 'last_checkpoint').read_text().strip()
    run([sys.executable, 'tools/test.py', row.config, checkpoint, '--work-dir', str(work_dir),
         '--dump', str(predictions)], env, work_dir / 'test.log', on_start=status.begin('testing'))
    # mmengine's test metrics (WORK_DIR/<timestamp>/<timestamp>.json), named after the config,
    # where tools/analysis/zoo_table.py --results reads a family's accuracy
    metrics = max(work_dir.glob('*/*.json'), key=lambda path: path.stat().st_mtime)
    zoo_results = Path(args.work_dir) / 'zoo_results'
    zoo_results.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(metrics, zoo_results / f'{Path(row.config).stem}.json')
    (work_dir / 'train_seconds.txt').write_text(f'{trained:.1f}\n')
    status.phase = 'done'
    top1 = json.loads(metrics.read_text()).get('acc/top1')
    tested = f'test top-1 {top1:.3f}' if isinstance(top1, (int, float)) else f'tested, {metrics}'
    return (f'{row.name}: trained {plural(status.max_epochs, "epoch")} in '
            f'{trained / 60:.1f} min, {tested}')


def plural(count: int, noun: str) -> str:
    return f'{count} {noun}' + ('' if count == 1 else 's')


@contextmanager
def mmengine_warnings_only() -> Iterator[None]:
    """Only mmengine's warnings and errors while the main job measures models in its own process.

    Building each model logs at INFO how the config was parsed (the benchmark's root substituted
    from ``HF_SYNTHETIC``); the training logs keep those lines, the terminal does not need them.
    """
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)



def max_epochs(config: str, epochs: Optional[int]) -> int:
    """The epochs a row trains: the ``--epochs`` override, else its config's schedule."""
    if epochs:
        return epochs
    from mmengine.config import Config
    return int(Config.fromfile(str(REPO / config)).train_cfg.max_epochs)


def train_rows(rows: List[Row], args, env: Dict[str, str], epochs: Optional[int],
               display: Display) -> None:
    """Train and test ``rows``, ``--jobs`` at a time, showing their progress.

    Raises:
        SystemExit: after every row has finished, if one failed (its log's tail is printed
            as soon as it fails).
    """
    statuses = [RowStatus(row, Path(args.work_dir) / slug(row.name), max_epochs(row.config, epochs))
                for row in rows]
    failed = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        pending: Dict[Future, RowStatus] = {
            pool.submit(train_and_test, status, args, env, epochs): status for status in statuses}
        started = set()
        while pending:
            finished, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for status in statuses:
                if status.phase == 'training' and status.row.name not in started:
                    started.add(status.row.name)
                    display.line(f'[main job] {status.row.name}: training, log '
                                 f'{status.train_log}')
                status.read_log()
            for future in finished:
                status = pending.pop(future)
                try:
                    display.line(f'[main job] {future.result()}')
                except ToolFailed as error:
                    status.phase = 'failed'
                    failed.append(status.row.name)
                    display.line(f'[main job] {status.row.name}: {error}')
            display.status(statuses)
    if failed:
        raise SystemExit(f'[main job] failed: {", ".join(failed)} (their logs\' last lines are '
                         'above)')


def schedule_options(config: str, epochs: int) -> List[str]:
    """``--cfg-options`` that give a config's schedule ``epochs`` epochs, every scheduler scaled
    (``set_epochs``), validated once at the end."""
    from mmengine.config import Config
    from hyperframes_mm.analysis.config_utils import set_epochs
    cfg = Config.fromfile(str(REPO / config))
    set_epochs(cfg, epochs)
    options = [f'train_cfg.max_epochs={epochs}', f'train_cfg.val_interval={epochs}']
    for index, scheduler in enumerate(cfg.param_scheduler):
        options += [f'param_scheduler.{index}.{key}={scheduler[key]}'
                    for key in ('begin', 'end', 'T_max') if key in scheduler]
    return options


def render(rows: List[Row], results: Dict[str, Dict], num_classes: int, environment: str) -> str:
    lines = [
        f'| model | top-1 | mean class acc | fast classes | slow classes | GFLOPs | params (M) '
        f'| CPU latency (ms) | train (min) |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for row in rows:
        r = results.get(row.name)
        if r is None:
            continue
        lines.append(f'| {row.name} | {r["top1"]:.3f} | {r["mean_class"]:.3f} | {r["fast"]:.3f} '
                     f'| {r["slow"]:.3f} | {r["gflops"]:.3f} | {r["params_m"]:.2f} '
                     f'| {r["latency_ms"]:.1f} | {r["train_min"]:.1f} |')
    lines += ['', f'Chance is {1 / num_classes:.3f} ({num_classes} classes). GFLOPs '
              '(multiply-adds) and latency are for one test sample (all its test clips, batch 1, '
              'one call of the whole model) at the trained resolution, timed side by side in '
              f'interleaved rounds. {environment}']
    return '\n'.join(lines)


def bar_chart(rows: List[Row], results: Dict[str, Dict], num_classes: int, path: Path) -> None:
    """Accuracy of every finished row on all, fast and slow classes, each value printed at the
    end of its bar; chance and the reference row's top-1 (TSM-5, when trained) as vertical
    lines; the legend right of the axes, where it covers no bar."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shown = [row for row in rows if row.name in results]
    names = [row.name for row in shown]
    fig, ax = plt.subplots(figsize=(8, 0.75 * len(names) + 1.5))
    width = 0.27
    for offset, key, label in ((-width, 'top1', 'all classes'), (0, 'fast', 'fast classes'),
                               (width, 'slow', 'slow classes')):
        bars = ax.barh([i + offset for i in range(len(names))], [results[n][key] for n in names],
                       height=width, label=label)
        ax.bar_label(bars, fmt='%.2f', padding=2, fontsize=7)
    ax.axvline(1 / num_classes, color='grey', linestyle='--',
               label=f'chance ({1 / num_classes:.2f})')
    for row in shown:
        if row.reference:
            ax.axvline(results[row.name]['top1'], color='black', linestyle=':',
                       label=f'{row.name} top-1 ({results[row.name]["top1"]:.2f})')
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    # Room right of 1.0 for the value printed after the longest bar
    ax.set_xlim(0, 1.1)
    ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_xlabel('top-1 accuracy (synthetic motion benchmark, test split)')
    ax.legend(loc='upper left', bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize=8)
    fig.savefig(path, dpi=120, bbox_inches='tight')
    plt.close(fig)


README_BEGIN, README_END = '<!-- main_job:begin -->', '<!-- main_job:end -->'


def main(argv=None) -> str:
    args = parse_args(argv)
    # Absolute, because the tools run in the repository, not in the caller's directory
    args.work_dir = str(Path(args.work_dir).resolve())
    args.data_root = str(Path(args.data_root).resolve())
    rows = ROWS + (FULL_ROWS if args.full else [])
    data_root = Path(args.data_root)
    env = dict(os.environ, HF_SYNTHETIC=str(data_root), OMP_NUM_THREADS='1')
    display = Display()
    from hyperframes_mm.datasets.synthetic import (load_meta, make_synthetic_dataset,
                                                   written_after_dataset)
    from hyperframes_mm.evaluation import accuracy_by_group, class_groups_of
    preset = args.preset or ('full' if args.full else 'default')
    start = time.time()
    make_synthetic_dataset(data_root, preset=preset)
    display.line(f'[main job] benchmark ready in {data_root} ({time.time() - start:.0f} s)')
    # The synthetic configs train from frame cache entries beside the videos (configs/_base_/
    # datasets/synthetic_hyperframe.py); built here in parallel, not in each first epoch.
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    summary = build_frame_cache(read_video_list(data_root / 'train.txt'), data_root, data_root,
                                workers=max(1, args.jobs))
    if summary.failed:
        raise SystemExit(f'[main job] could not cache {len(summary.failed)} training videos, '
                         f'e.g. {next(iter(summary.failed.items()))}')
    display.line(f'[main job] frame cache: {summary}')
    classes = load_meta(data_root)['classes']
    groups = class_groups_of(data_root)
    epochs = args.epochs or (120 if args.full else None)
    selected = [row for row in rows
                if not args.only or any(word.lower() in row.name.lower() for word in args.only)]
    # Longest first, so the pool ends together
    selected.sort(key=lambda row: -row.cost)
    display.line(f'[main job] {plural(len(selected), "model")} to train and test, '
                 f'{max(1, args.jobs)} at a time; logs in '
                 f'{args.work_dir}/<model>/{{train,test}}.log')
    train_rows(selected, args, env, epochs, display)

    import torch
    from hyperframes_mm.analysis.complexity import compare_latency, model_complexity
    torch.set_num_threads(1)
    done = [row for row in rows if written_after_dataset(
        Path(args.work_dir) / slug(row.name) / 'predictions.pkl', data_root)]
    display.line(f'[main job] FLOPs and latency of {plural(len(done), "model")}, timed side '
                 'by side')
    config_options = dict(HF_SYNTHETIC=str(data_root))
    os.environ.update(config_options)
    with mmengine_warnings_only():
        latency = compare_latency({row.name: row.config for row in done}, repeats=20, warmup=3,
                                  video_size=(64, 64), progress=sys.stderr.isatty())
        costs = {row.name: model_complexity(row.config, video_size=(64, 64)) for row in done}
    results = {}
    for row in done:
        work_dir = Path(args.work_dir) / slug(row.name)
        cost = costs[row.name]
        results[row.name] = dict(
            accuracy_by_group(work_dir / 'predictions.pkl', groups), gflops=cost['flops'] / 1e9,
            params_m=cost['params'] / 1e6, latency_ms=latency[row.name]['median_ms'],
            train_min=float((work_dir / 'train_seconds.txt').read_text()) / 60,
            config=row.config, note=row.note)
    environment = (f'Latency on one torch thread; {os.cpu_count()} CPUs, load average '
                   f'{os.getloadavg()[0]:.1f} at the end. Training: {args.jobs} models at once, '
                   f'one thread each. Command: `python tools/main_job.py'
                   f'{"".join(" " + arg for arg in (sys.argv[1:] if argv is None else argv))}`.')
    table = render(rows, results, len(classes), environment)
    out = Path(args.work_dir)
    (out / 'results.md').write_text(table + '\n')
    (out / 'results.json').write_text(json.dumps(results, indent=2) + '\n')
    bar_chart(rows, results, len(classes), out / 'results.png')
    if args.readme:
        from benchmarks.lib.tables import replace_section
        replace_section(REPO / 'README.md', table, README_BEGIN, README_END)
    print('\n' + table)
    print(f'\n[main job] wrote {out / "results.md"}, results.json and results.png; each model\'s '
          f'logs, checkpoints and predictions in {out}/<model>/ '
          f'({(time.time() - start) / 60:.1f} min)')
    return table


if __name__ == '__main__':
    main()
