"""Shared fixtures: a tiny synthetic video dataset and a trained tiny checkpoint, made once."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hyperframes_mm  # noqa: F401  (compat fixes and registration for every test)
from mmaction.utils import register_all_modules

# As mmaction2's runner does: models built in tests resolve names in the mmaction scope
# (BaseModel builds its data_preprocessor through mmengine's root registry).
register_all_modules(init_default_scope=True)

REPO = Path(__file__).resolve().parents[1]
TINY_CONFIG = REPO / 'configs/hyperframes/tiny/hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py'


@pytest.fixture(scope='session')
def tiny_dataset(tmp_path_factory) -> Path:
    """4 classes x (4 train + 2 val) real H.264 clips and their VideoDataset lists."""
    from hyperframes_mm.datasets.synthetic import make_synthetic_dataset
    root = tmp_path_factory.mktemp('synthetic_tiny')
    make_synthetic_dataset(root, dict(train=4, val=2), seed=0)
    return root


def run_tool(args, data_root: Path, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Run a Python tool in a subprocess with the tiny dataset's root in the environment."""
    env = dict(os.environ, HF_SYNTHETIC_TINY=str(data_root), PYTHONWARNINGS='ignore')
    result = subprocess.run([sys.executable] + [str(a) for a in args], cwd=REPO, env=env,
                            capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f'{args} failed ({result.returncode}):\n{result.stdout[-3000:]}\n'
                             f'{result.stderr[-5000:]}')
    return result


@pytest.fixture(scope='session')
def tiny_work_dir(tiny_dataset, tmp_path_factory) -> Path:
    """One epoch of the tiny config trained through mmaction2's own tools/train.py."""
    from hyperframes_mm.utils import upstream_tool_path
    work_dir = tmp_path_factory.mktemp('tiny_run')
    run_tool([upstream_tool_path('train'), TINY_CONFIG, '--work-dir', work_dir, '--cfg-options',
              'train_cfg.max_epochs=1'], tiny_dataset)
    return work_dir
