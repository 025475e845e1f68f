"""Fixtures for the config tests: the model-zoo library, a stand-in video dataset."""
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from ..conftest import REPO

CONFIG_ROOT = REPO / 'configs/hyperframes'
#: the real-dataset families, each with README.md and metafile.yml
FAMILIES = ('ucf101', 'hmdb51', 'kinetics400')


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread: on 2 shared cores torch's OpenMP threads spin against each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='session')
def zoo_table() -> ModuleType:
    """benchmarks.lib.zoo, the library behind tools/analysis/zoo_table.py."""
    from benchmarks.lib import zoo
    return zoo


@pytest.fixture(scope='session')
def standin_videos(tmp_path_factory) -> Path:
    """Two 24-frame 48x64 H.264 clips (labels 0 and 1) and a VideoDataset list ``list.txt``,
    standing in for any of the real datasets."""
    from hyperframes_mm.datasets.video_io import write_video
    root = tmp_path_factory.mktemp('standin')
    rng = np.random.default_rng(0)
    lines = []
    for label in range(2):
        frames = rng.integers(0, 256, (24, 48, 64, 3), dtype=np.uint8)
        write_video(root / f'class{label}' / f'clip{label}.mp4', frames, fps=25)
        lines.append(f'class{label}/clip{label}.mp4 {label}')
    (root / 'list.txt').write_text('\n'.join(lines) + '\n')
    return root
