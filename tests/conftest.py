"""Shared fixtures, made once per session: a tiny synthetic video dataset and a trained tiny
checkpoint; two small models with their checkpoints and videos (the deployment and analysis
tests); scripts of the repository imported as modules.

The two small models are at 32 px: a single-stream HyperResNet-18 at T=3 with 2 test clips, and
a fast/slow FastSlowRecognizer on the same backbone. Their checkpoints are randomly initialised
with a head scaled up so that class scores spread well away from uniform: an agreement to 1e-5
then means the same frames went through the same transforms.
"""
import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict

import numpy as np
import pytest
import torch

import hyperframes_mm  # noqa: F401  (the DRN module and registration for every test)
from mmaction.utils import register_all_modules
from mmengine.logging import MMLogger

from hyperframes_mm.datasets.video_io import write_video

# ATen picks its CPU kernels on first use, reading ATEN_CPU_CAPABILITY then: fix the choice
# now, from the environment the suite was started with (scripts/test.sh --kernels NAME), so a
# test that edits the variable cannot move the kernels of the tests after it.
torch.backends.cpu.get_cpu_capability()

# As mmaction2's runner does: models built in tests resolve names in the mmaction scope
# (BaseModel builds its data_preprocessor through mmengine's root registry).
register_all_modules(init_default_scope=True)

REPO = Path(__file__).resolve().parents[1]
TINY_CONFIG = REPO / 'configs/hyperframes/tiny/hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py'


@pytest.fixture
def log_lines():
    """Messages that go to mmengine's current logger during the test."""
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = MMLogger.get_current_instance()
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def load_script(relative: str) -> ModuleType:
    """Import a script of the repository (``tools/...``, ``benchmarks/...``) as a module, to call
    its functions or ``main(argv)`` in-process."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(f'script_{path.stem}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


# ------------------------------------------------- small models for deployment and analysis
NORM = "dict(type='HyperframeDataPreprocessor', mean=[123.675, 116.28, 103.53], " \
       "std=[58.395, 57.12, 57.375])"

SINGLE_CONFIG = f"""
default_scope = 'mmaction'
custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)
model = dict(
    type='Recognizer2D',
    backbone=dict(type='HyperResNet', depth=18, num_frames=3, pretrained=None),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=512, average_clips='prob'),
    data_preprocessor={NORM})
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=3, interval=2),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.3, 1.0), brightness=0.4,
         contrast=0.4, hue=0.1),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=3, interval=2, num_clips=2, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 40)),
    dict(type='CenterCrop', crop_size=32),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
"""

FAST_SLOW_CONFIG = f"""
default_scope = 'mmaction'
custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)
model = dict(
    type='FastSlowRecognizer',
    backbone=dict(type='HyperResNet', depth=18, num_frames=3, pretrained=None),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=1024, average_clips='prob'),
    data_preprocessor={NORM})
streams = dict(fast=dict(interval=1), slow=dict(interval=3))
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=3, streams=streams),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.3, 1.0)),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=3, streams=streams, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
"""


def moving_frames(num_frames: int, seed: int, size: int = 64,
                  still_until: int = 0) -> np.ndarray:
    """A textured square drifting over a noisy gradient; frames before ``still_until`` do not
    move (for motion scores)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    background = np.stack([xx * 3, yy * 3, (xx + yy) * 2], -1) % 256
    texture = rng.integers(0, 256, (16, 16, 3))
    frames = np.empty((num_frames, size, size, 3), np.uint8)
    for index in range(num_frames):
        shift = max(0, index - still_until) * 3
        frame = background.copy()
        top, left = (8 + shift // 2) % (size - 16), (4 + shift) % (size - 16)
        frame[top:top + 16, left:left + 16] = texture
        frames[index] = np.clip(frame + rng.normal(0, 2, frame.shape), 0, 255)
    return frames


def _checkpoint(config: Path, path: Path, seed: int) -> Path:
    from hyperframes_mm.apis import init_recognizer
    torch.manual_seed(seed)
    model = init_recognizer(config, device='cpu')
    with torch.no_grad():
        head = model.cls_head.fc_cls
        # Random features of a 32-px clip have a norm of about 10-20 here; this scale puts the
        # logits a few units apart, so scores spread without saturating.
        head.weight.normal_(0, 2.0 / head.in_features ** 0.5,
                            generator=torch.Generator().manual_seed(seed))
        head.bias.copy_(torch.tensor([0.3, -0.2, 0.1, -0.2]))
    torch.save(dict(state_dict=model.state_dict(), meta=dict()), path)
    return path


@pytest.fixture(scope='session')
def api_models(tmp_path_factory) -> Dict[str, Path]:
    """Config and checkpoint paths: ``single``, ``single_ckpt``, ``fast_slow``,
    ``fast_slow_ckpt``."""
    root = tmp_path_factory.mktemp('api_models')
    paths = dict(single=root / 'single_r18_t3.py', fast_slow=root / 'fast_slow_r18_t3.py')
    paths['single'].write_text(SINGLE_CONFIG)
    paths['fast_slow'].write_text(FAST_SLOW_CONFIG)
    paths['single_ckpt'] = _checkpoint(paths['single'], root / 'single.pth', 1)
    paths['fast_slow_ckpt'] = _checkpoint(paths['fast_slow'], root / 'fast_slow.pth', 2)
    return paths


@pytest.fixture(scope='session')
def api_videos(tmp_path_factory) -> Dict[str, Path]:
    """``a`` (40 frames), ``b`` (31 frames), ``still_then_moving`` (40 frames, moving from
    frame 20): H.264 mp4 at 25 fps, 64x64; ``ts`` (40 frames, MPEG-TS); ``truncated_mp4``
    (half the bytes: no index, cannot open); ``truncated_ts`` (half the bytes: the first
    frames decode); ``corrupt_mp4`` (random bytes a third of the way in)."""
    root = tmp_path_factory.mktemp('api_videos')
    videos = dict(a=root / 'a.mp4', b=root / 'b.mp4', still_then_moving=root / 'still.mp4',
                  ts=root / 'a.ts')
    write_video(videos['a'], moving_frames(40, 0), fps=25)
    write_video(videos['b'], moving_frames(31, 1), fps=25)
    write_video(videos['still_then_moving'], moving_frames(40, 2, still_until=20), fps=25)
    write_video(videos['ts'], moving_frames(40, 0), fps=25)
    for key, source in (('truncated_mp4', videos['a']), ('truncated_ts', videos['ts'])):
        data = source.read_bytes()
        videos[key] = root / f'truncated{source.suffix}'
        videos[key].write_bytes(data[:len(data) // 2])
    noisy = np.random.default_rng(3).integers(0, 256, (60, 64, 64, 3), dtype=np.uint8)
    clean = root / 'noisy.mp4'
    write_video(clean, noisy, fps=25)
    data = bytearray(clean.read_bytes())
    third = len(data) // 3
    data[third:third + 4000] = np.random.default_rng(4).integers(0, 256, 4000,
                                                                 dtype=np.uint8).tobytes()
    videos['corrupt_mp4'] = root / 'corrupt.mp4'
    videos['corrupt_mp4'].write_bytes(bytes(data))
    videos['noisy_mp4'] = clean
    return videos
