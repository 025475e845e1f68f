"""The UTD-MHAD ImageNet family carried to another data set: its configs changed in data root and
class count only.

    OMP_NUM_THREADS=1 python benchmarks/bench_transfer.py --data ROOT [--jobs 2] [--seeds 0 1 2]
        [--report-only | --train-only] [--readme]
    OMP_NUM_THREADS=1 python benchmarks/bench_transfer.py --synthetic default --synthetic-seed 1

The family's rows were chosen on UTD-MHAD's training subjects; whether the choice holds
elsewhere is a question for data none of them was chosen on. This script trains, on such data,
mmaction2's TSM-MobileNetV2-5, the hyperframe T=5 row and the rows the family chose within a
third (the headline) and within half of TSM's latency (``recorded_choice`` of
bench_utd_mhad_imagenet.py, read from its committed records), each config exactly as a user
carries it (``HF_UTD_MHAD`` and ``model.cls_head.num_classes``): the same epochs, input size,
augmentation, test clips and ImageNet file. Each run is tested once, with its last checkpoint.

``ROOT`` is a data set in the UTD-MHAD layout: ``cross_subject_train.txt`` and
``cross_subject_test.txt`` (mmaction2 video lists, paths below ``ROOT``). What made it (a run of
other data is another run) and how many classes it has are read from the meta file its builder
wrote last (``convert_meta.json`` of a converter, as tools/data/utd_mhad writes, or the
synthetic benchmark's ``meta.json``), or, for a set that has only its lists, from the lists:
the largest label + 1 classes, and the lists' contents as the data's identity.
``--synthetic PRESET --synthetic-seed S`` builds the synthetic motion benchmark in
``data/transfer/synthetic-<PRESET>-s<S>`` and lays it out so: its training clips are the
training list, its validation clips the test list.

Runs are recorded by key in ``benchmarks/results/transfer_<name>.json`` (``<name>``: the data
set's folder name) and resume after a kill (:mod:`benchmarks.lib.rows`); the report,
``benchmarks/results/transfer_<name>.md``, holds the table, the held-out target (the headline
row >= TSM-MobileNetV2-5 at <= 1/3 of its latency) and the learning curves. A record named
with ``--record`` must be of this data set (its ``data`` section: the lists, and what made the
set, as the set here, or the synthetic preset and seed, says), with ``--report-only`` it must
exist, and when it is rewritten its runs of rows this script does not carry stay in it.
"""
import json
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks import bench_utd_mhad_imagenet as family
from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.edits import head
from benchmarks.lib.rows import Row, curve_table
from benchmarks.lib.tables import mean_sd, replace_section, summary

RESULTS = REPO / 'benchmarks' / 'results'
PROJECT_README = REPO / 'README.md'
README_BEGIN, README_END = ('<!-- bench_transfer_readme:begin -->',
                            '<!-- bench_transfer_readme:end -->')
#: the lists a data set in the UTD-MHAD layout has in its root (what the family's configs read)
LAYOUT_LISTS = ('cross_subject_train.txt', 'cross_subject_test.txt')
TSM_LABEL = 'TSM-MobileNetV2-5'


def laid_out_synthetic(meta: Dict, lists: Sequence[str]) -> Dict:
    """What the tables and the run keys read of a synthetic benchmark laid out as UTD-MHAD
    (:func:`lay_out`): :func:`benchmarks.lib.rows.synthetic` of its own lists, under the
    layout's names."""
    own = (meta['annotations']['train'], meta['annotations']['val'])
    description = lib.synthetic(meta, own)
    description['lists'] = {name: description['lists'][source]
                            for name, source in zip(lists, own)}
    return description


#: a converter's data set (the real sets), the synthetic benchmark laid out as UTD-MHAD, or a
#: set that has only the layout's lists (a user's), described by them
DATA_METAS = (lib.CONVERTED,
              lib.DataMeta('meta.json', laid_out_synthetic, ('generator', )),
              lib.DataMeta(LAYOUT_LISTS[1], lib.listed, ('digests', ), from_root=True))


#: the keys a builder always writes into its meta file (a converter's ``convert_meta.json``,
#: the synthetic generator's ``meta.json``): a file of that name without them is a user's own,
#: and the set's lists describe it
BUILDER_KEYS = {DATA_METAS[0].file: {'version', 'classes', 'lists'},
                DATA_METAS[1].file: {'params', 'classes', 'annotations'}}


def data_meta(root: Path, record: Path) -> lib.DataMeta:
    """How the data set at ``root`` describes itself: by the meta file it has (one counts only
    as its builder writes it, :data:`BUILDER_KEYS`), by its lists alone, or, where it is not
    here (a fresh clone's tables), by what its record describes.

    Raises:
        SystemExit: none of these (no data set there, and no record of one).
    """
    for meta in DATA_METAS:
        path = root / meta.file
        if not (path.is_file() and all((root / name).is_file() for name in LAYOUT_LISTS)):
            continue
        if meta.file in BUILDER_KEYS:
            try:
                written = json.loads(path.read_text())
            except ValueError:
                continue  # no JSON at all: not a builder's either
            if not isinstance(written, dict) or not BUILDER_KEYS[meta.file] <= set(written):
                continue
        return meta
    data = runner.Record(record).data.get('data', {})
    described = next((meta for meta, key in zip(DATA_METAS, ('version', 'generator', 'digests'))
                      if key in data), None)
    if described is not None:
        return described
    raise SystemExit(f'{root}: no {" and ".join(LAYOUT_LISTS)}, so no data set in the UTD-MHAD '
                     'layout (see this script\'s docstring), and no record of one')


def lay_out(root: Path) -> None:
    """Write a synthetic benchmark's training and validation lists as the UTD-MHAD layout's
    (:data:`LAYOUT_LISTS`) beside them, each through a temporary file, so a killed run leaves no
    half-written list."""
    meta = json.loads((root / 'meta.json').read_text())
    for name, split in zip(LAYOUT_LISTS, ('train', 'val')):
        target = root / name
        partial = target.with_name(target.name + '.part')
        shutil.copyfile(root / meta['annotations'][split], partial)
        partial.replace(target)


def build_synthetic(root: Path, preset: str, seed: int, workers: int) -> None:
    """The synthetic benchmark of ``preset`` and ``seed`` in ``root``, laid out as UTD-MHAD
    (built once; a rerun finds it)."""
    from hyperframes_mm.datasets.synthetic import make_synthetic_dataset
    make_synthetic_dataset(root, preset=preset, seed=seed, workers=workers)
    lay_out(root)


def carried_rows(classes: int) -> List[Row]:
    """TSM-MobileNetV2-5, the T=5 row and the rows the family chose within a third and within
    half of TSM's latency (in that order, each once), with ``classes`` classes: the family's
    rows as a user carries them (the class count is the one change besides the data root)."""
    chosen = family.recorded_choice()
    names = [family.TSM_ROW, family.RECIPE_ROW,
             *(chosen[limit] for limit in (family.HEADLINE_MAX_LATENCY, family.BEST_MAX_LATENCY)
               if limit in chosen)]
    by_name = {row.name: row for row in family.ROWS}
    return [by_name[name].edited(after=(head(num_classes=classes), ))
            for name in dict.fromkeys(names)]


def target(results: Dict[str, List[Dict]], costs: Dict[str, Dict], headline: str) -> str:
    """The held-out target's line: the ``headline`` row (chosen within a third of TSM's
    latency) >= TSM-MobileNetV2-5 on this data, at <= 1/3 of its latency here."""
    if headline not in results or family.TSM_ROW not in results:
        return (f'- the headline row ({headline}) >= {TSM_LABEL}: not both trained yet')
    top1 = {name: summary(results[name], 'top1')[0] for name in (headline, family.TSM_ROW)}
    ratio = costs[headline]['latency_ms'] / costs[family.TSM_ROW]['latency_ms']
    met = top1[headline] >= top1[family.TSM_ROW] and ratio <= family.HEADLINE_MAX_LATENCY
    return (f'- the headline row ({headline}) {top1[headline]:.3f} vs {TSM_LABEL} '
            f'{top1[family.TSM_ROW]:.3f} at {ratio:.3f}x its latency (>= TSM at <= 1/3): '
            f'{"**met**" if met else "**missed**"}')


def group_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                groups: Sequence[str]) -> List[str]:
    """Top-1 on each group of classes (the synthetic benchmark's fast and slow motions), mean
    over the seeds."""
    lines = ['| model | ' + ' | '.join(f'{group} classes' for group in groups) + ' |',
             '|---|' + '---:|' * len(groups)]
    for row in rows:
        runs = results[row.name]
        lines.append(f'| {row.name} | ' + ' | '.join(
            mean_sd(runs, group) if all(group in run for run in runs) else ''
            for group in groups) + ' |')
    return lines


def report(bench: lib.RowBenchmark, rows: Sequence[Row], args, name: str) -> str:
    results = bench.results(rows, args)
    shown = [row for row in rows if row.name in results]
    if family.TSM_ROW not in results:
        bench.log(f'no tables yet: they are relative to {family.TSM_ROW!r}, train it first')
        return ''
    costs = bench.costs(shown, args)
    data = bench.data_description(args)
    lists = data['lists']
    chosen = family.recorded_choice()
    notes = {}  # a row chosen within both budgets is named the headline
    for limit, note in ((family.HEADLINE_MAX_LATENCY, 'the headline, chosen on UTD-MHAD within '
                         '1/3 of TSM\'s latency'),
                        (family.BEST_MAX_LATENCY, 'chosen on UTD-MHAD within 1/2')):
        if limit in chosen:
            notes.setdefault(chosen[limit], note)
    intro = (f'`{name}`: {data["classes"]} classes, {lists[LAYOUT_LISTS[0]]} training clips, '
             f'{lists[LAYOUT_LISTS[1]]} test clips, chance {1 / data["classes"]:.3f}. The rows '
             'are the UTD-MHAD ImageNet family\'s configs with the data root and the class count '
             'changed, nothing else: rows chosen there, not here. Each run is tested once, with '
             'its last checkpoint; its validation (on the test clips, 1 clip every 2 epochs) is '
             'a learning curve only.')
    stopped = bench.stopped_runs(rows, args)
    text = [f'# Carried to `{name}`: the UTD-MHAD ImageNet family, unchanged', '', intro, '',
            *lib.headline_table(shown, results, costs, family.TSM_ROW, TSM_LABEL,
                                'per test sample (each row\'s test clips, batch 1, one thread) '
                                f'on the machine that measured the costs (`costs` of '
                                f'benchmarks/results/transfer_{name}.json).', RESULTS), '',
            *(f'- {row}: {note}' for row, note in notes.items() if row in results), '',
            'Target (means over the seeds):',
            target(results, costs, chosen.get(family.HEADLINE_MAX_LATENCY)), '']
    if stopped:
        text += [f'Stopped part-way (the same command resumes them): {"; ".join(stopped)}.', '']
    groups = sorted(data.get('groups') or {})
    if groups:
        text += ['Top-1 by group of classes:', '', *group_table(shown, results, groups), '']
    text += ['Training / test top-1 by epoch (seed 0; every seed in the plot):', '',
             *curve_table(shown, results), '',
             f'![training and test accuracy by epoch](transfer_{name}_curves.png)', '',
             f'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_transfer.py {args.source}` '
             '(`--report-only`: this page from its record).']
    page = lib.write_results(text, RESULTS / f'transfer_{name}.md', runner.Record(args.record),
                             results, costs, shown, data, shown,
                             RESULTS / f'transfer_{name}_curves.png', rows)
    if args.readme:
        replace_section(PROJECT_README, '\n'.join(
            lib.readme_table(shown, results, costs, family.TSM_ROW, TSM_LABEL,
                             {row: note for row, note in notes.items() if row in results})
            + ['', target(results, costs, chosen.get(family.HEADLINE_MAX_LATENCY))]),
            README_BEGIN, README_END)
    return page


def parse_args(argv=None):
    # no default data set, and a record per data set (named after it, below)
    # the first paragraph whole: its first line stops mid-sentence
    description = ' '.join(__doc__.split('\n\n')[0].split())
    parser = lib.arguments(description, None, 'work_dirs/bench_transfer', '')
    # the generator's own presets: a name it lacks is refused here, not in a traceback
    from hyperframes_mm.datasets.synthetic import PRESETS
    parser.add_argument('--synthetic', metavar='PRESET', choices=list(PRESETS),
                        help='one of %(choices)s: build the synthetic motion benchmark of this '
                        'preset, laid out as UTD-MHAD, and carry the family to it (instead of '
                        '--data)')
    parser.add_argument('--synthetic-seed', type=int, default=1,
                        help='the synthetic data set\'s seed (default: 1; the main job\'s is 0)')
    parser.add_argument('--readme', action='store_true',
                        help='also write the table and the target into the project README '
                        '(its bench_transfer_readme section: the data set it names)')
    args = parser.parse_args(argv)
    if (args.data is None) == (args.synthetic is None):
        parser.error('give one of --data ROOT and --synthetic PRESET')
    return args


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    # the data set as the command named it, for the page's command (not this machine's path)
    args.source = (f'--synthetic {args.synthetic} --synthetic-seed {args.synthetic_seed}'
                   if args.synthetic else f'--data {args.data}')
    if args.synthetic:
        args.data = str(REPO / 'data' / 'transfer' /
                        f'synthetic-{args.synthetic}-s{args.synthetic_seed}')
        if not args.report_only:
            build_synthetic(Path(args.data), args.synthetic, args.synthetic_seed, args.jobs)
    name = Path(args.data).resolve().name
    args.work_dir = str(Path(args.work_dir) / name)
    # a record named on the command line is what --report-only writes the tables from: one not
    # there is a mistake (read as empty, it emptied them), where the default is one not begun
    named_record = bool(args.record)
    args.record = args.record or str(RESULTS / f'transfer_{name}.json')
    try:
        record = runner.Record(args.record, must_exist=args.report_only and named_record)
        meta = data_meta(Path(args.data), Path(args.record))
        bench = lib.RowBenchmark('bench_transfer', LAYOUT_LISTS, family.BENCH.video_size,
                                 'this script\'s docstring', meta)
        named = (dict(generator=dict(preset=args.synthetic, seed=args.synthetic_seed))
                 if args.synthetic else None)
        bench.refuse_other_data(args, record, named)
        classes = bench.data_description(args).get('classes')
    except ValueError as error:  # a damaged record, another data set's, a malformed list
        raise SystemExit(f'error: {error}') from None
    if not classes:
        raise SystemExit(f'{args.data}: its {meta.file} names no classes')
    rows = carried_rows(classes)
    chosen = bench.requested(args, rows, [])
    if not args.report_only:
        bench.train([(row, seed) for row in chosen for seed in (args.seeds or row.seeds)], args)
    if args.train_only:
        return ''
    return report(bench, rows, args, name)


if __name__ == '__main__':
    print(main())
