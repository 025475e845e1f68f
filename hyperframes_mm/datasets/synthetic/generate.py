"""Write the synthetic motion benchmark: mp4 clips, VideoDataset lists, classes.txt, meta.json,
and on request per-frame motion-state labels.

Each clip is a function of ``(seed, split, class name, index)`` only, so the dataset does not
depend on the number of worker processes, and a class keeps its clips when the class list
changes (the tiny preset's clips are the default preset's first clips of the same classes).
The same fact lets :func:`write_frame_labels` replay any clip's scene (without rendering it)
to label its frames after the fact.
"""
import json
import os
import re
import shlex
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np
from tqdm import tqdm

from ...utils.paths import remove_orphan_temps, write_text_atomically
from ...utils.processes import map_unordered
from ..video_io import write_video
from .classes import check_classes, class_groups, flip_label_map
from .render import Scene, render_scene, sample_scene

#: bumped whenever a change alters the clips, so an old dataset is regenerated
GENERATOR_VERSION = 4

_SPLIT = r'[A-Za-z0-9_-]+'
_SPLIT_NAME = re.compile(rf'^{_SPLIT}$')
#: a list or a video as this generator names them (``train.txt``, ``train/fall_0003.mp4``): a
#: rebuild removes only such names of the set it replaces, never a name a hand-edited
#: meta.json or build mark might hold (``../notes.txt``)
_OWN_FILE = re.compile(rf'^{_SPLIT}(\.txt|/[A-Za-z0-9_]+_\d{{4,}}\.mp4)$')

#: per-frame motion states of :func:`motion_state_labels`, in label order
MOTION_STATES = ('steady', 'fast')
#: actor speed (frame widths per second) above which a frame is ``fast``: between the steady
#: drift of the slow classes plus wobble and the quick moves inside a fast event
FAST_SPEED = 0.5


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


def actor_speed(scene: Scene) -> np.ndarray:
    """Speed of the actor's centre at every frame, frame widths per second.

    Central differences of the centre over time (one-sided at the first and last frame); each
    displacement is taken the short way round the torus, so an actor crossing an edge does not
    count as a jump. Camera shake moves every object alike and is not included.

    Args:
        scene (Scene): a clip's scene, from :func:`.render.sample_scene`.

    Returns:
        np.ndarray: ``[N]`` float64 speeds (0 for a one-frame clip).
    """
    centre = scene.objects[scene.actor].centre
    times = np.asarray(scene.times, dtype=np.float64)
    if len(times) < 2:
        return np.zeros(len(times))
    step = np.diff(centre, axis=0)
    step = np.mod(step + 0.5, 1.0) - 0.5
    path = np.concatenate([np.zeros((1, 2)), np.cumsum(step, axis=0)])
    velocity = np.gradient(path, times, axis=0)
    return np.hypot(velocity[:, 0], velocity[:, 1])


def motion_state_labels(scene: Scene, fast_speed: float = FAST_SPEED) -> np.ndarray:
    """Per-frame motion state of the actor: 1 (``fast``) where its speed exceeds
    ``fast_speed``, else 0 (``steady``: resting, drifting, growing, turning).

    Frames inside the quick events of the fast classes are ``fast`` except near an event's
    start and end, where the move eases in and out; every frame of a slow class is ``steady``.

    Args:
        scene (Scene): a clip's scene.
        fast_speed (float): threshold, frame widths per second. Defaults to
            :data:`FAST_SPEED`.

    Returns:
        np.ndarray: ``[N]`` int64 labels, indices into :data:`MOTION_STATES`.
    """
    return (actor_speed(scene) > fast_speed).astype(np.int64)


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


def written_after_dataset(path: Union[str, Path], out_dir: Union[str, Path]) -> bool:
    """Whether ``path`` exists and was written after the dataset in ``out_dir`` was (its
    ``meta.json``, written last): a result file made from an older copy of the clips is not.
    Benchmarks that keep finished runs use it to redo runs of a regenerated dataset."""
    path, meta = Path(path), Path(out_dir) / 'meta.json'
    return path.is_file() and meta.is_file() and path.stat().st_mtime > meta.stat().st_mtime


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
                           progress: bool = True, frame_labels: bool = False) -> Dict[str, Path]:
    """Generate the benchmark in ``out_dir``, or keep it if it is already there.

    Writes ``<split>/<class>_<index>.mp4`` (H.264, mp4v where PyAV lacks libx264), one
    mmaction2 VideoDataset list ``<split>.txt`` per split (``<split>/<file>.mp4 <label>`` per
    line), ``classes.txt`` (one name per line, in label order) and, last, ``meta.json``:
    ``params`` (what decides the clips), ``classes``, ``groups`` (``fast``/``slow`` -> names),
    ``flip_label_map`` (label -> label under a horizontal flip, JSON string keys; ``None``
    when a class's mirror image is missing), ``annotations`` and ``videos`` (relative path ->
    label, fps, num_frames, codec). A rerun with the same parameters finds meta.json and every
    file and returns at once. A build first leaves a mark (``.synthetic-build.json``, until
    meta.json is written) and removes meta.json and the lists, so that a killed build leaves
    no list a training could read (the doctor names the folder: :func:`interrupted_build`);
    a rebuild with other parameters also removes the videos of the previous set that it does
    not write, and temporary files of killed writers. A killed run is redone by a rerun.

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
        frame_labels (bool): also write the per-frame motion-state annotations of
            :func:`write_frame_labels` (``<split>_frame_labels.jsonl``). Defaults to False.

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
        if frame_labels:
            write_frame_labels(out_dir, progress=progress)
        return annotations

    _refuse_foreign(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = [(f'{split}/{name}_{index:04d}.mp4', split, name, index)
            for split, count in clips_per_class.items() for name in classes
            for index in range(count)]
    _clear_previous(out_dir, params, {path.name for path in annotations.values()},
                    {job[0] for job in jobs})
    make = partial(_make_clip, out_dir=out_dir, seed=int(seed), size=spec.size,
                   duration=spec.duration, fps_choices=spec.fps)
    results = _render(make, jobs, workers, f'synthetic {preset} clips', progress, out_dir)
    label = {name: index for index, name in enumerate(classes)}
    videos = {}
    for relative, split, name, index in jobs:
        videos[relative] = dict(label=label[name], **results[relative])
    for split, path in annotations.items():
        lines = [f'{rel} {videos[rel]["label"]}\n' for rel, s, _, _ in jobs if s == split]
        write_text_atomically(''.join(lines), path)
    write_text_atomically(''.join(f'{name}\n' for name in classes), out_dir / 'classes.txt')
    try:
        flips = {str(k): v for k, v in flip_label_map(classes).items()}
    except ValueError:
        flips = None
    meta = dict(params=params, classes=classes, groups=class_groups(classes),
                flip_label_map=flips,
                annotations={split: path.name for split, path in annotations.items()},
                videos=videos)
    write_text_atomically(json.dumps(meta, indent=1) + '\n', out_dir / 'meta.json')
    (out_dir / BUILDING).unlink(missing_ok=True)  # two builds of one folder: the other's
    if frame_labels:
        write_frame_labels(out_dir, progress=progress)
    return annotations


def _render(make, jobs: List[tuple], workers: int, desc: str, progress: bool,
            out_dir: Path) -> Dict[str, dict]:
    """Relative path -> what ``make`` returned for it, every job rendered and written."""
    results = {}
    if workers == 1 or len(jobs) <= 1:
        outputs = ((job, make(job), None) for job in jobs)
    else:
        outputs = map_unordered(make, jobs, min(workers, len(jobs)), preload=[__name__])
    try:
        for job, made, lost in tqdm(outputs, total=len(jobs), desc=desc, unit='clip',
                                    disable=not progress):
            if lost is not None:  # a rerun finishes the data set (its build mark is kept)
                raise RuntimeError(f'{out_dir / job[0]}: {lost}') from lost
            relative, info = made
            results[relative] = info
    finally:
        outputs.close()
    return results


def _files_left(out_dir: Path) -> Set[str]:
    """The lists and videos (relative names) of the set ``out_dir`` holds: a finished one's,
    from its meta.json, and an interrupted build's, from its mark."""
    names: List[str] = []
    for record, files in (('meta.json', lambda meta: [*meta['annotations'].values(),
                                                      *meta['videos']]),
                          (BUILDING, lambda mark: mark['files'])):
        try:
            names += files(json.loads((out_dir / record).read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # none, or not ours
            continue
    return {name for name in names if isinstance(name, str) and _OWN_FILE.match(name)}


def _clear_previous(out_dir: Path, params: dict, lists: Set[str], videos: Set[str]) -> None:
    """Start a build: mark it, then remove what a training could take for the data set, before
    any video is overwritten (a build killed midway leaves its mark and videos, no list naming
    a mix of two sets' videos): meta.json and every list, of this set and of the one it
    replaces; its frame labels; the videos of the set it replaces that this one does not
    write; and the temporary files that writers killed on this host left."""
    left = _files_left(out_dir)
    files = left | lists | videos
    # the mark names every file of both sets: a rerun after a kill finds them all
    write_text_atomically(json.dumps(dict(params=params, files=sorted(files))) + '\n',
                          out_dir / BUILDING)
    (out_dir / 'meta.json').unlink(missing_ok=True)
    for stale in out_dir.glob('*_frame_labels.jsonl'):  # they describe the clips being redone
        stale.unlink()
    for name in sorted(files - videos):  # the lists, and the previous set's other videos
        (out_dir / name).unlink(missing_ok=True)
    _remove_temps(out_dir, files)


def _remove_temps(out_dir: Path, files: Set[str]) -> None:
    """Delete the temporary files that writers killed on this host left beside the files of
    the set (``files``, its videos and lists, and meta.json, classes.txt, the build mark, the
    frame labels): a killed process never removes its own. A file of a live writer (another
    build in the folder, its workers), of another host, or one that cannot be told apart (a
    file system without locks) stays (:func:`~hyperframes_mm.utils.paths.remove_orphan_temps`),
    so no folder lock is needed to know that no other writer is alive."""
    own = set(files) | {'meta.json', 'classes.txt', BUILDING}
    own |= {frame_labels_path('', name[:-len('.txt')]).name
            for name in files if name.endswith('.txt')}
    by_folder: Dict[Path, List[str]] = {}
    for name in sorted(own):
        by_folder.setdefault((out_dir / name).parent, []).append(Path(name).name)
    for folder, names in by_folder.items():
        # one listing of the folder: a sweep for every file of a large set lists it anew
        left = [path.name for path in folder.glob('.*.tmp')]
        for name in names:
            if any(temp.startswith(f'.{name}.') for temp in left):
                remove_orphan_temps(folder, name)


def interrupted_build(out_dir: Union[str, Path]) -> Optional[str]:
    """The command that finishes the build interrupted in ``out_dir`` (a kill or a crash left
    its build mark: part of its videos written, no lists, no meta.json), None where no build
    mark is there. The command line of tools/make_synthetic_dataset.py where it can say the
    build's parameters, else the Python call."""
    mark = Path(out_dir) / BUILDING
    if not mark.is_file():
        return None
    try:
        params = json.loads(mark.read_text())['params']
        preset, counts, seed = params['preset'], params['clips_per_class'], params['seed']
        classes = params['classes']
    except (OSError, ValueError, KeyError, TypeError) as error:  # a mark of older code
        return (f'tools/make_synthetic_dataset.py {shlex.quote(str(out_dir))} (or '
                'make_synthetic_dataset()) with the arguments of the interrupted build (its '
                f'mark {mark} does not say them: {type(error).__name__})')
    if (preset in PRESETS and classes == list(PRESETS[preset].classes)
            and set(counts) == {'train', 'val'} and min(counts.values()) >= 1):
        return (f'python tools/make_synthetic_dataset.py {shlex.quote(str(out_dir))} --preset '
                f'{preset} --train {counts["train"]} --val {counts["val"]} --seed {seed}')
    return (f'make_synthetic_dataset({str(out_dir)!r}, clips_per_class={counts!r}, '
            f'preset={preset!r}, seed={seed!r}, classes={classes!r})')


#: the file a build in progress keeps in its folder (:func:`make_synthetic_dataset`)
BUILDING = '.synthetic-build.json'


def _refuse_foreign(out_dir: Path) -> None:
    """Refuse to build into a file, or into a folder that holds files of something other
    than a data set of this generator (one built, or a build that was stopped): the build
    writes ``train.txt``, ``meta.json`` and the videos' names over whatever is there.

    Raises:
        FileExistsError: naming the folder and what is in the way.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f'{out_dir}: a file, not a folder: the data set is a folder of '
                              'videos and lists')
    if not out_dir.is_dir() or (out_dir / BUILDING).is_file():
        return
    try:
        if 'params' in load_meta(out_dir):
            return
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not a meta of ours
        pass
    # hidden files (.gitkeep, .DS_Store) are not in the way of any file the build writes
    held = sorted(path.name for path in out_dir.iterdir() if not path.name.startswith('.'))
    if held:
        shown = ', '.join(held[:3]) + (f', ... ({len(held)} in all)' if len(held) > 3 else '')
        raise FileExistsError(
            f'{out_dir}: holds {shown}, and no data set of this generator (no meta.json of '
            'it): building there would write over those files. Give a new or empty folder.')


def frame_labels_path(out_dir: Union[str, Path], split: str) -> Path:
    """Where :func:`write_frame_labels` puts the annotations of ``split``."""
    return Path(out_dir) / f'{split}_frame_labels.jsonl'


def write_frame_labels(out_dir: Union[str, Path], fast_speed: float = FAST_SPEED,
                       progress: bool = True) -> Dict[str, Path]:
    """Write per-frame motion-state labels of a generated dataset, one file per split.

    Every clip's scene is replayed from ``(seed, split, class, index)`` (nothing is rendered
    or decoded) and labelled by :func:`motion_state_labels`. The files are in the frame-label
    JSON-lines format of docs/frame_labels.md, one line per video in list order::

        {"video": "train/fall_0000.mp4", "num_frames": 50, "fps": 25.0, "label": 2,
         "frame_labels": [0, 0, 1, 1, ...]}

    ``label`` is the clip's class, so ``FrameLabelVideoDataset(label_mode='video')`` reads the
    file too; ``CenterFrameTarget`` reads the label of a sample's centre frame from it. The
    dataset's other files are left untouched.

    Args:
        out_dir (str | Path): a dataset root written by :func:`make_synthetic_dataset`.
        fast_speed (float): see :func:`motion_state_labels`. Defaults to :data:`FAST_SPEED`.
        progress (bool): show a tqdm progress bar. Defaults to True.

    Returns:
        Dict[str, Path]: split name -> the split's ``<split>_frame_labels.jsonl``.

    Raises:
        FileNotFoundError: ``out_dir`` holds no complete dataset.
        ValueError: the dataset was written by another generator version, or a replayed clip
            disagrees with ``meta.json`` about its frame count or rate (then the clips are not
            what this code draws: regenerate them).
    """
    out_dir = Path(out_dir)
    meta = load_meta(out_dir)
    params = meta['params']
    if params['generator_version'] != GENERATOR_VERSION:
        raise ValueError(f'{out_dir}: written by generator version '
                         f'{params["generator_version"]}, this code is version '
                         f'{GENERATOR_VERSION}; regenerate the dataset before labelling it')
    label = {name: index for index, name in enumerate(params['classes'])}
    jobs = [(split, name, index) for split, count in params['clips_per_class'].items()
            for name in params['classes'] for index in range(count)]
    lines: Dict[str, list] = {split: [] for split in params['clips_per_class']}
    for split, name, index in tqdm(jobs, desc='synthetic frame labels', unit='clip',
                                   disable=not progress):
        relative = f'{split}/{name}_{index:04d}.mp4'
        scene = sample_scene(name, clip_rng(params['seed'], split, name, index),
                             params['duration'], params['fps'])
        video = meta['videos'][relative]
        if video['num_frames'] != len(scene.times) or video['fps'] != scene.fps:
            raise ValueError(f'{out_dir / "meta.json"}: {relative} has {video["num_frames"]} '
                             f'frames at {video["fps"]} fps, but replaying its scene gives '
                             f'{len(scene.times)} at {scene.fps}: the clips were drawn by '
                             'other code; regenerate the dataset')
        record = dict(video=relative, num_frames=len(scene.times), fps=scene.fps,
                      label=label[name],
                      frame_labels=motion_state_labels(scene, fast_speed).tolist())
        lines[split].append(json.dumps(record) + '\n')
    paths = {}
    for split, split_lines in lines.items():
        paths[split] = frame_labels_path(out_dir, split)
        write_text_atomically(''.join(split_lines), paths[split])
    return paths
