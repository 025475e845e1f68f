"""benchmarks/bench_test_margins.py: the table's ranges, worst margins (in clips where the
quantity is an accuracy over clips) and counts are exact for a given record, runs are replaced
by kernels and seed, and --report-only writes the tables from the record alone."""
import json

import pytest

from benchmarks import bench_test_margins as bench
from benchmarks.lib.kernels import named_kernel_settings

AVX512 = dict(cpu_capability='AVX512', ATEN_CPU_CAPABILITY='', ONEDNN_MAX_CPU_ISA='',
              MKL_ENABLE_INSTRUCTIONS='', OPENBLAS_CORETYPE='')
DEFAULT = dict(cpu_capability='DEFAULT', **named_kernel_settings()['default'])
BACKBONE_A, BACKBONE_B = f'{bench.BACKBONES}[A]', f'{bench.BACKBONES}[B]'


def _run(kernels, seed, probe, uses_time, oracle, ratios):
    """A run as the worker records it; ``probe`` (original, reversed, static) in clips of 24,
    ``oracle`` (single frame, motion) in clips of 30."""
    original, reversed_, static = (clips / 24 for clips in probe)
    tests = {
        bench.PROBE: {'original': original, 'reversed': reversed_, 'static': static,
                      'original - reversed': original - reversed_,
                      'original - static': original - static, 'uses_time': uses_time,
                      'clips': 24},
        bench.ORACLE: dict(single_frame=oracle[0] / 30, motion=oracle[1] / 30, clips=30)}
    tests.update({test: {bench.LOSS_RATIO: ratio} for test, ratio in ratios.items()})
    return dict(setting='native', seed=seed, kernels=kernels, cpu='Test CPU', tests=tests)


RESULTS = {
    'AVX512': [_run(AVX512, 0, (20, 0, 6), True, (6, 25),
                    {BACKBONE_A: 0.5, BACKBONE_B: 0.25, bench.FAST_SLOW: 0.001})],
    'DEFAULT (default)': [_run(DEFAULT, 0, (12, 3, 8), False, (10, 18),
                               {BACKBONE_A: 1.0, bench.FAST_SLOW: 0.0002})],
}
LOSS = bench.LOSS_RATIO
ROWS = [
    [f'`{bench.PROBE}`', 'original', '>= 0.4', '0.5', '0.833', '0.1', '2.4 of 24', '2 / 2'],
    [f'`{bench.PROBE}`', 'original - reversed', '>= 0.3', '0.375', '0.833', '0.075',
     '1.8 of 24', '2 / 2'],
    [f'`{bench.PROBE}`', 'original - static', '>= 0.25', '0.167', '0.583', '-0.0833',
     '-2.0 of 24', '1 / 2'],
    [f'`{bench.PROBE}`', 'uses_time', 'is True', 'False', 'True', '', '', '1 / 2'],
    [f'`{bench.ORACLE}`', 'single_frame', '<= 0.3', '0.2', '0.333', '-0.0333', '-1.0 of 30',
     '1 / 2'],
    [f'`{bench.ORACLE}`', 'motion', '>= 0.6', '0.6', '0.833', '0', '0.0 of 30', '2 / 2'],
    # a parametrised test: one row per parameter, in the record's order, each its own runs
    [f'`{BACKBONE_A}`', LOSS, '< 1.0', '0.5', '1', '0', '', '1 / 2'],
    [f'`{BACKBONE_B}`', LOSS, '< 1.0', '0.25', '0.25', '0.75', '', '1 / 1'],
    [f'`{bench.FAST_SLOW}`', LOSS, '< 0.1', '0.0002', '0.001', '0.099', '', '2 / 2'],
]


def test_each_bound_gets_its_range_worst_margin_and_count_exactly():
    assert bench.bound_rows(bench.bound_stats(RESULTS)) == ROWS


def test_the_findings_name_the_failed_bounds_and_those_under_two_clips():
    assert bench.findings(bench.bound_stats(RESULTS)) == [
        f'- failed in some runs: `{bench.PROBE}` original - static (held in 1 of 2); '
        f'`{bench.PROBE}` uses_time (held in 1 of 2); `{bench.ORACLE}` single_frame (held in 1 '
        f'of 2); `{BACKBONE_A}` {LOSS} (held in 1 of 2)',
        f'- under 2 clips of margin: `{bench.PROBE}` original - reversed (1.8 of 24); '
        f'`{bench.ORACLE}` motion (0.0 of 30)']


def test_a_rerun_replaces_the_runs_of_its_kernels_and_seed_and_keeps_the_others():
    again = _run(AVX512, 0, (24, 0, 0), True, (3, 30), {})
    later = _run(AVX512, 1, (24, 0, 0), True, (3, 30), {})
    avx2 = dict(AVX512, cpu_capability='AVX2', **named_kernel_settings()['avx2'])
    other = _run(avx2, 0, (24, 0, 0), True, (3, 30), {})
    merged = bench.merged(RESULTS, [later, again, other])
    assert merged == {'AVX512': [again, later], 'DEFAULT (default)': RESULTS['DEFAULT (default)'],
                      'AVX2 (avx2)': [other]}
    assert RESULTS['AVX512'][0]['tests'][bench.PROBE]['original'] == 20 / 24  # not changed


def test_report_only_writes_the_table_and_the_readme_section_from_the_record(tmp_path):
    record, readme = tmp_path / 'test_margins.json', tmp_path / 'README.md'
    record.write_text(json.dumps(dict(results=RESULTS)))
    readme.write_text(f'# Benchmarks\n\n{bench.README_BEGIN}\nold\n{bench.README_END}\nafter\n')
    markdown = bench.main(['--report-only', '--record', str(record), '--readme', str(readme)])
    lines = bench.report(RESULTS)
    assert lines[0].startswith('Runs: 2, seeds 0 under the kernels AVX512; DEFAULT (default) '
                               '(ATen\'s CPU capability')
    assert ', on Test CPU, one thread.' in lines[0]
    assert lines[2:4] == ['| test | quantity | bound | min | max | worst margin | in clips | '
                          'held |', '|---|---|---|---:|---:|---:|---:|---:|']
    assert lines[4:-3] == ['| ' + ' | '.join(row) + ' |' for row in ROWS]
    assert lines[-3:] == ['', *bench.findings(bench.bound_stats(RESULTS))]
    assert markdown == (record.with_suffix('.md').read_text())
    assert markdown == '\n'.join(['# Margins of the trained-outcome tests', '', *lines, '',
                                  'Reproduce: `python benchmarks/bench_test_margins.py`.']) + '\n'
    assert readme.read_text() == '\n'.join(['# Benchmarks', '', bench.README_BEGIN, *lines,
                                            bench.README_END, 'after']) + '\n'
    assert json.loads(record.read_text()) == dict(results=RESULTS)


def test_an_unknown_setting_or_an_empty_record_is_refused_by_name(tmp_path):
    with pytest.raises(SystemExit, match=r'kernel_settings.txt: no kernel setting avx9'):
        bench.main(['--settings', 'native', 'avx9', '--record', str(tmp_path / 'r.json')])
    with pytest.raises(SystemExit, match=r'r.json: no runs recorded; run without --report-only'):
        bench.main(['--report-only', '--record', str(tmp_path / 'r.json'),
                    '--readme', str(tmp_path / 'README.md')])
