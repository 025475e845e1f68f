"""tools/main_job.py end to end on the tiny preset: one row trained through mmaction2's tools for
one epoch, tested, tabulated; a rerun reuses it; the schedule override scales the scheduler."""
import json
import subprocess
import sys

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


def test_main_job_trains_tests_and_tabulates_one_row(tmp_path):
    command = [sys.executable, 'tools/main_job.py', '--preset', 'tiny', '--epochs', '1',
               '--only', 'single', '--jobs', '1', '--work-dir', str(tmp_path / 'work'),
               '--data-root', str(tmp_path / 'data')]
    first = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    results = json.loads((tmp_path / 'work' / 'results.json').read_text())
    assert list(results) == ['single frame (T=1)']
    row = results['single frame (T=1)']
    assert set(row) >= {'top1', 'mean_class', 'fast', 'slow', 'gflops', 'params_m',
                        'latency_ms', 'train_min'}
    assert 0 <= row['top1'] <= 1 and row['gflops'] > 0 and row['latency_ms'] > 0
    table = (tmp_path / 'work' / 'results.md').read_text()
    assert len([line for line in table.splitlines() if line.startswith('| ')]) == 2  # + header
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
