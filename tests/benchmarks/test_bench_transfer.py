"""benchmarks/bench_transfer.py: the family's rows carried to another data set change the data
root and the class count and nothing else; the rows carried are the ones the family's records
choose; a synthetic set is laid out as UTD-MHAD whole; the target line reads the numbers
given."""
import json
import os
from pathlib import Path

import pytest
from mmengine.config import Config

from benchmarks import bench_transfer as bench
from benchmarks import bench_utd_mhad_imagenet as family
from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from .config_diff import differing_paths, flat

REPO = Path(__file__).resolve().parents[2]


def _record(path: Path, results: dict, costs: dict) -> Path:
    path.write_text(json.dumps(dict(results=results, costs=costs)))
    return path


def _runs(*top1):
    return [dict(top1=value) for value in top1]


def test_the_rows_chosen_are_the_best_validated_within_each_latency(tmp_path):
    # row names the family declares: the validation record is read by them
    a, b, c = family.RECIPE_ROW, family.SHIFT_ROW, family.T8_ROW
    validated = {a: {1: 0.80, 3: 0.80, 5: 0.80, 7: 0.80},
                 b: {1: 0.90, 3: 0.90, 5: 0.90, 7: 0.90},
                 c: {1: 0.70, 3: 0.70, 5: 0.70, 7: 0.70}}
    costs = {family.TSM_ROW: dict(latency_ms=90.0), a: dict(latency_ms=30.0),
             b: dict(latency_ms=40.0), c: dict(latency_ms=20.0)}
    results = {name: _runs(0.5) for name in (family.TSM_ROW, a, b, c)}
    # b is validated best, but over a third of TSM's latency (40 / 90): the headline is a
    assert family.chosen_rows(results, costs, validated) == {
        family.BEST_MAX_LATENCY: b, family.HEADLINE_MAX_LATENCY: a}
    # a row not tested is not chosen, however it validated
    del results[a]
    assert family.chosen_rows(results, costs, validated) == {
        family.BEST_MAX_LATENCY: b, family.HEADLINE_MAX_LATENCY: c}
    # none within either budget: no choice
    assert family.chosen_rows({family.TSM_ROW: _runs(0.5)}, costs, validated) == {}
    # the records alone make the same choice
    validation = tmp_path / 'val.json'
    validation.write_text(json.dumps(dict(results={
        f'{name} | s{subject}': _runs(score) for name, scores in validated.items()
        for subject, score in scores.items()})))
    assert family.recorded_choice(_record(tmp_path / 'r.json', results, costs), validation) == {
        family.BEST_MAX_LATENCY: b, family.HEADLINE_MAX_LATENCY: c}


def test_a_budget_admits_a_row_only_where_every_timing_puts_it_within(tmp_path):
    a, b = family.RECIPE_ROW, family.SHIFT_ROW
    validated = {a: {1: 0.80, 3: 0.80, 5: 0.80, 7: 0.80},
                 b: {1: 0.90, 3: 0.90, 5: 0.90, 7: 0.90}}
    costs = {family.TSM_ROW: dict(latency_ms=90.0), a: dict(latency_ms=27.0),
             b: dict(latency_ms=29.7)}
    results = {name: _runs(0.5) for name in costs}
    # the tables' own timing puts b at 0.33x, inside a third: b is the headline
    assert family.chosen_rows(results, costs, validated)[family.HEADLINE_MAX_LATENCY] == b
    # a re-timing at 0.36x puts it outside; one without b leaves it as it was
    latency = tmp_path / 'latency.json'
    latency.write_text(json.dumps(dict(timings={
        'cpu | AVX2': dict(latency_ms={family.TSM_ROW: 100.0, a: 29.0, b: 36.0}),
        'cpu | DEFAULT': dict(latency_ms={family.TSM_ROW: 50.0, a: 14.0})})))
    timings = family.latency_timings(latency)
    assert timings == [{family.TSM_ROW: 1.0, a: 0.29, b: 0.36},
                       {family.TSM_ROW: 1.0, a: 0.28}]
    assert family.budget_ratios(costs, timings) == {family.TSM_ROW: 1.0, a: 0.3, b: 0.36}
    # a timing without TSM's latency cannot be read as ratios: refused by name, not dropped
    broken = tmp_path / 'broken.json'
    broken.write_text(json.dumps(dict(timings={
        'cpu | AVX2': dict(latency_ms={family.TSM_ROW: 100.0, a: 29.0}),
        'cpu | SSE41': dict(latency_ms={a: 14.0})})))
    with pytest.raises(SystemExit, match=r"\['cpu \| SSE41'\] have no"):
        family.latency_timings(broken)
    assert family.chosen_rows(results, costs, validated, timings) == {
        family.BEST_MAX_LATENCY: b, family.HEADLINE_MAX_LATENCY: a}
    line = family.chosen_within(results, costs, validated, family.HEADLINE_MAX_LATENCY, '1/3',
                                'goal', lambda mean: True, timings)
    assert f'{a} (validation 0.800' in line and 'at 0.300x, at most 0.300x over 3 timings' in line
    # a row validated above the choice and not tested awaits its test, unless a re-timing
    # already puts it over the budget
    untested = family.SHIFT_128_ROW
    validated[untested] = {1: 0.85, 3: 0.85, 5: 0.85, 7: 0.85}
    assert family.awaiting_test(results, costs, validated, timings) == [untested]
    assert family.awaiting_test(results, costs, validated, timings + [{untested: 0.34}]) == []
    assert family.awaiting_test(results, costs, validated, timings + [{untested: 0.33}]) == [
        untested]
    # the records alone make the same choice
    validation = tmp_path / 'val.json'
    validation.write_text(json.dumps(dict(results={
        f'{name} | s{subject}': _runs(score) for name, scores in validated.items()
        for subject, score in scores.items()})))
    record = _record(tmp_path / 'r.json', results, costs)
    assert family.recorded_choice(record, validation, latency)[family.HEADLINE_MAX_LATENCY] == a
    assert family.recorded_choice(record, validation, tmp_path / 'none.json')[
        family.HEADLINE_MAX_LATENCY] == b


def test_a_retiming_times_each_test_model_once_and_replaces_its_kernels_entry(
        tmp_path, monkeypatch):
    a, b, c = family.RECIPE_ROW, family.SHIFT_ROW, family.SHIFT_TIGHT_CROP_ROW
    record = _record(tmp_path / 'r.json', {name: _runs(0.5) for name in (family.TSM_ROW, a, b, c)},
                     {})
    latency = tmp_path / 'latency.json'
    latency.write_text(json.dumps(dict(timings={'other cpu | AVX2': dict(
        machine='m', latency_ms={family.TSM_ROW: 1.0})})))
    monkeypatch.setattr(family, 'LATENCY_RECORD', latency)
    # d is validated and not tested: timed too, so that a budget it cannot fit need not wait
    d = family.SHIFT_128_ROW
    validation = tmp_path / 'val.json'
    validation.write_text(json.dumps(dict(results={f'{d} | s1': _runs(0.9)})))
    monkeypatch.setattr(family, 'VALIDATION_RECORD', validation)
    # c trains differently from b and tests the same graph: one timing serves both
    monkeypatch.setattr(family.BENCH, 'test_model',
                        lambda row, args: {c: b}.get(row.name, row.name))
    timed = []

    def cost_of(rows, args):
        timed.append([row.name for row in rows])
        return {row.name: dict(latency_ms=ms)
                for row, ms in zip(rows, (100.0, 30.0, 40.0, 50.0), strict=True)}
    monkeypatch.setattr(family.BENCH, 'cost_of', cost_of)
    args = family.parse_args(['--retime', '--record', str(record)])
    lines = family.retime(args).splitlines()
    assert timed == [[family.TSM_ROW, a, b, d]]
    assert lines == [f'1.000x  {family.TSM_ROW}', f'0.300x  {a}', f'0.400x  {b}',
                     f'0.400x  {c}', f'0.500x  {d}']
    written = json.loads(latency.read_text())['timings']
    assert len(written) == 2 and 'other cpu | AVX2' in written
    mine = next(value for key, value in written.items() if key != 'other cpu | AVX2')
    assert mine['latency_ms'] == {family.TSM_ROW: 100.0, a: 30.0, b: 40.0, c: 40.0, d: 50.0}
    assert mine['machine'].startswith('Machine: ')
    # a second timing on this CPU and kernels replaces the first
    family.retime(args)
    assert len(json.loads(latency.read_text())['timings']) == 2


def test_the_committed_choice_is_the_one_the_readme_names():
    chosen = family.recorded_choice()
    readme = (REPO / 'README.md').read_text()
    for name in chosen.values():
        assert f'| {name} (chosen on the training subjects) |' in readme


def test_carried_rows_change_the_class_count_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(family, 'recorded_choice', lambda: {
        family.BEST_MAX_LATENCY: family.SHIFT_128_ROW,
        family.HEADLINE_MAX_LATENCY: family.SHIFT_ROW})
    rows = bench.carried_rows(10)
    assert [row.name for row in rows] == [family.TSM_ROW, family.RECIPE_ROW, family.SHIFT_ROW,
                                          family.SHIFT_128_ROW]
    args = bench.parse_args(['--data', str(tmp_path / 'data'), '--record', 'unused'])
    by_name = {row.name: row for row in family.ROWS}
    for index, row in enumerate(rows):
        configs = []
        for which, made in enumerate((row, by_name[row.name])):
            folder = tmp_path / f'{index}-{which}'
            folder.mkdir()
            configs.append(Config.fromfile(str(family.BENCH.run_config(made, 0, args, folder))))
        assert differing_paths(flat(configs[1]), flat(configs[0])) == ['model.cls_head.num_classes']
        assert configs[0].model.cls_head.num_classes == 10
    # one budget's choice is the other's: the row is carried once
    monkeypatch.setattr(family, 'recorded_choice', lambda: {
        family.BEST_MAX_LATENCY: family.SHIFT_ROW, family.HEADLINE_MAX_LATENCY: family.SHIFT_ROW})
    assert [row.name for row in bench.carried_rows(3)] == [family.TSM_ROW, family.RECIPE_ROW,
                                                            family.SHIFT_ROW]


def test_a_synthetic_set_is_laid_out_as_utd_mhad(tmp_path):
    (tmp_path / 'train.txt').write_text('train/a_0000.mp4 0\ntrain/b_0000.mp4 1\n')
    (tmp_path / 'val.txt').write_text('val/a_0000.mp4 0\n')
    meta = dict(annotations=dict(train='train.txt', val='val.txt'), classes=['a', 'b'],
                groups=dict(fast=['a'], slow=['b']),
                params=dict(clips_per_class=dict(train=1, val=1), seed=3))
    (tmp_path / 'meta.json').write_text(json.dumps(meta))
    bench.lay_out(tmp_path)
    assert (tmp_path / 'cross_subject_train.txt').read_text() == \
        'train/a_0000.mp4 0\ntrain/b_0000.mp4 1\n'
    assert (tmp_path / 'cross_subject_test.txt').read_text() == 'val/a_0000.mp4 0\n'
    assert not list(tmp_path.glob('*.part'))
    description = bench.laid_out_synthetic(meta, bench.LAYOUT_LISTS)
    assert description['lists'] == {'cross_subject_train.txt': 2, 'cross_subject_test.txt': 2}
    assert description['classes'] == 2
    assert description['generator'] == meta['params']
    assert bench.data_meta(tmp_path, tmp_path / 'none.json').file == 'meta.json'


def test_the_data_set_is_read_from_its_meta_file_or_its_record(tmp_path):
    for name in bench.LAYOUT_LISTS:
        (tmp_path / name).write_text('v/a.mp4 0\n')
    (tmp_path / 'convert_meta.json').write_text(json.dumps(dict(
        version=2, mapping='m', classes=['a'], lists={name: 1 for name in bench.LAYOUT_LISTS})))
    assert bench.data_meta(tmp_path, tmp_path / 'none.json') is bench.DATA_METAS[0]
    # a meta file no converter wrote (a user's, by hand) leaves the set to its lists
    (tmp_path / 'convert_meta.json').write_text('{"classes": ["a"]}')
    assert bench.data_meta(tmp_path, tmp_path / 'none.json') is bench.DATA_METAS[2]
    # so does a meta.json of the user's own (a common name), which failed with KeyError
    # 'annotations' as if the synthetic generator had written it, and one that is no JSON
    for own in ('{"author": "me", "classes": ["a"]}', '["a"]', 'classes: a'):
        (tmp_path / 'meta.json').write_text(own)
        assert bench.data_meta(tmp_path, tmp_path / 'none.json') is bench.DATA_METAS[2]
    (tmp_path / 'meta.json').write_text(json.dumps(dict(
        params={}, classes=['a'], annotations=dict(train='t.txt', val='v.txt'))))
    assert bench.data_meta(tmp_path, tmp_path / 'none.json') is bench.DATA_METAS[1]
    empty = tmp_path / 'gone'
    record = tmp_path / 'record.json'
    runner.Record(record).write({}, data=dict(generator=dict(seed=1), classes=10))
    assert bench.data_meta(empty, record) is bench.DATA_METAS[1]
    runner.Record(record).write({}, data=dict(version=2, classes=20))
    assert bench.data_meta(empty, record) is bench.DATA_METAS[0]
    runner.Record(record).write({}, data=dict(digests={}, classes=20))
    assert bench.data_meta(empty, record) is bench.DATA_METAS[2]
    with pytest.raises(SystemExit, match=f'{empty}: no cross_subject_train.txt and '
                       'cross_subject_test.txt'):
        bench.data_meta(empty, tmp_path / 'none.json')


def test_a_set_of_lists_alone_is_another_run_when_its_lists_differ(tmp_path):
    """A user's set has no builder's meta: it needed a hand-written convert_meta.json, whose
    identity (no version, no mapping) made every such set the same data, so a set in another
    folder of the same name, its labels remapped, was reported with the first set's runs."""
    def data_set(folder, train, test):
        folder.mkdir(parents=True)
        (folder / bench.LAYOUT_LISTS[0]).write_text(train)
        (folder / bench.LAYOUT_LISTS[1]).write_text(test)
        return folder

    first = data_set(tmp_path / 'a' / 'myset', 'v/0.mp4 0\nv/1.mp4 4\n', 'v/2.mp4 2\n')
    remapped = data_set(tmp_path / 'b' / 'myset', 'v/0.mp4 2\nv/1.mp4 1\n', 'v/2.mp4 4\n')
    meta = bench.data_meta(first, tmp_path / 'none.json')
    assert meta is bench.DATA_METAS[2]
    description = lib.listed(first, bench.LAYOUT_LISTS)
    assert description['classes'] == 5
    assert description['lists'] == {'cross_subject_train.txt': 2, 'cross_subject_test.txt': 1}
    benchmark = lib.RowBenchmark('bench_transfer', bench.LAYOUT_LISTS, (240, 320), 'doc', meta)
    row = bench.carried_rows(5)[1]

    def key(folder):
        return benchmark.run_key(row, 0, bench.parse_args(['--data', str(folder),
                                                           '--record', 'unused']))
    keys = {key(first), key(remapped)}
    (first / bench.LAYOUT_LISTS[1]).write_text('v/2.mp4 2\nv/3.mp4 1\n')  # a line more
    benchmark.run_keys.clear()
    keys.add(key(first))
    assert len(keys) == 3
    (first / bench.LAYOUT_LISTS[0]).write_text('v/0.mp4 x\n')
    with pytest.raises(ValueError, match=f'{first / bench.LAYOUT_LISTS[0]}:1: label \'x\' is '
                       'not an integer'):
        lib.listed(first, bench.LAYOUT_LISTS)


def test_the_target_compares_the_headline_with_tsm_within_a_third():
    costs = {family.TSM_ROW: dict(latency_ms=90.0), 'h': dict(latency_ms=30.0)}
    results = {family.TSM_ROW: _runs(0.60, 0.70), 'h': _runs(0.64, 0.66)}
    assert bench.target(results, costs, 'h') == (
        f'- the headline row (h) 0.650 vs {bench.TSM_LABEL} 0.650 at 0.333x its latency '
        '(>= TSM at <= 1/3): **met**')
    results['h'] = _runs(0.649)
    assert bench.target(results, costs, 'h').endswith('**missed**')
    results['h'] = _runs(0.9)
    costs['h'] = dict(latency_ms=30.1)  # over a third
    assert bench.target(results, costs, 'h').endswith('at 0.334x its latency (>= TSM at <= 1/3): '
                                                 '**missed**')
    del results[family.TSM_ROW]
    assert bench.target(results, costs, 'h') == (
        f'- the headline row (h) >= {bench.TSM_LABEL}: not both trained yet')


def test_one_data_set_is_named(tmp_path):
    with pytest.raises(SystemExit):
        bench.parse_args([])
    with pytest.raises(SystemExit):
        bench.parse_args(['--data', str(tmp_path), '--synthetic', 'default'])
    args = bench.parse_args(['--synthetic', 'tiny', '--synthetic-seed', '4'])
    assert (args.synthetic, args.synthetic_seed, args.data, args.record) == ('tiny', 4, None, '')


def test_the_record_alone_writes_the_page(tmp_path, monkeypatch):
    """A fresh clone (no data, no run folders) writes the page from the record, the same twice:
    the table, the choices named, the target, the groups and the curves."""
    monkeypatch.setattr(family, 'recorded_choice', lambda: {
        family.BEST_MAX_LATENCY: family.SHIFT_128_ROW,
        family.HEADLINE_MAX_LATENCY: family.SHIFT_ROW})
    monkeypatch.setattr(bench, 'RESULTS', tmp_path / 'results')
    data = tmp_path / 'gone' / 'synthetic-x'
    record = tmp_path / 'record.json'
    described = dict(generator=dict(seed=1), classes=10, groups=dict(fast=[0], slow=[1]),
                     lists={'cross_subject_train.txt': 400, 'cross_subject_test.txt': 150})
    runner.Record(record).write({}, data=described)
    argv = ['--data', str(data), '--work-dir', str(tmp_path / 'work'), '--record', str(record)]
    args = bench.parse_args(argv)
    made = runner.Record(record)
    # the keys the runs of these rows have on this data (what main's benchmark reads them by)
    keys = lib.RowBenchmark('bench_transfer', bench.LAYOUT_LISTS, (128, 128), '',
                            bench.DATA_METAS[1])
    latency = {family.TSM_ROW: 90.0, family.RECIPE_ROW: 24.0, family.SHIFT_ROW: 30.0,
               family.SHIFT_128_ROW: 40.0}
    results = {}
    for offset, row in enumerate(bench.carried_rows(10)):
        results[row.name] = [dict(
            row=row.name, seed=seed, key=keys.run_key(row, seed, args),
            top1=0.5 + offset / 10 + seed / 100, top5=0.9, mean_class=0.5, train_top1=0.95,
            train_min=10.0, fast=0.4, slow=0.6 + seed / 10,
            curves={'2': dict(train_top1=0.3, test_top1=0.2 + offset / 10)})
            for seed in (0, 1)]
    # a row of the record this script does not carry (another command's): kept, with its costs
    other = [dict(row='an ablation', seed=0, key='k', top1=0.3)]
    made.write(dict(results, **{'an ablation': other}),
               costs={name: dict(gflops=0.1, params_m=2.0, latency_ms=ms)
                      for name, ms in dict(latency, **{'an ablation': 5.0}).items()},
               data=described)
    readme = tmp_path / 'README.md'
    readme.write_text(f'# project\n{bench.README_BEGIN}\n{bench.README_END}\nend\n')
    monkeypatch.setattr(bench, 'PROJECT_README', readme)
    page = bench.main(['--report-only', *argv])
    assert readme.read_text() == f'# project\n{bench.README_BEGIN}\n{bench.README_END}\nend\n'
    assert bench.main(['--report-only', '--readme', *argv]) == page
    assert readme.read_text().splitlines()[4:10] == [
        f'| {family.TSM_ROW} | 0.505 ± 0.007 | 2 | 0.10 | 1.00x | 10 |',
        f'| {family.RECIPE_ROW} | 0.605 ± 0.007 | 2 | 0.10 | 0.27x | 10 |',
        f'| {family.SHIFT_ROW} (the headline, chosen on UTD-MHAD within 1/3 of TSM\'s latency) | '
        '0.705 ± 0.007 | 2 | 0.10 | 0.33x | 10 |',
        f'| {family.SHIFT_128_ROW} (chosen on UTD-MHAD within 1/2) | 0.805 ± 0.007 | 2 | 0.10 | '
        '0.44x | 10 |', '',
        f'- the headline row ({family.SHIFT_ROW}) 0.705 vs {bench.TSM_LABEL} 0.505 at 0.333x its '
        'latency (>= TSM at <= 1/3): **met**']
    assert page == (tmp_path / 'results' / 'transfer_synthetic-x.md').read_text()
    rewritten = runner.Record(record).data
    assert rewritten['results']['an ablation'] == other
    assert rewritten['costs']['an ablation'] == dict(gflops=0.1, params_m=2.0, latency_ms=5.0)
    assert set(rewritten['results']) == {*latency, 'an ablation'}
    assert (tmp_path / 'results' / 'transfer_synthetic-x_curves.png').is_file()
    lines = page.splitlines()
    assert lines[0] == '# Carried to `synthetic-x`: the UTD-MHAD ImageNet family, unchanged'
    assert lines[2].startswith('`synthetic-x`: 10 classes, 400 training clips, 150 test clips, '
                               'chance 0.100.')
    # each config linked from the page's folder (the table's configs are not beside it)
    link = os.path.relpath(family.TSM, tmp_path / 'results')
    assert f'| [{family.TSM_ROW}]({link}) | **0.505** ± 0.007 (0.500 / 0.510) | ' \
        '0.500 | 0.950 | 10.0 | 0.10 | 2.00 | 1.00x |' in lines
    link = os.path.relpath(family.SHIFT.config, tmp_path / 'results')
    assert f'| [{family.SHIFT_ROW}]({link}) | **0.705** ± 0.007 ' \
        '(0.700 / 0.710) | 0.500 | 0.950 | 10.0 | 0.10 | 2.00 | 0.33x |' in lines
    assert f'- {family.SHIFT_ROW}: the headline, chosen on UTD-MHAD within 1/3 of TSM\'s ' \
        'latency' in lines
    assert f'- {family.SHIFT_128_ROW}: chosen on UTD-MHAD within 1/2' in lines
    assert f'- the headline row ({family.SHIFT_ROW}) 0.705 vs {bench.TSM_LABEL} 0.505 at 0.333x ' \
        'its latency (>= TSM at <= 1/3): **met**' in lines
    assert f'| {family.RECIPE_ROW} | 0.400 ± 0.000 | 0.650 ± 0.071 |' in lines
    assert f'| {family.SHIFT_128_ROW} | 0.30 / 0.50 |' in lines
    # the command as it was given, not this machine's paths
    assert lines[-1] == ('Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_transfer.py '
                         f'--data {data}` (`--report-only`: this page from its record).')


UTD_MHAD_DATA = dict(version=2, mapping=dict(size=128), classes=27,
                     lists={'cross_subject_train.txt': 431, 'cross_subject_test.txt': 430})


def _refusal(argv) -> str:
    with pytest.raises(SystemExit) as raised:
        bench.main(argv)
    return str(raised.value.code)


def test_a_record_of_another_data_set_is_refused_and_left_as_it_was(tmp_path, monkeypatch):
    """--report-only on another data set's record (or another benchmark's) took it: rewrote it
    with the runs it selected alone (120 -> 12) and published its numbers as this set's."""
    monkeypatch.setattr(bench, 'RESULTS', tmp_path / 'results')
    monkeypatch.setattr(bench, 'REPO', tmp_path)  # --synthetic's set: not built here
    utd = tmp_path / 'utd.json'
    runner.Record(utd).write({family.TSM_ROW: _runs(0.7)}, data=UTD_MHAD_DATA)
    before = utd.read_bytes()
    synthetic = tmp_path / 'data' / 'transfer' / 'synthetic-default-s1'
    assert _refusal(['--synthetic', 'default', '--report-only', '--record', str(utd)]) == (
        f'error: {utd}: the record of a converted set (conversion version 2, mapping '
        f"{{'size': 128}}), 27 classes, not of the data set at {synthetic} (the synthetic "
        "benchmark (preset 'default', seed 1)): its runs would be reported, and the record "
        "rewritten, as runs on it; name this data set's record with --record (one not there "
        'yet starts it), or move this one aside')
    # the synthetic set of another seed
    seed1 = tmp_path / 'seed1.json'
    runner.Record(seed1).write({}, data=dict(generator=dict(preset='default', seed=1), classes=10,
                                             lists=UTD_MHAD_DATA['lists']))
    assert "(preset 'default', seed 1), 10 classes, not of the data set at " in _refusal(
        ['--synthetic', 'default', '--synthetic-seed', '2', '--report-only', '--record',
         str(seed1)])
    # a set of its own lists here: described by them, not by the record's generator
    mine = tmp_path / 'mine'
    mine.mkdir()
    for name in bench.LAYOUT_LISTS:
        (mine / name).write_text('v/a.mp4 0\nv/b.mp4 1\n')
    digest = lib.listed(mine, bench.LAYOUT_LISTS)['digests'][bench.LAYOUT_LISTS[0]][:12]
    message = _refusal(['--data', str(mine), '--report-only', '--record', str(seed1)])
    assert message.startswith(f"error: {seed1}: the record of the synthetic benchmark (preset "
                              f"'default', seed 1), 10 classes, not of the data set at {mine} "
                              f'(a set of its own lists (SHA-256 {bench.LAYOUT_LISTS[1]} ')
    assert f'{bench.LAYOUT_LISTS[0]} {digest}...)): its runs would be reported' in message
    # another benchmark's record (the synthetic benchmark's own lists), data set here or not
    accuracy = tmp_path / 'accuracy.json'
    runner.Record(accuracy).write({}, data=dict(generator=dict(preset='default', seed=0),
                                                lists={'train.txt': 400, 'val.txt': 150}))
    assert _refusal(['--data', str(tmp_path / 'gone'), '--report-only', '--record',
                     str(accuracy)]).startswith(
        f"error: {accuracy}: the record of a data set of the lists train.txt, val.txt (another "
        f"benchmark's), not of the data set at {tmp_path / 'gone'}: its runs would be reported")
    assert utd.read_bytes() == before
    assert not (tmp_path / 'results').exists()


def test_a_damaged_or_missing_record_is_named_and_nothing_written(tmp_path, monkeypatch):
    """A record cut short, empty or not an object gave a raw JSONDecodeError / AttributeError;
    a missing one given to --report-only was read as empty."""
    monkeypatch.setattr(bench, 'RESULTS', tmp_path / 'results')
    data = tmp_path / 'gone'
    for text, problem in (
            ('{"results": {"a": [', 'not JSON (Expecting value: line 1 column 20 (char 19))'),
            ('', 'empty'), ('  \n', 'empty')):
        record = tmp_path / 'record.json'
        record.write_text(text)
        assert _refusal(['--data', str(data), '--report-only', '--record', str(record)]) == (
            f'error: {record}: {problem}, so no record of runs; a write cut short leaves such a '
            'file: restore it (a committed record from git) or move it aside')
        assert record.read_text() == text
    for text in ('[]', '{"results": []}'):
        record.write_text(text)
        assert _refusal(['--data', str(data), '--report-only', '--record', str(record)]) == (
            f'error: {record}: not a record of runs: a record is a JSON object whose "results" '
            'are an object of rows, each a list of runs; name the record the benchmark wrote')
    missing = tmp_path / 'typo.json'
    assert _refusal(['--data', str(data), '--report-only', '--record', str(missing)]) == (
        f'error: {missing}: no such record; the tables are written from it alone, so name the '
        'record a command that trained wrote')
    assert not missing.exists() and not (tmp_path / 'results').exists()


def test_rows_that_name_no_row_are_refused_with_the_rows_there_are(tmp_path, monkeypatch):
    """``--rows "hyperframe T=6"`` trained nothing, said nothing and exited 0."""
    monkeypatch.setattr(family, 'recorded_choice', lambda: {})
    rows = bench.carried_rows(3)
    names = '; '.join(row.name for row in rows)
    assert [row.name for row in lib.selected(rows, ['T=5', 'TSM'])] == [family.TSM_ROW,
                                                                        family.RECIPE_ROW]
    with pytest.raises(ValueError) as raised:
        lib.selected(rows, ['hyperframe T=6', 'TSM', 'x'])
    assert str(raised.value) == ("'hyperframe T=6', 'x': no row is named so or has it in its "
                                 f'name; the rows: {names}')
    data = tmp_path / 'mine'
    data.mkdir()
    for name in bench.LAYOUT_LISTS:
        (data / name).write_text('v/a.mp4 2\n')
    argv = ['--data', str(data), '--work-dir', str(tmp_path / 'work'), '--record',
            str(tmp_path / 'r.json'), '--train-only', '--rows', 'hyperframe T=6']
    assert _refusal(argv) == ("error: --rows: 'hyperframe T=6': no row is named so or has it "
                              f'in its name; the rows: {names}')
    assert _refusal(argv + ['--part', 'zoo']).startswith('error: --rows (of --part zoo): ')
    assert not (tmp_path / 'work').exists() and not (tmp_path / 'r.json').exists()


def test_the_page_links_each_config_where_it_lies(tmp_path):
    """The result pages linked bare config names, which resolve inside benchmarks/results."""
    rows = [row for row in family.ROWS if row.name == family.RECIPE_ROW]
    costs = {family.RECIPE_ROW: dict(gflops=0.1, params_m=2.0, latency_ms=10.0)}
    results = {family.RECIPE_ROW: [dict(top1=0.5, mean_class=0.5, train_top1=0.9,
                                        train_min=1.0)]}
    page = REPO / 'benchmarks' / 'results'
    table = lib.headline_table(rows, results, costs, family.RECIPE_ROW, 'T5', 'a sample.', page)
    link = f'../../configs/hyperframes/utd_mhad_imagenet/{rows[0].config.name}'
    assert table[2].startswith(f'| [{family.RECIPE_ROW}]({link}) | 0.500 |')
    assert (page / link).is_file()
    # a table beside its configs (a family README) links them by name
    assert lib.headline_table(rows, results, costs, family.RECIPE_ROW, 'T5', 'a sample.')[
        2].startswith(f'| [{family.RECIPE_ROW}]({rows[0].config.name}) |')


def test_synthetic_takes_the_generators_presets(capsys):
    from hyperframes_mm.datasets.synthetic import PRESETS
    with pytest.raises(SystemExit) as raised:
        bench.parse_args(['--synthetic', 'bogus'])
    assert raised.value.code == 2
    choices = ', '.join(map(repr, PRESETS))
    assert f"argument --synthetic: invalid choice: 'bogus' (choose from {choices})" in \
        capsys.readouterr().err
    assert [bench.parse_args(['--synthetic', preset]).synthetic for preset in PRESETS] == \
        list(PRESETS)
