"""UTD-MHAD depth, cross-subject: the family's models and the recipe's ablations, over seeds.

    OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad.py [--data data/utd_mhad] [--jobs 2]
        [--rows NAME ...] [--seeds 0 1 2] [--part zoo|ablation|all]

Every row is a config of ``configs/hyperframes/utd_mhad`` (the ``zoo`` part), or the recipe's
config with the changes its ``ablation`` row lists, trained from scratch with ``tools/train.py``
and tested with ``tools/test.py`` (mmaction2's own tools), once per seed. A run logs every
training iteration, so the per-epoch training accuracy (the mean of the epoch's augmented
batches) and loss come from its ``vis_data/scalars.json``, beside the test accuracy of the
validations every few epochs; after training, the last checkpoint is also tested on the training
clips with the test views. ``--jobs`` runs train at once, one thread each; a finished run (its
``result.json``, newer than the converted dataset) is not trained again, and one that was
stopped (its config unchanged, a checkpoint saved) resumes from its last checkpoint.

The committed record of finished runs, ``benchmarks/results/utd_mhad.json``, keeps each run
under a key of what it trained (every setting the runner reads, the seed, and the dataset
conversion's mapping): a run whose folder is not on this machine (a fresh clone) counts from
the record for as long as its row makes the same key, so a change to one row trains that row
again and the tables keep every other. Two rows that make the same run (an ablation that became
the default) share it.

Writes ``benchmarks/results/utd_mhad.{md,json}`` and ``utd_mhad_curves.png``, the results
section of ``configs/hyperframes/utd_mhad/README.md`` (between its ``bench_utd_mhad`` markers)
and ``configs/hyperframes/utd_mhad/results/<config>.json`` (the zoo rows' test metrics, mean
over seeds, read by ``tools/analysis/zoo_table.py``).
"""
import argparse
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from benchmarks.lib import runner
from benchmarks.lib.costing import side_by_side
from benchmarks.lib.edits import (backbone, frames, one_config, own_backbones, read_data_from,
                                  sampling, schedule_of, stream, sync_pipeline_variables,
                                  train_augment, two_passes)
from benchmarks.lib.tables import replace_section, summary
from hyperframes_mm.utils import slug

REPO = Path(__file__).resolve().parents[1]
FAMILY = REPO / 'configs' / 'hyperframes' / 'utd_mhad'
RESULTS = REPO / 'benchmarks' / 'results' / 'utd_mhad.md'
FAMILY_README = FAMILY / 'README.md'
#: the zoo rows' test metrics, read by tools/analysis/zoo_table.py
ZOO_RESULTS = FAMILY / 'results'
PROJECT_README = REPO / 'README.md'
BEGIN, END = '<!-- bench_utd_mhad:begin -->', '<!-- bench_utd_mhad:end -->'
ABLATION_BEGIN, ABLATION_END = '<!-- bench_utd_mhad_ablation:begin -->', \
    '<!-- bench_utd_mhad_ablation:end -->'
BENCH_README = REPO / 'benchmarks' / 'README.md'
README_BEGIN, README_END = '<!-- bench_utd_mhad_readme:begin -->', \
    '<!-- bench_utd_mhad_readme:end -->'


def family_config(prefix: str) -> Path:
    """The family's one config whose name starts with ``prefix`` (the model and, where one
    model has several configs, its sampling tag: ``hyperframe_scratch-r18_1xb16-1x1x5-``)."""
    return one_config(FAMILY, f'{prefix}*.py')


def half_size(cfg) -> None:
    """A fast/slow model's fast stream at half the input size."""
    cfg.model.stream_downsample = dict(fast=2)


class Row(NamedTuple):
    """One model: a family config, or the recipe with ``edits`` (an ablation)."""
    name: str
    config: Path
    note: str
    seeds: Tuple[int, ...] = (0, )
    edits: tuple = ()
    #: training cost relative to one hyperframe model, to start the longest runs first
    cost: float = 1.0


RECIPE = family_config('hyperframe_scratch-r18_1xb16-1x1x5-')
RECIPE_T8 = family_config('hyperframe_scratch-r18_1xb16-1x1x8-')
SINGLE = family_config('singleframe_')
TSN = family_config('tsn_')
TSM = family_config('tsm_')
FASTSLOW = family_config('fastslow_')
I3D = family_config('i3d_')
HEADLINE_SEEDS = (0, 1, 2)
TSM_ROW = 'TSM-5 (mmaction2)'
RECIPE_ROW = 'hyperframe T=5 (recipe)'
RECIPE_T8_ROW = 'hyperframe T=8'
FASTSLOW_ROW = 'fast/slow T=5+5'
SINGLE_ROW = 'single frame'
#: The zoo's T=8 model: also the recipe with one change, so the ablation table lists it too.
RECIPE_T8_MODEL = Row(RECIPE_T8_ROW, RECIPE_T8, 'the recipe with 8 picks: one T=8 hyperframe',
                      HEADLINE_SEEDS, cost=1.3)
ZOO_ROWS = [
    Row(SINGLE_ROW, SINGLE, 'HyperResNet-18 on one frame (T=1), 3 test frames averaged',
        HEADLINE_SEEDS, cost=0.9),
    Row('TSN-5 (mmaction2)', TSN, 'ResNet-18 on 5 segments, scores averaged', HEADLINE_SEEDS,
        cost=3.5),
    Row(TSM_ROW, TSM, 'ResNetTSM-18 on 5 segments, 1/8 of the channels shifted',
        HEADLINE_SEEDS, cost=4.0),
    Row('I3D-R18 (mmaction2)', I3D, 'ResNet3d-18, 8 frames over the clip, every block 3D',
        cost=3.8),
    Row(RECIPE_ROW, RECIPE, 'one T=5 hyperframe: the plugin\'s recipe', HEADLINE_SEEDS),
    RECIPE_T8_MODEL,
    Row(FASTSLOW_ROW, FASTSLOW, 'a fast (5 picks 4/30 s apart) and a slow (5 over the clip) '
        'hyperframe stacked into one T=10 hyperframe: one HyperResNet-18 pass', HEADLINE_SEEDS,
        cost=1.1),
]
PLAIN = (backbone(input_encoding='frames', motion_products=False), )
ABLATION_ROWS = [
    Row('plain stacked frames', RECIPE, 'frames as they are, no motion products', edits=PLAIN),
    Row('diff, gain 1', RECIPE, 'diff encoding with gain 1', edits=(backbone(diff_gain=1.0), )),
    Row('diff, gain 2', RECIPE, 'gain 2', edits=(backbone(diff_gain=2.0), )),
    Row('diff, gain 8', RECIPE, 'gain 8', edits=(backbone(diff_gain=8.0), )),
    Row('motion products on', RECIPE, 'I_t·I_x, I_t·I_y of consecutive picks into the stem '
        '(the synthetic family\'s tuned config has them)',
        edits=(backbone(motion_products=True), )),
    Row('T=3', RECIPE, '3 uniform picks', edits=(frames(3), )),
    RECIPE_T8_MODEL,
    Row('picks 4/30 s apart', RECIPE, 'T=5 at 4/30 s (a 0.53 s window)',
        edits=(sampling(mode='interval', interval=4 / 30, time_based=True), )),
    Row('picks 8/30 s apart', RECIPE, 'T=5 at 8/30 s (a 1.07 s window), with motion products',
        edits=(sampling(mode='interval', interval=8 / 30, time_based=True),
               backbone(motion_products=True))),
    Row('picks 8/30 s apart, no motion products', RECIPE, 'T=5 at 8/30 s, the recipe\'s stem '
        '(the synthetic family\'s tuned picks without its motion products)',
        edits=(sampling(mode='interval', interval=8 / 30, time_based=True), )),
    Row('per-frame augmentation', RECIPE, 'one crop draw per frame (the seeds\' bug)',
        edits=(train_augment(independent=True), )),
    Row('flips + label map', RECIPE, 'horizontal flips, left/right swipes and circles swapped',
        edits=(train_augment(flip_ratio=0.5, flip_label_map={0: 1, 1: 0, 8: 9, 9: 8}), )),
    Row('SGD schedule of the baselines', RECIPE, 'the recipe trained with TSN/TSM\'s SGD',
        edits=(schedule_of(TSM), )),
    Row('fast/slow, two backbone passes', FASTSLOW, 'the two T=5 hyperframes through the '
        'shared backbone one after the other, features concatenated', edits=(two_passes, ),
        cost=1.9),
    Row('fast/slow, fast stream at half size', FASTSLOW, 'two passes, the fast stream '
        'average-pooled to 48x48 (about a quarter of a pass)', edits=(two_passes, half_size),
        cost=1.4),
    Row('fast/slow, fast picks 2/30 s', FASTSLOW, 'two passes, the fast stream\'s picks 2/30 s '
        'apart', edits=(two_passes, stream('fast', interval=2 / 30)), cost=1.9),
    Row('fast/slow, SlowFast-style', FASTSLOW, 'fast: 10 picks over the whole clip, slow: 5, '
        'one backbone each (SlowFast: both pathways span the clip)',
        edits=(two_passes, stream('fast', mode='uniform', interval=None),
               own_backbones(fast=10, slow=5)), cost=2.2),
]
#: Every row, once (the T=8 model is in both tables).
ROWS = ZOO_ROWS + [row for row in ABLATION_ROWS if row not in ZOO_ROWS]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', default='data/utd_mhad',
                        help='converted UTD-MHAD (tools/data/utd_mhad/convert_depth.py)')
    parser.add_argument('--work-dir', default='work_dirs/bench_utd_mhad')
    parser.add_argument('--jobs', type=int, default=2, help='runs trained at once (1 thread each)')
    parser.add_argument('--part', choices=('zoo', 'ablation', 'all'), default='all')
    parser.add_argument('--rows', nargs='+', help='only rows whose name contains one of these')
    parser.add_argument('--seeds', type=int, nargs='+',
                        help='train these seeds of every selected row (default: each row\'s own)')
    parser.add_argument('--report-only', action='store_true',
                        help='write the tables from the finished runs, train nothing')
    parser.add_argument('--record', default=str(RESULTS.with_suffix('.json')),
                        help='the record of finished runs: read for runs not in --work-dir, '
                        'rewritten with the tables')
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------- one run
def run_dir(args, row: Row, seed: int) -> Path:
    return Path(args.work_dir) / slug(row.name) / f'seed{seed}'


CROSS_SUBJECT_LISTS = ('cross_subject_train.txt', 'cross_subject_test.txt')


def data_description(args) -> Dict:
    """What the tables and the run keys need of the converted data set: the conversion's
    version and mapping, the number of classes and clips per list. From ``convert_meta.json``
    where the data set is here, else from the record (a fresh clone)."""
    meta_path = Path(args.data) / 'convert_meta.json'
    if not meta_path.is_file():
        return runner.Record(args.record).data.get('data', {})
    meta = json.loads(meta_path.read_text())
    description = dict(version=meta.get('version'), mapping=meta.get('mapping'))
    if 'classes' in meta:  # a converter's meta; the run-key tests write only the two above
        description.update(classes=len(meta['classes']),
                           lists={name: meta['lists'][name] for name in CROSS_SUBJECT_LISTS})
    return description


def finished(args, row: Row, seed: int) -> Optional[Dict]:
    """The run of this row and seed: its ``result.json`` in the work dir when that is newer
    than the converted dataset and its config is the one the row makes now, else the record's
    run of the same :func:`run_key`, else None."""
    folder = run_dir(args, row, seed)
    result, meta = folder / 'result.json', Path(args.data) / 'convert_meta.json'
    if (result.is_file() and not (meta.is_file() and
                                  result.stat().st_mtime <= meta.stat().st_mtime)
            and same_config(folder, row, seed, args)):
        return json.loads(result.read_text())
    run = runner.Record(args.record).runs().get(run_key(row, seed, args))
    return None if run is None else dict(run, row=row.name)


_RUN_KEYS: Dict[Tuple[Row, int, str], str] = {}


def run_key(row: Row, seed: int, args) -> str:
    """:func:`benchmarks.lib.runner.run_key` of the config :func:`run_config` makes, with the
    data root written as ``{data}`` and the conversion's version and mapping, so the same run
    has the same key on any machine and a dataset converted otherwise makes other runs."""
    data_root = str(Path(args.data).resolve())
    cache = (row, seed, data_root)
    if cache not in _RUN_KEYS:
        description = data_description(args)
        with tempfile.TemporaryDirectory() as tmp:
            _RUN_KEYS[cache] = runner.run_key(
                run_config(row, seed, args, Path(tmp)), data_root,
                {key: description.get(key) for key in ('version', 'mapping')})
    return _RUN_KEYS[cache]


def same_config(folder: Path, row: Row, seed: int, args) -> bool:
    """Whether the run in ``folder`` trained the config :func:`run_config` makes now."""
    with tempfile.TemporaryDirectory() as tmp:
        return runner.same_config(folder / 'config.py', run_config(row, seed, args, Path(tmp)))


def resumable(folder: Path, row: Row, seed: int, args) -> bool:
    """Whether a stopped run of this very config left a checkpoint to resume from."""
    with tempfile.TemporaryDirectory() as tmp:
        return runner.resumable(folder, run_config(row, seed, args, Path(tmp)))


def run_config(row: Row, seed: int, args, work_dir: Path) -> Path:
    """The row's config for one seed, with every iteration logged, dumped into the run dir."""
    from mmengine.config import Config
    cfg = Config.fromfile(str(row.config))
    for edit in row.edits:
        edit(cfg)
    sync_pipeline_variables(cfg)
    read_data_from(cfg, Path(args.data).resolve())
    cfg.randomness = dict(seed=seed)
    # every iteration in the logs, unsmoothed: the epoch's training accuracy is their mean
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1, ignore_last=False)
    cfg.log_processor = dict(type='LogProcessor', window_size=1, by_epoch=True)
    path = work_dir / 'config.py'
    cfg.dump(str(path))
    return path


def train_run(row: Row, seed: int, args) -> Dict:
    """Train one seed of a row (or resume it), test it on the test and training lists; its
    result."""
    done = finished(args, row, seed)
    if done is not None:
        return done
    work_dir = run_dir(args, row, seed)
    what = f'{row.name} seed {seed}'
    resuming = resumable(work_dir, row, seed, args)
    if resuming:
        (work_dir / 'result.json').unlink(missing_ok=True)
        config = work_dir / 'config.py'
        print(f'[bench_utd_mhad] {what}: resuming from '
              f'{(work_dir / "last_checkpoint").read_text().strip()}', flush=True)
    else:
        moved = runner.set_aside(work_dir)
        if moved is not None:
            print(f'[bench_utd_mhad] {what}: the earlier run there is not this config\'s; '
                  f'moved to {moved}', flush=True)
        work_dir.mkdir(parents=True)
        config = run_config(row, seed, args, work_dir)
    print(f'[bench_utd_mhad] {what}: training ({work_dir / "train.log"})', flush=True)
    try:
        checkpoint = runner.train(config, work_dir, work_dir / 'train.log', resume=resuming)
        test, _ = runner.test(config, checkpoint, work_dir / 'test', work_dir / 'test.log')
        train_list = str(Path(args.data).resolve() / 'cross_subject_train.txt')
        fit, _ = runner.test(config, checkpoint, work_dir / 'test_train',
                             work_dir / 'test_train.log',
                             options=[f'test_dataloader.dataset.ann_file={train_list}'])
    except runner.ToolFailed as error:
        raise RuntimeError(f'{what}: {error}') from error
    result = dict(row=row.name, seed=seed, key=run_key(row, seed, args), top1=test['acc/top1'],
                  top5=test['acc/top5'], mean_class=test['acc/mean1'],
                  train_top1=fit['acc/top1'], train_min=runner.training_seconds(work_dir) / 60,
                  config=str(config), checkpoint=checkpoint, curves=runner.curves(work_dir))
    (work_dir / 'result.json').write_text(json.dumps(result, indent=1))
    print(f'[bench_utd_mhad] {what}: top-1 {result["top1"]:.3f}, training clips '
          f'{result["train_top1"]:.3f} ({result["train_min"]:.1f} min)', flush=True)
    return result


# ------------------------------------------------------------------------------- reporting
def cost_of(rows: Sequence[Row], args) -> Dict[str, Dict]:
    """GFLOPs and params of one view, and the latency of one test sample (all its views,
    batch 1, one thread, every row timed side by side) of each row's config as
    :func:`run_config` makes it (a run's own folder may be on another machine)."""
    from mmengine.config import Config
    with tempfile.TemporaryDirectory() as tmp:
        configs = {}
        for row in rows:
            folder = Path(tmp) / slug(row.name)
            folder.mkdir()
            configs[row.name] = Config.fromfile(str(run_config(row, 0, args, folder)))
        return side_by_side(configs, (128, 128), per_view=True, progress=True)


def accuracy_cell(runs: List[Dict], key: str) -> str:
    mean, spread = summary(runs, key)
    if len(runs) == 1:
        return f'{mean:.3f}'
    seeds = ' / '.join(f'{run[key]:.3f}' for run in runs)
    return f'**{mean:.3f}** ± {spread:.3f} ({seeds})'


def headline_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                   costs: Dict[str, Dict]) -> List[str]:
    reference = costs[TSM_ROW]['latency_ms']
    lines = ['| model | top-1 (mean ± sd; per seed) | mean class acc | top-1 on the training '
             'clips | training time (min) | GFLOPs / view | params (M) | CPU latency vs TSM-5 |',
             '|---|---|---|---:|---:|---:|---:|---:|']
    for row in rows:
        runs = results[row.name]
        cost = costs[row.name]
        lines.append(
            f'| [{row.name}]({row.config.name}) | {accuracy_cell(runs, "top1")} | '
            f'{summary(runs, "mean_class")[0]:.3f} | {summary(runs, "train_top1")[0]:.3f} | '
            f'{summary(runs, "train_min")[0]:.1f} | {cost["gflops"]:.2f} | '
            f'{cost["params_m"]:.2f} | {cost["latency_ms"] / reference:.2f}x |')
    lines += ['', f'TSM-5: {reference:.1f} ms per test sample (3 clips, batch 1, one thread) on '
              'the machine that measured the costs (`costs` of benchmarks/results/utd_mhad.json, '
              'measured again by every run that trains).']
    return lines


def readme_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                 costs: Dict[str, Dict]) -> List[str]:
    """The headline rows for the project README: mean top-1 (spread), latency vs TSM-5."""
    reference = costs[TSM_ROW]['latency_ms']
    lines = ['| model | top-1 (mean ± sd) | seeds | GFLOPs / view | CPU latency vs TSM-5 | '
             'training time (min) |', '|---|---:|---:|---:|---:|---:|']
    for row in rows:
        runs = results[row.name]
        mean, spread = summary(runs, 'top1')
        cell = f'{mean:.3f} ± {spread:.3f}' if len(runs) > 1 else f'{mean:.3f}'
        lines.append(f'| {row.name} | {cell} | {len(runs)} | '
                     f'{costs[row.name]["gflops"]:.2f} | '
                     f'{costs[row.name]["latency_ms"] / reference:.2f}x | '
                     f'{summary(runs, "train_min")[0]:.0f} |')
    return lines


def curve_table(rows: Sequence[Row], results: Dict[str, List[Dict]]) -> List[str]:
    """Training / test top-1 by epoch of each row's seed 0, at the epochs validated."""
    first = results[rows[0].name][0]['curves']
    epochs = [epoch for epoch, point in first.items() if 'test_top1' in point]
    lines = ['| model | ' + ' | '.join(f'ep {epoch}' for epoch in epochs) + ' |',
             '|---|' + '---:|' * len(epochs)]
    for row in rows:
        points = results[row.name][0]['curves']
        cells = [f'{points[e]["train_top1"]:.2f} / {points[e]["test_top1"]:.2f}'
                 if e in points and 'test_top1' in points[e] else '' for e in epochs]
        lines.append(f'| {row.name} | ' + ' | '.join(cells) + ' |')
    return lines


def ablation_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                   costs: Dict[str, Dict]) -> List[str]:
    reference = costs[TSM_ROW]['latency_ms']
    recipe = summary(results[RECIPE_ROW], 'top1')[0]
    lines = ['| row | change to the recipe | top-1 | vs the recipe (points) | mean class acc | '
             'top-1 on the training clips | training time (min) | CPU latency vs TSM-5 |',
             '|---|---|---|---:|---:|---:|---:|---:|']
    for row in rows:
        runs = results[row.name]
        lines.append(
            f'| {row.name} | {row.note} | {accuracy_cell(runs, "top1")} | '
            f'{100 * (summary(runs, "top1")[0] - recipe):+.1f} | '
            f'{summary(runs, "mean_class")[0]:.3f} | {summary(runs, "train_top1")[0]:.3f} | '
            f'{summary(runs, "train_min")[0]:.1f} | '
            f'{costs[row.name]["latency_ms"] / reference:.2f}x |')
    return lines


#: How far an ablation row must move from its base model's mean, in units of the base's spread
#: over seeds, to count as a change rather than the noise of one more run.
CLEAR_CHANGE = 2.0


def base_row(row: Row) -> str:
    """The model an ablation row changes: fast/slow for its own rows, else the recipe."""
    return FASTSLOW_ROW if row.config == FASTSLOW else RECIPE_ROW


def ablation_findings(rows: Sequence[Row], results: Dict[str, List[Dict]],
                      costs: Dict[str, Dict]) -> List[str]:
    """Which changes move their base model (the recipe, or fast/slow for its rows) by more than
    :data:`CLEAR_CHANGE` times the base's spread over its seeds, and which stay inside it: the
    reading a default is chosen on, written from the numbers so that it cannot go stale."""
    reference = costs[TSM_ROW]['latency_ms']
    lines = []
    for base in (RECIPE_ROW, FASTSLOW_ROW):
        if len(results.get(base, ())) < 2:
            continue
        mean, spread = summary(results[base], 'top1')
        moved: Dict[str, List[str]] = dict(above=[], within=[], below=[])
        for row in rows:
            if base_row(row) != base or row.name not in results:
                continue
            runs = results[row.name]
            delta = summary(runs, 'top1')[0] - mean
            side = ('above' if delta > CLEAR_CHANGE * spread else
                    'below' if delta < -CLEAR_CHANGE * spread else 'within')
            moved[side].append(f'{row.name} ({100 * delta:+.1f}, {len(runs)} '
                               f'seed{"s" * (len(runs) > 1)}, '
                               f'{costs[row.name]["latency_ms"] / reference:.2f}x)')
        lines += [''] if lines else []  # a paragraph of its own, not part of the list above
        lines.append(f'Against {base} ({mean:.3f}, spread {spread:.3f} over '
                     f'{len(results[base])} seeds; a clear change is more than '
                     f'{100 * CLEAR_CHANGE * spread:.1f} points; points, seeds, latency vs '
                     'TSM-5):')
        lines += [f'- {label}: {"; ".join(moved[side]) or "none"}' for side, label in (
            ('above', 'clearly above'), ('within', 'within the spread'),
            ('below', 'clearly below'))]
    return lines


# The issue's targets, each read once for its check and its line: the recipe at TSM-5's top-1
# or above within a third of its latency, fast/slow 3 points above it within half.
RECIPE_MAX_LATENCY = 1 / 3
FASTSLOW_MAX_LATENCY = 0.5
FASTSLOW_MIN_GAIN = 0.03


def targets(results: Dict[str, List[Dict]], costs: Dict[str, Dict]) -> List[str]:
    """The real-data issue's targets on this run's numbers (means over seeds)."""
    top1 = {name: summary(runs, 'top1')[0] for name, runs in results.items()}
    if not {TSM_ROW, RECIPE_ROW, FASTSLOW_ROW, SINGLE_ROW} <= set(top1):
        return []
    tsm, latency = top1[TSM_ROW], costs[TSM_ROW]['latency_ms']

    def verdict(ok: bool) -> str:
        return '**met**' if ok else '**missed**'

    recipe_ratio = costs[RECIPE_ROW]['latency_ms'] / latency
    fastslow_ratio = costs[FASTSLOW_ROW]['latency_ms'] / latency
    recipe_met = top1[RECIPE_ROW] >= tsm and recipe_ratio <= RECIPE_MAX_LATENCY
    fastslow_met = (top1[FASTSLOW_ROW] >= tsm + FASTSLOW_MIN_GAIN
                    and fastslow_ratio <= FASTSLOW_MAX_LATENCY)
    return [
        'Targets (means over the seeds):',
        f'- recipe {top1[RECIPE_ROW]:.3f} vs TSM-5 {tsm:.3f} at {recipe_ratio:.3f}x its latency '
        f'(>= TSM-5 at <= 1/3 = {RECIPE_MAX_LATENCY:.3f}x): {verdict(recipe_met)}',
        f'- fast/slow {top1[FASTSLOW_ROW]:.3f}, {100 * (top1[FASTSLOW_ROW] - tsm):+.1f} points '
        f'vs TSM-5, at {fastslow_ratio:.3f}x its latency (>= +{100 * FASTSLOW_MIN_GAIN:.0f} '
        f'points at <= {FASTSLOW_MAX_LATENCY}x): {verdict(fastslow_met)}',
        f'- single frame {top1[SINGLE_ROW]:.3f}, {100 * (top1[SINGLE_ROW] - tsm):+.1f} points vs '
        f'TSM-5 and {100 * (top1[SINGLE_ROW] - top1[RECIPE_ROW]):+.1f} vs the recipe',
    ]


def plot_curves(rows: Sequence[Row], results: Dict[str, List[Dict]], path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for index, row in enumerate(rows):
        color = f'C{index}'
        for run in results[row.name]:
            points = run['curves']
            epochs = [int(e) for e in points]
            label = row.name if run is results[row.name][0] else None
            axes[0].plot(epochs, [points[e]['train_top1'] for e in points], color=color,
                         alpha=0.8, label=label)
            tested = [e for e in points if 'test_top1' in points[e]]
            axes[1].plot([int(e) for e in tested], [points[e]['test_top1'] for e in tested],
                         color=color, marker='o', markersize=3, alpha=0.8, label=label)
    axes[0].set_title('training clips (augmented, epoch mean)')
    axes[1].set_title('test clips (cross-subject)')
    for ax in axes:
        ax.set_xlabel('epoch')
        ax.grid(alpha=0.3)
    axes[0].set_ylabel('top-1')
    axes[1].legend(loc='center left', bbox_to_anchor=(1.02, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_zoo_results(rows: Sequence[Row], results: Dict[str, List[Dict]]) -> None:
    """``results/<config>.json`` per zoo row: the test metrics averaged over its seeds, in the
    keys of mmengine's metrics file."""
    out = ZOO_RESULTS
    out.mkdir(exist_ok=True)
    for row in rows:
        runs = results[row.name]
        metrics = {'acc/top1': summary(runs, 'top1')[0], 'acc/top5': summary(runs, 'top5')[0],
                   'acc/mean1': summary(runs, 'mean_class')[0],
                   'seeds': [run['seed'] for run in runs]}
        (out / f'{row.config.stem}.json').write_text(json.dumps(metrics, indent=1) + '\n')


def stopped_runs(rows: Sequence[Row], args) -> List[str]:
    """``'<row> seed <s> at epoch <e> of <n>'`` for every seed of ``rows`` that is not finished
    but left a checkpoint of its current config to resume from."""
    from mmengine.config import Config
    out = []
    for row in rows:
        for seed in row.seeds:
            folder = run_dir(args, row, seed)
            if finished(args, row, seed) is not None or not resumable(folder, row, seed, args):
                continue
            total = Config.fromfile(str(folder / 'config.py')).train_cfg.max_epochs
            out.append(f'{row.name} seed {seed} at epoch {runner.last_epoch(folder) or "?"} '
                       f'of {total}')
    return out


def report(rows: Sequence[Row], results: Dict[str, List[Dict]], args) -> str:
    zoo = [row for row in ZOO_ROWS if row in rows and row.name in results]
    ablation = [row for row in ABLATION_ROWS if row in rows and row.name in results]
    if not any(row.name == TSM_ROW for row in zoo) or RECIPE_ROW not in results:
        print(f'[bench_utd_mhad] no tables yet: they are relative to {TSM_ROW!r} and '
              f'{RECIPE_ROW!r}, train those rows first', flush=True)
        return ''

    shown = [row for row in ROWS if row in zoo or row in ablation]
    record = runner.Record(args.record)
    # report-only writes the tables from the record alone, its costs included (a latency
    # measured again here would move with this machine and its load); a run measures anew
    costs = dict(record.data.get('costs', {})) if args.report_only else {}
    unmeasured = [row for row in shown if row.name not in costs]
    if unmeasured:
        costs.update(cost_of(unmeasured, args))
    data = data_description(args)
    lists = data['lists']
    intro = (f'UTD-MHAD depth ({data["classes"]} actions), cross-subject: '
             f'{lists["cross_subject_train.txt"]} training clips (subjects 1, 3, 5, 7), '
             f'{lists["cross_subject_test.txt"]} test clips (2, 4, 6, 8), chance '
             f'{1 / data["classes"]:.3f}. Every row from scratch at 96x96, tested on 3 '
             'clips x the whole frame with its last checkpoint. Training time: wall minutes, '
             'one thread per run, validation included, while other runs shared the cores (as '
             'many as --jobs, and more when several commands ran), so it is a rough cost; '
             'the latency column is the side-by-side measurement.')
    headline = headline_table(zoo, results, costs)
    missing = [row for row in ZOO_ROWS if row not in zoo]
    untrained = ([f'Not trained yet: {"; ".join(row.name for row in missing)} (`python '
                  'benchmarks/bench_utd_mhad.py --part zoo` trains what is missing).', '']
                 if missing else [])
    stopped = stopped_runs(ZOO_ROWS, args)
    if stopped:
        untrained += [f'Stopped part-way (the same command resumes them from their last '
                      f'checkpoint): {"; ".join(stopped)}.', '']
    section = [intro, '', *headline, '', *untrained, *targets(results, costs), '',
               'Training / test top-1 by epoch (seed 0; the training value is the mean over the '
               'epoch\'s augmented batches; every seed in the plot):', '',
               *curve_table(zoo, results), '',
               '![training and test accuracy by epoch](../../../benchmarks/results/'
               'utd_mhad_curves.png)']
    text = ['# UTD-MHAD depth: the family and the recipe\'s ablations', '', *section]
    ablation_lines = ablation_table(ablation, results, costs) if ablation else []
    findings = ablation_findings(ablation, results, costs) if ablation else []
    if ablation:
        text += ['', '## Ablations (the recipe with one change)', '', *ablation_lines, '',
                 *findings]
    text += ['', 'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad.py` '
             '(after tools/data/utd_mhad/README.md).']
    markdown = '\n'.join(text) + '\n'
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(markdown)
    record.write(results, costs={row.name: costs[row.name] for row in shown}, data=data)
    plot_curves(zoo, results, RESULTS.parent / 'utd_mhad_curves.png')
    # the tables show the rows trained so far and name the rest: a missing row never hides
    # the others, and is never shown with a number it does not have
    replace_section(FAMILY_README, '\n'.join(section), BEGIN, END)
    replace_section(PROJECT_README, '\n'.join(readme_table(zoo, results, costs)),
                  README_BEGIN, README_END)
    write_zoo_results(zoo, results)
    if ablation:
        not_run = [row.name for row in ABLATION_ROWS if row not in ablation]
        note = ([f'Not trained yet: {"; ".join(not_run)} (`python benchmarks/bench_utd_mhad.py '
                 '--part ablation`).'] if not_run else [])
        replace_section(BENCH_README, '\n'.join(ablation_lines
                                                 + ([''] + findings if findings else [])
                                                 + ([''] + note if note else [])),
                        ABLATION_BEGIN, ABLATION_END)
    return markdown


def seeds_of(row: Row, args) -> List[int]:
    """The row's own seeds, those asked for, every other seed it has a run folder of (an
    ablation row trained over more seeds once keeps them all in the tables) and every seed of
    the record (:func:`finished` keeps those the row made)."""
    folders = (path.name for path in (Path(args.work_dir) / slug(row.name)).glob('seed*'))
    found = {int(name[4:]) for name in folders if name[4:].isdigit()}
    recorded = {run['seed'] for run in runner.Record(args.record).runs().values()}
    return sorted({*row.seeds, *(args.seeds or ()), *found, *recorded})


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    data = Path(args.data)
    if not (args.report_only or (data / 'convert_meta.json').is_file()):
        raise SystemExit(f'{data}: no converted UTD-MHAD (tools/data/utd_mhad/README.md)')
    parts = dict(zoo=ZOO_ROWS, ablation=ABLATION_ROWS, all=ROWS)[args.part]
    rows = [row for row in parts
            if not args.rows or any(word.lower() in row.name.lower() for word in args.rows)]
    jobs = [(row, seed) for row in rows for seed in (args.seeds or row.seeds)]
    if not args.report_only:
        summary_ = build_frame_cache(read_video_list(data / 'cross_subject_train.txt'), data,
                                     data, workers=max(1, args.jobs))
        print(f'[bench_utd_mhad] frame cache: {summary_}', flush=True)
        jobs.sort(key=lambda job: (-job[0].cost, job[1]))
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = [pool.submit(train_run, row, seed, args) for row, seed in jobs]
            failures = []
            for future in futures:
                try:
                    future.result()
                except RuntimeError as error:  # the other runs go on; reported at the end
                    failures.append(str(error))
                    print(f'[bench_utd_mhad] {error}', flush=True)
        if failures:
            raise SystemExit(f'{len(failures)} runs failed:\n' + '\n'.join(failures))
    # every finished seed of every row is in the tables, asked for this time or not
    results = {}
    for row in ROWS:
        runs = [run for seed in seeds_of(row, args)
                if (run := finished(args, row, seed)) is not None]
        if runs:
            results[row.name] = runs
    markdown = report(ROWS, results, args)
    print(markdown)
    return markdown


if __name__ == '__main__':
    main()
