"""The scenario reference configs side by side: cost at each scenario's real input size, and
top-1 on the synthetic motion benchmark with each scenario's recipe, plus the auxiliary
centre-frame head ablation.

    OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py cost [--threads 1] [--repeats 10]
    OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py synthetic [--data data/synthetic] \\
        [--seeds 0 1] [--rows fast slow alerting accuracy recipe aux] [--part zoo|ablation|all] \\
        [--epochs N] [--jobs 2] [--report-only | --train-only] [--record FILE]

``cost``: GFLOPs (mmengine's count, multiply-adds) and parameters of the whole test-time model
(``hyperframes_mm.analysis.complexity.model_complexity``) on one view of each scenario config (its
``val_pipeline`` with one clip: one centre crop at the scenario's input size), and the CPU
latency of that view at batch 1, timed side by side in interleaved rounds
(``compare_latency``); test views from the ``test_pipeline``.

``synthetic``: trains and tests, on the synthetic benchmark (the main job's: ``bash
scripts/main.sh``, or ``python tools/make_synthetic_dataset.py DATA --preset default``; its
per-frame motion states are written first if missing), one model per row and seed:

- ``fast`` / ``slow`` / ``alerting`` / ``accuracy`` (the ``zoo`` part): the synthetic family's
  interval-picks config (``*-5x8x1-*``: data, augmentation, input size, input encoding,
  schedule) with the scenario's T, interval (k frames -> k/30 s, time-based, as the synthetic
  configs name intervals at 30 fps) and backbone, from scratch. ``accuracy`` cannot train
  ViT-B/16 at T=16 on a CPU: it trains a shrunk ViT (4 layers, 192 wide, 3 heads, patch 4),
  labelled so;
- ``recipe`` / ``aux`` (the ``ablation`` part): that config without and with ``AuxFrameHead``
  (the ``hyperframe_scratch-r18-auxframe_*`` config of configs/hyperframes/scenarios), same
  schedule.

Every run has the recipe's schedule (scaled to ``--epochs`` where given) with a checkpoint each
epoch, trains through ``tools/train.py`` and tests through ``tools/test.py`` (mmaction2's own
tools) in ``<work dir>/<row>/seed<s>``; runs are recorded by key in
``benchmarks/results/scenarios.json`` and a killed one resumes from its last checkpoint
(:mod:`benchmarks.lib.rows`); ``--report-only`` (with the ``--epochs`` the runs were trained
with) writes the table from that record alone, ``--train-only`` trains and writes nothing. The
results go to ``benchmarks/results/scenarios.md``, one section per command (a rerun of one
keeps the other); ``synthetic`` writes its table into the family README too.
"""
import argparse
import copy
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.edits import Edit, checkpoint_every, epochs, one_config, sampling
from benchmarks.lib.rows import Row
from benchmarks.lib.tables import (markdown_table, replace_section, replace_titled_section,
                                   summary)
from benchmarks.lib.views import view_options, views_per_test_sample

RESULTS = REPO / 'benchmarks' / 'results' / 'scenarios.md'
SCENARIO_DIR = REPO / 'configs' / 'hyperframes' / 'scenarios'
SYNTHETIC_DIR = REPO / 'configs' / 'hyperframes' / 'synthetic'
#: the synthetic family's HyperResNet-18 config with interval picks (the scenario rows set
#: their own T and interval on it; the auxiliary head's variant is built on it) and that
#: variant (found by pattern: their names change with their sampling)
RECIPE = one_config(SYNTHETIC_DIR, 'hyperframe_scratch-r18_*-5x8x1-*_synthetic-rgb.py')
AUX = one_config(SCENARIO_DIR, 'hyperframe_scratch-r18-auxframe_*_synthetic-rgb.py')
#: synthetic-benchmark intervals are named in frames at this frame rate
REFERENCE_FPS = 30
#: the ViT the accuracy-first row trains on the synthetic benchmark instead of ViT-B/16
SHRUNK_VIT = dict(type='mmpretrain.VisionTransformer',
                  arch=dict(embed_dims=192, num_layers=4, num_heads=3, feedforward_channels=768),
                  patch_size=4, drop_path_rate=0.1)
#: the first line of the results file
HEADER = '# Scenario reference configs: cost and synthetic-benchmark accuracy\n\n'
#: the family README's section that ``synthetic`` rewrites (when it writes the default file)
README = SCENARIO_DIR / 'README.md'
BEGIN, END = '<!-- bench_scenarios_synthetic:begin -->', '<!-- bench_scenarios_synthetic:end -->'
SHRUNK_VIT_NAME = 'ViT 4 layers x 192, patch 4 (shrunk from ViT-B/16)'


@dataclass(frozen=True)
class Scenario:
    """One row of the seed's scenario table and its reference config."""
    key: str
    title: str
    config: str


SCENARIOS = (
    Scenario('fast', 'fast actions',
             'hyperframe_imagenet-pretrained-r18_8xb64-5x2x1-50e_sthv2-rgb.py'),
    Scenario('slow', 'slow behaviour',
             'hyperframe_imagenet-pretrained-r18_8xb32-8x8x1-100e_kinetics400-rgb.py'),
    Scenario('alerting', 'real-time alerting on CPU',
             'hyperframe_imagenet-pretrained-mobilenetv3-small_8xb8-3x1x1-100e_kinetics400-rgb.py'),
    Scenario('accuracy', 'accuracy first',
             'hyperframe_imagenet-pretrained-vit-b16_8xb8-16x4x1-30e_kinetics400-rgb.py'),
)


def load(path):
    """A config, the plugin imported first (its configs name its modules)."""
    import hyperframes_mm  # noqa: F401
    from mmengine.config import Config
    return Config.fromfile(str(path))


def scenario(key: str) -> Scenario:
    """The scenario of a row key."""
    return next(s for s in SCENARIOS if s.key == key)


# ------------------------------------------------------------------------------------ cost
def test_views(cfg) -> int:
    """Clips x crops of one sample of the config's test pipeline."""
    clips, crops = views_per_test_sample(cfg)
    return clips * crops


def backbone_name(backbone: Dict) -> str:
    """``HyperResNet-18``, ``HyperMobileNetV3-small``, ``ViT-b/16 (inflated)``."""
    if backbone['type'] == 'InflatedBackbone':
        inner = backbone['backbone']
        if not isinstance(inner.get('arch'), str):
            return f'{SHRUNK_VIT_NAME}, inflated patch embedding'
        patch = inner.get('patch_size', 16)
        return f'ViT-{inner["arch"].upper()}/{patch}, inflated patch embedding'
    return f'{backbone["type"]}-{backbone.get("depth", backbone.get("arch"))}'


def run_cost(args) -> str:
    """The cost section: GFLOPs, parameters, latency of one view of every scenario."""
    import torch
    from hyperframes_mm.analysis.config_utils import sampler_spec
    from hyperframes_mm.analysis.complexity import compare_latency, model_complexity
    torch.set_num_threads(args.threads)
    load_at_start = load_average()
    rows, configs = [], {}
    for item in SCENARIOS:
        path = SCENARIO_DIR / item.config
        cfg = load(path)
        options = view_options(cfg)
        info = model_complexity(str(path), cfg_options=options)
        shape = next(iter(info['inputs'].values()))
        stream = sampler_spec(cfg.train_dataloader.dataset.dataset.pipeline).streams[0]
        rows.append((item, cfg, info, shape, stream))
        configs[item.title] = (str(path), options)
    latency = compare_latency(configs, device='cpu', batch=1, repeats=args.repeats,
                              warmup=args.warmup, progress=True)
    lines = [
        '| scenario | config | T | interval | input | backbone | batch/GPU | GFLOPs / view | '
        'params (M) | CPU ms / view (IQR) | test views |',
        '|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|']
    for item, cfg, info, shape, stream in rows:
        timing = latency[item.title]
        lines.append(
            f'| {item.title} | [{Path(item.config).stem}](../../configs/hyperframes/scenarios/'
            f'{item.config}) | {stream.num_frames} | {stream.interval:g} | '
            f'{shape[-2]}x{shape[-1]} | {backbone_name(cfg.model.backbone)} | '
            f'{cfg.train_dataloader.batch_size} | {info["flops"] / 1e9:.2f} | '
            f'{info["params"] / 1e6:.2f} | {timing["median_ms"]:.1f} '
            f'({timing["q1_ms"]:.1f}-{timing["q3_ms"]:.1f}) | {test_views(cfg)} |')
    command = ('OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py cost '
               f'--threads {args.threads} --repeats {args.repeats} --warmup {args.warmup}')
    return '\n'.join([
        '## Cost at each scenario\'s input size', '',
        f'One view (one clip, one centre crop) of the whole test-time model, batch 1. Latency: '
        f'median of {args.repeats} interleaved rounds after {args.warmup} warm-up (other jobs '
        'share the CPUs: compare rows, not runs). A test sample costs `test views` times one '
        'view.', '', machine_line(threads=args.threads, load_at_start=load_at_start), '',
        f'Command: `{command}`', ''] + lines) + '\n'


# ------------------------------------------------------------------------------- synthetic
def crop_size(pipeline: List[Dict]) -> int:
    """The side of the training crop (``ConsistentClipAugment(size=...)``)."""
    return next(step['size'] for step in pipeline if step['type'] == 'ConsistentClipAugment')


def as_scenario(key: str) -> Edit:
    """The scenario's T, interval (frames at :data:`REFERENCE_FPS` -> seconds, time-based) and
    backbone, from scratch, on a synthetic config (its input encoding and, where the backbone
    has them, its motion products; a ViT shrunk to :data:`SHRUNK_VIT` at the crop size)."""
    def change(cfg):
        from hyperframes_mm.analysis.config_utils import sampler_spec
        reference = load(SCENARIO_DIR / scenario(key).config)
        stream = sampler_spec(reference.train_dataloader.dataset.dataset.pipeline).streams[0]
        sampling(num_frames=stream.num_frames, interval=stream.interval / REFERENCE_FPS,
                 time_based=True)(cfg)
        recipe = cfg.model.backbone
        backbone = copy.deepcopy(reference.model.backbone)
        backbone.update(pretrained=None, input_encoding=recipe.get('input_encoding', 'frames'),
                        diff_gain=recipe.get('diff_gain', 4.0))
        in_channels = reference.model.cls_head.in_channels
        if backbone.type == 'InflatedBackbone':
            size = crop_size(cfg.train_dataloader.dataset.pipeline)
            backbone.backbone = dict(SHRUNK_VIT, img_size=size)
            in_channels = SHRUNK_VIT['arch']['embed_dims']
        else:  # HyperResNet / HyperMobileNetV3 take the recipe's motion products too
            backbone.update(motion_products=recipe.get('motion_products', False))
        cfg.model.backbone = backbone
        cfg.model.cls_head.in_channels = in_channels
    return change


def rows(args) -> Tuple[List[Row], List[Row]]:
    """The scenario rows and the auxiliary-head rows, with the recipe's schedule (of
    ``--epochs`` epochs where given) and a checkpoint each epoch."""
    zoo = [Row(item.key, RECIPE, item.title, edits=(as_scenario(item.key), ))
           for item in SCENARIOS]
    ablation = [Row('recipe', RECIPE, 'the synthetic recipe'),
                Row('aux', AUX, 'the synthetic recipe + AuxFrameHead')]
    schedule = ((epochs(args.epochs), ) if args.epochs else ()) + (checkpoint_every(1), )
    return tuple([row._replace(edits=row.edits + schedule) for row in part]
                 for part in (zoo, ablation))


BENCH = lib.RowBenchmark('bench_scenarios', ('train.txt', 'val.txt'), (64, 64),
                         'bash scripts/main.sh, or python tools/make_synthetic_dataset.py DATA '
                         '--preset default', meta=lib.SYNTHETIC)


def row_title(row: Row, args) -> str:
    """What a synthetic row trains, in words."""
    from mmengine.config import Config
    from hyperframes_mm.analysis.config_utils import sampler_spec
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config.fromfile(str(BENCH.run_config(row, 0, args, Path(tmp))))
    stream = sampler_spec(cfg.train_dataloader.dataset.pipeline).streams[0]
    what = (f'{backbone_name(cfg.model.backbone)}, T={stream.num_frames}, '
            f'{round(stream.interval * REFERENCE_FPS, 6):g}/30 s')
    if row.name == 'aux':
        return (f'synthetic recipe: {what} + AuxFrameHead (centre-frame motion state, weight '
                f'{cfg.model.cls_head.aux_loss_weight:g})')
    return f'{row.note}: {what}'


def percent(value: float) -> str:
    """A fraction in percent, one decimal."""
    return f'{100 * value:.1f}'


def run_synthetic(args) -> str:
    """Train every requested row and seed that has no run yet, rewrite the record, and
    tabulate every row with a run."""
    import hyperframes_mm  # noqa: F401
    zoo, ablation = rows(args)
    chosen = BENCH.requested(args, zoo, ablation)
    if not args.report_only:
        BENCH.train([(row, seed) for row in chosen for seed in (args.seeds or row.seeds)], args)
    if args.train_only:
        return ''
    results = BENCH.results(zoo + ablation, args)
    shown = [row for row in zoo + ablation if row.name in results]
    if not shown:
        raise SystemExit(f'no finished run in {args.work_dir} or {args.record} (runs are found by '
                         'their config: give the --epochs they trained with, as the results '
                         'page\'s command does)')
    data = BENCH.data_description(args)
    runner.Record(args.record).write(results, data=data)
    recipe = load(RECIPE)
    epoch_count = args.epochs or recipe.train_cfg.max_epochs
    size = crop_size(recipe.train_dataloader.dataset.pipeline)
    # the classes' speed groups and the training clips tell a window too short for the
    # motion (neither group, nor the training clips, learnt) from one that overfits
    lines = markdown_table(
        ['row', 'top-1 (mean over seeds)', 'top-1 per seed', 'mean class acc', 'fast classes',
         'slow classes', 'top-1 on the training clips', 'training minutes per run'],
        'lrlrrrrr',
        [[row_title(row, args), percent(summary(runs, 'top1')[0]),
          ', '.join(percent(run['top1']) for run in runs),
          *(percent(summary(runs, key)[0]) for key in ('mean_class', 'fast', 'slow', 'train_top1')),
          f'{summary(runs, "train_min")[0]:.1f}']
         for row in shown for runs in (results[row.name], )])
    command = ('OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py synthetic' +
               (f' --epochs {args.epochs}' if args.epochs else ''))
    generator, classes = data['generator'], data['classes']
    seeds = sorted({run['seed'] for runs in results.values() for run in runs})
    return '\n'.join([
        '## Synthetic motion benchmark', '',
        f'Preset `{generator["preset"]}` (generator version {generator["generator_version"]}, '
        f'seed {generator["seed"]}): {classes} classes, '
        f'{sum(data["lists"].values())} clips; top-1 on the {data["lists"][BENCH.test_list]} '
        f'val clips (3 test clips each), chance {100 / classes:.0f} %. Every row: the synthetic '
        f'recipe (`{RECIPE.relative_to(REPO).as_posix()}`: from scratch, {size}x{size} crops, '
        f'{epoch_count} epoch(s) of its schedule, its augmentation and input encoding) with the '
        "row's T, interval (frames -> frames/30 s) and backbone. Seeds: "
        f'{", ".join(map(str, seeds))} (`randomness.seed`, same data).', '',
        f'Command: `{command}` (the same command with `--report-only` rewrites this table from '
        'the record, `benchmarks/results/scenarios.json`)', ''] + lines) + '\n'


# -------------------------------------------------------------------------------- results
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    cost = sub.add_parser('cost', help='GFLOPs, parameters and CPU latency of every scenario')
    cost.add_argument('--threads', type=int, default=1, help='torch threads (default 1)')
    cost.add_argument('--repeats', type=int, default=10, help='timed rounds (default 10)')
    cost.add_argument('--warmup', type=int, default=3, help='untimed rounds (default 3)')
    synthetic = sub.add_parser('synthetic', help='top-1 on the synthetic benchmark')
    lib.arguments('', 'data/synthetic', 'work_dirs/bench_scenarios',
                  RESULTS.with_suffix('.json'), parser=synthetic)
    synthetic.add_argument('--epochs', type=int,
                           help='train this many epochs instead of the recipe\'s (the '
                           'schedule is scaled)')
    for command in (cost, synthetic):
        command.add_argument('--out', type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if getattr(args, 'epochs', None) is not None and args.epochs < 1:
        parser.error('--epochs must be >= 1')
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    text = run_cost(args) if args.command == 'cost' else run_synthetic(args)
    if not text:  # synthetic --train-only
        return 0
    print(text)
    title = text.splitlines()[0]
    replace_titled_section(args.out, title[3:], text, HEADER)
    if args.command == 'synthetic' and args.out == RESULTS:
        replace_section(README, text.split('\n', 2)[2], BEGIN, END)
    return 0


if __name__ == '__main__':
    sys.exit(main())
