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
section of ``configs/hyperframes/utd_mhad/README.md`` (between its ``bench_utd_mhad`` markers),
the headline rows of the project README, the ablation section of ``docs/benchmark_findings.md``
and ``configs/hyperframes/utd_mhad/results/<config>.json`` (the zoo rows' test metrics, mean
over seeds, read by ``tools/analysis/zoo_table.py``).
"""
import sys
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.edits import (backbone, frames, one_config, own_backbones, sampling,
                                  schedule_of, stream, train_augment, two_passes)
from benchmarks.lib.rows import HEADLINE_SEEDS, Row, accuracy_cell, curve_table
from benchmarks.lib.tables import rebased_links, replace_section, summary

FAMILY = REPO / 'configs' / 'hyperframes' / 'utd_mhad'
RESULTS = REPO / 'benchmarks' / 'results' / 'utd_mhad.md'
FAMILY_README = FAMILY / 'README.md'
#: the zoo rows' test metrics, read by tools/analysis/zoo_table.py
ZOO_RESULTS = FAMILY / 'results'
PROJECT_README = REPO / 'README.md'
BEGIN, END = '<!-- bench_utd_mhad:begin -->', '<!-- bench_utd_mhad:end -->'
ABLATION_BEGIN, ABLATION_END = '<!-- bench_utd_mhad_ablation:begin -->', \
    '<!-- bench_utd_mhad_ablation:end -->'
FINDINGS = REPO / 'docs' / 'benchmark_findings.md'
README_BEGIN, README_END = '<!-- bench_utd_mhad_readme:begin -->', \
    '<!-- bench_utd_mhad_readme:end -->'


def family_config(prefix: str) -> Path:
    """The family's one config whose name starts with ``prefix`` (the model and, where one
    model has several configs, its sampling tag: ``hyperframe_scratch-r18_1xb16-1x1x5-``)."""
    return one_config(FAMILY, f'{prefix}*.py')


def half_size(cfg) -> None:
    """A fast/slow model's fast stream at half the input size."""
    cfg.model.stream_downsample = dict(fast=2)


RECIPE = family_config('hyperframe_scratch-r18_1xb16-1x1x5-')
RECIPE_T8 = family_config('hyperframe_scratch-r18_1xb16-1x1x8-')
SINGLE = family_config('singleframe_')
TSN = family_config('tsn_')
TSM = family_config('tsm_')
FASTSLOW = family_config('fastslow_')
I3D = family_config('i3d_')
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
    return lib.arguments(__doc__.splitlines()[0], 'data/utd_mhad', 'work_dirs/bench_utd_mhad',
                         RESULTS.with_suffix('.json')).parse_args(argv)


# ------------------------------------------------------------------------------- the runs
BENCH = lib.RowBenchmark('bench_utd_mhad',
                         ('cross_subject_train.txt', 'cross_subject_test.txt'), (128, 128),
                         'tools/data/utd_mhad/README.md')
run_dir, data_description, finished = BENCH.run_dir, BENCH.data_description, BENCH.finished
run_key, same_config, resumable = BENCH.run_key, BENCH.same_config, BENCH.resumable
run_config, train_run, cost_of = BENCH.run_config, BENCH.train_run, BENCH.cost_of
stopped_runs, seeds_of, _RUN_KEYS = BENCH.stopped_runs, BENCH.seeds_of, BENCH.run_keys


# ------------------------------------------------------------------------------- reporting
def headline_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                   costs: Dict[str, Dict]) -> List[str]:
    return lib.headline_table(
        rows, results, costs, TSM_ROW, 'TSM-5', 'per test sample (3 clips, batch 1, one thread) '
        'on the machine that measured the costs (`costs` of benchmarks/results/utd_mhad.json, '
        'measured again by every run that trains).')


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
    :data:`CLEAR_CHANGE` times the base's spread over its seeds (:func:`lib.ablation_findings`)."""
    return lib.ablation_findings(rows, results, costs, base_row, (RECIPE_ROW, FASTSLOW_ROW),
                                 CLEAR_CHANGE, TSM_ROW, 'TSM-5')


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


def report(rows: Sequence[Row], results: Dict[str, List[Dict]], args) -> str:
    zoo = [row for row in ZOO_ROWS if row in rows and row.name in results]
    ablation = [row for row in ABLATION_ROWS if row in rows and row.name in results]
    if not any(row.name == TSM_ROW for row in zoo) or RECIPE_ROW not in results:
        BENCH.log(f'no tables yet: they are relative to {TSM_ROW!r} and {RECIPE_ROW!r}, train '
                  'those rows first')
        return ''

    shown = [row for row in ROWS if row in zoo or row in ablation]
    record = runner.Record(args.record)
    costs = BENCH.costs(shown, args)
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
    # links as the committed page holds them, wherever a caller writes it
    text = ['# UTD-MHAD depth: the family and the recipe\'s ablations', '',
            *rebased_links(section, FAMILY, REPO / 'benchmarks' / 'results')]
    ablation_lines = ablation_table(ablation, results, costs) if ablation else []
    findings = ablation_findings(ablation, results, costs) if ablation else []
    if ablation:
        text += ['', '## Ablations (the recipe with one change)', '', *ablation_lines, '',
                 *findings]
    text += ['', 'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad.py` '
             '(after tools/data/utd_mhad/README.md).']
    report_text = lib.write_results(text, RESULTS, record, results, costs, shown, data, zoo,
                      RESULTS.parent / 'utd_mhad_curves.png')
    # the tables show the rows trained so far and name the rest: a missing row never hides
    # the others, and is never shown with a number it does not have
    replace_section(FAMILY_README, '\n'.join(section), BEGIN, END)
    replace_section(PROJECT_README, '\n'.join(lib.readme_table(zoo, results, costs, TSM_ROW,
                                                                'TSM-5')),
                    README_BEGIN, README_END)
    lib.write_zoo_results(zoo, results, ZOO_RESULTS)
    if ablation:
        not_run = [row.name for row in ABLATION_ROWS if row not in ablation]
        note = ([f'Not trained yet: {"; ".join(not_run)} (`python benchmarks/bench_utd_mhad.py '
                 '--part ablation`).'] if not_run else [])
        replace_section(FINDINGS, '\n'.join(ablation_lines
                                                 + ([''] + findings if findings else [])
                                                 + ([''] + note if note else [])),
                        ABLATION_BEGIN, ABLATION_END)
    return report_text


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    chosen = BENCH.requested(args, ZOO_ROWS, ABLATION_ROWS)
    if not args.report_only:
        BENCH.train([(row, seed) for row in chosen for seed in (args.seeds or row.seeds)], args)
    if args.train_only:
        return ''
    # every finished seed of every row is in the tables, asked for this time or not
    results = BENCH.results(ROWS, args)
    markdown = report(ROWS, results, args)
    print(markdown)
    return markdown


if __name__ == '__main__':
    main()
