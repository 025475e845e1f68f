"""A small synthetic dataset written with its per-frame motion-state labels, made once."""
from pathlib import Path

import pytest


@pytest.fixture(scope='session')
def labelled_dataset(tmp_path_factory) -> Path:
    """The tiny preset's 4 classes x (2 train + 1 val) clips and their frame-label files."""
    from hyperframes_mm.datasets.synthetic import make_synthetic_dataset
    root = tmp_path_factory.mktemp('synthetic_labelled')
    make_synthetic_dataset(root, dict(train=2, val=1), seed=0, workers=1, progress=False,
                           frame_labels=True)
    return root
