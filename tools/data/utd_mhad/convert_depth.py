"""Convert UTD-MHAD depth sequences (.mat) into videos and mmaction2 VideoDataset lists.

    python tools/data/utd_mhad/convert_depth.py SOURCE data/utd_mhad --workers 2

``SOURCE`` is a folder holding ``a{A}_s{S}_t{T}_depth.mat`` files (searched recursively) or a
bare git directory that holds them (read with ``git cat-file``, never checked out). Each
sequence becomes ``OUT/videos/a{A}_s{S}_t{T}_depth.mp4``: the fixed crop box (the region every
subject stays in), depth mapped to 8 bits by one fixed rule (:func:`depth_to_uint8`: near is
bright, no reading is 0), three equal channels, at the dataset's 30 fps. Then the lists:
``cross_subject_{train,test}.txt`` (train on subjects 1, 3, 5, 7; test on 2, 4, 6, 8) and
``cross_subject_val/s{S}_{train,val}.txt`` for each training subject S (train on the other three
training subjects, validate on S: the split every choice is read from, so the test subjects are
tested once), ``loso/s{S}_{train,test}.txt`` (leave subject S out), ``classes.txt`` and
``convert_meta.json``. ``--lists-only`` rewrites the lists from the videos a previous run
converted (its ``convert_meta.json``), without the ``.mat`` files.

Safe to run again and to interrupt: videos are written to a temporary name and renamed into
place; a video whose meta records the same mapping is kept, so a second run only converts what
is missing. A bad or truncated ``.mat`` is named, skipped and listed in ``convert_meta.json``;
the lists hold only converted sequences, and the exit status is 1 when any was skipped. Two
files of one sequence name under ``SOURCE`` are an error naming both.
"""
import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

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
SUBJECTS = tuple(range(1, 9))
#: the standard cross-subject protocol (Chen, Jafari and Kehtarnavaz, ICIP 2015)
TRAIN_SUBJECTS = (1, 3, 5, 7)
TEST_SUBJECTS = (2, 4, 6, 8)
FPS = 30.0
VARIABLE = 'd_depth'
NAME = re.compile(r'^a(\d+)_s(\d+)_t(\d+)_depth\.mat$')
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
            240x320 frame before resizing; None keeps the whole frame. Defaults to
            ``(24, 52, 216)``: rows 24-239, columns 52-267, which holds every subject.
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
    if not (1 <= action <= len(CLASSES) and subject in SUBJECTS):
        return None
    return action, subject, trial


def outside_the_set(name: str) -> Optional[str]:
    """Why a file named as a sequence is none of UTD-MHAD's (an action or subject number it does
    not have), or None: such a file was left out of the lists without a word."""
    match = NAME.match(name)
    if match is None or parse_name(name):
        return None
    action, subject, _ = map(int, match.groups())
    return (f'action {action}, subject {subject} is not a UTD-MHAD sequence (actions 1-'
            f'{len(CLASSES)}, subjects {SUBJECTS[0]}-{SUBJECTS[-1]}): not converted')


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
            found = [(str(path), str(path)) for path in sorted(self.root.rglob('*.mat'))]
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
        """The files named as sequences that are none of the data set's: name -> why, naming
        the file, as a failed sequence's error does."""
        return {name: f'{self.describe(name)}: {why}' for name in sorted(self.files)
                if (why := outside_the_set(name))}

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
    return depth


def video_name(mat_name: str) -> str:
    return f'videos/{Path(mat_name).stem}.mp4'


def convert_one(source: Source, name: str, out_dir: Path, mapping: Mapping,
                force: bool = False) -> Dict:
    """Convert one sequence unless its video exists with the same mapping; never raises for a
    bad file (``status='failed'`` with the error naming it)."""
    import cv2

    from hyperframes_mm.datasets.video_io import write_video
    out = out_dir / video_name(name)
    stamp = out.with_suffix('.json')
    result = dict(name=name, video=video_name(name))
    wanted = json.loads(json.dumps(dict(asdict(mapping), version=CONVERTER_VERSION)))
    if not force and out.is_file() and stamp.is_file():
        try:
            recorded = json.loads(stamp.read_text())
            if {key: recorded.get(key) for key in wanted} == wanted:
                return dict(result, status='kept', frames=recorded['frames'],
                            lost=recorded['lost'])
        except (ValueError, KeyError):
            pass  # an unreadable stamp: convert again
    where = source.describe(name)
    try:
        frames, lost = depth_frames(load_depth(source.read(name), where), mapping, where)
    except (ValueError, OSError, subprocess.CalledProcessError, cv2.error) as error:
        return dict(result, status='failed', error=f'{where}: {error}'
                    if where not in str(error) else str(error))
    # the stamp goes first and comes back last: a video without one is never trusted
    stamp.unlink(missing_ok=True)
    write_video(out, frames, fps=FPS)
    _write_text(stamp, json.dumps(dict(wanted, frames=len(frames), lost=lost, source=where)))
    return dict(result, status='converted', frames=len(frames), lost=lost)


def write_lists(out_dir: Path, converted: Sequence[str]) -> Dict[str, int]:
    """The VideoDataset lists of the converted sequences (``videos/<name>.mp4 <label>``);
    returns lines per list."""
    entries = [(parse_name(name), video_name(name)) for name in converted]

    def lines(keep) -> List[str]:
        return [f'{video} {ids[0] - 1}' for ids, video in sorted(entries) if keep(ids[1])]

    lists = {'cross_subject_train.txt': lines(lambda s: s in TRAIN_SUBJECTS),
             'cross_subject_test.txt': lines(lambda s: s in TEST_SUBJECTS)}
    for subject in TRAIN_SUBJECTS:
        lists[f'cross_subject_val/s{subject}_train.txt'] = lines(
            lambda s, subject=subject: s in TRAIN_SUBJECTS and s != subject)
        lists[f'cross_subject_val/s{subject}_val.txt'] = lines(
            lambda s, subject=subject: s == subject)
    for subject in SUBJECTS:
        lists[f'loso/s{subject}_train.txt'] = lines(lambda s, subject=subject: s != subject)
        lists[f'loso/s{subject}_test.txt'] = lines(lambda s, subject=subject: s == subject)
    lists['classes.txt'] = list(CLASSES)
    for relative, content in lists.items():
        _write_text(out_dir / relative, '\n'.join(content) + '\n')
    return {relative: len(content) for relative, content in lists.items()}


def _write_text(path: Path, text: str) -> None:
    from hyperframes_mm.utils.paths import umask_mode
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.')
    with os.fdopen(handle, 'w') as f:
        f.write(text)
    umask_mode(tmp)
    os.replace(tmp, path)


def convert(source_root: str, out_dir: str, mapping: Mapping = Mapping(), workers: int = 1,
            force: bool = False, progress: bool = True) -> Dict:
    """Convert every sequence of ``source_root`` into ``out_dir``; returns the meta it wrote.

    Workers are threads: reading (``git cat-file``), resizing (OpenCV) and encoding (FFmpeg)
    all run outside the GIL.

    Raises:
        FileNotFoundError: ``source_root`` holds no UTD-MHAD depth sequence.
    """
    from concurrent.futures import ThreadPoolExecutor

    import cv2
    from tqdm import tqdm
    mapping.check()
    if workers < 1:
        raise ValueError(f'workers must be >= 1, got {workers}')
    source = Source(source_root)
    names = source.sequences()
    if not names:
        raise FileNotFoundError(f'{source_root}: no a{{A}}_s{{S}}_t{{T}}_depth.mat files')
    out = Path(out_dir)
    (out / 'videos').mkdir(parents=True, exist_ok=True)
    cv2.setNumThreads(1)
    done: Dict[str, Dict] = {}
    failed: Dict[str, str] = source.strangers()
    with ThreadPoolExecutor(workers) as pool, \
            tqdm(total=len(names), desc='UTD-MHAD depth', unit='seq', disable=not progress,
                 file=sys.stderr) as bar:
        for result in pool.map(lambda name: convert_one(source, name, out, mapping, force),
                               names):
            if result['status'] == 'failed':
                failed[result['name']] = result['error']
                tqdm.write(f'skipped {result["error"]}', file=sys.stderr)
            else:
                done[result['name']] = result
            bar.update(1)
            bar.set_postfix(failed=len(failed), refresh=False)
    converted = sorted(done, key=parse_name)
    counts = write_lists(out, converted)
    meta = dict(dataset='UTD-MHAD depth', version=CONVERTER_VERSION, mapping=asdict(mapping),
                fps=FPS, classes=list(CLASSES), train_subjects=list(TRAIN_SUBJECTS),
                test_subjects=list(TEST_SUBJECTS), source=str(source_root),
                sequences=len(converted), failed=failed, lists=counts,
                converted=sum(r['status'] == 'converted' for r in done.values()),
                max_lost_outside_crop=max((r['lost'] for r in done.values()), default=0.0),
                frames={name: done[name]['frames'] for name in converted})
    _write_text(out / 'convert_meta.json', json.dumps(meta, indent=1) + '\n')
    return meta


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
    meta['lists'] = write_lists(out, converted)
    _write_text(meta_path, json.dumps(meta, indent=1) + '\n')
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
                        default=Mapping.crop, help='square box cut from each frame')
    parser.add_argument('--no-crop', action='store_true', help='keep the whole frame (resized '
                        'to a square)')
    parser.add_argument('--size', type=int, default=Mapping.size, help='output side, pixels')
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
                      crop=None if args.no_crop else tuple(args.crop), size=args.size)
    try:
        meta = convert(args.source, args.out_dir, mapping, workers=args.workers,
                       force=args.force)
    except (FileNotFoundError, ValueError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    print(f'{meta["sequences"]} sequences in {args.out_dir} ({meta["converted"]} converted now), '
          f'{len(meta["failed"])} skipped; cross-subject {meta["lists"]["cross_subject_train.txt"]}'
          f' train / {meta["lists"]["cross_subject_test.txt"]} test clips; largest share of a '
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
