"""The main job: build the synthetic motion benchmark, train and test each model, print the table.

    python tools/main_job.py                 # ~15 min on 2 idle CPU cores
    python tools/main_job.py --full          # longer schedule, the larger preset and TSM-5

Every model trains through ``tools/train.py`` and tests through ``tools/test.py`` (mmaction2's
own tools) on the same videos with the same schedule. Results (a markdown table, JSON and a
bar chart) go to ``<work-dir>/results.{md,json,png}``, each model's test metrics to
``<work-dir>/zoo_results/<config name>.json`` (for ``tools/analysis/zoo_table.py --results``). A model whose test predictions already
exist in the work dir, made after the benchmark's clips were, is not trained again
(``--force`` retrains), so a killed run resumes.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

from hyperframes_mm.utils import slug

REPO = Path(__file__).resolve().parents[1]
SYNTHETIC = 'configs/hyperframes/synthetic'


class Row(NamedTuple):
    """One model of the table: a config of the synthetic family, what it shows, and its
    training cost relative to one hyperframe (to start the longest first)."""
    name: str
    config: str
    note: str
    cost: float = 1.0


ROWS = [
    Row('single frame (T=1)', f'{SYNTHETIC}/singleframe_scratch-r18_1xb16-1x1x1-60e_synthetic-rgb.py',
        'a 2D model: at chance when only motion separates the classes', cost=0.9),
    Row('hyperframe T=5', f'{SYNTHETIC}/hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py',
        'one hyperframe, consistent augmentation, diff input encoding, motion products'),
    Row('hyperframe T=5, per-frame aug',
        f'{SYNTHETIC}/hyperframe-indepaug_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py',
        'the same with independent per-frame augmentation (the seeds\' bug)'),
    Row('fast/slow T=5+5',
        f'{SYNTHETIC}/fastslow_scratch-r18_1xb16-5x3x1-5x9x1-60e_synthetic-rgb.py',
        'fast (3/30 s) and slow (9/30 s picks) hyperframes, shared backbone', cost=1.8),
]
FULL_ROWS = [
    Row('TSM-5 (mmaction2)', f'{SYNTHETIC}/tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
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
                        help='synthetic preset (default: default, or full with --full)')
    parser.add_argument('--epochs', type=int, help='override every row\'s epochs')
    parser.add_argument('--only', nargs='+', help='train only the rows whose name has one of '
                        'these words (the table still shows every finished row)')
    parser.add_argument('--force', action='store_true', help='retrain rows already done')
    parser.add_argument('--jobs', type=int, default=2,
                        help='models trained at once (each on one thread: on a small CPU, two '
                        'single-thread runs beat one two-thread run, whose OpenMP threads spin '
                        'against the data-loader workers)')
    return parser.parse_args(argv)


def run(cmd: List[str], env: Dict[str, str], log: Path) -> None:
    """Run a tool, its output in ``log``; on failure print the log's tail and stop."""
    print('+', ' '.join(cmd), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, 'w') as out:
        code = subprocess.run(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        tail = log.read_text().splitlines()[-40:]
        raise SystemExit(f'{cmd[1]} failed ({code}); last lines of {log}:\n' + '\n'.join(tail))


def train_and_test(row: Row, args, env: Dict[str, str], epochs: Optional[int]) -> Path:
    """Train the row's config, test its last checkpoint; returns the predictions file."""
    work_dir = Path(args.work_dir) / slug(row.name)
    predictions = work_dir / 'predictions.pkl'
    from hyperframes_mm.datasets.synthetic import written_after_dataset
    if written_after_dataset(predictions, args.data_root) and not args.force:
        print(f'[main job] {row.name}: done before, {predictions}')
        return predictions
    predictions.unlink(missing_ok=True)  # of older clips: not a finished row any more
    options = ['randomness.seed=0'] + (schedule_options(row.config, epochs) if epochs else [])
    start = time.time()
    run([sys.executable, 'tools/train.py', row.config, '--work-dir', str(work_dir),
         '--cfg-options'] + options, env, work_dir / 'train.log')
    trained = time.time() - start
    checkpoint = (work_dir / 'last_checkpoint').read_text().strip()
    run([sys.executable, 'tools/test.py', row.config, checkpoint, '--work-dir', str(work_dir),
         '--dump', str(predictions)], env, work_dir / 'test.log')
    # mmengine's test metrics (WORK_DIR/<timestamp>/<timestamp>.json), named after the config,
    # where tools/analysis/zoo_table.py --results reads a family's accuracy
    metrics = max(work_dir.glob('*/*.json'), key=lambda path: path.stat().st_mtime)
    zoo_results = Path(args.work_dir) / 'zoo_results'
    zoo_results.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(metrics, zoo_results / f'{Path(row.config).stem}.json')
    (work_dir / 'train_seconds.txt').write_text(f'{trained:.1f}\n')
    return predictions


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
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = [row.name for row in rows if row.name in results]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.5))
    width = 0.27
    for offset, key, label in ((-width, 'top1', 'all classes'), (0, 'fast', 'fast classes'),
                               (width, 'slow', 'slow classes')):
        ax.barh([i + offset for i in range(len(names))], [results[n][key] for n in names],
                height=width, label=label)
    ax.axvline(1 / num_classes, color='grey', linestyle='--', label='chance')
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel('top-1 accuracy (synthetic motion benchmark, test split)')
    ax.legend(loc='lower right', fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> str:
    args = parse_args(argv)
    rows = ROWS + (FULL_ROWS if args.full else [])
    data_root = Path(args.data_root)
    env = dict(os.environ, HF_SYNTHETIC=str(data_root), OMP_NUM_THREADS='1',
               PYTHONWARNINGS='ignore')
    from hyperframes_mm.datasets.synthetic import (load_meta, make_synthetic_dataset,
                                                   written_after_dataset)
    from hyperframes_mm.evaluation import accuracy_by_group, class_groups_of
    preset = args.preset or ('full' if args.full else 'default')
    start = time.time()
    make_synthetic_dataset(data_root, preset=preset)
    print(f'[main job] benchmark ready in {data_root} ({time.time() - start:.0f} s)', flush=True)
    # The synthetic configs train from frame cache entries beside the videos (configs/_base_/
    # datasets/synthetic_hyperframe.py); built here in parallel, not in each first epoch.
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    summary = build_frame_cache(read_video_list(data_root / 'train.txt'), data_root, data_root,
                                workers=max(1, args.jobs))
    if summary.failed:
        raise SystemExit(f'[main job] could not cache {len(summary.failed)} training videos, '
                         f'e.g. {next(iter(summary.failed.items()))}')
    print(f'[main job] frame cache: {summary}', flush=True)
    classes = load_meta(data_root)['classes']
    groups = class_groups_of(data_root)
    epochs = args.epochs or (120 if args.full else None)
    selected = [row for row in rows
                if not args.only or any(word.lower() in row.name.lower() for word in args.only)]
    # Longest first, so the pool ends together (measured: fast/slow 9.3 min, one hyperframe
    # 5.3, a single frame 4.2 on two busy cores; TSM-5 9.6 against 3.5 in the ablation)
    selected.sort(key=lambda row: -row.cost)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for future in [pool.submit(train_and_test, row, args, env, epochs) for row in selected]:
            future.result()

    import torch
    from hyperframes_mm.apis.complexity import compare_latency, model_complexity
    torch.set_num_threads(1)
    done = [row for row in rows if written_after_dataset(
        Path(args.work_dir) / slug(row.name) / 'predictions.pkl', data_root)]
    config_options = dict(HF_SYNTHETIC=str(data_root))
    os.environ.update(config_options)
    latency = compare_latency({row.name: row.config for row in done}, repeats=20, warmup=3,
                              video_size=(64, 64))
    results = {}
    for row in done:
        work_dir = Path(args.work_dir) / slug(row.name)
        cost = model_complexity(row.config, video_size=(64, 64))
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
    print('\n' + table)
    print(f'\n[main job] wrote {out / "results.md"}, results.json and results.png '
          f'({(time.time() - start) / 60:.1f} min)')
    return table


if __name__ == '__main__':
    main()
