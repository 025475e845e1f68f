"""Convert UTD-MHAD depth sequences (.mat) into videos and mmaction2 VideoDataset lists.

    python tools/data/utd_mhad/convert_depth.py SOURCE data/utd_mhad --workers 2

``SOURCE`` is a folder holding ``a{A}_s{S}_t{T}_depth.mat`` files (searched recursively) or a
bare git directory that holds them (read with ``git cat-file``, never checked out): UTD-MHAD's
27 actions and 8 subjects, or another depth set in its layout (any action and subject numbered
from 1). Each sequence becomes ``OUT/videos/a{A}_s{S}_t{T}_depth.mp4``: a crop box (by default
UTD-MHAD's, the region every subject stays in within its 240x320 frames, so frames of another
size need ``--crop`` or ``--no-crop``), depth mapped to 8 bits by one fixed rule
(:func:`depth_to_uint8`: near is bright, no reading is 0), three equal channels, at the
dataset's 30 fps. Then the lists, of the subjects converted: ``cross_subject_{train,test}.txt``
(UTD-MHAD's protocol: train on the odd subjects, test on the even ones, for subjects 1-8 that
is 1, 3, 5, 7 / 2, 4, 6, 8; ``--train-subjects`` chooses others) and
``cross_subject_val/s{S}_{train,val}.txt`` for each training subject S (train on the other
training subjects, validate on S: the split every choice is read from, so the test subjects are
tested once), ``loso/s{S}_{train,test}.txt`` (leave subject S out), ``classes.txt`` (actions 1
to the highest converted: UTD-MHAD's names, ``action_{A}`` beyond its 27) and
``convert_meta.json``. A list that would hold no clip is not written, and a list of these names
left by an earlier run that this one does not write is removed. ``--lists-only`` rewrites the
lists from the videos a previous run converted (its ``convert_meta.json``), without the ``.mat``
files.

Safe to run again and to interrupt: videos are written to a temporary name and renamed into
place; a video whose stamp records the same mapping and the same source file (its size and
modification time, or its git blob) is kept, so a second run only converts what is missing or
changed. A bad or truncated ``.mat``, one without any depth reading, and a file named nearly as
a sequence (``A1_S1_T1_depth.mat``, ``a1_s1_t1.mat``, ``a1_s1_t1_depth.MAT``) are named,
skipped and listed in ``convert_meta.json``; the lists hold only converted sequences, and the
exit status is 1 when any was skipped. Two files of one sequence name under ``SOURCE`` are an
error naming both.
"""
import argparse
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np

#: the 27 actions in label order (label = action number - 1), as the dataset's readme names them
CLASSES = (
    'right_arm_swipe_to_the_left', 'right_arm_swipe_to_the_right', 'right_hand_wave',
    'two_hand_front_clap', 'right_arm_throw', 'cross_arms_in_the_chest', 'basketball_shoot',
    'right_hand_draw_x', 'right_hand_draw_circle_clockwise',
    'right_hand_draw_circle_counter_clockwise', 'draw_triangle', 'bowling', 'front_boxing',
    'baseball_swing_from_right', 'tennis_right_hand_forehand_swing', 'arm_curl', 'tennis_serve',
    'two_hand_push', 'right_hand_knock_on_door', 'right_hand_catch_an_object',
    'right_hand_pick_up_and_throw', 'jogging_in_place', 'walking_in_place', 'sit_to_stand',
    'stand_to_sit', 'forward_lunge_left_foot_forward', 'squat_two_arms_stretch_out')
#: the frame size the default crop box is chosen for
UTD_FRAME = (240, 320)
#: a larger share of a sequence's readings outside the crop box is warned about, by name
LOST_WARNING = 0.05
FPS = 30.0
VARIABLE = 'd_depth'
NAME = re.compile(r'^a(\d+)_s(\d+)_t(\d+)_depth\.mat$')
#: a name a person meant as a sequence's (other case, no ``_depth``): named, never passed over
NEAR_NAME = re.compile(r'^a\d+_s\d+_t\d+(_depth)?\.mat$', re.IGNORECASE)
#: the lists :func:`write_lists` writes, by path under the output folder
OWN_LIST = re.compile(r'(cross_subject_(train|test)|classes|loso/s\d+_(train|test)|'
                      r'cross_subject_val/s\d+_(train|val))\.txt')
#: bumped whenever a change alters the videos, so old ones are converted again
CONVERTER_VERSION = 2


@dataclass(frozen=True)
class Mapping:
    """How a depth map becomes an 8-bit frame; recorded in ``convert_meta.json``.

    Args:
        near_mm (float): depth shown as 255 (and anything nearer). Defaults to 800, the Kinect
            v1 sensor's near limit.
        far_mm (float): depth shown as 1 (and anything farther). Defaults to 4000, its far limit.
        crop (tuple[int, int, int] | None): ``(top, left, side)`` of the square box cut from the
            frame before resizing; None keeps the whole frame. Defaults to ``(24, 52, 216)``:
            rows 24-239, columns 52-267 of UTD-MHAD's 240x320 frame, which holds every subject
            (:func:`convert` refuses frames of another size with it, unless it was chosen).
        size (int): side of the square output video (even, for yuv420p). Defaults to 128.
    """
    near_mm: float = 800.0
    far_mm: float = 4000.0
    crop: Optional[Tuple[int, int, int]] = (24, 52, 216)
    size: int = 128

    def check(self) -> None:
        if not 0 <= self.near_mm < self.far_mm:
            raise ValueError(f'need 0 <= near_mm < far_mm, got {self.near_mm}, {self.far_mm}')
        if self.size < 2 or self.size % 2:
            raise ValueError(f'size must be an even number >= 2, got {self.size}')
        if self.crop is not None and (len(self.crop) != 3 or min(self.crop) < 0 or
                                      self.crop[2] < 1):
            raise ValueError(f'crop must be (top, left, side) with side >= 1, got {self.crop}')


def depth_to_uint8(depth: np.ndarray, near_mm: float, far_mm: float) -> np.ndarray:
    """Depth in millimetres -> uint8: ``near_mm`` (or nearer) is 255, ``far_mm`` (or farther) 1,
    linear in between; 0 (no reading) stays 0, so "nothing there" is never confused with far."""
    depth = np.asarray(depth)
    scaled = 1.0 + 254.0 * (far_mm - depth.astype(np.float64)) / (far_mm - near_mm)
    out = np.rint(np.clip(scaled, 1.0, 255.0)).astype(np.uint8)
    out[depth == 0] = 0
    return out


def depth_frames(depth: np.ndarray, mapping: Mapping,
                 where: str = VARIABLE) -> Tuple[np.ndarray, float]:
    """``[H, W, T]`` depth -> ``[T, size, size, 3]`` uint8 frames, and the fraction of valid
    readings that fell outside the crop box (0 when the box holds the whole subject).

    Raises:
        ValueError: not ``[H, W, T]``, or a crop box outside the frame; the message starts with
            ``where`` (the ``.mat`` file: a converter run reports it among many).
    """
    import cv2
    if depth.ndim != 3 or depth.shape[2] < 1:
        raise ValueError(f'{where}: expected {VARIABLE} of shape [H, W, T], got {depth.shape}')
    valid = depth > 0
    lost = 0.0
    if mapping.crop is not None:
        top, left, side = mapping.crop
        height, width = depth.shape[:2]
        if top + side > height or left + side > width:
            raise ValueError(f'{where}: crop {mapping.crop} leaves the {height}x{width} frame '
                             '(choose another --crop, or --no-crop)')
        kept = valid[top:top + side, left:left + side].sum()
        lost = float(1 - kept / max(valid.sum(), 1))
        depth = depth[top:top + side, left:left + side]
    grey = depth_to_uint8(depth, mapping.near_mm, mapping.far_mm)
    # INTER_AREA averages whole pixels, so a subject's edge against "no reading" stays sharp
    # enough and no ringing invents readings in the background
    frames = np.stack([cv2.resize(grey[..., t], (mapping.size, mapping.size),
                                  interpolation=cv2.INTER_AREA)
                       for t in range(grey.shape[2])])
    return np.repeat(frames[..., None], 3, axis=3), lost


def parse_name(name: str) -> Optional[Tuple[int, int, int]]:
    """``(action, subject, trial)`` of a file name, or None for a name that is not a sequence."""
    match = NAME.match(name)
    if match is None:
        return None
    action, subject, trial = map(int, match.groups())
    if action < 1 or subject < 1:
        return None
    return action, subject, trial


def misnamed(name: str) -> Optional[str]:
    """Why a file named as a sequence, or nearly so, is not converted (an action or subject 0,
    another case, no ``_depth``), or None: such a file was left out of the lists without a word.
    The data set's other modalities (``a1_s1_t1_skeleton.mat``) are no sequence: None."""
    match = NAME.match(name)
    if match:
        if parse_name(name):
            return None
        action, subject, _ = map(int, match.groups())
        return (f'action {action}, subject {subject}: actions and subjects are numbered from 1: '
                'not converted')
    if NEAR_NAME.match(name):
        return ('not named a{A}_s{S}_t{T}_depth.mat (lower case, ending in _depth.mat): not '
                'converted')
    return None


def class_names(actions: int) -> List[str]:
    """The names of actions 1 to ``actions`` in label order: UTD-MHAD's, ``action_{A}`` beyond
    its 27."""
    return [CLASSES[action - 1] if action <= len(CLASSES) else f'action_{action}'
            for action in range(1, actions + 1)]


def split_subjects(subjects: Iterable[int], train_subjects: Optional[Iterable[int]] = None
                   ) -> Tuple[List[int], List[int]]:
    """The training and the test subjects among ``subjects``: ``train_subjects`` and the others,
    or by default UTD-MHAD's protocol, the odd and the even subjects (for subjects 1-8 the
    dataset paper's split, Chen, Jafari and Kehtarnavaz, ICIP 2015)."""
    subjects = sorted(set(subjects))
    chosen = ({subject for subject in subjects if subject % 2} if train_subjects is None else
              set(train_subjects))
    return ([subject for subject in subjects if subject in chosen],
            [subject for subject in subjects if subject not in chosen])


class Source:
    """The ``.mat`` files of a folder or of a bare git directory, by file name."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self.git = (self.root / 'HEAD').is_file() and (self.root / 'objects').is_dir()
        if not self.git and not self.root.is_dir():
            raise FileNotFoundError(f'{root}: neither a folder of .mat files nor a git directory')
        self.files: Dict[str, str] = {}
        if self.git:
            listing = subprocess.run(['git', f'--git-dir={self.root}', 'ls-tree', '-r', 'HEAD'],
                                     check=True, capture_output=True, text=True).stdout
            found = [(path, meta.split()[2]) for meta, path in
                     (line.split('\t', 1) for line in listing.splitlines())
                     if meta.split()[1] == 'blob']
        else:
            # rglob('*.mat') matches the case: a .MAT file would be passed over without a word
            found = [(str(path), str(path)) for path in sorted(self.root.rglob('*'))
                     if path.suffix.lower() == '.mat' and path.is_file()]
        where: Dict[str, str] = {}
        for path, handle in found:
            name = Path(path).name
            if name in self.files and parse_name(name):
                # a sequence is one clip of the data set: two files of one name are two
                # versions of it, and taking either would drop the other without a word
                raise ValueError(f'{root}: two files for sequence {name}: {where[name]} and '
                                 f'{path}; keep one')
            self.files.setdefault(name, handle)
            where.setdefault(name, path)

    def sequences(self) -> List[str]:
        return sorted((name for name in self.files if parse_name(name)),
                      key=lambda name: parse_name(name))

    def strangers(self) -> Dict[str, str]:
        """The files named as sequences, or nearly, that are not converted (:func:`misnamed`):
        name -> why, naming the file, as a failed sequence's error does."""
        return {name: f'{self.describe(name)}: {why}' for name in sorted(self.files)
                if (why := misnamed(name))}

    def identity(self, name: str) -> Dict:
        """What changes when the file is replaced: its git blob, or its size and mtime."""
        if self.git:
            return dict(blob=self.files[name])
        info = os.stat(self.files[name])
        return dict(size=info.st_size, mtime_ns=info.st_mtime_ns)

    def describe(self, name: str) -> str:
        return f'{self.root}:{name}' if self.git else self.files[name]

    def read(self, name: str) -> bytes:
        if not self.git:
            return Path(self.files[name]).read_bytes()
        return subprocess.run(['git', f'--git-dir={self.root}', 'cat-file', 'blob',
                               self.files[name]], check=True, capture_output=True).stdout


def load_depth(data: bytes, where: str) -> np.ndarray:
    """The ``d_depth`` array of a .mat file's bytes; ValueError naming ``where`` otherwise."""
    import scipy.io
    try:
        content = scipy.io.loadmat(io.BytesIO(data), variable_names=[VARIABLE])
    except Exception as error:  # scipy raises many types for a damaged file
        raise ValueError(f'{where}: not a readable .mat file ({type(error).__name__}: '
                         f'{error})') from error
    depth = content.get(VARIABLE)
    if depth is None:
        raise ValueError(f'{where}: has no variable {VARIABLE!r}')
    if depth.ndim != 3 or 0 in depth.shape or not np.issubdtype(depth.dtype, np.integer):
        raise ValueError(f'{where}: {VARIABLE} must be a non-empty integer [H, W, T] array, got '
                         f'{depth.dtype} {depth.shape}')
    if depth.min() < 0:
        # a distance in millimetres (0: no reading): the mapping would clip a negative one to
        # the brightest, nearest grey, a frame of false readings
        raise ValueError(f'{where}: {VARIABLE} holds negative depth (min {depth.min()}); depth '
                         'is a distance in millimetres, 0 where the sensor has no reading')
    if not depth.any():
        # a black video would train as a clip of the action, and its share of readings outside
        # the crop box would read as a crop problem
        raise ValueError(f'{where}: holds no depth readings ({VARIABLE} is 0, no reading, '
                         'everywhere)')
    return depth


def video_name(mat_name: str) -> str:
    return f'videos/{Path(mat_name).stem}.mp4'


def convert_one(source: Source, name: str, out_dir: Path, mapping: Mapping,
                force: bool = False, explicit_crop: bool = False) -> Dict:
    """Convert one sequence unless its video exists with the same mapping from the same source
    file; never raises for a bad file (``status='failed'`` with the error naming it). The
    default crop box is refused for frames of another size unless ``explicit_crop``."""
    import cv2

    from hyperframes_mm.datasets.video_io import write_video
    from hyperframes_mm.utils.paths import write_text_atomically
    out = out_dir / video_name(name)
    stamp = out.with_suffix('.json')
    result = dict(name=name, video=video_name(name))
    wanted = json.loads(json.dumps(dict(asdict(mapping), version=CONVERTER_VERSION)))
    where = source.describe(name)
    try:
        identity = source.identity(name)
    except OSError as error:
        return dict(result, status='failed', error=f'{where}: {error}')
    if not force and out.is_file() and stamp.is_file():
        try:
            recorded = json.loads(stamp.read_text())
            # a stamp older than the source's identity is trusted, as it was: converting a
            # whole data set again for the rare file replaced since is the worse cost; it
            # learns the identity now, so a later replacement is seen
            if ({key: recorded.get(key) for key in wanted} == wanted and
                    recorded.get('source_identity', identity) == identity):
                if 'source_identity' not in recorded:
                    write_text_atomically(
                        json.dumps(dict(recorded, source_identity=identity)), stamp)
                return dict(result, status='kept', frames=recorded['frames'],
                            lost=recorded['lost'])
        except (ValueError, KeyError):
            pass  # an unreadable stamp: convert again
    try:
        depth = load_depth(source.read(name), where)
        if mapping.crop == Mapping.crop and not explicit_crop and depth.shape[:2] != UTD_FRAME:
            # the default box is where UTD-MHAD's subjects stand in its frames: on a frame of
            # another size it cuts some other region, and most of the subject with it
            raise ValueError(f'{where}: frames of {depth.shape[0]}x{depth.shape[1]}, and the '
                             f'default crop box {Mapping.crop} is for UTD-MHAD\'s '
                             f'{UTD_FRAME[0]}x{UTD_FRAME[1]} frames; give --crop TOP LEFT SIDE '
                             'or --no-crop')
        frames, lost = depth_frames(depth, mapping, where)
    except (ValueError, OSError, subprocess.CalledProcessError, cv2.error) as error:
        return dict(result, status='failed', error=f'{where}: {error}'
                    if where not in str(error) else str(error))
    # the stamp goes first and comes back last: a video without one is never trusted
    stamp.unlink(missing_ok=True)
    write_video(out, frames, fps=FPS)
    write_text_atomically(json.dumps(dict(wanted, frames=len(frames), lost=lost, source=where,
                                          source_identity=identity)), stamp)
    return dict(result, status='converted', frames=len(frames), lost=lost)


def write_lists(out_dir: Path, converted: Sequence[str],
                train_subjects: Optional[Iterable[int]] = None) -> Dict[str, int]:
    """The VideoDataset lists of the converted sequences (``videos/<name>.mp4 <label>``), the
    cross-subject ones split by :func:`split_subjects`, and ``classes.txt``; returns lines per
    list written. A list without a clip is not written (the datasets' reader refuses an empty
    one), and one of these names left by an earlier run is removed: a folder holds the lists
    of one set."""
    from hyperframes_mm.utils.paths import write_text_atomically
    entries = sorted((parse_name(name), video_name(name)) for name in converted)
    train, test = split_subjects((ids[1] for ids, _ in entries), train_subjects)

    def lines(keep) -> List[str]:
        return [f'{video} {ids[0] - 1}' for ids, video in entries if keep(ids[1])]

    lists = {'cross_subject_train.txt': lines(lambda s: s in train),
             'cross_subject_test.txt': lines(lambda s: s in test)}
    for subject in train:
        lists[f'cross_subject_val/s{subject}_train.txt'] = lines(
            lambda s, subject=subject: s in train and s != subject)
        lists[f'cross_subject_val/s{subject}_val.txt'] = lines(
            lambda s, subject=subject: s == subject)
    for subject in sorted(train + test):
        lists[f'loso/s{subject}_train.txt'] = lines(lambda s, subject=subject: s != subject)
        lists[f'loso/s{subject}_test.txt'] = lines(lambda s, subject=subject: s == subject)
    lists['classes.txt'] = class_names(max((ids[0] for ids, _ in entries), default=0))
    lists = {relative: content for relative, content in lists.items() if content}
    for relative, content in lists.items():
        write_text_atomically('\n'.join(content) + '\n', out_dir / relative)
    for relative in _own_lists(out_dir) - set(lists):
        (out_dir / relative).unlink()
    return {relative: len(content) for relative, content in lists.items()}


def _own_lists(out_dir: Path) -> Set[str]:
    """The files under ``out_dir`` named as :func:`write_lists` names its lists."""
    return {relative for folder in ('.', 'loso', 'cross_subject_val')
            for path in (out_dir / folder).glob('*.txt')
            if OWN_LIST.fullmatch(relative := path.relative_to(out_dir).as_posix())}


def convert(source_root: str, out_dir: str, mapping: Mapping = Mapping(), workers: int = 1,
            force: bool = False, progress: bool = True,
            train_subjects: Optional[Sequence[int]] = None, explicit_crop: bool = False) -> Dict:
    """Convert every sequence of ``source_root`` into ``out_dir``; returns the meta it wrote.

    Workers are threads: reading (``git cat-file``), resizing (OpenCV) and encoding (FFmpeg)
    all run outside the GIL.

    Args:
        train_subjects: the cross-subject split's training subjects (the others are tested);
            None for UTD-MHAD's protocol, the odd subjects (:func:`split_subjects`).
        explicit_crop: ``mapping.crop`` was chosen (``--crop``): applied to frames of any size,
            where the default box fails a sequence whose frames are not 240x320.

    Raises:
        FileNotFoundError: ``source_root`` holds no depth sequence.
        ValueError: ``train_subjects`` names a subject without a sequence, or every subject.
    """
    from concurrent.futures import ThreadPoolExecutor

    import cv2
    from tqdm import tqdm
    from hyperframes_mm.utils.paths import write_text_atomically
    mapping.check()
    if workers < 1:
        raise ValueError(f'workers must be >= 1, got {workers}')
    source = Source(source_root)
    names = source.sequences()
    if not names:
        raise FileNotFoundError(f'{source_root}: no a{{A}}_s{{S}}_t{{T}}_depth.mat files')
    subjects = sorted({parse_name(name)[1] for name in names})
    if train_subjects is not None:
        absent = sorted(set(train_subjects) - set(subjects))
        if absent:
            raise ValueError(f'{source_root}: --train-subjects names subject(s) '
                             f'{", ".join(map(str, absent))} without a sequence (subjects '
                             f'found: {", ".join(map(str, subjects))})')
        if not split_subjects(subjects, train_subjects)[1]:
            raise ValueError(f'{source_root}: --train-subjects names every subject found; '
                             'leave at least one to test on')
    out = Path(out_dir)
    (out / 'videos').mkdir(parents=True, exist_ok=True)
    cv2.setNumThreads(1)
    done: Dict[str, Dict] = {}
    failed: Dict[str, str] = source.strangers()
    with ThreadPoolExecutor(workers) as pool, \
            tqdm(total=len(names), desc='UTD-MHAD depth', unit='seq', disable=not progress,
                 file=sys.stderr) as bar:
        for result in pool.map(lambda name: convert_one(source, name, out, mapping, force,
                                                        explicit_crop), names):
            if result['status'] == 'failed':
                failed[result['name']] = result['error']
                tqdm.write(f'skipped {result["error"]}', file=sys.stderr)
            else:
                done[result['name']] = result
                if result['lost'] > LOST_WARNING:
                    tqdm.write(f'warning: {source.describe(result["name"])}: '
                               f'{result["lost"]:.1%} of its depth readings fall outside the '
                               f'crop box {mapping.crop} (give another --crop TOP LEFT SIDE, '
                               'or --no-crop)', file=sys.stderr)
            bar.update(1)
            bar.set_postfix(failed=len(failed), refresh=False)
    converted = sorted(done, key=parse_name)
    counts = write_lists(out, converted, train_subjects)
    meta = dict(dataset='UTD-MHAD depth', version=CONVERTER_VERSION, mapping=asdict(mapping),
                fps=FPS, **_described(converted, train_subjects), source=str(source_root),
                sequences=len(converted), failed=failed, lists=counts,
                converted=sum(r['status'] == 'converted' for r in done.values()),
                max_lost_outside_crop=max((r['lost'] for r in done.values()), default=0.0),
                frames={name: done[name]['frames'] for name in converted})
    write_text_atomically(json.dumps(meta, indent=1) + '\n', out / 'convert_meta.json')
    return meta


def _described(converted: Sequence[str], train_subjects: Optional[Sequence[int]]) -> Dict:
    """What the meta records of the converted sequences' labels and subjects: the classes of
    :func:`write_lists`' ``classes.txt``, its training and test subjects."""
    ids = [parse_name(name) for name in converted]
    train, test = split_subjects((subject for _, subject, _ in ids), train_subjects)
    return dict(classes=class_names(max((action for action, _, _ in ids), default=0)),
                train_subjects=train, test_subjects=test)


def read_meta(meta_path: Path) -> Dict:
    """The ``convert_meta.json`` of a :func:`convert` run, checked for what the lists are
    written from: a JSON object whose ``frames`` maps each converted sequence's file name.

    Raises:
        ValueError: a damaged record (cut short, edited by hand, another tool's file); the
            message names it and says to run the full conversion again, which rewrites it and
            keeps the videos already converted.
    """
    def damaged(reason: str) -> ValueError:
        return ValueError(f'{meta_path}: damaged record of the conversion ({reason}); run the '
                          f'full conversion again (convert_depth.py SOURCE {meta_path.parent}), '
                          'which keeps the videos already converted')

    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
        raise damaged(f'not JSON: {error}') from error
    if not isinstance(meta, dict) or not isinstance(meta.get('frames'), dict):
        raise damaged('no "frames" object naming the converted sequences')
    strays = [name for name in meta['frames'] if parse_name(name) is None]
    if strays:
        raise damaged(f'"frames" lists {strays[0]!r}, not an a{{A}}_s{{S}}_t{{T}}_depth.mat '
                      'sequence')
    return meta


def rewrite_lists(out_dir: str) -> Dict:
    """Write the lists again from the sequences a previous :func:`convert` recorded in
    ``out_dir/convert_meta.json`` (e.g. the validation lists, for data converted before they
    existed); returns the updated meta.

    Raises:
        FileNotFoundError: no ``convert_meta.json``, or a recorded video is missing; the message
            names the file.
        ValueError: a damaged ``convert_meta.json`` (:func:`read_meta`).
    """
    from hyperframes_mm.utils.paths import write_text_atomically
    out = Path(out_dir)
    meta_path = out / 'convert_meta.json'
    if not meta_path.is_file():
        raise FileNotFoundError(f'{meta_path}: no record of a conversion; run the converter on '
                                'the .mat files first')
    meta = read_meta(meta_path)
    converted = sorted(meta['frames'], key=parse_name)
    missing = [video_name(name) for name in converted if not (out / video_name(name)).is_file()]
    if missing:
        raise FileNotFoundError(f'{meta_path} records {len(missing)} videos that are not in '
                                f'{out}: {", ".join(missing[:5])}')
    # the recorded training subjects, those found (a record before --train-subjects holds
    # UTD-MHAD's 1, 3, 5, 7, the default split of its subjects)
    train_subjects = meta.get('train_subjects')
    meta['lists'] = write_lists(out, converted, train_subjects)
    meta.update(_described(converted, train_subjects))
    write_text_atomically(json.dumps(meta, indent=1) + '\n', meta_path)
    return meta


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('source', nargs='?',
                        help='folder of .mat files, or a bare git directory holding them')
    parser.add_argument('out_dir', help='videos and lists go here (e.g. data/utd_mhad)')
    parser.add_argument('--workers', type=int, default=os.cpu_count() or 1)
    parser.add_argument('--near-mm', type=float, default=Mapping.near_mm)
    parser.add_argument('--far-mm', type=float, default=Mapping.far_mm)
    parser.add_argument('--crop', type=int, nargs=3, metavar=('TOP', 'LEFT', 'SIDE'),
                        help='square box cut from each frame (default: %s, for UTD-MHAD\'s '
                        '240x320 frames; frames of another size need --crop or --no-crop)'
                        % ' '.join(map(str, Mapping.crop)))
    parser.add_argument('--no-crop', action='store_true', help='keep the whole frame (resized '
                        'to a square)')
    parser.add_argument('--size', type=int, default=Mapping.size, help='output side, pixels')
    parser.add_argument('--train-subjects', type=int, nargs='+', metavar='S',
                        help='the cross-subject training subjects, the others tested (default: '
                        'the odd subjects, UTD-MHAD\'s protocol)')
    parser.add_argument('--force', action='store_true', help='convert again what exists')
    parser.add_argument('--lists-only', action='store_true',
                        help='rewrite the lists of out_dir from its convert_meta.json, no source')
    args = parser.parse_args(argv)
    if args.source is None and not args.lists_only:
        parser.error('source is required unless --lists-only')
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.lists_only:
        try:
            meta = rewrite_lists(args.out_dir)
        except (FileNotFoundError, ValueError) as error:
            print(f'error: {error}', file=sys.stderr)
            return 1
        print(f'lists of {len(meta["frames"])} sequences rewritten in {args.out_dir}: '
              + ', '.join(f'{name} {count}' for name, count in meta['lists'].items()
                          if '/' not in name or name.startswith('cross_subject_val/')))
        return 0
    mapping = Mapping(near_mm=args.near_mm, far_mm=args.far_mm,
                      crop=None if args.no_crop else tuple(args.crop or Mapping.crop),
                      size=args.size)
    try:
        meta = convert(args.source, args.out_dir, mapping, workers=args.workers,
                       force=args.force, train_subjects=args.train_subjects,
                       explicit_crop=args.crop is not None)
    except (FileNotFoundError, ValueError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    print(f'{meta["sequences"]} sequences in {args.out_dir} ({meta["converted"]} converted now), '
          f'{len(meta["failed"])} skipped; cross-subject '
          f'{meta["lists"].get("cross_subject_train.txt", 0)} train / '
          f'{meta["lists"].get("cross_subject_test.txt", 0)} test clips; largest share of a '
          f'sequence\'s readings outside the crop: {meta["max_lost_outside_crop"]:.4f}')
    for name, error in meta['failed'].items():
        print(f'skipped {name}: {error}')
    if meta['failed']:
        # the lists are written, of the converted sequences, but the data set is not whole:
        # a script that goes on to train must not read that as success
        print(f'error: {len(meta["failed"])} sequence(s) skipped (above); the lists hold the '
              'other sequences only', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
