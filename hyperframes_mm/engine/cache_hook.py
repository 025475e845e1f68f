"""Build the frame cache a run reads before the run, in one place, through the builder.

The loading transforms only read (``datasets/transforms/cache_loading.py``); this hook is what
writes, so a config that trains from the frame cache works on a dataset whose cache was never
built, with mmaction2's own ``tools/train.py``, and every entry is written once, atomically, by
one process, before any DataLoader worker starts.
"""
import os
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from mmengine.hooks import Hook
from mmengine.runner import BaseLoop

from mmaction.registry import HOOKS

from ..datasets.annotations import AnnotationError
from ..datasets.bad_video import (BadVideoError, GuardedDataset, decodes_with_decord,
                                  decord_path, not_a_file_note)
from ..datasets.frame_cache import FrameCacheError, build_frame_cache, entry_problem
from ..datasets.transforms.cache_loading import FrameCacheInit
from ..utils import positive_int
from .checkpoint import first_names
from .distributed import main_process_first

#: how to build the cache before a run: for a rank that waited for rank 0's build longer than
#: the process group's timeout
BUILD_AHEAD = ('python tools/build_frame_cache.py ANN_FILE VIDEO_ROOT CACHE_ROOT for each list '
               'the config caches; the entries rank 0 wrote so far are kept, and a relaunch '
               'skips them')
#: the runner's loops, by the name a log line gives them
_LOOPS = (('train', '_train_loop'), ('val', '_val_loop'), ('test', '_test_loop'))


def leaf_datasets(dataset, skips: bool = False) -> Iterator[Tuple[object, bool]]:
    """The datasets inside mmengine's wrappers (``ConcatDataset``, ``RepeatDataset``, the
    plugin's ``GuardedDataset``): the ones with a pipeline and samples of their own, each with
    whether a ``GuardedDataset(on_bad_video='skip')`` around it skips its bad videos."""
    skips = skips or (isinstance(dataset, GuardedDataset) and dataset.on_bad_video == 'skip')
    if hasattr(dataset, 'datasets'):
        for inner in dataset.datasets:
            yield from leaf_datasets(inner, skips)
    elif hasattr(dataset, 'dataset'):
        yield from leaf_datasets(dataset.dataset, skips)
    else:
        yield dataset, skips


def cache_step(dataset):
    """The dataset's ``FrameCacheInit`` step, or None when it does not read the cache."""
    transforms = getattr(getattr(dataset, 'pipeline', None), 'transforms', ())
    return next((step for step in transforms if isinstance(step, FrameCacheInit)), None)


def cache_plan(step: FrameCacheInit, filenames: List[str]) -> Tuple[str, str, List[str]]:
    """``(video_root, cache_root, video paths relative to video_root)``: the builder call that
    writes exactly the entries ``step`` opens for ``filenames``."""
    if step.cache_root is None:
        # beside each video: one root holding them all, whose mirror is the videos' folders
        root = os.path.commonpath([os.path.dirname(os.path.abspath(name)) for name in filenames])
        return root, root, [os.path.relpath(os.path.abspath(name), root) for name in filenames]
    video_root = step.video_root if step.video_root is not None else os.curdir
    return video_root, step.cache_root, [step.relative_path(name) for name in filenames]


class VideoRead(NamedTuple):
    """A dataset of a built loop whose samples are video files: the ``loop`` name
    (``'train'``, ...), its ``FrameCacheInit`` ``step`` (None when it decodes its videos), its
    list file (``ann_file``, ``''`` if none), its samples' video ``filenames``, whether a
    ``GuardedDataset`` ``skips`` its bad videos, and whether its pipeline reads a name without
    an extension as its ``.mp4`` file (``decord_names``: :func:`decodes_with_decord`)."""
    loop: str
    step: Optional[FrameCacheInit]
    ann_file: str
    filenames: List[str]
    skips: bool
    decord_names: bool = False


def built_loops(runner) -> Iterator[Tuple[str, BaseLoop]]:
    """``(name, loop)`` of the runner's loops that are built and read data (at ``before_run``:
    the ones the command runs; the others are still config dicts)."""
    for loop_name, attr in _LOOPS:
        loop = getattr(runner, attr, None)
        if isinstance(loop, BaseLoop) and hasattr(loop, 'dataloader'):
            yield loop_name, loop


def video_reads(runner) -> Iterator[VideoRead]:
    """Every dataset of the runner's built loops whose samples name video files (a
    ``filename``), through the frame cache or not."""
    for loop_name, loop in built_loops(runner):
        for dataset, skips in leaf_datasets(loop.dataloader.dataset):
            if not callable(getattr(dataset, 'get_data_info', None)):
                continue
            if hasattr(dataset, 'full_init'):
                dataset.full_init()
            infos = [dataset.get_data_info(index) for index in range(len(dataset))]
            if not infos or not all(isinstance(info, dict) and isinstance(
                    info.get('filename'), str) for info in infos):
                continue
            pipeline = getattr(getattr(dataset, 'pipeline', None), 'transforms', None)
            yield VideoRead(loop_name, cache_step(dataset),
                            str(getattr(dataset, 'ann_file', '') or ''),
                            [info['filename'] for info in infos], skips,
                            decodes_with_decord(pipeline))


def cache_reads(runner) -> Iterator[VideoRead]:
    """Every dataset of the runner's built loops that reads the frame cache."""
    return (read for read in video_reads(runner) if read.step is not None)


def unreadable_videos(step: Optional[FrameCacheInit], filenames: List[str],
                      decord_names: bool = False) -> List[str]:
    """The ``filenames`` (each once, in order) that do not exist and, read through the frame
    cache (``step``), have no usable entry: no reader can give their frames, so every sample of
    one fails when it is drawn. A video with a usable entry is not among them: the cache may
    outlive its videos. Names with a scheme (``s3://...``) are a file backend's, not looked up;
    with ``decord_names`` (no cache) a name without an extension is looked up as DecordInit
    reads it, its ``.mp4`` file."""
    unreadable = []
    for filename in dict.fromkeys(filenames):
        # decoded by DecordInit (decord_names), a name without an extension reads its .mp4
        # file; the frame cache and other openers read a video by the name the list gives
        if '://' in filename or os.path.isfile(decord_path(filename) if step is None and
                                               decord_names else filename):
            continue
        if step is None or entry_problem(step.entry_of(filename), filename,
                                         step.short_side) is not None:
            unreadable.append(filename)
    return unreadable


def refuse_missing_videos(read: VideoRead) -> None:
    """Stop the run before it starts when a list names videos that do not exist (and have no
    entry), unless a ``GuardedDataset`` skips them: otherwise the run fails part-way through an
    epoch, when the first of them is drawn.

    Raises:
        AnnotationError: naming the list, how many videos are missing and the first few.
    """
    if read.skips:
        return
    missing = unreadable_videos(read.step, read.filenames, read.decord_names)
    if missing:
        raise AnnotationError(
            f'{_where(read)}: {len(missing)} video(s) do not exist'
            f'{" and have no frame cache entry" if read.step is not None else ""}, so '
            f'the {read.loop} loop would fail when it drew one: '
            f'{first_names([name + not_a_file_note(name) for name in missing])}\n(fix '
            f'the paths or data_prefix, or {_leave_out(read.loop)})', read.ann_file)


def refuse_failed_videos(read: VideoRead, failed: Dict[str, str]) -> None:
    """Stop the run before it starts when videos of a list (``failed``: video -> why) could
    not be decoded to build their entries (an entry that could not be written is not among
    them: the pipeline decodes its video instead), unless a ``GuardedDataset`` skips bad
    videos: the pipeline decodes them the same way when it draws them, and the first one drawn
    would end the run part-way through an epoch.

    Raises:
        BadVideoError: naming the list, how many videos failed and the first few with why.
    """
    if read.skips or not failed:
        return
    raise BadVideoError(
        f'{_where(read)}: {len(failed)} video(s) cannot be decoded, so the {read.loop} loop '
        f'would fail when it drew one:\n{_first_few(failed)}\n(replace them, or '
        f'{_leave_out(read.loop)})', next(iter(failed)))


def refuse_unwritten_entries(read: VideoRead, unwritten: Dict[str, str],
                             lost: Sequence[str] = ()) -> None:
    """Stop the run before it starts when entries of decodable videos could not be written
    (``unwritten``: video -> why; a cache root under a file, a full disk, or a worker process
    that died building the entry, those named in ``lost``) and its
    ``FrameCacheInit(on_stale='error')`` reads entries only: the first such video drawn would
    end the run part-way through an epoch. With ``'decode'`` the pipeline decodes them.

    Raises:
        FrameCacheError: naming the list, how many entries and the first few with why, and
            what to do for each kind.
    """
    if read.skips or not unwritten or read.step.on_stale != 'error':
        return
    ways = []
    if set(unwritten) - set(lost):
        ways.append('give the cache a folder it can write')
    if set(unwritten) & set(lost):
        ways.append('build it again with fewer workers or more free memory (a process '
                    'building an entry was killed)')
    raise FrameCacheError(
        f'{_where(read)}: {len(unwritten)} frame cache entries could not be written, and '
        f'FrameCacheInit(on_stale=\'error\') reads entries only, so the {read.loop} loop would '
        f'fail when it drew one:\n{_first_few(unwritten)}\n({", ".join(ways)}, or '
        'on_stale=\'decode\' to decode those videos)')


def _where(read: VideoRead) -> str:
    """The list a refusal names, or the loop's dataset where it has none."""
    return read.ann_file or f'the {read.loop} dataset'


def _first_few(failed: Dict[str, str], shown: int = 3) -> str:
    """The first ``shown`` videos of ``failed`` with why, a line each, and how many in all."""
    lines = [f'  {video}: {error}' for video, error in list(failed.items())[:shown]]
    return '\n'.join(lines + ([f'  ... ({len(failed)} in all)'] if len(failed) > shown else []))


def _leave_out(loop: str) -> str:
    """How to go on without some videos of the ``loop``'s list: training may skip them (a
    skipped sample is replaced by another), an evaluation must not (it would score the
    replacement twice), so there they leave the list."""
    if loop == 'train':
        return "wrap the dataset in GuardedDataset(on_bad_video='skip') to skip them"
    return ('remove them from the list (an evaluation scores every line; skipping would score '
            'another sample in their place)')


@HOOKS.register_module()
class MissingVideosHook(Hook):
    """Before a run (``before_run``, its loops built, nothing read yet): every dataset of the
    loops the run will read whose samples are video files is checked for videos that do not
    exist (and, read through the frame cache, have no entry): :func:`refuse_missing_videos`.
    :class:`~hyperframes_mm.engine.runner.HyperframeRunner` registers it, so a validation or
    test list that names a missing video stops ``tools/train.py`` before its first epoch
    rather than at its first validation, with its epochs unsaved."""

    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        for read in video_reads(runner):
            refuse_missing_videos(read)


@HOOKS.register_module()
class BuildFrameCacheHook(Hook):
    """Before the run, build the frame cache entries that its datasets' ``FrameCacheInit``
    steps will open: missing and stale ones, skipping fresh ones (cheap once built).

    Every loop the runner has built (train and val for ``tools/train.py``, test for
    ``tools/test.py``) is looked at; a dataset whose pipeline has no ``FrameCacheInit`` is left
    alone. Under distributed training rank 0 builds and the other ranks find the entries in
    place. A video that cannot be decoded is named in a warning and left without an entry; the
    run then stops before it starts with a ``BadVideoError`` naming the list and the videos
    (:func:`refuse_failed_videos`), unless a ``GuardedDataset(on_bad_video='skip')`` skips
    them, which it then does when they are drawn.

    A list that names videos that do not exist (and have no entry) stops the run before
    anything is built, with an ``AnnotationError`` naming the list and the videos: every sample
    of them would fail, and the first one drawn would end the run part-way through an epoch.
    Under ``GuardedDataset(on_bad_video='skip')`` they are named in warnings and skipped.

    ``custom_hooks = [dict(type='BuildFrameCacheHook', workers=2)]``

    Args:
        workers (int): processes decoding in parallel. Defaults to 1.
        verify (bool): recompute the checksum of existing entries before calling them fresh.
            Defaults to False.
    """

    priority = 'VERY_HIGH'

    def __init__(self, workers: int = 1, verify: bool = False) -> None:
        self.workers = positive_int(workers, 'workers', 'BuildFrameCacheHook')
        self.verify = verify

    def before_run(self, runner) -> None:
        from mmengine.dist import is_main_process
        reads = list(cache_reads(runner))
        # Every rank checks, and before anything is built: a run that cannot start writes
        # nothing, and no rank waits at the builder's barrier for one that stopped.
        for read in reads:
            refuse_missing_videos(read)
        for read in reads:
            video_root, cache_root, videos = cache_plan(read.step, read.filenames)
            with main_process_first(what='building the frame cache', ahead=BUILD_AHEAD):
                summary = build_frame_cache(videos, video_root, cache_root,
                                            short_side=read.step.short_side,
                                            workers=self.workers, verify=self.verify,
                                            progress=is_main_process())
            runner.logger.info(f'BuildFrameCacheHook: {read.loop} videos: {summary}')
            for line in summary.rebuilt_lines():
                # an entry written again each run: another config's short side, or a disk
                # that damages it, which the counts alone do not tell from new videos
                runner.logger.warning(f'BuildFrameCacheHook: {line}')
            for video, error in summary.failed.items():
                runner.logger.warning(f'BuildFrameCacheHook: no entry for {video}: {error}')
            refuse_failed_videos(read, {video: summary.failed[video]
                                        for video in summary.undecodable})
            refuse_unwritten_entries(read, {video: error
                                            for video, error in summary.failed.items()
                                            if video not in summary.undecodable},
                                     summary.lost)
