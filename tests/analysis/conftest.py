"""Fixtures of the diagnostics tests: a moving-disc video set, a model trained on it, and a
model that ignores time by construction."""
import os
import random
from pathlib import Path
from typing import Dict, Mapping, Tuple

import numpy as np
import pytest
import torch

from hyperframes_mm.datasets.video_io import write_video

HERE = Path(__file__).resolve().parent
PROBE_CONFIG = HERE / 'configs/probe_moving_disc.py'
FAST_SLOW_CONFIG = HERE / 'configs/probe_moving_disc_fast_slow.py'
#: class name -> (dy, dx) direction of motion, in label order
DISC_CLASSES: Dict[str, Tuple[int, int]] = {
    'move_left': (0, -1), 'move_right': (0, 1), 'move_up': (-1, 0), 'move_down': (1, 0)}
DISC_SIZE, DISC_FPS, DISC_FRAMES = 32, 15, 30


def disc_clip(direction: Tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """``[30, 32, 32, 3]`` uint8: a bright disc crossing a dark frame (a torus) at 12-20 px/s.

    Colours, radius, start and speed are drawn per clip; only the direction depends on the
    class, so no single frame tells the classes apart.
    """
    yy, xx = np.mgrid[0:DISC_SIZE, 0:DISC_SIZE] + 0.5
    speed = rng.uniform(12, 20)
    start = rng.uniform(0, DISC_SIZE, 2)
    background, colour = rng.uniform(0, 60, 3), rng.uniform(180, 255, 3)
    radius = rng.uniform(3, 5)
    frames = np.empty((DISC_FRAMES, DISC_SIZE, DISC_SIZE, 3), np.uint8)
    half = DISC_SIZE / 2
    for index in range(DISC_FRAMES):
        centre = start + np.asarray(direction) * speed * index / DISC_FPS
        dy = (yy - centre[0] + half) % DISC_SIZE - half
        dx = (xx - centre[1] + half) % DISC_SIZE - half
        alpha = np.clip(radius - np.hypot(dy, dx) + 0.5, 0, 1)[..., None]
        frames[index] = np.rint(background * (1 - alpha) + colour * alpha).astype(np.uint8)
    return frames


def write_moving_disc_dataset(root: Path, clips_per_class: Mapping[str, int],
                              seed: int = 0) -> Path:
    """Real H.264 clips ``<split>/<class>_<i>.mp4``, VideoDataset lists and classes.txt."""
    for split_index, (split, count) in enumerate(clips_per_class.items()):
        rng = np.random.default_rng([seed, split_index])
        lines = []
        for label, (name, direction) in enumerate(DISC_CLASSES.items()):
            for index in range(count):
                relative = f'{split}/{name}_{index}.mp4'
                write_video(root / relative, disc_clip(direction, rng), DISC_FPS)
                lines.append(f'{relative} {label}\n')
        (root / f'{split}.txt').write_text(''.join(lines))
    (root / 'classes.txt').write_text(''.join(f'{name}\n' for name in DISC_CLASSES))
    return root


def probe_config(path: Path = PROBE_CONFIG, **cfg_options):
    """A probe test config, reading the moving-disc set named by ``HF_PROBE_DATA``."""
    from hyperframes_mm.analysis.config_utils import load_config
    return load_config(str(path), cfg_options)


def train_briefly(cfg, path: Path, seed: int = 0) -> Path:
    """Train ``cfg.model`` for ``cfg.train_cfg.max_epochs`` epochs on ``cfg.train_dataloader``
    (seeded, no hooks, no validation) and save its weights as an mmengine checkpoint."""
    from mmaction.registry import MODELS
    from mmengine.optim import build_optim_wrapper
    from mmengine.runner import Runner
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = MODELS.build(cfg.model)
    model.init_weights()
    loader = Runner.build_dataloader(cfg.train_dataloader, seed=seed)
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    model.train()
    for _ in range(cfg.train_cfg.max_epochs):
        for data in loader:
            model.train_step(data, optim_wrapper)
    torch.save(dict(state_dict=model.state_dict(), meta=dict(seed=seed)), path)
    return path


@pytest.fixture(scope='package', autouse=True)
def one_torch_thread():
    """Two OpenMP threads on a loaded 2-core machine spin against each other: a training step
    of the probe model took 10x longer with 2 threads than with 1 here."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='session')
def moving_disc_dataset(tmp_path_factory) -> Path:
    """4 classes x (6 train + 6 val) clips; ``HF_PROBE_DATA`` points the probe configs at it
    (and at the subprocesses of the command-line tests) until the session ends. 24 validation
    clips make one clip 4 points of accuracy, so the trained model's assertions keep margins of
    several clips (tests/analysis/test_temporal_probe.py)."""
    root = write_moving_disc_dataset(tmp_path_factory.mktemp('moving_disc'),
                                     dict(train=6, val=6))
    previous = os.environ.get('HF_PROBE_DATA')
    os.environ['HF_PROBE_DATA'] = str(root)
    yield root
    if previous is None:
        os.environ.pop('HF_PROBE_DATA')
    else:
        os.environ['HF_PROBE_DATA'] = previous


@pytest.fixture(scope='session')
def trained_checkpoint(moving_disc_dataset, tmp_path_factory) -> Path:
    """The probe config's model trained for 20 short epochs (60 steps): it learns direction."""
    return train_briefly(probe_config(), tmp_path_factory.mktemp('probe_trained') / 'model.pth')


def centre_checkpoint(config_path: Path, root: Path) -> Path:
    """A model of ``config_path`` that sees only the centre frame, saved as a checkpoint.

    A 2D ResNet (``num_frames=1``, seeded random weights) is saved and loaded into the config's
    model with ``inflate_init='center'``: conv1 gets the 2D kernel on frame ``T // 2`` and zeros
    on every other frame, so no other frame can change the output.
    """
    from mmaction.registry import MODELS
    cfg = probe_config(config_path)
    torch.manual_seed(0)
    backbone_2d = MODELS.build(dict(cfg.model.backbone, num_frames=1))
    backbone_2d.init_weights()
    torch.save(dict(state_dict=backbone_2d.state_dict()), root / 'resnet_2d.pth')
    backbone = dict(cfg.model.backbone, pretrained=str(root / 'resnet_2d.pth'),
                    inflate_init='center')
    model = MODELS.build(dict(cfg.model, backbone=backbone))
    model.init_weights()
    torch.save(dict(state_dict=model.state_dict()), root / 'centre.pth')
    return root / 'centre.pth'


@pytest.fixture(scope='session')
def centre_model(moving_disc_dataset, tmp_path_factory) -> Path:
    """Single-stream model that ignores every frame but the centre one."""
    return centre_checkpoint(PROBE_CONFIG, tmp_path_factory.mktemp('probe_centre'))


@pytest.fixture(scope='session')
def centre_fast_slow_model(moving_disc_dataset, tmp_path_factory) -> Path:
    """Fast/slow model whose shared backbone ignores every frame but the centre one."""
    return centre_checkpoint(FAST_SLOW_CONFIG, tmp_path_factory.mktemp('probe_centre_fs'))
