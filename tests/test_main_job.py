"""tools/main_job.py end to end on the tiny preset: one row trained through mmaction2's tools for
one epoch, tested, tabulated, with a short terminal output; a rerun reuses it, recording it
trains nothing; the schedule override scales the scheduler; rows train the costliest first,
each failure shown as it fails; progress is read from mmengine's log lines; the record keeps
runs by config, seed and kernel setting, and the README's table and each run's verdict are read
from it; every row is fitted to the set it trains on (class count, flip label map), a preset no
config fits is refused before its clips are built, and a record that is not there is refused
where it would be read."""
import io
import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from benchmarks import main_job
from benchmarks.lib import kernels, progress, runner
from benchmarks.lib.rows import Row

from .conftest import REPO


def test_schedule_options_scale_the_synthetic_schedule():
    config = next(row.config for row in main_job.ROWS if row.name == 'hyperframe T=5')
    assert main_job.schedule_options(config, 10) == [
        'train_cfg.max_epochs=10', 'train_cfg.val_interval=10',
        'param_scheduler.0.begin=0', 'param_scheduler.0.end=1',
        'param_scheduler.1.begin=1', 'param_scheduler.1.end=10', 'param_scheduler.1.T_max=9']


def test_every_row_config_exists():
    for row in main_job.ROWS + main_job.FULL_ROWS:
        assert (REPO / row.config).is_file(), row.config
    assert main_job.REFERENCE in [row.name for row in main_job.FULL_ROWS]


MMENGINE_LINE = ('12/01 10:46:19 - mmengine - INFO - Epoch(train)  [7][27/27]  lr: 5.2209e-03  '
                 'eta: 0:52:31  time: 1.9252  data_time: 0.0105  grad_norm: 5.4755  loss: 3.4818  '
                 'top1_acc: 0.0667  loss_cls: 3.4818')


def test_progress_is_parsed_from_mmengine_training_lines():
    assert progress.parse_train_line(MMENGINE_LINE) == (7, 27, 27, '0:52:31', '3.4818')
    assert progress.parse_train_line('... Epoch(val) [5][27/27]  acc/top1: 0.06') is None


def test_log_follower_returns_complete_lines_once(tmp_path):
    log = tmp_path / 'train.log'
    follower = progress.LogFollower(log)
    assert follower.new_lines() == []  # not written yet
    log.write_text('one\ntw')
    assert follower.new_lines() == ['one']
    with open(log, 'a') as out:
        out.write('o\n')
    assert follower.new_lines() == ['two']
    log.write_text('new\n')  # a new run rewrites the log
    assert follower.new_lines() == ['new']


def _training(name, epoch, max_epochs=3):
    status = progress.RowStatus(Row(name, Path('x.py'), ''), None, max_epochs)
    status.phase, status.epoch, status.iteration, status.iterations = 'training', epoch, 2, 4
    status.loss, status.eta = '1.25', '0:01:00'
    return status


def test_piped_progress_prints_a_line_per_new_epoch_throttled_and_the_last_epoch():
    out = io.StringIO()
    display = progress.Display(out, live=False, interval=3600)
    rows = [_training('a', 1), _training('b', 1)]
    display.status(rows)  # first epoch: printed
    display.status(rows)  # nothing new
    rows[0].epoch = 2
    display.status(rows)  # new epoch, but within the interval
    rows[1].epoch = 3
    display.status(rows)  # a row's last epoch: always printed
    assert out.getvalue().splitlines() == [
        '[main job] a: epoch 1/3 [2/4] loss 1.25 eta 0:01:00 | b: epoch 1/3 [2/4] loss 1.25 '
        'eta 0:01:00',
        '[main job] a: epoch 2/3 [2/4] loss 1.25 eta 0:01:00 | b: epoch 3/3 [2/4] loss 1.25 '
        'eta 0:01:00']


def test_live_progress_rewrites_one_line_under_the_phase_lines():
    out = io.StringIO()
    display = progress.Display(out, live=True)
    row = _training('a', 1)
    display.status([row])
    display.line('[main job] phase')
    row.phase = 'testing'
    display.status([row])
    assert out.getvalue() == ('a: epoch 1/3 [2/4] loss 1.25 eta 0:01:00\r\x1b[K[main job] phase\n'
                              'a: epoch 1/3 [2/4] loss 1.25 eta 0:01:00\r\x1b[Ka: testing')


def test_rows_train_costliest_first_each_failure_shown_as_it_fails(tmp_path, monkeypatch):
    log = tmp_path / 'train.log'
    log.write_text('Traceback\nboom\n')
    started = []

    def train_and_test(status, args, env, epochs):
        started.append(status.row.name)
        if status.row.name == 'costly':
            raise runner.ToolFailed('tools/train.py', 1, log)
        return f'{status.row.name}: trained'

    monkeypatch.setattr(main_job, 'train_and_test', train_and_test)
    out = io.StringIO()
    rows = [Row('cheap', Path('c.py'), ''), Row('costly', Path('x.py'), '', cost=2.0)]
    with pytest.raises(SystemExit) as exit_info:
        main_job.train_rows(rows, Namespace(work_dir=str(tmp_path), jobs=1), {}, 1,
                            progress.Display(out, live=False))
    assert started == ['costly', 'cheap']
    assert out.getvalue().splitlines() == [
        f'[main job] costly: tools/train.py failed (exit 1); last lines of {log}:', 'Traceback',
        'boom', '[main job] cheap: trained']
    assert str(exit_info.value) == ('[main job] failed: costly (their logs\' last lines are '
                                    'above)')


AVX512 = dict(cpu_capability='AVX512', ATEN_CPU_CAPABILITY='', ONEDNN_MAX_CPU_ISA='',
              MKL_ENABLE_INSTRUCTIONS='', OPENBLAS_CORETYPE='')
AVX2 = dict(cpu_capability='AVX2', ATEN_CPU_CAPABILITY='avx2', ONEDNN_MAX_CPU_ISA='AVX2',
            MKL_ENABLE_INSTRUCTIONS='AVX2', OPENBLAS_CORETYPE='Haswell')


def _run(top1, seed=0, kernels=AVX512, key='k', row='hyperframe T=5', latency=10.0):
    return dict(row=row, key=key, seed=seed, kernels=kernels, top1=top1, mean_class=top1,
                fast=top1 + 0.1, slow=top1 - 0.1, gflops=0.4, params_m=11.2,
                latency_ms=latency, train_min=5.0)


def test_the_kernel_setting_is_read_from_kernels_json_else_from_this_process(tmp_path,
                                                                             monkeypatch):
    written = tmp_path / 'kernels.json'
    written.write_text(json.dumps(dict(setting='avx2', seed=1, **AVX2)))
    assert kernels.kernel_setting(written) == AVX2
    assert kernels.kernel_label(AVX2) == 'AVX2 (avx2)'  # a setting of kernel_settings.txt
    assert kernels.kernel_label(AVX512) == 'AVX512'
    assert kernels.kernel_label(dict(AVX512, ONEDNN_MAX_CPU_ISA='AVX2')) == \
        'AVX512 (ONEDNN_MAX_CPU_ISA=AVX2)'
    assert kernels.named_kernel_settings()['default'] == dict(
        ATEN_CPU_CAPABILITY='default', ONEDNN_MAX_CPU_ISA='SSE41',
        MKL_ENABLE_INSTRUCTIONS='SSE4_2', OPENBLAS_CORETYPE='Nehalem')
    import torch
    monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', 'SSE41')
    for name in ('ATEN_CPU_CAPABILITY', 'MKL_ENABLE_INSTRUCTIONS', 'OPENBLAS_CORETYPE'):
        monkeypatch.delenv(name, raising=False)
    assert kernels.kernel_setting(tmp_path / 'none.json') == dict(
        cpu_capability=torch.backends.cpu.get_cpu_capability(), ATEN_CPU_CAPABILITY='',
        ONEDNN_MAX_CPU_ISA='SSE41', MKL_ENABLE_INSTRUCTIONS='', OPENBLAS_CORETYPE='')


def test_a_run_recorded_again_replaces_itself_and_others_are_kept(tmp_path):
    record = runner.Record(tmp_path / 'record.json')
    main_job.add_to_record(record, [_run(0.70), _run(0.50, key='s', row='single frame (T=1)')])
    main_job.add_to_record(record, [_run(0.72), _run(0.74, seed=1), _run(0.71, kernels=AVX2)])
    runs = runner.Record(tmp_path / 'record.json').data['results']
    assert list(runs) == ['single frame (T=1)', 'hyperframe T=5']  # the main job's row order
    assert [(run['seed'], run['kernels']['cpu_capability'], run['top1'])
            for run in runs['hyperframe T=5']] == [(0, 'AVX2', 0.71), (0, 'AVX512', 0.72),
                                                   (1, 'AVX512', 0.74)]
    assert [run['top1'] for run in main_job.recorded_runs(record, 'k')] == [0.71, 0.72, 0.74]


def test_each_run_is_judged_against_the_recorded_range_of_its_config():
    recorded = [_run(0.70), _run(0.74, seed=1), _run(0.72, kernels=AVX2)]
    # min-max 0.70-0.74 widened by one sd (0.02)
    assert main_job.expected_range(recorded) == pytest.approx((0.68, 0.76))
    assert main_job.verdict(_run(0.759), recorded) == (
        'hyperframe T=5: top-1 0.759, inside the expected range 0.680-0.760 (3 recorded runs)')
    assert main_job.verdict(_run(0.62), recorded) == (
        'hyperframe T=5: top-1 0.620, OUTSIDE the expected range 0.680-0.760 (3 recorded runs)')
    assert main_job.verdict(_run(0.62), recorded[:1]) == (
        'hyperframe T=5: top-1 0.620; one recorded run (0.700): no spread to compare with yet')
    assert main_job.verdict(_run(0.62), []) == (
        'hyperframe T=5: top-1 0.620, no record for this row (its config, preset and epochs)')


def test_the_readme_table_is_the_record_over_seeds_and_kernel_settings(tmp_path):
    record = runner.Record(tmp_path / 'record.json')
    main_job.add_to_record(record, [_run(0.70, latency=12.0), _run(0.74, seed=1, latency=10.0),
                                    _run(0.72, kernels=AVX2, latency=11.0)])
    lines = main_job.readme_table(record).splitlines()
    assert lines[:3] == [
        '| model | top-1 (mean ± sd) | top-1 min-max | fast classes | slow classes | runs | '
        'seeds | kernel settings | GFLOPs | params (M) | CPU latency (ms) |',
        '|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|',
        '| hyperframe T=5 | 0.720 ± 0.020 | 0.700-0.740 | 0.820 | 0.620 | 3 | 0, 1 | AVX2 '
        '(avx2); AVX512 | 0.400 | 11.20 | 11.0 |']
    assert 'min-max widened by 1 sd on each side' in lines[4]
    # the footnote names the record the table was read from
    assert lines[4].startswith(f'Each row over every run in `{tmp_path / "record.json"}`: ')
    inside = main_job.readme_table(runner.Record(REPO / 'benchmarks/results/other.json'))
    assert 'Each row over every run in `benchmarks/results/other.json`: ' in inside


def _copies_of_the_readmes(tmp_path, monkeypatch):
    """The READMEs the main job writes, copied into ``tmp_path`` (what it writes goes there)."""
    copies = []
    for index, readme in enumerate(main_job.READMES):
        copies.append(tmp_path / f'README{index}.md')
        copies[-1].write_text(readme.read_text())
    monkeypatch.setattr(main_job, 'READMES', tuple(copies))
    return {copy: copy.read_text() for copy in copies}


def test_a_record_that_is_not_there_is_refused_where_it_would_be_read(tmp_path, monkeypatch):
    before = _copies_of_the_readmes(tmp_path, monkeypatch)
    typo = tmp_path / 'main_jbo.json'
    message = (f'[main job] --record-file {typo}: no such record, so its table would be empty; '
               'nothing written. Name an existing record (the default is '
               'benchmarks/results/main_job.json), or add a run to a new one with --record '
               '--work-dir DIR.')
    for mode in (['--report-only', '--readme'], ['--report-only'],
                 ['--readme', '--data-root', str(tmp_path / 'data')]):  # the last would train
        with pytest.raises(SystemExit) as exit_info:
            main_job.main(mode + ['--record-file', str(typo)])
        assert str(exit_info.value) == message, mode
    assert {copy: copy.read_text() for copy in before} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        copy.name for copy in before)  # no record, no data set


def test_report_only_writes_the_readmes_from_the_record_it_names(tmp_path, monkeypatch):
    _copies_of_the_readmes(tmp_path, monkeypatch)
    record = runner.Record(tmp_path / 'record.json')
    main_job.add_to_record(record, [_run(0.70), _run(0.74, seed=1)])
    table = main_job.main(['--report-only', '--readme', '--record-file', str(record.path)])
    assert f'Each row over every run in `{record.path}`: ' in table
    for readme in main_job.READMES:
        text = readme.read_text()
        assert text.split(main_job.README_BEGIN)[1].split(main_job.README_END)[0] == (
            f'\n{table}\n')


#: a set of the full preset's 12 classes, as its meta.json records them
FULL_CLASSES = ['swipe_left', 'swipe_right', 'fall', 'hop', 'shake', 'drift_left', 'drift_right',
                'lie_down', 'approach', 'recede', 'rotate_cw', 'rotate_ccw']
FULL_FLIPS = {0: 1, 1: 0, 5: 6, 6: 5, 10: 11, 11: 10}


def _flip_options(*places):
    """The options that put FULL_FLIPS at each of ``places``."""
    return [option for place in places for option in [f'{place}._delete_=True'] + [
        f'{place}.{key}={value}' for key, value in FULL_FLIPS.items()]]


def test_each_row_trains_and_tests_with_the_classes_and_flips_of_its_set(tmp_path, monkeypatch):
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'meta.json').write_text(json.dumps(dict(
        params=dict(preset='full', seed=0, size=80), classes=FULL_CLASSES,
        flip_label_map={str(key): value for key, value in FULL_FLIPS.items()})))
    commands = []

    def train(config, work_dir, log, options, **kwargs):
        commands.append(('train', config, options))
        return str(work_dir / 'epoch_1.pth')

    def test(config, checkpoint, work_dir, log, options, **kwargs):
        commands.append(('test', config, options))
        metrics = work_dir / 'metrics.json'
        metrics.write_text(json.dumps({'acc/top1': 0.5}))
        return {'acc/top1': 0.5}, metrics

    monkeypatch.setattr(runner, 'train', train)
    monkeypatch.setattr(runner, 'test', test)
    (row, ) = main_job.FULL_ROWS  # TSM-5, a row of --full only
    work_dir = tmp_path / 'work' / 'tsm'
    work_dir.mkdir(parents=True)
    status = progress.RowStatus(row, work_dir, 1)
    args = Namespace(data_root=str(data), seed=3, force=False, work_dir=str(tmp_path / 'work'))
    assert main_job.train_and_test(status, args, {}, None) == (
        'TSM-5 (mmaction2): trained 1 epoch in 0.0 min, test top-1 0.500')
    fitted = ['model.cls_head.num_classes=12', 'num_classes=12'] + _flip_options(
        'train_dataloader.dataset.pipeline.3.flip_label_map', 'flip_label_map',
        'augment.flip_label_map', 'train_transforms.1.flip_label_map',
        'train_pipeline.3.flip_label_map')
    assert commands == [('train', row.config, ['randomness.seed=3'] + fitted),
                        ('test', row.config, fitted)]
    # what tools/train.py makes of them: a 12-class head, flips relabelled as the set's
    import argparse
    from mmengine.config import Config, DictAction
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    cfg = Config.fromfile(str(REPO / row.config))
    cfg.merge_from_dict(parser.parse_args(['--cfg-options', *fitted]).cfg_options)
    assert cfg.model.cls_head.num_classes == 12
    (augment, ) = [step for step in cfg.train_dataloader.dataset.pipeline
                   if 'flip_label_map' in step]
    from mmaction.registry import TRANSFORMS
    assert TRANSFORMS.build(augment).flip_label_map == FULL_FLIPS


def test_the_default_presets_rows_take_no_option():
    """The family's configs are the default preset's: their runs keep the record's keys."""
    from hyperframes_mm.datasets.synthetic import PRESETS, flip_label_map
    classes = PRESETS['default'].classes
    for row in main_job.ROWS + main_job.FULL_ROWS:
        assert main_job.data_options(row.config, classes, flip_label_map(classes), 'x') == []


def test_a_preset_a_config_cannot_take_is_refused_before_its_clips_are_built(tmp_path,
                                                                            monkeypatch):
    from hyperframes_mm.datasets import synthetic
    # swipe_left without its mirror image: no label fits a flipped swipe_left clip
    monkeypatch.setitem(synthetic.PRESETS, 'tiny', synthetic.PRESETS['tiny'].__class__(
        classes=('swipe_left', 'fall', 'hop'), clips_per_class=dict(train=1, val=1), size=64,
        duration=2.0, fps=(15.0, )))
    with pytest.raises(SystemExit) as exit_info:
        main_job.main(['--preset', 'tiny', '--only', 'single', '--data-root',
                       str(tmp_path / 'data'), '--work-dir', str(tmp_path / 'work'),
                       '--record-file', str(tmp_path / 'record.json')])
    config = next(row.config for row in main_job.ROWS if row.name == 'single frame (T=1)')
    assert str(exit_info.value) == (
        f'[main job] {config}: train_dataloader.dataset.pipeline.3.flip_label_map relabels '
        'horizontally flipped clips, but the classes of preset \'tiny\' (swipe_left, fall, hop) '
        'do not come in mirror pairs, so no label fits a flipped clip of one of them; choose a '
        'preset whose classes do')
    assert list(tmp_path.iterdir()) == []  # no clip, no frame cache, no work dir


def test_the_results_name_the_preset_and_folder_of_their_data():
    meta = dict(params=dict(preset='full', seed=2), classes=FULL_CLASSES)
    line = main_job.data_line(meta, REPO / 'data' / 'synthetic')
    assert line == ('Data: the synthetic benchmark\'s `full` preset (generator seed 2) in '
                    '`data/synthetic`; each config took the set\'s class count and flip label '
                    'map from its meta.json.')
    table = main_job.render([], {}, 12, line, 'Timed on X.')
    assert table.splitlines()[-1].startswith(f'{line} Chance is 0.083 (12 classes). ')


def test_the_committed_readme_table_is_the_committed_records():
    if not main_job.RECORD.is_file():
        pytest.skip(f'{main_job.RECORD} is not committed yet (python tools/main_job.py --record '
                    '--work-dir DIR for each run, then --report-only --readme)')
    expected = main_job.readme_table(runner.Record(main_job.RECORD))
    for readme in main_job.READMES:  # the project's and the synthetic family's
        text = readme.read_text()
        table = text.split(main_job.README_BEGIN)[1].split(main_job.README_END)[0]
        assert table.strip('\n') == expected, readme


@pytest.mark.slow
def test_main_job_trains_tests_and_tabulates_one_row(tmp_path):
    command = [sys.executable, 'tools/main_job.py', '--preset', 'tiny', '--epochs', '1',
               '--only', 'single', '--jobs', '1', '--work-dir', str(tmp_path / 'work'),
               '--data-root', str(tmp_path / 'data')]
    # Bytes, not text: universal newlines would turn each \r by which a progress bar
    # rewrites its line into a line of its own
    first = subprocess.run(command, cwd=REPO, capture_output=True, timeout=600)
    first.stdout, first.stderr = (stream.decode() for stream in (first.stdout, first.stderr))
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    # What a user sees: a short terminal, one progress line per epoch, no upstream noise
    terminal = first.stdout + first.stderr
    assert terminal.count('\n') <= 80, terminal
    assert '[main job] single frame (T=1): epoch 1/1 [' in first.stdout
    assert 'loss ' in first.stdout and 'eta ' in first.stdout
    assert '[main job] single frame (T=1): trained 1 epoch in' in first.stdout
    # a tiny one-epoch run is no run of the README's rows: nothing to compare it with
    assert '[main job] single frame (T=1): top-1 ' in first.stdout
    assert ', no record for this row (its config, preset and epochs)' in first.stdout
    for noise in ('Initialized by', 'Unsupported operator', 'MultiScaleDeformableAttention',
                  'Warning'):
        assert noise not in terminal, noise
    results = json.loads((tmp_path / 'work' / 'results.json').read_text())
    assert list(results) == ['single frame (T=1)']
    row = results['single frame (T=1)']
    assert set(row) >= {'top1', 'mean_class', 'fast', 'slow', 'gflops', 'params_m',
                        'latency_ms', 'train_min'}
    assert 0 <= row['top1'] <= 1 and row['gflops'] > 0 and row['latency_ms'] > 0
    table = (tmp_path / 'work' / 'results.md').read_text()
    assert len([line for line in table.splitlines() if line.startswith('| ')]) == 2  # + header
    # the table prints the metrics the run wrote, not numbers of its own
    assert (f'| single frame (T=1) | {row["top1"]:.3f} | {row["mean_class"]:.3f} | '
            f'{row["fast"]:.3f} | {row["slow"]:.3f} | {row["gflops"]:.3f} |') in table
    assert '--preset tiny --epochs 1 --only single' in table  # the command that made it
    assert ('Data: the synthetic benchmark\'s `tiny` preset (generator seed 0) in '
            f'`{tmp_path / "data"}`; each config took the set\'s class count and flip label '
            'map from its meta.json. Chance is 0.250 (4 classes)') in table
    assert (tmp_path / 'work' / 'results.png').stat().st_size > 0
    config = next(row.config for row in main_job.ROWS if row.name == 'single frame (T=1)')
    metrics = json.loads((tmp_path / 'work' / 'zoo_results' / f'{config.stem}.json').read_text())
    assert metrics['acc/top1'] == row['top1']  # mmengine's metric = the table's, same predictions
    # the epoch override reached mmaction2's train.py: one epoch was trained
    log = (tmp_path / 'work' / 'single_frame__t_1' / 'train.log').read_text()
    assert 'Epoch(train) [1]' in log and 'Epoch(train) [2]' not in log
    # it trained a 4-class head, flipped drift_left clips labelled drift_right (the tiny set's)
    from mmengine.config import Config
    trained = Config.fromfile(str(main_job.trained_config(
        next(row for row in main_job.ROWS if row.name == 'single frame (T=1)'),
        tmp_path / 'work' / 'single_frame__t_1')))
    assert trained.model.cls_head.num_classes == 4
    (augment, ) = [step for step in trained.train_dataloader.dataset.pipeline
                   if 'flip_label_map' in step]
    assert augment['flip_label_map'] == {'0': 1, '1': 0, '2': 3, '3': 2}
    # training read the frame cache the job built first (tiny: 4 classes x 4 training clips)
    assert '[main job] frame cache: 16 videos: 16 built' in first.stdout
    assert len(list((tmp_path / 'data' / 'train').glob('*.mp4.hfc'))) == 16
    assert 'FrameCacheInit: building' not in log and 'FrameCacheInit: rebuilding' not in log
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert '[main job] single frame (T=1): done before' in second.stdout
    assert '[main job] frame cache: 16 videos: 0 built, 0 rebuilt, 16 fresh' in second.stdout
    # recording a finished run trains nothing: the row is read from the work dir
    record = tmp_path / 'record.json'
    recorded = subprocess.run(command + ['--record', '--record-file', str(record)], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    assert f'[main job] recorded 1 row of {tmp_path / "work"} (seed 0, ' in recorded.stdout
    assert 'frame cache' not in recorded.stdout and ': training, log' not in recorded.stdout
    (run, ) = json.loads(record.read_text())['results']['single frame (T=1)']
    assert (run['seed'], run['top1'], run['kernels']) == (0, row['top1'],
                                                         kernels.kernel_setting())
    # a rerun is judged against the record (one run: no spread yet)
    third = subprocess.run(command + ['--record-file', str(record)], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert third.returncode == 0, third.stderr[-3000:]
    assert (f'[main job] single frame (T=1): top-1 {row["top1"]:.3f}; one recorded run '
            f'({row["top1"]:.3f}): no spread to compare with yet') in third.stdout
