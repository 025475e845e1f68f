"""The main job: build the synthetic motion benchmark, train and test each model, print the table
and, per model, whether its top-1 fell inside the range its recorded runs give.

    python tools/main_job.py                 # the README's rows; its time is printed
    python tools/main_job.py --full          # longer schedule, the larger preset and TSM-5
    python tools/main_job.py --record --work-dir DIR    # add DIR's finished run to the record
    python tools/main_job.py --report-only --readme     # README's table from the record

The models are rows of the experiment library (:class:`benchmarks.lib.rows.Row`), trained side
by side, the costliest first, by its scheduler (:func:`benchmarks.lib.schedule.run_tasks`).
Every model trains through ``tools/train.py`` and tests through ``tools/test.py`` (mmaction2's
own tools) on the same videos with the same schedule. Results (a markdown table, JSON and a
bar chart) go to ``<work-dir>/results.{md,json,png}``, each model's test metrics to
``<work-dir>/zoo_results/<config name>.json`` (for ``tools/analysis/zoo_table.py --results``).
A model whose test predictions already exist in the work dir, made after the benchmark's clips
were, is not trained again (``--force`` retrains), so a killed run resumes.

The family's configs are written for the default preset's 10 classes: every row trains and
tests with the set's class count and flip label map (its ``meta.json``) as ``--cfg-options``
(:func:`data_options`), so each preset trains right; a preset whose classes a config's flips
cannot follow is refused before its clips are built.

The record, ``benchmarks/results/main_job.json``, keeps finished runs by what they trained (the
row's config as tools/train.py ran it, but for its seed, and the benchmark's generator
parameters: :func:`config_key`), their seed and the kernels PyTorch ran with
(:func:`kernel_setting`): the same seeds give other numbers where ATen and oneDNN pick other
vectorised kernels. The README's table is written from it (:func:`readme_table`): per row, the
mean and spread of top-1 over every recorded seed and kernel setting.

The terminal shows one line per phase and, while models train, their epoch, latest loss and
ETA, read from each row's ``train.log`` (the full output of ``tools/train.py`` and
``tools/test.py`` stays in ``<work-dir>/<row>/{train,test}.log``).
"""
import argparse
import json
import logging
import os
import shutil
import sys
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from benchmarks.lib import runner
from benchmarks.lib.costing import load_average, machine_line, side_by_side
from benchmarks.lib.kernels import kernel_label, kernel_setting
from benchmarks.lib.progress import Display, RowStatus
from benchmarks.lib.rows import Row
from benchmarks.lib.schedule import Task, costliest_first, run_tasks
from benchmarks.lib.tables import markdown_table, replace_section, summary
from hyperframes_mm.utils import slug

REPO = Path(__file__).resolve().parents[1]
#: relative to the repository, where the tools run: results.json names the configs so
SYNTHETIC = Path('configs/hyperframes/synthetic')
RECORD = REPO / 'benchmarks' / 'results' / 'main_job.json'
README = REPO / 'README.md'
#: the READMEs that show the record's table: the project's, and the family of the main job's
#: models, where a user who reruns a config of the family looks for what it should land in
READMES = (README, REPO / SYNTHETIC / 'README.md')
README_BEGIN, README_END = '<!-- main_job:begin -->', '<!-- main_job:end -->'
#: a run is inside a row's expected range when its top-1 is within the recorded runs'
#: min-max widened by this many of their standard deviations on each side
RANGE_WIDENING_SD = 1.0


ROWS = [
    Row('single frame (T=1)',
        SYNTHETIC / 'singleframe_scratch-r18_1xb16-1x1x1-60e_synthetic-rgb.py',
        'a 2D model: at chance when only motion separates the classes', cost=0.9),
    Row('hyperframe T=5', SYNTHETIC / 'hyperframe_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'the recipe chosen on real video: one hyperframe of picks over the clip, consistent '
        'augmentation, diff input encoding'),
    Row('hyperframe T=5, per-frame aug',
        SYNTHETIC / 'hyperframe-indepaug_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'the same with independent per-frame augmentation (the seeds\' bug)'),
    Row('fast/slow T=5+5',
        SYNTHETIC / 'fastslow_scratch-r18_1xb16-5x4x1-1x1x5-60e_synthetic-rgb.py',
        'fast (4/30 s) and slow (over the clip) hyperframes stacked for one backbone pass',
        cost=1.3),
]
#: the row the others are compared with: its top-1 is a line on the bar chart (when trained)
REFERENCE = 'TSM-5 (mmaction2)'
FULL_ROWS = [
    Row(REFERENCE, SYNTHETIC / 'tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'mmaction2\'s temporal shift ResNet-18 over 5 segments', cost=2.7),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work-dir', default='work_dirs/main_job', help='outputs go here')
    parser.add_argument('--data-root', default='data/synthetic',
                        help='where the benchmark videos are written (reused if complete)')
    parser.add_argument('--full', action='store_true',
                        help='the full preset, twice the epochs, and the TSM-5 row')
    parser.add_argument('--preset', choices=('tiny', 'default', 'full'),
                        help='synthetic preset (default: default, or full with --full); '
                        'each config takes its class count and flip label map')
    parser.add_argument('--epochs', type=int, help='override every row\'s epochs')
    parser.add_argument('--only', nargs='+', help='train only the rows whose name has one of '
                        'these words (the table still shows every finished row)')
    parser.add_argument('--seed', type=int, default=0,
                        help='randomness.seed of every row (the README table is over seeds)')
    parser.add_argument('--force', action='store_true', help='retrain rows already done')
    parser.add_argument('--readme', action='store_true',
                        help='rewrite the table of README.md and the synthetic family\'s README '
                        '(between their main_job markers) from the '
                        'record')
    parser.add_argument('--record', action='store_true',
                        help='add the finished run of --work-dir to the record (its '
                        'kernels.json, else this process\'s kernels); trains nothing')
    parser.add_argument('--report-only', action='store_true',
                        help='train nothing; print (and with --readme write) the record\'s table')
    parser.add_argument('--record-file', type=Path, default=RECORD,
                        help='the record of main-job runs')
    parser.add_argument('--jobs', type=int, default=2,
                        help='models trained at once (each on one thread: on a small CPU, two '
                        'single-thread runs beat one two-thread run, whose OpenMP threads spin '
                        'against the data-loader workers)')
    return parser.parse_args(argv)


def train_and_test(status: RowStatus, args, env: Dict[str, str], epochs: Optional[int]) -> str:
    """Train the row's config, test its last checkpoint; returns what to report."""
    row, work_dir = status.row, status.work_dir
    predictions = work_dir / 'predictions.pkl'
    from hyperframes_mm.datasets.synthetic import load_meta, written_after_dataset
    if written_after_dataset(predictions, args.data_root) and not args.force:
        status.phase = 'done'
        return f'{row.name}: done before, {predictions}'
    predictions.unlink(missing_ok=True)  # of older clips: not a finished row any more
    meta = load_meta(args.data_root)
    fitted = data_options(row.config, meta['classes'], meta['flip_label_map'],
                          f'{args.data_root}/meta.json')
    options = [f'randomness.seed={args.seed}', *fitted] + (schedule_options(row.config, epochs)
                                                           if epochs else [])
    start = time.time()
    checkpoint = runner.train(row.config, work_dir, status.train_log, options, env=env,
                              on_start=status.begin('training'))
    trained = time.time() - start
    _, metrics = runner.test(row.config, checkpoint, work_dir, work_dir / 'test.log', fitted,
                             dump=predictions, env=env, on_start=status.begin('testing'))
    # mmengine's test metrics, named after the config, where tools/analysis/zoo_table.py
    # --results reads a family's accuracy
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



def max_epochs(config: Path, epochs: Optional[int]) -> int:
    """The epochs a row trains: the ``--epochs`` override, else its config's schedule."""
    if epochs:
        return epochs
    from mmengine.config import Config
    return int(Config.fromfile(str(REPO / config)).train_cfg.max_epochs)


def train_rows(rows: List[Row], args, env: Dict[str, str], epochs: Optional[int],
               display: Display) -> None:
    """Train and test ``rows``, ``--jobs`` at a time, the costliest first, showing their
    progress (read from their logs every second).

    Raises:
        SystemExit: after every row has finished, if one failed (its log's tail is printed
            as soon as it fails).
    """
    # in the order they start, which is also the order of the status line
    statuses = [RowStatus(row, Path(args.work_dir) / slug(row.name), max_epochs(row.config, epochs))
                for row in costliest_first(rows)]
    started = set()

    def show_progress() -> None:
        for status in statuses:
            if status.phase == 'training' and status.row.name not in started:
                started.add(status.row.name)
                display.line(f'[main job] {status.row.name}: training, log {status.train_log}')
            status.read_log()
        display.status(statuses)

    def show_failure(task: Task, error: Exception) -> None:
        task.what.phase = 'failed'
        display.line(f'[main job] {task.what.row.name}: {error}')

    tasks = [Task(status, status.row.cost, partial(train_and_test, status, args, env, epochs))
             for status in statuses]
    failures = run_tasks(tasks, args.jobs, runner.ToolFailed,
                         done=lambda task, report: display.line(f'[main job] {report}'),
                         failed=show_failure, tick=show_progress)
    if failures:
        names = ', '.join(task.what.row.name for task, _ in failures)
        raise SystemExit(f'[main job] failed: {names} (their logs\' last lines are above)')


def schedule_options(config: Path, epochs: int) -> List[str]:
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


def reachable_settings(value, name: str, path: Tuple = ()) -> Iterator[Tuple[str, object]]:
    """``(dotted path, value)`` of every setting called ``name`` inside a config's values
    that ``--cfg-options`` can reach: mmengine merges an option into dicts and lists only, so
    the tuples of parts a config builds its pipelines from when it is read (the family's
    ``pipeline_parts``, which no run reads) keep the file's values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == name:
                yield '.'.join(map(str, path + (key, ))), item
            else:
                yield from reachable_settings(item, name, path + (key, ))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from reachable_settings(item, name, path + (index, ))


def data_options(config: Path, classes: Sequence[str], flips: Optional[Dict[int, int]],
                 source: str) -> List[str]:
    """``--cfg-options`` that fit a config of the family, written for the default preset's
    classes, to a synthetic set of ``classes`` whose horizontal flip maps label to label by
    ``flips`` (None: a class's mirror image is not among them; ``source`` names the set):
    every ``num_classes`` of the config (its head's, and the variable the file built it from)
    and every ``flip_label_map`` that relabels flipped clips, where they differ from the set's.
    A config of the default preset gets none, so its runs keep the keys the record holds.

    Raises:
        SystemExit: the config relabels flipped clips and ``flips`` is None: no label fits a
            flipped clip of this set.
    """
    from mmengine.config import Config
    cfg = Config.fromfile(str(REPO / config)).to_dict()
    options = [f'{path}={len(classes)}' for path, count in reachable_settings(cfg, 'num_classes')
               if count != len(classes)]
    for path, mapping in reachable_settings(cfg, 'flip_label_map'):
        if not mapping:  # this config does not relabel flips: nothing of the set's to follow
            continue
        if flips is None:
            raise SystemExit(
                f'[main job] {config}: {path} relabels horizontally flipped clips, but the '
                f'classes of {source} ({", ".join(classes)}) do not come in mirror pairs, so no '
                'label fits a flipped clip of one of them; choose a preset whose classes do')
        if {int(key): value for key, value in mapping.items()} != flips:
            # --cfg-options parses no dict: the file's map goes (mmengine's _delete_) and the
            # set's is written label by label
            options += [f'{path}._delete_=True'] + [f'{path}.{key}={value}'
                                                    for key, value in sorted(flips.items())]
    return options


def data_line(meta: Dict, data_root: Path) -> str:
    """What a result table was trained and tested on: the set's preset, generator seed and
    folder (relative to the repository when inside it)."""
    params = meta['params']
    return (f'Data: the synthetic benchmark\'s `{params["preset"]}` preset (generator seed '
            f'{params["seed"]}) in `{shown_path(data_root)}`; each config took the set\'s class '
            'count and flip label map from its meta.json.')


def shown_path(path: Path) -> str:
    """``path`` relative to the repository when inside it, else as given."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(path)


def render(rows: List[Row], results: Dict[str, Dict], num_classes: int, data: str,
           environment: str) -> str:
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
    lines += ['', f'{data} Chance is {1 / num_classes:.3f} ({num_classes} classes). GFLOPs '
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
        if row.name == REFERENCE:
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


# --------------------------------------------------------------------------------- record
def config_key(config: Path, data_root: Path) -> str:
    """What a row's run trained but for its seed: the config tools/train.py ran (the one it
    dumped into the row's work dir, ``--cfg-options`` applied) in every setting the runner reads
    except ``randomness``, and the synthetic benchmark's generator parameters."""
    from hyperframes_mm.datasets.synthetic import load_meta
    keys = tuple(key for key in runner.RUN_KEYS if key != 'randomness')
    return runner.run_key(config, Path(data_root).resolve(), load_meta(data_root)['params'],
                          keys)


def trained_config(row: Row, row_dir: Path) -> Path:
    """The config a row's training ran with, ``--cfg-options`` applied: mmengine's dump in the
    timestamp folder of the last ``tools/train.py`` start that saved a checkpoint (the dump
    beside them is tools/test.py's, without the training options).

    Raises:
        FileNotFoundError: the row has no finished training there.
    """
    trained = [start for start in runner.train_starts(row_dir)
               if 'Saving checkpoint at' in ''.join(log.read_text(errors='replace')
                                                    for log in start.glob('*.log'))]
    if not trained:
        raise FileNotFoundError(f'{row_dir}: no finished tools/train.py run of {row.name!r}')
    return trained[-1] / 'vis_data' / 'config.py'


def finished_runs(work_dir: Path, data_root: Path) -> List[Dict]:
    """The runs of a main-job work dir as the record keeps them: each row of its
    ``results.json`` with its config key, seed (the dumped config's) and kernel setting."""
    from mmengine.config import Config
    results_file = Path(work_dir) / 'results.json'
    if not results_file.is_file():
        raise FileNotFoundError(f'{results_file}: no finished main job in {work_dir}')
    results = json.loads(results_file.read_text())
    kernels = kernel_setting(Path(work_dir) / 'kernels.json')
    runs = []
    for row in ROWS + FULL_ROWS:
        if row.name not in results:
            continue
        config = trained_config(row, Path(work_dir) / slug(row.name))
        metrics = {key: results[row.name][key] for key in (
            'top1', 'mean_class', 'fast', 'slow', 'gflops', 'params_m', 'latency_ms',
            'train_min')}
        runs.append(dict(row=row.name, key=config_key(config, data_root),
                         seed=Config.fromfile(str(config)).randomness.seed, kernels=kernels,
                         **metrics))
    return runs


def add_to_record(record: runner.Record, runs: Sequence[Dict]) -> None:
    """Put ``runs`` into the record, each replacing a recorded run of the same config key,
    seed and kernel setting (a run recorded twice counts once)."""
    def identity(run: Dict) -> Tuple:
        return run['key'], run['seed'], tuple(sorted(run['kernels'].items()))
    new = {identity(run) for run in runs}
    kept = [run for name_runs in record.data.get('results', {}).values() for run in name_runs
            if identity(run) not in new]
    by_row: Dict[str, List[Dict]] = {}
    for run in kept + list(runs):
        by_row.setdefault(run['row'], []).append(run)
    for name_runs in by_row.values():
        name_runs.sort(key=lambda run: (run['seed'], kernel_label(run['kernels'])))
    order = [row.name for row in ROWS + FULL_ROWS]
    record.write({name: by_row[name] for name in sorted(by_row, key=order.index)})


def recorded_runs(record: runner.Record, key: str) -> List[Dict]:
    """The recorded runs of one config key (every seed and kernel setting)."""
    return [run for name_runs in record.data.get('results', {}).values() for run in name_runs
            if run['key'] == key]


def expected_range(runs: Sequence[Dict]) -> Optional[Tuple[float, float]]:
    """Where a rerun's top-1 is expected: the recorded min-max widened by
    :data:`RANGE_WIDENING_SD` standard deviations; None with fewer than two runs."""
    if len(runs) < 2:
        return None
    values = [run['top1'] for run in runs]
    spread = RANGE_WIDENING_SD * summary(runs, 'top1')[1]
    return min(values) - spread, max(values) + spread


def verdict(run: Dict, recorded: Sequence[Dict]) -> str:
    """One line: the run's top-1 and whether it fell inside its row's expected range."""
    head = f'{run["row"]}: top-1 {run["top1"]:.3f}'
    if not recorded:
        return f'{head}, no record for this row (its config, preset and epochs)'
    bounds = expected_range(recorded)
    if bounds is None:
        return (f'{head}; one recorded run ({recorded[0]["top1"]:.3f}): no spread to compare '
                'with yet')
    inside = bounds[0] <= run['top1'] <= bounds[1]
    return (f'{head}, {"inside" if inside else "OUTSIDE"} the expected range '
            f'{bounds[0]:.3f}-{bounds[1]:.3f} ({plural(len(recorded), "recorded run")})')


def readme_table(record: runner.Record) -> str:
    """The README's table: per row, top-1 over every recorded seed and kernel setting (mean ±
    sd, min-max), how many runs, seeds and settings, and the costs of those runs."""
    results = record.data.get('results', {})
    rows = []
    for name, runs in results.items():
        values = [run['top1'] for run in runs]
        settings = sorted({kernel_label(run['kernels']) for run in runs})
        seeds = sorted({run['seed'] for run in runs})
        latency = sorted(run['latency_ms'] for run in runs)
        rows.append([name, f'{summary(runs, "top1")[0]:.3f} ± {summary(runs, "top1")[1]:.3f}',
                     f'{min(values):.3f}-{max(values):.3f}',
                     f'{summary(runs, "fast")[0]:.3f}', f'{summary(runs, "slow")[0]:.3f}',
                     str(len(runs)), ', '.join(map(str, seeds)), '; '.join(settings),
                     f'{runs[0]["gflops"]:.3f}', f'{runs[0]["params_m"]:.2f}',
                     f'{latency[len(latency) // 2]:.1f}'])
    lines = markdown_table(
        ['model', 'top-1 (mean ± sd)', 'top-1 min-max', 'fast classes', 'slow classes', 'runs',
         'seeds', 'kernel settings', 'GFLOPs', 'params (M)', 'CPU latency (ms)'],
        'lrrrrrllrrr', rows)
    return '\n'.join(lines + [
        '', f'Each row over every run in `{shown_path(record.path)}`: the seeds and the '
        'kernel settings it ran with (ATen\'s CPU capability, and in brackets the setting of '
        '`scripts/kernel_settings.txt` that capped ATen, oneDNN, MKL and OpenBLAS at an older '
        'CPU\'s instruction set), which change the last bits of '
        'every step and, through training, the accuracy. A rerun of the main job prints, for '
        'each row, whether its top-1 fell inside the recorded min-max widened by '
        f'{RANGE_WIDENING_SD:g} sd on each side. GFLOPs (multiply-adds) are for one test sample '
        '(all its test clips); latency is the median over the runs of one test sample, batch '
        '1, one thread, timed side by side in each run (it depends on the machine that ran it).'])


def read_record(args) -> runner.Record:
    """The record of ``--record-file``.

    Raises:
        SystemExit: the record is to be read and shown (``--report-only``, or ``--readme``
            without ``--record``, which writes it first) and is not there: read as empty, its
            table would empty the README's.
    """
    path = Path(args.record_file)
    if (args.report_only or args.readme) and not args.record and not path.is_file():
        raise SystemExit(f'[main job] --record-file {path}: no such record, so its table '
                         'would be empty; nothing written. Name an existing record (the default '
                         f'is {shown_path(RECORD)}), or add a run to a new one with --record '
                         '--work-dir DIR.')
    return runner.Record(path)


def check_preset(preset: str, rows: Sequence[Row]) -> None:
    """Refuse, before its clips are built, a preset whose classes one of ``rows``' configs
    cannot be fitted to (:func:`data_options`), naming both."""
    from hyperframes_mm.datasets.synthetic import PRESETS, flip_label_map
    classes = PRESETS[preset].classes
    try:
        flips = flip_label_map(classes)
    except ValueError:  # as the generator, which then writes no flip label map
        flips = None
    for row in rows:
        data_options(row.config, classes, flips, f'preset {preset!r}')


def main(argv=None) -> str:
    args = parse_args(argv)
    # Absolute, because the tools run in the repository, not in the caller's directory
    args.work_dir = str(Path(args.work_dir).resolve())
    args.data_root = str(Path(args.data_root).resolve())
    record = read_record(args)
    if args.record or args.report_only:
        return record_and_report(args, record)
    rows = ROWS + (FULL_ROWS if args.full else [])
    selected = [row for row in rows
                if not args.only or any(word.lower() in row.name.lower() for word in args.only)]
    preset = args.preset or ('full' if args.full else 'default')
    check_preset(preset, selected)
    data_root = Path(args.data_root)
    env = dict(os.environ, HF_SYNTHETIC=str(data_root), OMP_NUM_THREADS='1')
    display = Display()
    from hyperframes_mm.datasets.synthetic import (load_meta, make_synthetic_dataset,
                                                   written_after_dataset)
    from hyperframes_mm.evaluation import accuracy_by_group, class_groups_of
    start = time.time()
    make_synthetic_dataset(data_root, preset=preset)
    display.line(f'[main job] benchmark (preset {preset}) ready in {data_root} '
                 f'({time.time() - start:.0f} s)')
    # The synthetic configs train from frame cache entries beside the videos (configs/_base_/
    # datasets/synthetic_hyperframe.py); built here in parallel, not in each first epoch.
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    summary = build_frame_cache(read_video_list(data_root / 'train.txt'), data_root, data_root,
                                workers=max(1, args.jobs))
    if summary.failed:
        raise SystemExit(f'[main job] could not cache {len(summary.failed)} training videos, '
                         f'e.g. {next(iter(summary.failed.items()))}')
    display.line(f'[main job] frame cache: {summary}')
    meta = load_meta(data_root)
    groups = class_groups_of(data_root)
    epochs = args.epochs or (120 if args.full else None)
    display.line(f'[main job] {plural(len(selected), "model")} to train and test, '
                 f'{max(1, args.jobs)} at a time; logs in '
                 f'{args.work_dir}/<model>/{{train,test}}.log')
    train_rows(selected, args, env, epochs, display)

    done = [row for row in rows if written_after_dataset(
        Path(args.work_dir) / slug(row.name) / 'predictions.pkl', data_root)]
    display.line(f'[main job] FLOPs and latency of {plural(len(done), "model")}, timed side '
                 'by side')
    os.environ.update(HF_SYNTHETIC=str(data_root))
    load_at_start = load_average()
    # each model as it trained, fitted to the set (data_options), on the set's frames
    with mmengine_warnings_only():
        costs = side_by_side(
            {row.name: trained_config(row, Path(args.work_dir) / slug(row.name)) for row in done},
            (meta['params']['size'], ) * 2, progress=sys.stderr.isatty())
    results = {}
    for row in done:
        work_dir = Path(args.work_dir) / slug(row.name)
        results[row.name] = dict(
            accuracy_by_group(work_dir / 'predictions.pkl', groups), **costs[row.name],
            train_min=float((work_dir / 'train_seconds.txt').read_text()) / 60,
            config=str(row.config), note=row.note)
    command = ' '.join(['python tools/main_job.py', *(sys.argv[1:] if argv is None else argv)])
    environment = machine_line(f'training {args.jobs} models at once, one thread each',
                               f'command `{command}`', threads=1, load_at_start=load_at_start)
    num_classes = len(meta['classes'])
    table = render(rows, results, num_classes, data_line(meta, data_root), environment)
    out = Path(args.work_dir)
    (out / 'results.md').write_text(table + '\n')
    (out / 'results.json').write_text(json.dumps(results, indent=2) + '\n')
    bar_chart(rows, results, num_classes, out / 'results.png')
    print('\n' + table + '\n')
    for run in finished_runs(out, data_root):
        print(f'[main job] {verdict(run, recorded_runs(record, run["key"]))}')
    if args.readme:
        write_readmes(readme_table(record))
    print(f'\n[main job] wrote {out / "results.md"}, results.json and results.png; each model\'s '
          f'logs, checkpoints and predictions in {out}/<model>/ '
          f'({(time.time() - start) / 60:.1f} min). `python tools/main_job.py --record '
          f'--work-dir {out}` adds this run to {args.record_file}.')
    return table


def record_and_report(args, record: runner.Record) -> str:
    """``--record``: add the finished run of ``--work-dir`` to the record (nothing trains);
    then (also for ``--report-only``) print the record's table, and write it into README.md
    with ``--readme``."""
    if args.record:
        runs = finished_runs(Path(args.work_dir), Path(args.data_root))
        add_to_record(record, runs)
        print(f'[main job] recorded {plural(len(runs), "row")} of {args.work_dir} (seed '
              f'{runs[0]["seed"]}, {kernel_label(runs[0]["kernels"])}) in {args.record_file}'
              if runs else f'[main job] {args.work_dir}: no finished row to record')
    table = readme_table(record)
    if args.readme:
        write_readmes(table)
    print(table)
    return table


def write_readmes(table: str) -> None:
    """Put the record's table between the main_job markers of every README of :data:`READMES`."""
    for readme in READMES:
        replace_section(readme, table, README_BEGIN, README_END)
