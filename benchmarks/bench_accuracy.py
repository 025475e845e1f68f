"""Accuracy ablations on the synthetic motion benchmark: mmaction2's TSN-5 and TSM-5, the plain
stacked baseline, and the plugin's ingredients added alone and together, one schedule for all.

    OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py [--data data/synthetic] [--jobs 2]
        [--rows NAME ...] [--seeds 0 1] [--part zoo|ablation|all] [--epochs 30]
        [--report-only | --train-only] [--record FILE] [--out FILE]

Every row is a config of ``configs/hyperframes/synthetic`` with the one change its note gives
(the ``zoo`` part: the stock models and the steps from plain stacking to the recipe; the
``ablation`` part: one ingredient each), motion products off but in their own row, the family's
AdamW/cosine schedule scaled to ``--epochs`` epochs, validated and saved once at the end. Each
is trained with ``tools/train.py`` and tested with ``tools/test.py`` (mmaction2's own tools),
seed 0 unless ``--seeds`` asks for more; the ``recipe, init ...`` rows start from the
single-frame row's seed-0 checkpoint, so they train after it. Runs are recorded by key in
``benchmarks/results/accuracy.json`` and resume after a kill (:mod:`benchmarks.lib.rows`);
``--report-only`` (with the ``--epochs`` the runs were trained with) writes the tables from
that record alone; ``--train-only`` trains and writes nothing else (several such commands can
share the cores, and one plain command afterwards times every row side by side). The data set
is the main job's (``bash scripts/main.sh``, or ``python tools/make_synthetic_dataset.py
data/synthetic --preset default``).

Latency is of one clip at 224x224, batch 1, one thread, every row's model timed side by side,
relative to TSM-5. Results: ``benchmarks/results/accuracy.md`` (``--out``) and, when every row
has a run, the accuracy section of ``docs/benchmark_findings.md``.
"""
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.edits import (backbone, checkpoint_every, epochs, find, frames, input_size,
                                  sampling, train_augment, two_passes, validate_every)
from benchmarks.lib.rows import Row, accuracy_cell
from benchmarks.lib.tables import replace_section, summary

RESULTS = REPO / 'benchmarks' / 'results' / 'accuracy.md'
FINDINGS = REPO / 'docs' / 'benchmark_findings.md'
#: the section of the findings page that ``update_readme`` rewrites
BEGIN, END = '<!-- bench_accuracy:begin -->', '<!-- bench_accuracy:end -->'
FAMILY = REPO / 'configs' / 'hyperframes' / 'synthetic'
RECIPE = FAMILY / 'hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py'
FASTSLOW = FAMILY / 'fastslow_scratch-r18_1xb16-5x3x1-5x9x1-60e_synthetic-rgb.py'
TSN = FAMILY / 'tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py'
TSM = FAMILY / 'tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py'
TSM_DENSE = FAMILY / 'tsm_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py'
SINGLE = FAMILY / 'singleframe_scratch-r18_1xb16-1x1x1-60e_synthetic-rgb.py'
AUX = (REPO / 'configs' / 'hyperframes' / 'scenarios' /
       'hyperframe_scratch-r18-auxframe_1xb16-5x8x1-60e_synthetic-rgb.py')
#: the row the table is relative to
TSM_ROW = 'TSM-5 (mmaction2)'
TSN_ROW = 'TSN-5 (mmaction2)'
PLAIN_ROW = 'plain stacked'
SINGLE_ROW = 'single frame'
#: the rows that start from the single-frame row's checkpoint
FROM_SINGLE_FRAME = ('recipe, init replicate', 'recipe, init center', 'recipe, init random')
#: the size latency is measured at (the cost of a deployed model, not of 32x32 training
#: clips), and the decoded frames it is resized from
LATENCY_SIZE = 224
VIDEO_SIZE = (256, 256)


def frames_same_span(num_frames: int):
    """``num_frames`` picks spread over the time the config's own picks span."""
    def change(cfg):
        sampler = find(cfg.train_dataloader.dataset.pipeline, 'HyperframeSampleFrames')
        span = (cfg.model.backbone.num_frames - 1) * sampler['interval']
        frames(num_frames, interval=span / (num_frames - 1))(cfg)
    return change


def without_motion_products(cfg) -> None:
    """Motion products off: the ablation adds each ingredient alone to the diff-encoding
    recipe, motion products in their own row, and the zoo configs have them on since."""
    if cfg.model.backbone.get('motion_products'):
        cfg.model.backbone.motion_products = False


def in_process_loading(cfg) -> None:
    """Every loader in the training process: rows train side by side, one core each."""
    for loader in (cfg.train_dataloader, cfg.val_dataloader, cfg.test_dataloader):
        loader.num_workers = 0
        loader.persistent_workers = False


def one_clip_at(side: int):
    """For the costs: one test clip (TSN/TSM: their segments) at ``side`` x ``side``, no
    checkpoint read; a uniform sampler takes a fixed window instead (the same input shape, and
    a timed clip has no video length to spread over)."""
    def change(cfg):
        input_size(side)(cfg)
        cfg.model.backbone.pop('pretrained', None)
        for step in cfg.test_dataloader.dataset.pipeline:
            if step['type'] == 'HyperframeSampleFrames':
                step['num_clips'] = 1
                if step.get('mode') == 'uniform':
                    step.update(mode='interval', interval=1)
    return change


BENCH = lib.RowBenchmark('bench_accuracy', ('train.txt', 'val.txt'), VIDEO_SIZE,
                         'bash scripts/main.sh, or python tools/make_synthetic_dataset.py DATA '
                         '--preset default', meta=lib.SYNTHETIC,
                         cost_edits=(one_clip_at(LATENCY_SIZE), ))
uniform = sampling(mode='uniform', interval=None, time_based=False)
PLAIN = (backbone(input_encoding='frames'), train_augment(flip_label_map=None))


def rows(args) -> Tuple[List[Row], List[Row]]:
    """The zoo rows and the ablation rows, each with the shared schedule of ``--epochs``
    epochs; the init rows read the single-frame row's seed-0 checkpoint in ``--work-dir``."""
    single = BENCH.run_dir(args, Row(SINGLE_ROW, SINGLE, ''), 0) / f'epoch_{args.epochs}.pth'

    def from_single_frame(mode: str):
        return backbone(pretrained=str(single), inflate_init=mode)

    zoo = [
        Row(TSN_ROW, TSN, 'ResNet-18, 5 uniform segments, score averaging',
            cost=4.0),
        Row(TSM_ROW, TSM, 'ResNetTSM-18, 5 uniform segments, shift 1/8', cost=4.3),
        Row('TSM-5 on the recipe\'s picks (mmaction2)', TSM_DENSE,
            'ResNetTSM-18 on the recipe\'s 5 picks, 3 test clips', cost=1.7),
        Row(SINGLE_ROW, SINGLE, 'T=1', cost=1.3),
        Row(PLAIN_ROW, RECIPE, 'T=5 frames stacked as they are, flips without label map, '
            'per-frame crops', edits=PLAIN + (train_augment(independent=True, flip_ratio=0.0), )),
        Row('+ consistent augmentation', RECIPE, 'one crop/flip draw per sample (label map)',
            edits=(backbone(input_encoding='frames'), )),
        Row('+ diff encoding (ours)', RECIPE, 'centre frame + 4x consecutive differences'),
    ]
    ablation = [
        Row('diff encoding, per-frame crops', RECIPE, 'the recipe with independent crops',
            edits=(train_augment(independent=True, flip_ratio=0.0, flip_label_map=None), )),
        Row('recipe, init replicate', RECIPE, 'conv1 from the single-frame checkpoint, '
            'replicate', edits=(from_single_frame('replicate'), )),
        Row('recipe, init center', RECIPE, 'conv1 from the single-frame checkpoint, center',
            edits=(from_single_frame('center'), )),
        Row('recipe, init random', RECIPE, 'single-frame checkpoint, conv1 random',
            edits=(from_single_frame('random'), )),
        Row('recipe + extra_bn', RECIPE, 'extra BN after conv1',
            edits=(backbone(extra_bn=True), )),
        Row('recipe + frame attention', RECIPE, 'FrameAttention before conv1',
            edits=(backbone(frame_attention=True), )),
        Row('recipe + motion products', RECIPE, 'I_t*I_x, I_t*I_y of consecutive frames into '
            'the stem', edits=(backbone(motion_products=True), )),
        Row('recipe, T=3', RECIPE, 'T=3 over the recipe\'s span (2 gaps)',
            edits=(frames_same_span(3), )),
        Row('recipe, T=8', RECIPE, 'T=8 over the recipe\'s span (7 gaps)',
            edits=(frames_same_span(8), )),
        Row('recipe, uniform sampling', RECIPE, 'T=5 spread over the whole clip',
            edits=(uniform, )),
        Row('fast/slow (recipe)', FASTSLOW, 'fast 3/30 s + slow 9/30 s, shared backbone, '
            'concat', edits=(two_passes, ), cost=1.6),
        Row('recipe + aux centre-frame head', AUX, 'AuxFrameHead on the motion state, '
            'weight 0.5'),
    ]
    schedule = (epochs(args.epochs), validate_every(args.epochs),
                checkpoint_every(args.epochs), in_process_loading)
    return tuple([row._replace(edits=(without_motion_products, ) + row.edits + schedule)
                  for row in part] for part in (zoo, ablation))


def parse_args(argv=None):
    parser = lib.arguments(__doc__.splitlines()[0], 'data/synthetic', 'work_dirs/bench_accuracy',
                           RESULTS.with_suffix('.json'))
    parser.add_argument('--epochs', type=int, default=30, help='the one shared schedule length')
    parser.add_argument('--out', type=Path, default=RESULTS, help='the markdown report')
    return parser.parse_args(argv)


def render(shown: Sequence[Row], results: Dict[str, List[Dict]], costs: Dict[str, Dict],
           data: Dict, args) -> str:
    reference = costs[TSM_ROW]['latency_ms']
    tsm_train = summary(results[TSM_ROW], 'train_min')[0]
    generator, classes, lists = data['generator'], data['classes'], data['lists']
    seeds = sorted({run['seed'] for runs in results.values() for run in runs})
    lines = ['# Accuracy ablations on the synthetic motion benchmark', '',
             f'{classes} motion-only classes (preset `{generator["preset"]}`, generator version '
             f'{generator["generator_version"]}), {lists[BENCH.train_list]} training / '
             f'{lists[BENCH.test_list]} test clips, chance {1 / classes:.3f}; every row trained '
             f'from scratch with the same AdamW/cosine schedule for {args.epochs} epochs at '
             f'32x32, seed{"s" * (len(seeds) > 1)} {", ".join(map(str, seeds))}, tested with '
             'its config\'s test clips. Latency: one clip, 224x224, batch 1, all rows timed side '
             'by side (interleaved rounds), relative to TSM-5. Training time relative to TSM-5 '
             '(rows trained side by side, one thread each).', '',
             '| model | changes | top-1 | mean class acc | fast classes | slow classes '
             '| training time vs TSM | latency vs TSM |',
             '|---|---|---:|---:|---:|---:|---:|---:|']
    for row in shown:
        runs = results[row.name]
        lines.append(f'| {row.name} | {row.note} | {accuracy_cell(runs, "top1")} | '
                     f'{summary(runs, "mean_class")[0]:.3f} | {summary(runs, "fast")[0]:.3f} | '
                     f'{summary(runs, "slow")[0]:.3f} | '
                     f'{summary(runs, "train_min")[0] / tsm_train:.2f}x | '
                     f'{costs[row.name]["latency_ms"] / reference:.2f}x |')
    lines += ['', f'TSM-5: {reference:.0f} ms per clip at 224x224 on the machine that measured '
              'the costs (`costs` of benchmarks/results/accuracy.json).', '']
    lines += targets(shown, results, 1 / classes)
    lines += ['', f'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py --epochs '
              f'{args.epochs}` (about an hour on 2 cores; `--report-only` rewrites this table '
              'from the record).']
    return '\n'.join(lines) + '\n'


#: a stock baseline whose test top-1 is within this multiple of chance has not learnt the clips
LEARNT_OVER_CHANCE = 2.0


def targets(shown: Sequence[Row], results: Dict[str, List[Dict]], chance: float) -> List[str]:
    """What this table can claim: the hyperframe rows against plain stacking, the stock baseline
    that these clips can tell apart from the recipe. Where TSN-5 and TSM-5 stay within
    :data:`LEARNT_OVER_CHANCE` x chance on the shared schedule, a comparison with them would
    measure a baseline that has not learnt, and the line says so from their numbers; the
    comparison with a converged TSM-5 is UTD-MHAD's (``bench_utd_mhad.py``) either way."""
    top1 = {name: summary(runs, 'top1')[0] for name, runs in results.items()}
    stock = [name for name in (TSN_ROW, TSM_ROW) if name in results]
    said = ' and '.join(f'{name} {top1[name]:.3f}' for name in stock)
    fitted = ' / '.join(f'{summary(results[name], "train_top1")[0]:.3f}' for name in stock)
    if all(top1[name] <= LEARNT_OVER_CHANCE * chance for name in stock):
        verdict = (f'within {LEARNT_OVER_CHANCE:g}x chance: they do not learn these clips on this '
                   'schedule, so no claim against them is drawn from this table')
    else:
        verdict = 'this table\'s claims are against plain stacking'
    lines = [f'{said} on the test clips (chance {chance:.3f}; on their training clips {fitted}): '
             f'{verdict}; UTD-MHAD (`benchmarks/bench_utd_mhad.py`) compares the recipe with a '
             'converged TSM-5.']
    if PLAIN_ROW not in results:
        return lines
    baselines = (TSN, TSM, TSM_DENSE, FASTSLOW)
    single_stream = [row.name for row in shown if row.config not in baselines
                     and row.name not in (SINGLE_ROW, PLAIN_ROW)]
    named = []
    if single_stream:
        best = max(single_stream, key=top1.get)
        named.append((f'best single-stream hyperframe model ({best})', best))
    named += [(row.name, row.name) for row in shown if row.config == FASTSLOW]
    for label, name in named:
        gap = 100 * (top1[PLAIN_ROW] - top1[name])
        lines.append(f'- {label}: {points(gap)} plain stacked frames')
    return lines


def points(gap: float) -> str:
    """``gap`` (the reference's top-1 minus the row's, in points) in words."""
    return f'{abs(gap):.1f} points {"below" if gap > 0 else "above"}'


def update_readme(table: str, readme: Path = FINDINGS) -> None:
    """Put the table, without its title line, between the accuracy markers of
    docs/benchmark_findings.md."""
    replace_section(readme, table.split('\n', 2)[2], BEGIN, END)


def report(every: Sequence[Row], results: Dict[str, List[Dict]], args) -> str:
    """The table of every row with a run, written to ``--out`` (and the findings section when
    every row has one), and the record rewritten with the runs, their costs and the data."""
    if TSM_ROW not in results:
        raise SystemExit(f'{TSM_ROW} has no run: the table is relative to it (--rows TSM)')
    shown = [row for row in every if row.name in results]
    costs = BENCH.costs(shown, args)
    data = BENCH.data_description(args)
    table = render(shown, results, costs, data, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    runner.Record(args.record).write(results, costs={row.name: costs[row.name] for row in shown},
                                     data=data)
    if args.out == RESULTS and len(shown) == len(every):
        update_readme(table)
    return table


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    zoo, ablation = rows(args)
    chosen = BENCH.requested(args, zoo, ablation)
    every = zoo + ablation
    if not args.report_only:
        jobs = [(row, seed) for row in chosen for seed in (args.seeds or row.seeds)]
        later = [job for job in jobs if job[0].name in FROM_SINGLE_FRAME]
        first = [job for job in jobs if job not in later]
        single = next(row for row in zoo if row.name == SINGLE_ROW)
        if later and (single, 0) not in first:
            first.append((single, 0))
        BENCH.train(first, args)
        if later:
            BENCH.train(later, args)
    if args.train_only:
        return ''
    return report(every, BENCH.results(every, args), args)


if __name__ == '__main__':
    print(main())
