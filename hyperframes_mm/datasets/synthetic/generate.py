"""Write the synthetic motion benchmark: mp4 clips, VideoDataset lists, classes.txt, meta.json.

Each clip is a function of ``(seed, split, class name, index)`` only, so the dataset does not
depend on the number of worker processes, and a class keeps its clips when the class list
changes (the tiny preset's clips are the default preset's first clips of the same classes).
"""
import contextlib
import json
import multiprocessing
import os
import re
import tempfile
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from tqdm import tqdm

from ..video_io import write_video
from .classes import check_classes, class_groups, flip_label_map
from .render import render_scene, sample_scene

#: bumped whenever a change alters the clips, so an old dataset is regenerated
GENERATOR_VERSION = 2

_SPLIT_NAME = re.compile(r'^[A-Za-z0-9_-]+$')


@dataclass(frozen=True)
class Preset:
    """A benchmark size.

    Args:
        classes (Tuple[str, ...]): class names in label order.
        clips_per_class (Dict[str, int]): clips per class for each split.
        size (int): square frame side, pixels (even, for yuv420p).
        duration (float): clip length, seconds.
        fps (Tuple[float, ...]): frame rates a clip draws from, uniformly.
    """
    classes: Tuple[str, ...]
    clips_per_class: Dict[str, int]
    size: int
    duration: float
    fps: Tuple[float, ...]


DEFAULT_CLASSES = ('swipe_left', 'swipe_right', 'fall', 'hop', 'shake',
                   'drift_left', 'drift_right', 'lie_down', 'approach', 'recede')

#: name -> preset; ``tiny`` is for CI, ``default`` for the main job, ``full`` for a longer study
PRESETS: Dict[str, Preset] = {
    'tiny': Preset(classes=('swipe_left', 'swipe_right', 'drift_left', 'drift_right'),
                   clips_per_class=dict(train=4, val=2), size=64, duration=2.0,
                   fps=(15.0, 25.0, 30.0)),
    'default': Preset(classes=DEFAULT_CLASSES, clips_per_class=dict(train=40, val=15), size=64,
                      duration=2.0, fps=(15.0, 25.0, 30.0)),
    'full': Preset(classes=DEFAULT_CLASSES + ('rotate_cw', 'rotate_ccw'),
                   clips_per_class=dict(train=100, val=30), size=80, duration=3.0,
                   fps=(15.0, 25.0, 30.0)),
}


def clip_rng(seed: int, split: str, name: str, index: int) -> np.random.Generator:
    """The generator of one clip: a function of seed, split, class name and index only."""
    return np.random.default_rng([seed, zlib.crc32(split.encode()), zlib.crc32(name.encode()),
                                  index])


def render_clip(name: str, rng: np.random.Generator, size: int, duration: float,
                fps_choices: Sequence[float]) -> Tuple[np.ndarray, float]:
    """Frames ``[N, size, size, 3]`` uint8 and the frame rate of one clip of class ``name``."""
    scene = sample_scene(name, rng, duration, fps_choices)
    return render_scene(scene, size, rng), scene.fps


def _make_clip(job: Tuple[str, str, str, int], out_dir: Path, seed: int, size: int,
               duration: float, fps_choices: Tuple[float, ...]) -> Tuple[str, dict]:
    relative, split, name, index = job
    frames, fps = render_clip(name, clip_rng(seed, split, name, index), size, duration,
                              fps_choices)
    codec = write_video(out_dir / relative, frames, fps)
    return relative, dict(fps=fps, num_frames=len(frames), codec=codec)


def _check_arguments(clips_per_class: Mapping[str, int], seed: int, workers: int,
                     preset: Preset) -> None:
    if not clips_per_class:
        raise ValueError('clips_per_class: no split given')
    for split, count in clips_per_class.items():
        if not isinstance(split, str) or not _SPLIT_NAME.match(split):
            raise ValueError(f'clips_per_class: split name {split!r} must match '
                             f'{_SPLIT_NAME.pattern}')
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 0:
            raise ValueError(f'clips_per_class[{split!r}]: expected an int >= 0, got {count!r}')
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f'seed: expected an int >= 0, got {seed!r}')
    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f'workers: expected an int >= 1, got {workers!r}')
    if preset.size % 2:
        raise ValueError(f'size: {preset.size} is odd; H.264/yuv420p needs an even side')


def _write_atomic(path: Path, text: str) -> None:
    handle, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', dir=path.parent)
    with os.fdopen(handle, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def load_meta(out_dir: Union[str, Path]) -> dict:
    """Read ``meta.json`` of a generated dataset, with ``flip_label_map`` keys back to int.

    Raises:
        FileNotFoundError: ``out_dir`` holds no complete dataset.
    """
    path = Path(out_dir) / 'meta.json'
    if not path.is_file():
        raise FileNotFoundError(f'{path}: no meta.json; generate the dataset first')
    meta = json.loads(path.read_text())
    if meta['flip_label_map'] is not None:
        meta['flip_label_map'] = {int(k): v for k, v in meta['flip_label_map'].items()}
    return meta


def _complete(out_dir: Path, params: dict) -> bool:
    """Whether ``out_dir`` already holds every file of the dataset ``params`` describes."""
    try:
        meta = load_meta(out_dir)
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return False
    if meta.get('params') != params:
        return False
    files = list(meta['annotations'].values()) + ['classes.txt'] + list(meta['videos'])
    return all((out_dir / name).is_file() for name in files)


def make_synthetic_dataset(out_dir: Union[str, Path],
                           clips_per_class: Optional[Mapping[str, int]] = None,
                           preset: str = 'tiny', seed: int = 0, workers: Optional[int] = None,
                           classes: Optional[Sequence[str]] = None,
                           progress: bool = True) -> Dict[str, Path]:
    """Generate the benchmark in ``out_dir``, or keep it if it is already there.

    Writes ``<split>/<class>_<index>.mp4`` (H.264, mp4v where PyAV lacks libx264), one
    mmaction2 VideoDataset list ``<split>.txt`` per split (``<split>/<file>.mp4 <label>`` per
    line), ``classes.txt`` (one name per line, in label order) and, last, ``meta.json``:
    ``params`` (what decides the clips), ``classes``, ``groups`` (``fast``/``slow`` -> names),
    ``flip_label_map`` (label -> label under a horizontal flip, JSON string keys; ``None``
    when a class's mirror image is missing), ``annotations`` and ``videos`` (relative path ->
    label, fps, num_frames, codec). A rerun with the same parameters finds meta.json and every
    file and returns at once; a killed run has no meta.json and is redone.

    Args:
        out_dir (str | Path): dataset root.
        clips_per_class (Mapping[str, int], optional): clips per class per split, e.g.
            ``dict(train=4, val=2)``. Defaults to the preset's.
        preset (str): a key of :data:`PRESETS`. Defaults to ``'tiny'`` (4 classes).
        seed (int): the dataset is a function of the seed. Defaults to 0.
        workers (int, optional): processes rendering clips; the result does not depend on it.
            Defaults to the number of CPUs.
        classes (Sequence[str], optional): class names in label order, replacing the preset's.
        progress (bool): show a tqdm progress bar. Defaults to True.

    Returns:
        Dict[str, Path]: split name -> annotation file path.

    Raises:
        ValueError: unknown preset or class, bad split name, clip count, seed or workers.
    """
    if preset not in PRESETS:
        raise ValueError(f'preset: unknown {preset!r}; choose from {list(PRESETS)}')
    spec = PRESETS[preset]
    classes = check_classes(spec.classes if classes is None else classes)
    clips_per_class = dict(spec.clips_per_class if clips_per_class is None else clips_per_class)
    workers = (os.cpu_count() or 1) if workers is None else workers
    _check_arguments(clips_per_class, seed, workers, spec)
    out_dir = Path(out_dir)
    params = dict(generator_version=GENERATOR_VERSION, preset=preset, classes=classes,
                  clips_per_class={k: int(v) for k, v in clips_per_class.items()},
                  seed=int(seed), size=spec.size, duration=spec.duration, fps=list(spec.fps))
    annotations = {split: out_dir / f'{split}.txt' for split in clips_per_class}
    if _complete(out_dir, params):
        return annotations

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / 'meta.json').unlink(missing_ok=True)
    jobs = [(f'{split}/{name}_{index:04d}.mp4', split, name, index)
            for split, count in clips_per_class.items() for name in classes
            for index in range(count)]
    make = partial(_make_clip, out_dir=out_dir, seed=int(seed), size=spec.size,
                   duration=spec.duration, fps_choices=spec.fps)
    results = {}
    with contextlib.ExitStack() as stack:
        if workers == 1 or len(jobs) <= 1:
            outputs = map(make, jobs)
        else:
            method = 'fork' if 'fork' in multiprocessing.get_all_start_methods() else 'spawn'
            pool = stack.enter_context(
                multiprocessing.get_context(method).Pool(min(workers, len(jobs))))
            outputs = pool.imap_unordered(make, jobs, chunksize=2)
        for relative, info in tqdm(outputs, total=len(jobs), desc=f'synthetic {preset} clips',
                                   unit='clip', disable=not progress):
            results[relative] = info

    label = {name: index for index, name in enumerate(classes)}
    videos = {}
    for relative, split, name, index in jobs:
        videos[relative] = dict(label=label[name], **results[relative])
    for split, path in annotations.items():
        lines = [f'{rel} {videos[rel]["label"]}\n' for rel, s, _, _ in jobs if s == split]
        _write_atomic(path, ''.join(lines))
    _write_atomic(out_dir / 'classes.txt', ''.join(f'{name}\n' for name in classes))
    try:
        flips = {str(k): v for k, v in flip_label_map(classes).items()}
    except ValueError:
        flips = None
    meta = dict(params=params, classes=classes, groups=class_groups(classes),
                flip_label_map=flips,
                annotations={split: path.name for split, path in annotations.items()},
                videos=videos)
    _write_atomic(out_dir / 'meta.json', json.dumps(meta, indent=1) + '\n')
    return annotations
