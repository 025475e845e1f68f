"""The scenario reference configs side by side: cost at each scenario's real input size, and
top-1 on the synthetic motion benchmark with each scenario's recipe, plus the auxiliary
centre-frame head ablation.

    OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py cost [--threads 1] [--repeats 10]
    OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py synthetic [--data data/synthetic] \\
        [--seeds 0 1] [--rows fast slow alerting accuracy recipe aux] [--epochs N]

``cost``: GFLOPs (mmengine's count, multiply-adds) and parameters of the whole test-time model
(``hyperframes_mm.analysis.complexity.model_complexity``) on one view of each scenario config (its
``val_pipeline`` with one clip: one centre crop at the scenario's input size), and the CPU
latency of that view at batch 1, timed side by side in interleaved rounds
(``compare_latency``); test views from the ``test_pipeline``.

``synthetic``: trains and tests, on the synthetic benchmark (``tools/make_synthetic_dataset.py
DATA --preset default``; its per-frame motion states are written first if missing), one
model per row and seed:

- ``fast`` / ``slow`` / ``alerting`` / ``accuracy``: the synthetic family's interval-picks
  config (``*-5x8x1-*``: data, augmentation, input size, input encoding, schedule)
  with the scenario's T, interval (k frames -> k/30 s, time-based, as the synthetic configs
  name intervals at 30 fps) and backbone, from scratch. ``accuracy`` cannot train ViT-B/16 at
  T=16 on a CPU: it trains a shrunk ViT (4 layers, 192 wide, 3 heads, patch 4), labelled so;
- ``recipe`` / ``aux``: that config without and with ``AuxFrameHead`` (the
  ``hyperframe_scratch-r18-auxframe_*`` config of configs/hyperframes/scenarios), same schedule.

Each run trains through ``tools/train.py`` and tests through ``tools/test.py`` (mmaction2's
own tools, :mod:`benchmarks.lib.runner`) in its own work directory; a finished run
(``result.json``) is not redone and a killed one resumes from its last checkpoint. The results
go to ``benchmarks/results/scenarios.md``, one section per command (a rerun of one keeps the
other).
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from benchmarks.lib import runner
from benchmarks.lib.costing import cpu_name
from benchmarks.lib.edits import one_config
from benchmarks.lib.tables import replace_titled_section
from benchmarks.lib.zoo import view_options, views_per_test_sample

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / 'benchmarks' / 'results' / 'scenarios.md'
SCENARIO_DIR = REPO / 'configs' / 'hyperframes' / 'scenarios'
SYNTHETIC_DIR = REPO / 'configs' / 'hyperframes' / 'synthetic'
#: the synthetic family's HyperResNet-18 config with interval picks (the scenario rows set
#: their own T and interval on it; the auxiliary head's variant is built on it) and that
#: variant (their names change with their sampling)
RECIPE_PATTERN = (SYNTHETIC_DIR, 'hyperframe_scratch-r18_*-5x8x1-*_synthetic-rgb.py')
AUX_PATTERN = (SCENARIO_DIR, 'hyperframe_scratch-r18-auxframe_*_synthetic-rgb.py')
#: synthetic-benchmark intervals are named in frames at this frame rate
REFERENCE_FPS = 30
#: the ViT the accuracy-first row trains on the synthetic benchmark instead of ViT-B/16
SHRUNK_VIT = dict(type='mmpretrain.VisionTransformer',
                  arch=dict(embed_dims=192, num_layers=4, num_heads=3, feedforward_channels=768),
                  patch_size=4, drop_path_rate=0.1)
#: the first line of the results file
HEADER = '# Scenario reference configs: cost and synthetic-benchmark accuracy\n\n'
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
#: synthetic rows besides the scenarios: the recipe without / with the auxiliary head
ABLATION_ROWS = ('recipe', 'aux')
ROWS = tuple(s.key for s in SCENARIOS) + ABLATION_ROWS


def find_config(pattern) -> Path:
    """The one config of a folder that matches a file-name pattern (``(folder, glob)``)."""
    return one_config(*pattern)


def load(path, data: Optional[str] = None):
    """A config, with ``$HF_SYNTHETIC`` set to ``data`` while it is read."""
    import hyperframes_mm  # noqa: F401
    from mmengine.config import Config
    previous = os.environ.get('HF_SYNTHETIC')
    if data is not None:
        os.environ['HF_SYNTHETIC'] = str(data)
    try:
        return Config.fromfile(str(path))
    finally:
        if data is not None:
            if previous is None:
                del os.environ['HF_SYNTHETIC']
            else:
                os.environ['HF_SYNTHETIC'] = previous


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
    load_before = os.getloadavg()
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
    load_after = os.getloadavg()
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
        f'median of {args.repeats} interleaved rounds after {args.warmup} warm-up, '
        f'{args.threads} thread(s), {machine()}; load average {load_before[0]:.1f} before, '
        f'{load_after[0]:.1f} after (other jobs share the CPUs: compare rows, not runs). A test '
        'sample costs `test views` times one view.', '',
        f'Command: `{command}`', ''] + lines) + '\n'


def machine() -> str:
    """CPU model, CPU count and torch version, in words."""
    import torch
    return f'{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__}'


# ------------------------------------------------------------------------------- synthetic
def _replace_sampler(pipeline: List[Dict], num_frames: int, interval: float) -> List[Dict]:
    from hyperframes_mm.analysis.config_utils import transform_type
    out = []
    for step in pipeline:
        if transform_type(step) == 'HyperframeSampleFrames':
            step = dict(step, num_frames=num_frames, interval=interval, time_based=True)
        out.append(step)
    return out


def crop_size(pipeline: List[Dict]) -> int:
    """The side of the training crop (``ConsistentClipAugment(size=...)``)."""
    return next(step['size'] for step in pipeline if step['type'] == 'ConsistentClipAugment')


def synthetic_config(row: str, data: str, seed: int, work_dir: str, epochs: Optional[int]):
    """The training config of one synthetic-benchmark row (see the module doc)."""
    cfg = load(find_config(AUX_PATTERN if row == 'aux' else RECIPE_PATTERN), data)
    if row in ('fast', 'slow', 'alerting', 'accuracy'):
        reference = load(SCENARIO_DIR / scenario(row).config)
        from hyperframes_mm.analysis.config_utils import sampler_spec
        stream = sampler_spec(reference.train_dataloader.dataset.dataset.pipeline).streams[0]
        interval = stream.interval / REFERENCE_FPS
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
            dataset = cfg[loader].dataset
            dataset.pipeline = _replace_sampler(dataset.pipeline, stream.num_frames, interval)
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
    if epochs is not None:
        from hyperframes_mm.analysis.config_utils import set_epochs
        set_epochs(cfg, epochs)
    cfg.randomness = dict(seed=seed)
    cfg.work_dir = work_dir
    cfg.resume = True
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1, max_keep_ckpts=1)
    return cfg


def run_one(row: str, data: str, seed: int, work_dir: Path, epochs: Optional[int]) -> Dict:
    """Train (or resume) and test one row through mmaction2's tools; write and return
    ``result.json``'s content."""
    work_dir.mkdir(parents=True, exist_ok=True)
    cfg = synthetic_config(row, data, seed, str(work_dir), epochs)
    config = work_dir / 'config.py'
    cfg.dump(str(config))
    start = time.perf_counter()
    # the config resumes from the work dir's last checkpoint by itself (``resume=True``)
    checkpoint = runner.train(config, work_dir, work_dir / 'train.log')
    metrics, _ = runner.test(config, checkpoint, work_dir / 'test', work_dir / 'test.log')
    result = dict(row=row, seed=seed, epochs=cfg.train_cfg.max_epochs,
                  top1=float(metrics['acc/top1']), mean1=float(metrics['acc/mean1']),
                  seconds=round(time.perf_counter() - start, 1))
    (work_dir / 'result.json').write_text(json.dumps(result) + '\n')
    return result


def ensure_frame_labels(data: str) -> None:
    """Write the per-frame motion states of the dataset unless they are there."""
    from hyperframes_mm.datasets.synthetic import (frame_labels_path, load_meta,
                                                   write_frame_labels)
    splits = load_meta(data)['params']['clips_per_class']
    if not all(frame_labels_path(data, split).is_file() for split in splits):
        write_frame_labels(data)


def row_title(row: str, data: str) -> str:
    """What a synthetic row trains, in words."""
    from hyperframes_mm.analysis.config_utils import sampler_spec
    cfg = synthetic_config(row, data, 0, '', None)
    stream = sampler_spec(cfg.train_dataloader.dataset.pipeline).streams[0]
    what = (f'{backbone_name(cfg.model.backbone)}, T={stream.num_frames}, '
            f'{round(stream.interval * REFERENCE_FPS, 6):g}/30 s')
    if row == 'recipe':
        return f'synthetic recipe: {what}'
    if row == 'aux':
        return (f'synthetic recipe: {what} + AuxFrameHead (centre-frame motion state, weight '
                f'{cfg.model.cls_head.aux_loss_weight:g})')
    return f'{scenario(row).title}: {what}'


def section_name(rows: Sequence[str]) -> str:
    """Which results section a set of rows fills (separate runs keep separate tables)."""
    if set(rows) <= set(ABLATION_ROWS):
        return 'auxiliary-head ablation'
    if not set(rows) & set(ABLATION_ROWS):
        return 'scenario recipes'
    return 'scenario recipes and auxiliary-head ablation'


def run_synthetic(args) -> str:
    """Train every requested row and seed (mmaction2's tools, one run at a time), then
    tabulate."""
    from hyperframes_mm.datasets.synthetic import load_meta, written_after_dataset
    ensure_frame_labels(args.data)
    results: Dict[str, List[Dict]] = {}
    for row in args.rows:
        for seed in args.seeds:
            work_dir = Path(args.work_dir) / f'{row}-seed{seed}'
            done = work_dir / 'result.json'
            if not written_after_dataset(done, args.data):  # none, or of older clips
                if done.is_file():
                    shutil.rmtree(work_dir)  # its checkpoints too: they learnt other clips
                print(f'training {row}, seed {seed} -> {work_dir}', flush=True)
                run_one(row, args.data, seed, work_dir, args.epochs)
            results.setdefault(row, []).append(json.loads(done.read_text()))
    meta = load_meta(args.data)
    recipe_path = find_config(RECIPE_PATTERN)
    recipe = load(recipe_path, args.data)
    epochs = args.epochs or recipe.train_cfg.max_epochs
    size = crop_size(recipe.train_dataloader.dataset.pipeline)
    lines = ['| row | top-1 (mean over seeds) | top-1 per seed | mean class acc | '
             'train + test minutes per run |', '|---|---:|---|---:|---:|']
    for row, runs in results.items():
        top1 = [run['top1'] for run in runs]
        lines.append(
            f'| {row_title(row, args.data)} | {100 * statistics.mean(top1):.1f} | '
            f'{", ".join(f"{100 * v:.1f}" for v in top1)} | '
            f'{100 * statistics.mean(run["mean1"] for run in runs):.1f} | '
            f'{statistics.mean(run["seconds"] for run in runs) / 60:.1f} |')
    command = ('OMP_NUM_THREADS=1 python benchmarks/bench_scenarios.py synthetic --data '
               f'{args.data} --seeds {" ".join(map(str, args.seeds))} --rows '
               f'{" ".join(args.rows)}' + (f' --epochs {args.epochs}' if args.epochs else ''))
    classes = len(meta['classes'])
    return '\n'.join([
        f'## Synthetic motion benchmark: {section_name(args.rows)}', '',
        f'Preset `{meta["params"]["preset"]}` (generator version '
        f'{meta["params"]["generator_version"]}, seed {meta["params"]["seed"]}): {classes} '
        f'classes, {sum(meta["params"]["clips_per_class"].values()) * classes} clips; top-1 on '
        f'the {meta["params"]["clips_per_class"].get("val", 0) * classes} val clips (3 test '
        f'clips each), chance {100 / classes:.0f} %. Every row: the synthetic recipe '
        f'(`{recipe_path.relative_to(REPO).as_posix()}`: from scratch, {size}x{size} '
        f'crops, {epochs} epoch(s) of its schedule, its augmentation and input encoding) with the '
        "row's T, interval (frames -> frames/30 s) and backbone. Seeds: "
        f'{", ".join(map(str, args.seeds))} (`randomness.seed`, same data).', '',
        f'Command: `{command}`', ''] + lines) + '\n'


# -------------------------------------------------------------------------------- results
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    cost = sub.add_parser('cost', help='GFLOPs, parameters and CPU latency of every scenario')
    cost.add_argument('--threads', type=int, default=1, help='torch threads (default 1)')
    cost.add_argument('--repeats', type=int, default=10, help='timed rounds (default 10)')
    cost.add_argument('--warmup', type=int, default=3, help='untimed rounds (default 3)')
    synthetic = sub.add_parser('synthetic', help='top-1 on the synthetic benchmark')
    for command in (synthetic, ):
        command.add_argument('--data', default='data/synthetic',
                             help='synthetic dataset root (default data/synthetic)')
        command.add_argument('--epochs', type=int,
                             help='train this many epochs instead of the recipe\'s (the '
                             'schedule is scaled)')
        command.add_argument('--work-dir', default='work_dirs/bench_scenarios',
                             help='runs go to WORK_DIR/<row>-seed<seed>')
    synthetic.add_argument('--seeds', type=int, nargs='+', default=[0])
    synthetic.add_argument('--rows', nargs='+', choices=ROWS, default=list(ROWS))
    for command in (cost, synthetic):
        command.add_argument('--out', type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if getattr(args, 'epochs', None) is not None and args.epochs < 1:
        parser.error('--epochs must be >= 1')
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    text = run_cost(args) if args.command == 'cost' else run_synthetic(args)
    print(text)
    title = text.splitlines()[0]
    replace_titled_section(args.out, title[3:], text, HEADER)
    return 0


if __name__ == '__main__':
    sys.exit(main())
