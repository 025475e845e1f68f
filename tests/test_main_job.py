"""tools/main_job.py end to end on the tiny preset: one row trained through mmaction2's tools for
one epoch, tested, tabulated, with a short terminal output; a rerun reuses it; the schedule
override scales the scheduler; progress is read from mmengine's log lines."""
import io
import json
import subprocess
import sys

import pytest

from .conftest import REPO

sys.path.insert(0, str(REPO / 'tools'))
import main_job  # noqa: E402


def test_schedule_options_scale_the_synthetic_schedule():
    config = next(row.config for row in main_job.ROWS if row.name == 'hyperframe T=5')
    assert main_job.schedule_options(config, 10) == [
        'train_cfg.max_epochs=10', 'train_cfg.val_interval=10',
        'param_scheduler.0.begin=0', 'param_scheduler.0.end=1',
        'param_scheduler.1.begin=1', 'param_scheduler.1.end=10', 'param_scheduler.1.T_max=9']


def test_every_row_config_exists():
    for row in main_job.ROWS + main_job.FULL_ROWS:
        assert (REPO / row.config).is_file(), row.config


MMENGINE_LINE = ('12/01 10:46:19 - mmengine - INFO - Epoch(train)  [7][27/27]  lr: 5.2209e-03  '
                 'eta: 0:52:31  time: 1.9252  data_time: 0.0105  grad_norm: 5.4755  loss: 3.4818  '
                 'top1_acc: 0.0667  loss_cls: 3.4818')


def test_progress_is_parsed_from_mmengine_training_lines():
    assert main_job.parse_train_line(MMENGINE_LINE) == (7, 27, 27, '0:52:31', '3.4818')
    assert main_job.parse_train_line('... Epoch(val) [5][27/27]  acc/top1: 0.06') is None


def test_log_follower_returns_complete_lines_once(tmp_path):
    log = tmp_path / 'train.log'
    follower = main_job.LogFollower(log)
    assert follower.new_lines() == []  # not written yet
    log.write_text('one\ntw')
    assert follower.new_lines() == ['one']
    with open(log, 'a') as out:
        out.write('o\n')
    assert follower.new_lines() == ['two']
    log.write_text('new\n')  # a new run rewrites the log
    assert follower.new_lines() == ['new']


def _training(name, epoch, max_epochs=3):
    status = main_job.RowStatus(main_job.Row(name, 'x.py', ''), None, max_epochs)
    status.phase, status.epoch, status.iteration, status.iterations = 'training', epoch, 2, 4
    status.loss, status.eta = '1.25', '0:01:00'
    return status


def test_piped_progress_prints_a_line_per_new_epoch_throttled_and_the_last_epoch():
    out = io.StringIO()
    display = main_job.Display(out, live=False, interval=3600)
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
    display = main_job.Display(out, live=True)
    row = _training('a', 1)
    display.status([row])
    display.line('[main job] phase')
    row.phase = 'testing'
    display.status([row])
    assert out.getvalue() == ('a: epoch 1/3 [2/4] loss 1.25 eta 0:01:00\r\x1b[K[main job] phase\n'
                              'a: epoch 1/3 [2/4] loss 1.25 eta 0:01:00\r\x1b[Ka: testing')


def test_a_failing_tool_reports_its_log_tail_and_path(tmp_path):
    log = tmp_path / 'row' / 'train.log'
    command = [sys.executable, '-c', 'import sys; print("\\n".join(map(str, range(100)))); '
               'sys.exit(3)']
    try:
        main_job.run(command, {}, log)
    except main_job.ToolFailed as error:
        message = str(error)
    else:
        raise AssertionError('run() did not raise')
    assert message.startswith(f'-c failed (exit 3); last lines of {log}:')
    assert message.splitlines()[-1] == '99' and '\n69\n' not in message


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
    assert 'Chance is 0.250 (4 classes)' in table
    assert (tmp_path / 'work' / 'results.png').stat().st_size > 0
    config = next(row.config for row in main_job.ROWS if row.name == 'single frame (T=1)')
    metrics = json.loads((tmp_path / 'work' / 'zoo_results' /
                          f'{config.rsplit("/", 1)[1][:-3]}.json').read_text())
    assert metrics['acc/top1'] == row['top1']  # mmengine's metric = the table's, same predictions
    # the epoch override reached mmaction2's train.py: one epoch was trained
    log = (tmp_path / 'work' / 'single_frame__t_1' / 'train.log').read_text()
    assert 'Epoch(train) [1]' in log and 'Epoch(train) [2]' not in log
    # training read the frame cache the job built first (tiny: 4 classes x 4 training clips)
    assert '[main job] frame cache: 16 videos: 16 built' in first.stdout
    assert len(list((tmp_path / 'data' / 'train').glob('*.mp4.hfc'))) == 16
    assert 'FrameCacheInit: building' not in log and 'FrameCacheInit: rebuilding' not in log
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert '[main job] single frame (T=1): done before' in second.stdout
    assert '[main job] frame cache: 16 videos: 0 built, 0 rebuilt, 16 fresh' in second.stdout
