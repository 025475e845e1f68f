"""Margins of the tests that assert trained outcomes: what each one measures, over seeds and kernel
settings, against the bound it asserts.

    python benchmarks/bench_test_margins.py [--settings native avx2 default] [--seeds 0 1 2 3]
    python benchmarks/bench_test_margins.py --report-only

A trained outcome moves with the seed and with the vectorised kernels the CPU's libraries pick
(``scripts/kernel_settings.txt``), and a test must hold on any x86-64 CPU, so each bound of a
test marked ``trained`` needs a margin over both. For every setting asked for, a child process
with that setting's environment (one OpenMP thread) trains and measures, per seed, what the
tests of :data:`BOUNDS` assert, calling the tests' own helpers. Runs are recorded by their
kernels (ATen's capability and the capping variables, as :mod:`benchmarks.lib.kernels` labels
them) and seed in ``benchmarks/results/test_margins.json``; a rerun replaces those runs and keeps
the others. Writes ``benchmarks/results/test_margins.md`` and the section of
``docs/benchmark_findings.md`` between the ``bench_test_margins`` markers: per bound, the range
over every recorded run and the worst margin, in clips where the quantity is an accuracy over
clips, then the bounds that failed in a run or hold by fewer than :data:`CLIP_MARGIN` clips.
``--report-only`` rewrites both from the record.
"""
import argparse
import json
import operator
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import runner
from benchmarks.lib.costing import cpu_name
from benchmarks.lib.kernels import (KERNEL_SETTINGS, KERNEL_VARIABLES, kernel_label,
                                    kernel_setting, named_kernel_settings)
from benchmarks.lib.tables import markdown_table, replace_section

RECORD = REPO / 'benchmarks' / 'results' / 'test_margins.json'
FINDINGS = REPO / 'docs' / 'benchmark_findings.md'
README_BEGIN, README_END = '<!-- bench_test_margins:begin -->', '<!-- bench_test_margins:end -->'
PROBE = 'tests/analysis/test_temporal_probe.py::test_trained_model_uses_time'
ORACLE = ('tests/datasets/test_synthetic.py::'
          'test_single_frame_probe_is_near_chance_and_motion_oracle_is_not')
BACKBONES = ('tests/models/backbones/test_recognizer2d_backbones.py::'
             'test_train_step_lowers_the_loss_and_test_step_predicts')
FAST_SLOW = ('tests/models/recognizers/test_fast_slow.py::'
             'test_train_step_lowers_loss_and_test_step_gives_probabilities')
LOSS_RATIO = 'losses[-1] / losses[0]'
#: the moving-disc set of the probe test (tests/analysis/conftest.py's moving_disc_dataset)
PROBE_CLIPS = dict(train=6, val=6)


class Bound(NamedTuple):
    """One assertion of a test: ``quantity op bound``. ``test`` is a pytest node id; a
    parametrised test's bound holds for each of its parameters (``test[param]``)."""
    test: str
    quantity: str
    op: str
    bound: object


#: what the tests assert, as the tests write it
BOUNDS = (
    Bound(PROBE, 'original', '>=', 0.4),
    Bound(PROBE, 'original - reversed', '>=', 0.3),
    Bound(PROBE, 'original - static', '>=', 0.25),
    Bound(PROBE, 'uses_time', 'is', True),
    Bound(ORACLE, 'single_frame', '<=', 0.3),
    Bound(ORACLE, 'motion', '>=', 0.6),
    Bound(BACKBONES, LOSS_RATIO, '<', 1.0),
    Bound(FAST_SLOW, LOSS_RATIO, '<', 0.1),
)
#: an accuracy bound fewer clips than this from its worst run is one clip flip from failing on a
#: machine or seed not measured here (issue 30 asks for a margin of several clips)
CLIP_MARGIN = 2
OPS = {'>=': operator.ge, '<=': operator.le, '<': operator.lt, 'is': operator.is_}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--settings', nargs='+', default=list(named_kernel_settings()),
                        help=f'kernel settings of {KERNEL_SETTINGS.relative_to(REPO)}')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2, 3])
    parser.add_argument('--report-only', action='store_true',
                        help='write the tables from the record, train nothing')
    parser.add_argument('--record', type=Path, default=RECORD,
                        help='the record of runs; the markdown table is written beside it')
    parser.add_argument('--readme', type=Path, default=FINDINGS,
                        help='the page whose bench_test_margins section gets the table')
    parser.add_argument('--worker', metavar='SETTING', help=argparse.SUPPRESS)
    parser.add_argument('--out', type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ------------------------------------------------------------- measured in the child process
def probe_values(seed: int, root: Path) -> Dict[str, object]:
    """test_trained_model_uses_time: the probe model trained with ``seed``, then probed."""
    from hyperframes_mm.analysis.temporal_probe import run_temporal_probe
    from tests.analysis.conftest import probe_config, train_briefly
    checkpoint = train_briefly(probe_config(), root / f'seed{seed}.pth', seed=seed)
    report = run_temporal_probe(probe_config(), str(checkpoint), scales=(0.5, 2.0),
                                progress=False)
    original, reversed_, static = (report.condition(name).accuracy
                                   for name in ('original', 'reversed', 'static'))
    return {'original': original, 'reversed': reversed_, 'static': static,
            'original - reversed': original - reversed_, 'original - static': original - static,
            'uses_time': report.uses_time, 'clips': len(report.labels)}


def oracle_values(seed: int) -> Dict[str, object]:
    """test_single_frame_probe_is_near_chance_and_motion_oracle_is_not on the clips of
    ``seed`` (the test's are seed 0), the probe's frame draws seeded alike."""
    from hyperframes_mm.datasets.synthetic import PRESETS, clip_rng, render_clip
    from hyperframes_mm.datasets.synthetic.probe import probe_accuracies
    names = PRESETS['default'].classes

    def clips(split, count):
        return [(*render_clip(name, clip_rng(seed, split, name, index), 64, 2.0, (15.0, )),
                 label) for label, name in enumerate(names) for index in range(count)]

    test = clips('val', 3)
    result = probe_accuracies(clips('train', 6), test, len(names), seed=seed)
    return dict(single_frame=result['single_frame'], motion=result['motion'], clips=len(test))


def loss_ratio(model, data, steps: int, key: str) -> float:
    """``losses[-1] / losses[0]`` over ``steps`` SGD steps on one batch, as the tests train."""
    import torch
    from mmengine.optim import OptimWrapper
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    model.train()
    losses = [float(model.train_step(data, wrapper)[key]) for _ in range(steps)]
    return losses[-1] / losses[0]


def measure(seed: int, root: Path) -> Dict[str, Dict[str, object]]:
    """Every test's quantities for one seed: ``{node id: {quantity: value}}``."""
    import torch
    from tests.models.backbones import test_recognizer2d_backbones as backbones
    from tests.models.recognizers import test_fast_slow as fast_slow
    values = {PROBE: probe_values(seed, root), ORACLE: oracle_values(seed)}
    for name, spec in backbones.BACKBONES.items():
        torch.manual_seed(seed)
        model = backbones.build_recognizer(*spec)
        values[f'{BACKBONES}[{name}]'] = {
            LOSS_RATIO: loss_ratio(model, backbones.train_batch(name), 6, 'loss_cls')}
    torch.manual_seed(seed)
    model = fast_slow.build()
    values[FAST_SLOW] = {LOSS_RATIO: loss_ratio(model, fast_slow.batch(batch_size=4), 8, 'loss')}
    return values


def worker(setting: str, seeds: Sequence[int], out: Path) -> None:
    """The child process: every seed's runs under this process's kernels, written to ``out``."""
    import logging
    import os
    import torch
    import hyperframes_mm  # noqa: F401
    from mmaction.utils import register_all_modules
    from mmengine.logging import MMLogger
    from tests.analysis.conftest import write_moving_disc_dataset
    register_all_modules(init_default_scope=True)
    MMLogger.get_current_instance().setLevel(logging.WARNING)  # no init report per model
    torch.set_num_threads(1)
    kernels = kernel_setting()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        root = write_moving_disc_dataset(Path(tmp), PROBE_CLIPS)
        os.environ['HF_PROBE_DATA'] = str(root)  # read by the probe test's configs
        for seed in seeds:
            runs.append(dict(setting=setting, seed=seed, kernels=kernels, cpu=cpu_name(),
                             tests=measure(seed, root)))
            print(f'[bench_test_margins] {setting} ({kernel_label(kernels)}) seed {seed} done',
                  file=sys.stderr, flush=True)
    out.write_text(json.dumps(runs))


def run_setting(setting: str, seeds: Sequence[int]) -> List[Dict]:
    """The runs of one kernel setting, measured in a child with that setting's environment."""
    env = {name: value for name, value in runner.tool_env().items()
           if name not in KERNEL_VARIABLES}
    env.update(named_kernel_settings()[setting])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / 'runs.json'
        subprocess.run([sys.executable, __file__, '--worker', setting, '--out', str(out),
                        '--seeds', *map(str, seeds)], cwd=REPO, env=env, check=True)
        return json.loads(out.read_text())


# ------------------------------------------------------------------------------- the report
def merged(results: Dict[str, List[Dict]], runs: Sequence[Dict]) -> Dict[str, List[Dict]]:
    """The record's runs by kernel label, ``runs`` replacing those of the same label and seed."""
    out = {label: list(label_runs) for label, label_runs in results.items()}
    for run in runs:
        label = kernel_label(run['kernels'])
        out[label] = sorted([old for old in out.get(label, []) if old['seed'] != run['seed']]
                            + [run], key=lambda item: item['seed'])
    return out


def margin(bound: Bound, value) -> float:
    """How far ``value`` is inside the bound (negative: the assertion fails)."""
    return value - bound.bound if bound.op == '>=' else bound.bound - value


class Stat(NamedTuple):
    """One bound over the runs of one node id: ``least`` is the worst margin (None for a
    truth value), ``clips`` the clips an accuracy is over (None: not an accuracy)."""
    test: str
    bound: Bound
    values: list
    held: int
    least: Optional[float]
    clips: Optional[int]


def bound_stats(results: Dict[str, List[Dict]]) -> List[Stat]:
    """Every bound with every node id it applies to, over every recorded run."""
    runs = [run for label_runs in results.values() for run in label_runs]
    stats = []
    for bound in BOUNDS:
        tests = dict.fromkeys(test for run in runs for test in run['tests']
                              if test == bound.test or test.startswith(bound.test + '['))
        for test in tests:
            measured = [run['tests'][test] for run in runs if test in run['tests']]
            values = [entry[bound.quantity] for entry in measured]
            held = sum(bool(OPS[bound.op](value, bound.bound)) for value in values)
            least = (None if bound.op == 'is' else
                     min(margin(bound, value) for value in values))
            counts = {entry.get('clips') for entry in measured}
            (clips, ) = counts if len(counts) == 1 else (None, )
            stats.append(Stat(test, bound, values, held, least, clips))
    return stats


def bound_rows(stats: Sequence[Stat]) -> List[List[str]]:
    """Per bound and node id: the bound, min and max over the runs, the worst margin (in clips
    too where the quantity is an accuracy over clips) and the runs it held in."""
    rows = []
    for stat in stats:
        shown = '{}' if stat.least is None else '{:.3g}'
        rows.append([f'`{stat.test}`', stat.bound.quantity,
                     f'{stat.bound.op} {stat.bound.bound}', shown.format(min(stat.values)),
                     shown.format(max(stat.values)),
                     '' if stat.least is None else f'{stat.least:.3g}',
                     f'{stat.least * stat.clips:.1f} of {stat.clips}'
                     if stat.clips and stat.least is not None else '',
                     f'{stat.held} / {len(stat.values)}'])
    return rows


def findings(stats: Sequence[Stat]) -> List[str]:
    """The bounds that failed in a run, and the accuracy bounds less than
    :data:`CLIP_MARGIN` clips from their worst run."""
    failed = [f'`{stat.test}` {stat.bound.quantity} (held in {stat.held} of '
              f'{len(stat.values)})' for stat in stats if stat.held < len(stat.values)]
    close = [f'`{stat.test}` {stat.bound.quantity} ({stat.least * stat.clips:.1f} of '
             f'{stat.clips})' for stat in stats if stat.held == len(stat.values)
             and stat.clips and stat.least is not None and stat.least * stat.clips < CLIP_MARGIN]
    return [f'- failed in some runs: {"; ".join(failed) or "none"}',
            f'- under {CLIP_MARGIN} clips of margin: {"; ".join(close) or "none"}']


def report(results: Dict[str, List[Dict]]) -> List[str]:
    """The section: what was run, the table of :func:`bound_rows`, then :func:`findings`."""
    runs = [run for label_runs in results.values() for run in label_runs]
    seeds = sorted({run['seed'] for run in runs})
    cpus = sorted({run['cpu'] for run in runs})
    intro = (f'Runs: {len(runs)}, seeds {", ".join(map(str, seeds))} under the kernels '
             f'{"; ".join(results)} (ATen\'s CPU capability, in brackets the setting of '
             '`scripts/kernel_settings.txt` that capped ATen, oneDNN, MKL and OpenBLAS), on '
             f'{"; ".join(cpus)}, one thread. Per assertion of a test marked `trained`: the '
             'measured quantity\'s range over the runs and its worst margin to the bound, '
             'also in clips where it is an accuracy over clips (a margin under one clip fails '
             'on one more or one fewer clip); the last column counts the runs the assertion '
             'held in.')
    header = ['test', 'quantity', 'bound', 'min', 'max', 'worst margin', 'in clips', 'held']
    stats = bound_stats(results)
    return [intro, '', *markdown_table(header, 'lllrrrrr', bound_rows(stats)), '',
            *findings(stats)]


def write(results: Dict[str, List[Dict]], record: Path, readme: Path) -> str:
    """The record, the markdown table beside it (``.md``) and the findings page's section."""
    runner.Record(record).write(results)
    lines = report(results)
    markdown = '\n'.join(['# Margins of the trained-outcome tests', '', *lines, '',
                          'Reproduce: `python benchmarks/bench_test_margins.py`.']) + '\n'
    record.with_suffix('.md').write_text(markdown)
    replace_section(readme, '\n'.join(lines), README_BEGIN, README_END)
    return markdown


def main(argv=None) -> str:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker, args.seeds, args.out)
        return ''
    unknown = sorted(set(args.settings) - set(named_kernel_settings()))
    if unknown:
        raise SystemExit(f'{KERNEL_SETTINGS}: no kernel setting {", ".join(unknown)}')
    results = runner.Record(args.record).data.get('results', {})
    if not args.report_only:
        for setting in args.settings:
            results = merged(results, run_setting(setting, args.seeds))
            runner.Record(args.record).write(results)  # a stopped run keeps what it measured
    if not results:
        raise SystemExit(f'{args.record}: no runs recorded; run without --report-only first')
    markdown = write(results, args.record, args.readme)
    print(markdown)
    return markdown


if __name__ == '__main__':
    main()
