"""Training subprocesses for the engine tests: the tiny config, one CPU thread each."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest
from mmengine.config import Config
from mmengine.registry import RUNNERS

from ..conftest import REPO, TINY_CONFIG

#: Every engine run: seeded, deterministic, the plugin's tools/train.py.
SEEDED = ['--seed', '0', '--deterministic']


def write_config(path: Path, default_hooks: str = '', custom_hooks: str = '') -> Path:
    """A config that is the tiny one plus the test hooks of ``tests.engine.instrumentation``."""
    lines = [f'_base_ = [{str(TINY_CONFIG)!r}]',
             "custom_imports = dict(imports=['hyperframes_mm', 'tests.engine.instrumentation'], "
             'allow_failed_imports=False)']
    if default_hooks:
        lines.append(f'default_hooks = dict({default_hooks})')
    if custom_hooks:
        lines.append(f'custom_hooks = [{custom_hooks}]')
    path.write_text('\n'.join(lines) + '\n')
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def train(config: Path, work_dir: Path, data_root: Path, options: List[str],
          extra: Optional[List[str]] = None, nproc: int = 1,
          check: bool = True) -> subprocess.CompletedProcess:
    """Train through ``tools/train.py`` (``nproc == 1``) or ``tools/dist_train.sh``.

    One OpenMP thread per process: on a shared 2-core machine more threads spin against each
    other (30x slower here), and a fixed thread count is part of CPU determinism. On a GPU,
    deterministic mode needs cuBLAS's fixed workspace (``CUBLAS_WORKSPACE_CONFIG``).
    """
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')]))
    env = dict(os.environ, HF_SYNTHETIC_TINY=str(data_root), PYTHONWARNINGS='ignore',
               OMP_NUM_THREADS='1', CUBLAS_WORKSPACE_CONFIG=':4096:8', PYTHONPATH=python_path)
    tail = ['--work-dir', str(work_dir)] + SEEDED + (extra or []) + ['--cfg-options'] + options
    if nproc == 1:
        command = [sys.executable, str(REPO / 'tools/train.py'), str(config)] + tail
    else:
        env.update(PORT=str(free_port()), PYTHON=sys.executable)
        command = ['bash', str(REPO / 'tools/dist_train.sh'), str(config), str(nproc)] + tail
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f'{command} failed ({result.returncode}):\n'
                             f'{result.stdout[-3000:]}\n{result.stderr[-5000:]}')
    return result


def train_scalars(work_dir: Path) -> List[dict]:
    """The per-iteration training records of a run (loss, grad_norm, lr, ...)."""
    (scalars, ) = work_dir.glob('*/vis_data/scalars.json')
    records = [json.loads(line) for line in scalars.read_text().splitlines()]
    return [record for record in records if 'loss' in record]


def load(path: Path) -> dict:
    """An mmengine checkpoint, through the plugin's loader (torch's weights-only default refuses
    the message hub's objects elsewhere)."""
    from hyperframes_mm.engine import load_verified
    return load_verified(str(path), map_location='cpu')


@pytest.fixture
def runner_of(tmp_path, tiny_dataset, monkeypatch):
    """A factory of HyperframeRunners of the tiny config (4 classes) with these options."""
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))

    built = []

    def build(**options):
        cfg = Config.fromfile(str(TINY_CONFIG))
        cfg.merge_from_dict(options)
        # a name of its own: runners named alike in the same second share mmengine's logger
        built.append(f'{tmp_path.name}-{len(built)}')
        return RUNNERS.build(dict(cfg, work_dir=str(tmp_path / 'work'),
                                  experiment_name=built[-1]))
    return build
