"""Accuracy ablations on the synthetic motion benchmark: mmaction2's TSN-5 and TSM-5, the plain
stacked baseline, and the plugin's ingredients added alone and together, one schedule for all.

    OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py [--data data/synthetic] [--jobs 2]
        [--rows NAME ...] [--epochs 30]

Every row is a config of ``configs/hyperframes/synthetic`` with a few changes (listed in the
table), written to ``<work-dir>/<row>/config.py`` and trained with ``tools/train.py``, then
tested with ``tools/test.py`` (mmaction2's own tools) — same data, same schedule (the synthetic
family's AdamW/cosine, ``--epochs``), seed 0. To keep the CPU budget, data is read from a frame
cache of the same videos (``tools/build_frame_cache.py``; bit-identical frames) and ``--jobs``
rows train at once, one thread each. Inference latency is for one clip at 224x224, batch 1,
every row's model timed side by side (``hyperframes_mm.analysis.complexity.compare_latency``), and
given relative to TSM-5. A finished row (its ``result.json``, newer than the dataset) is not retrained. Results:
``benchmarks/results/accuracy.md`` and, when every row ran, the accuracy section of
``benchmarks/README.md``.
"""
import argparse
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional

from benchmarks.lib import runner
from benchmarks.lib.edits import (backbone, find, frames, pipelines, read_data_from, sampling,
                                  train_augment, two_passes)
from benchmarks.lib.tables import replace_section
from hyperframes_mm.utils import slug

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / 'benchmarks' / 'results' / 'accuracy.md'
README = REPO / 'benchmarks' / 'README.md'
#: the section of README.md that ``update_readme`` rewrites
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


def frames_same_span(num_frames: int) -> Callable:
    """``num_frames`` picks spread over the time the config's own picks span."""
    def change(cfg):
        sampler = find(cfg.train_dataloader.dataset.pipeline, 'HyperframeSampleFrames')
        span = (cfg.model.backbone.num_frames - 1) * sampler['interval']
        frames(num_frames, interval=span / (num_frames - 1))(cfg)
    return change


uniform = sampling(mode='uniform', interval=None, time_based=False)


def from_single_frame(mode: str) -> Callable:
    """Start from the single-frame row's checkpoint, conv1 inflated with ``mode``."""
    def change(cfg):
        cfg.model.backbone.update(pretrained='{single_frame_checkpoint}', inflate_init=mode)
    return change


class Row(NamedTuple):
    name: str
    config: Path
    changes: str
    edits: tuple = ()


PLAIN = (backbone(input_encoding='frames'), train_augment(flip_label_map=None))
ROWS = [
    Row('TSN-5 (mmaction2)', TSN, 'ResNet-18, 5 uniform segments, score averaging'),
    Row('TSM-5 (mmaction2)', TSM, 'ResNetTSM-18, 5 uniform segments, shift 1/8'),
    Row('TSM-5 on the recipe\'s picks (mmaction2)', TSM_DENSE,
        'ResNetTSM-18 on the recipe\'s 5 picks, 3 test clips'),
    Row('single frame', SINGLE, 'T=1'),
    Row('plain stacked', RECIPE, 'T=5 frames stacked as they are, flips without label map, '
        'per-frame crops', PLAIN + (train_augment(independent=True, flip_ratio=0.0), )),
    Row('+ consistent augmentation', RECIPE, 'one crop/flip draw per sample (label map)',
        (backbone(input_encoding='frames'), )),
    Row('+ diff encoding (ours)', RECIPE, 'centre frame + 4x consecutive differences'),
    Row('diff encoding, per-frame crops', RECIPE, 'the recipe with independent crops',
        (train_augment(independent=True, flip_ratio=0.0, flip_label_map=None), )),
    Row('recipe, init replicate', RECIPE, 'conv1 from the single-frame checkpoint, replicate',
        (from_single_frame('replicate'), )),
    Row('recipe, init center', RECIPE, 'conv1 from the single-frame checkpoint, center',
        (from_single_frame('center'), )),
    Row('recipe, init random', RECIPE, 'single-frame checkpoint, conv1 random',
        (from_single_frame('random'), )),
    Row('recipe + extra_bn', RECIPE, 'extra BN after conv1', (backbone(extra_bn=True), )),
    Row('recipe + frame attention', RECIPE, 'FrameAttention before conv1',
        (backbone(frame_attention=True), )),
    Row('recipe + motion products', RECIPE, 'I_t*I_x, I_t*I_y of consecutive frames into the '
        'stem', (backbone(motion_products=True), )),
    Row('recipe, T=3', RECIPE, 'T=3 over the recipe\'s span (2 gaps)', (frames_same_span(3), )),
    Row('recipe, T=8', RECIPE, 'T=8 over the recipe\'s span (7 gaps)', (frames_same_span(8), )),
    Row('recipe, uniform sampling', RECIPE, 'T=5 spread over the whole clip', (uniform, )),
    Row('fast/slow (recipe)', FASTSLOW, 'fast 3/30 s + slow 9/30 s, shared backbone, concat',
        (two_passes, )),
    Row('recipe + aux centre-frame head', AUX, 'AuxFrameHead on the motion state, weight 0.5'),
]


#: the row the table is relative to
TSM_ROW = 'TSM-5 (mmaction2)'
PLAIN_ROW = 'plain stacked'
#: trained first: plain stacking, what consistent augmentation adds, what the encoding adds
FIRST = ('plain stacked', '+ consistent augmentation', '+ diff encoding (ours)')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', default='data/synthetic', help='synthetic benchmark root')
    parser.add_argument('--work-dir', default='work_dirs/bench_accuracy')
    parser.add_argument('--epochs', type=int, default=30, help='the one shared schedule length')
    parser.add_argument('--jobs', type=int, default=2, help='rows trained at once (1 thread each)')
    parser.add_argument('--rows', nargs='+', help='only rows whose name contains one of these')
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def use_cache(cfg, data_root: Path, cache_root: Path) -> None:
    """Read the videos' frames from the frame cache: the same frames, decoded once."""
    for pipeline in pipelines(cfg):
        for index, step in enumerate(pipeline):
            if step['type'] in ('SafeDecordInit', 'DecordInit', 'FrameCacheInit'):
                pipeline[index] = dict(type='FrameCacheInit', cache_root=str(cache_root),
                                       video_root=str(data_root))
            elif step['type'] == 'DecordDecode':
                pipeline[index] = dict(type='FrameCacheDecode')


def row_config(row: Row, args, work_dir: Path, single_frame_checkpoint: str):
    from mmengine.config import Config
    from hyperframes_mm.analysis.config_utils import set_epochs
    cfg = Config.fromfile(str(row.config))
    # The ablation adds each ingredient alone to the diff-encoding recipe, motion products
    # included (their own row): the zoo configs have them on since, so every row starts off.
    if cfg.model.backbone.get('motion_products'):
        cfg.model.backbone.motion_products = False
    for edit in row.edits:
        edit(cfg)
    if cfg.model.backbone.get('pretrained') == '{single_frame_checkpoint}':
        cfg.model.backbone.pretrained = single_frame_checkpoint
    data_root = Path(args.data).resolve()
    read_data_from(cfg, data_root)
    for loader in (cfg.train_dataloader, cfg.val_dataloader, cfg.test_dataloader):
        loader.num_workers = 0
        loader.persistent_workers = False
    use_cache(cfg, data_root, Path(str(data_root) + '_cache'))
    for step in cfg.train_dataloader.dataset.pipeline:
        if step['type'] == 'CenterFrameTarget':  # the aux row's per-frame motion states
            step.update(ann_file=str(data_root / 'train_frame_labels.jsonl'),
                        data_prefix=str(data_root))
    set_epochs(cfg, args.epochs)
    cfg.train_cfg.val_interval = args.epochs
    cfg.randomness = dict(seed=0)
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=args.epochs,
                                        max_keep_ckpts=1)
    path = work_dir / 'config.py'
    cfg.dump(str(path))
    return path


def finished_result(row: Row, args) -> Optional[Dict]:
    """The row's ``result.json`` when it was written after the dataset, else None."""
    from hyperframes_mm.datasets.synthetic import written_after_dataset
    result_file = Path(args.work_dir) / slug(row.name) / 'result.json'
    if written_after_dataset(result_file, args.data):
        return json.loads(result_file.read_text())
    return None


def train_row(row: Row, args, single_frame_checkpoint: str = '') -> Dict:
    work_dir = Path(args.work_dir) / slug(row.name)
    result_file = work_dir / 'result.json'
    finished = finished_result(row, args)
    if finished is not None:
        return finished
    if work_dir.is_dir():
        shutil.rmtree(work_dir)  # a killed run, or a run on older clips: start over
    work_dir.mkdir(parents=True, exist_ok=True)
    config = row_config(row, args, work_dir, single_frame_checkpoint)
    start = time.time()
    try:
        checkpoint = runner.train(config, work_dir, work_dir / 'train.log')
        train_seconds = time.time() - start
        runner.test(config, checkpoint, work_dir, work_dir / 'test.log',
                    dump=work_dir / 'predictions.pkl')
    except runner.ToolFailed as error:
        raise RuntimeError(f'{row.name}: {error}') from error
    from hyperframes_mm.evaluation import accuracy_by_group, class_groups_of
    result = dict(accuracy_by_group(work_dir / 'predictions.pkl', class_groups_of(args.data)),
                  train_min=train_seconds / 60, config=str(config), changes=row.changes,
                  checkpoint=checkpoint)
    result_file.write_text(json.dumps(result, indent=2))
    print(f'[bench_accuracy] {row.name}: top-1 {result["top1"]:.3f} '
          f'({result["train_min"]:.1f} min)', flush=True)
    return result


def latency_224(rows: List[Row], results: Dict[str, Dict]) -> Dict[str, float]:
    """Median ms of one clip at 224x224, batch 1, every row's model side by side."""
    from mmengine.config import Config
    from hyperframes_mm.analysis.complexity import compare_latency
    configs = {}
    for row in rows:
        cfg = Config.fromfile(results[row.name]['config'])
        cfg.model.backbone.pop('pretrained', None)
        pipeline = cfg.test_dataloader.dataset.pipeline  # the row's edits are in this one
        for step in pipeline:
            if step['type'] == 'Resize':
                step['scale'] = (224, 224)
            if step['type'] == 'HyperframeSampleFrames':
                step['num_clips'] = 1  # TSN/TSM's SampleFrames keep their 5 segments: one clip
                if step.get('mode') == 'uniform':  # same input shape; a timed window needs a
                    step.update(mode='interval', interval=1)  # fixed span, not a video's
        cfg.test_pipeline = pipeline  # what the latency measurement builds its input from
        configs[row.name] = cfg
    timing = compare_latency(configs, repeats=15, warmup=2, video_size=(256, 256))
    return {name: value['median_ms'] for name, value in timing.items()}


def render(rows: List[Row], results: Dict[str, Dict], latency: Dict[str, float],
           args) -> str:
    reference = latency[TSM_ROW]
    tsm_train = results[TSM_ROW]['train_min']
    from hyperframes_mm.datasets.synthetic import load_meta
    meta = load_meta(args.data)
    counts = meta['params']['clips_per_class']
    classes = len(meta['classes'])
    lines = ['# Accuracy ablations on the synthetic motion benchmark', '',
             f'{classes} motion-only classes (preset `{meta["params"]["preset"]}`, generator '
             f'version {meta["params"]["generator_version"]}), {counts["train"] * classes} '
             f'training / {counts["val"] * classes} test clips, chance {1 / classes:.3f}; every '
             'row trained from '
             f'scratch with the same AdamW/cosine schedule for {args.epochs} epochs at 32x32, '
             'seed 0, tested with its config\'s test clips. Latency: one clip, 224x224, batch 1, '
             'all rows timed side by side (interleaved rounds), relative to TSM-5. Training time '
             'relative to TSM-5 (rows trained two at a time, one thread each).', '',
             '| model | changes | top-1 | mean class acc | fast classes | slow classes '
             '| training time vs TSM | latency vs TSM |',
             '|---|---|---:|---:|---:|---:|---:|---:|']
    for row in rows:
        r = results[row.name]
        lines.append(f'| {row.name} | {row.changes} | {r["top1"]:.3f} | {r["mean_class"]:.3f} '
                     f'| {r["fast"]:.3f} | {r["slow"]:.3f} | {r["train_min"] / tsm_train:.2f}x '
                     f'| {latency[row.name] / reference:.2f}x |')
    lines += ['', f'TSM-5: {reference:.0f} ms per clip at 224x224 on this machine.', '']
    lines += targets(rows, results)
    lines += ['', f'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py --epochs '
              f'{args.epochs}` (about an hour on 2 cores).']
    return '\n'.join(lines) + '\n'


def targets(rows: List[Row], results: Dict[str, Dict]) -> List[str]:
    """What this table can claim: the hyperframe rows against plain stacking, the stock baseline
    that these clips can tell apart from the recipe. TSN-5 and TSM-5 stay near chance here on
    the shared schedule, so a comparison with them would measure a baseline that has not
    learnt; the one against a converged TSM-5 is UTD-MHAD's (``bench_utd_mhad.py``)."""
    lines = ['TSN-5 and TSM-5 do not learn these clips on this schedule (near chance on test), '
             'so no claim against them is drawn from this table: UTD-MHAD '
             '(`benchmarks/bench_utd_mhad.py`) compares the recipe with a converged TSM-5.']
    if PLAIN_ROW not in results:
        return lines
    baselines = (TSN, TSM, TSM_DENSE, FASTSLOW)
    single_stream = [row.name for row in rows if row.config not in baselines
                     and row.name not in ('single frame', PLAIN_ROW)]
    named = []
    if single_stream:
        best = max(single_stream, key=lambda name: results[name]['top1'])
        named.append((f'best single-stream hyperframe model ({best})', best))
    named += [(row.name, row.name) for row in rows if row.config == FASTSLOW]
    for label, name in named:
        gap = 100 * (results[PLAIN_ROW]['top1'] - results[name]['top1'])
        lines.append(f'- {label}: {points(gap)} plain stacked frames')
    return lines


def points(gap: float) -> str:
    """``gap`` (the reference's top-1 minus the row's, in points) in words."""
    return f'{abs(gap):.1f} points {"below" if gap > 0 else "above"}'


def update_readme(table: str, readme: Path = README) -> None:
    """Put the table, without its title line, between the accuracy markers of
    benchmarks/README.md."""
    replace_section(readme, table.split('\n', 2)[2], BEGIN, END)


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    from hyperframes_mm.datasets.synthetic import make_synthetic_dataset, write_frame_labels
    data_root = Path(args.data)
    make_synthetic_dataset(data_root, preset='default')
    write_frame_labels(data_root)
    for split in ('train', 'val'):
        build_frame_cache(read_video_list(data_root / f'{split}.txt'), data_root,
                          str(data_root) + '_cache', workers=2)
    rows = [row for row in ROWS
            if not args.rows or any(word.lower() in row.name.lower() for word in args.rows)]
    results: Dict[str, Dict] = {}
    single = next(row for row in ROWS if row.name == 'single frame')
    # The rows that start from the single-frame checkpoint go last, so that the single-frame
    # row (first in the queue) has finished when they start; the others run meanwhile.
    needs_single = [row for row in rows if any(edit.__qualname__.startswith('from_single_frame')
                                               for edit in row.edits)]
    with ThreadPoolExecutor(args.jobs) as pool:
        single_future = pool.submit(train_row, single, args)

        def after_single(row: Row) -> Dict:
            return train_row(row, args, single_future.result()['checkpoint'])

        futures = {single.name: single_future}
        # the rows that answer the main question first, then the long TSN/TSM runs
        for row in sorted(rows, key=lambda row: row.name not in FIRST):
            if row.name != single.name and row not in needs_single:
                futures[row.name] = pool.submit(train_row, row, args)
        for row in needs_single:
            futures[row.name] = pool.submit(after_single, row)
        failed = {}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except Exception as error:  # the other rows go on; reported below
                failed[name] = error
                print(f'[bench_accuracy] {name} failed: {error}', flush=True)
    # rows not asked for this time but finished before are in the table too
    for row in ROWS:
        finished = None if row.name in results else finished_result(row, args)
        if finished is not None:
            results[row.name] = finished
    if TSM_ROW not in results:
        raise SystemExit(f'{TSM_ROW} has no result: the table is relative to it (--rows TSM)')
    done = [row for row in ROWS if row.name in results]
    table = render(done, results, latency_224(done, results), args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    if args.out == RESULTS and len(done) == len(ROWS):
        update_readme(table)
    print(table)
    if failed:
        raise SystemExit(f'rows failed (see their train.log / test.log): {sorted(failed)}')
    return table


if __name__ == '__main__':
    main()
