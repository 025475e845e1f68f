"""The plugin config trains, tests and resumes through mmaction2's tools and the project's own."""
import json
import os
import pickle
from pathlib import Path

import pytest

from hyperframes_mm.utils import upstream_tool_path

from .conftest import REPO, TINY_CONFIG, run_tool

# every test here runs mmaction2's or the project's tools in a subprocess
pytestmark = pytest.mark.slow


def _last_metrics(work_dir):
    logs = sorted(work_dir.glob('*/*.json'))
    assert logs, f'no json log in {work_dir}'
    return json.loads(logs[-1].read_text().splitlines()[-1])


def test_upstream_train_wrote_checkpoints(tiny_work_dir):
    assert (tiny_work_dir / 'epoch_1.pth').is_file()
    assert (tiny_work_dir / 'last_checkpoint').read_text().strip().endswith('epoch_1.pth')


def test_upstream_test_tool_with_dump(tiny_work_dir, tiny_dataset, tmp_path):
    dump = tmp_path / 'results.pkl'
    run_tool([upstream_tool_path('test'), TINY_CONFIG, tiny_work_dir / 'epoch_1.pth',
              '--work-dir', tmp_path, '--dump', dump], tiny_dataset)
    metrics = _last_metrics(tmp_path)
    with open(dump, 'rb') as f:
        results = pickle.load(f)
    assert len(results) == 8  # 4 classes x 2 validation clips
    scores = results[0]['pred_score']
    assert scores.shape == (4, ) and abs(float(scores.sum()) - 1) < 1e-4
    # the printed accuracy is the dumped predictions' accuracy
    hits = [int(r['pred_score'].argmax()) == int(r['gt_label']) for r in results]
    assert metrics['acc/top1'] == pytest.approx(sum(hits) / len(hits), abs=1e-4)


def test_resume_continues_to_epoch_two(tiny_work_dir, tiny_dataset, tmp_path):
    import shutil
    work_dir = tmp_path / 'resume'
    shutil.copytree(tiny_work_dir, work_dir)
    result = run_tool([REPO / 'tools/train.py', TINY_CONFIG, '--work-dir', work_dir, '--resume',
                       '--cfg-options', 'train_cfg.max_epochs=2'], tiny_dataset)
    assert 'resumed epoch: 1' in result.stdout + result.stderr
    assert (work_dir / 'epoch_2.pth').is_file()


def test_project_tools_train_and_test(tiny_dataset, tmp_path):
    run_tool([REPO / 'tools/train.py', TINY_CONFIG, '--work-dir', tmp_path, '--cfg-options',
              'train_cfg.max_epochs=1'], tiny_dataset)
    run_tool([REPO / 'tools/test.py', TINY_CONFIG, tmp_path / 'epoch_1.pth', '--work-dir',
              tmp_path], tiny_dataset)
    assert 'acc/top1' in _last_metrics(tmp_path)


def test_plugin_tool_refuses_malicious_checkpoint(tiny_dataset, tmp_path):
    from .test_compat import _write_malicious_checkpoint
    checkpoint, marker = tmp_path / 'evil.pth', tmp_path / 'pwned.txt'
    _write_malicious_checkpoint(checkpoint, marker)
    result = run_tool([REPO / 'tools/test.py', TINY_CONFIG, checkpoint, '--work-dir', tmp_path],
                      tiny_dataset, check=False)
    assert result.returncode != 0
    assert 'CheckpointRefusedError' in result.stderr and 'evil.pth' in result.stderr
    assert not marker.exists()


@pytest.mark.parametrize('script, args, expected', [
    ('dist_train.sh', ['cfg.py', '2', '--seed', '1'],
     ['train.py', 'cfg.py', '--launcher', 'pytorch', '--seed', '1']),
    ('dist_test.sh', ['cfg.py', 'ckpt.pth', '3', '--dump', 'out.pkl'],
     ['test.py', 'cfg.py', 'ckpt.pth', '--launcher', 'pytorch', '--dump', 'out.pkl']),
])
def test_dist_scripts_launch_torchrun_as_mmaction2s_do(tmp_path, script, args, expected):
    import subprocess
    fake = tmp_path / 'python'
    fake.write_text('#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done\n')
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), NNODES='2', NODE_RANK='1', PORT='29999')
    env.pop('MASTER_ADDR', None)
    out = subprocess.run(['bash', str(REPO / 'tools' / script)] + args, env=env, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    nproc = args[1] if script == 'dist_train.sh' else args[2]
    assert out[:7] == ['-m', 'torch.distributed.run', '--nnodes=2', '--node_rank=1',
                       '--master_addr=127.0.0.1', f'--nproc_per_node={nproc}',
                       '--master_port=29999']
    assert [Path(out[7]).name] + out[8:] == expected
    assert Path(out[7]).parent == REPO / 'tools'


@pytest.mark.parametrize('script', ['dist_launch.sh', 'dist_train.sh', 'dist_test.sh'])
def test_dist_scripts_are_valid_bash(script):
    import subprocess
    subprocess.run(['bash', '-n', str(REPO / 'tools' / script)], check=True)


def _diverged_copy(checkpoint: Path, target: Path) -> Path:
    """``checkpoint`` with one weight set to NaN, as a run that diverged saves it."""
    import torch
    state = torch.load(checkpoint, map_location='cpu', weights_only=False)
    key = next(k for k, v in state['state_dict'].items() if v.is_floating_point())
    state['state_dict'][key].view(-1)[0] = float('nan')
    torch.save(state, target)
    return target


def test_tools_refuse_diverged_checkpoint_by_name(tiny_work_dir, tiny_dataset, tmp_path):
    import shutil
    nan = _diverged_copy(tiny_work_dir / 'epoch_1.pth', tmp_path / 'nan_epoch.pth')
    result = run_tool([upstream_tool_path('test'), TINY_CONFIG, nan, '--work-dir', tmp_path],
                      tiny_dataset, check=False)
    assert result.returncode != 0
    assert 'CheckpointNotFiniteError' in result.stderr and 'nan_epoch.pth' in result.stderr
    # --resume reads the work dir's last checkpoint
    work_dir = tmp_path / 'resume'
    shutil.copytree(tiny_work_dir, work_dir)
    _diverged_copy(tiny_work_dir / 'epoch_1.pth', work_dir / 'epoch_1.pth')
    (work_dir / 'last_checkpoint').write_text(str(work_dir / 'epoch_1.pth'))
    result = run_tool([REPO / 'tools/train.py', TINY_CONFIG, '--work-dir', work_dir, '--resume',
                       '--cfg-options', 'train_cfg.max_epochs=2'], tiny_dataset, check=False)
    assert result.returncode != 0
    assert 'CheckpointNotFiniteError' in result.stderr and 'epoch_1.pth' in result.stderr
    assert not (work_dir / 'epoch_2.pth').exists()
