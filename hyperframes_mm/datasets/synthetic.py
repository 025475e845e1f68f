"""A synthetic motion dataset written as real video files with mmaction2 VideoDataset lists.

Every class shows the same textured object over the same kind of background; only the motion
differs, so no single frame tells the classes apart.
"""
from pathlib import Path
from typing import Dict, List, Sequence, Union

import numpy as np

from .video_io import write_video

#: class name -> unit direction (dy, dx) of the object's motion
DIRECTIONS: Dict[str, tuple] = {
    'move_left': (0, -1),
    'move_right': (0, 1),
    'move_up': (-1, 0),
    'move_down': (1, 0),
}


def render_clip(direction: Sequence[int], rng: np.random.Generator, num_frames: int = 24,
                size: int = 64, speed: float = 1.5, object_size: int = 12) -> np.ndarray:
    """Frames ``[num_frames, size, size, 3]`` uint8 of a textured square moving in ``direction``."""
    background = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
    background = np.kron(background, np.ones((8, 8, 1), dtype=np.uint8))
    patch = rng.integers(0, 256, (object_size, object_size, 3), dtype=np.uint8)
    travel = speed * (num_frames - 1)
    margin = object_size // 2 + 1
    centre = rng.uniform(margin + travel / 2, size - margin - travel / 2, size=2) \
        if travel < size - 2 * margin else np.full(2, size / 2)
    start = centre - np.asarray(direction) * travel / 2
    frames = np.empty((num_frames, size, size, 3), dtype=np.uint8)
    for t in range(num_frames):
        y, x = np.round(start + np.asarray(direction) * speed * t).astype(int) - object_size // 2
        y, x = np.clip([y, x], 0, size - object_size)
        frame = background.copy()
        frame[y:y + object_size, x:x + object_size] = patch
        noise = rng.integers(-8, 9, frame.shape)
        frames[t] = np.clip(frame.astype(np.int16) + noise, 0, 255).astype(np.uint8)
    return frames


def make_synthetic_dataset(out_dir: Union[str, Path], clips_per_class: Dict[str, int],
                           num_frames: int = 24, size: int = 64, fps: float = 25.0,
                           seed: int = 0) -> Dict[str, Path]:
    """Write ``<split>/<class>_<i>.mp4`` and ``<split>.txt`` (``relative/path label``) per split.

    Args:
        out_dir: dataset root.
        clips_per_class: clips per class for each split, e.g. ``dict(train=8, val=4)``.
        num_frames, size, fps: video length, square frame size and frame rate.
        seed: the whole dataset is a function of the seed.

    Returns:
        dict: split name -> annotation file path.
    """
    out_dir = Path(out_dir)
    annotations = {}
    for split_index, (split, count) in enumerate(clips_per_class.items()):
        lines: List[str] = []
        for label, (name, direction) in enumerate(DIRECTIONS.items()):
            for index in range(count):
                rng = np.random.default_rng([seed, split_index, label, index])
                relative = f'{split}/{name}_{index:04d}.mp4'
                write_video(out_dir / relative, render_clip(direction, rng, num_frames, size), fps)
                lines.append(f'{relative} {label}')
        annotations[split] = out_dir / f'{split}.txt'
        annotations[split].write_text('\n'.join(lines) + '\n')
    return annotations
