"""Build the frame cache a run reads before the run, in one place, through the builder.

The loading transforms only read (``datasets/transforms/cache_loading.py``); this hook is what
writes, so a config that trains from the frame cache works on a dataset whose cache was never
built, with mmaction2's own ``tools/train.py``, and every entry is written once, atomically, by
one process, before any DataLoader worker starts.
"""
import os
from typing import Iterator, List, Tuple

from mmengine.hooks import Hook
from mmengine.runner import BaseLoop

from mmaction.registry import HOOKS

from ..datasets.frame_cache import build_frame_cache
from ..datasets.transforms.cache_loading import FrameCacheInit
from ..utils import positive_int
from .distributed import main_process_first

#: the runner's loops, by the name a log line gives them
_LOOPS = (('train', '_train_loop'), ('val', '_val_loop'), ('test', '_test_loop'))


def leaf_datasets(dataset) -> Iterator:
    """The datasets inside mmengine's wrappers (``ConcatDataset``, ``RepeatDataset``, the
    plugin's ``GuardedDataset``): the ones with a pipeline and samples of their own."""
    if hasattr(dataset, 'datasets'):
        for inner in dataset.datasets:
            yield from leaf_datasets(inner)
    elif hasattr(dataset, 'dataset'):
        yield from leaf_datasets(dataset.dataset)
    else:
        yield dataset


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


def cache_reads(runner) -> Iterator[Tuple[str, FrameCacheInit, List[str]]]:
    """``(loop name, FrameCacheInit step, video filenames)`` of every dataset of the runner's
    built loops that reads the frame cache."""
    for loop_name, attr in _LOOPS:
        loop = getattr(runner, attr, None)
        if not isinstance(loop, BaseLoop) or not hasattr(loop, 'dataloader'):
            continue  # not built: a config dict, or a loop without data
        for dataset in leaf_datasets(loop.dataloader.dataset):
            step = cache_step(dataset)
            if step is None:
                continue
            if hasattr(dataset, 'full_init'):
                dataset.full_init()
            filenames = [dataset.get_data_info(index)['filename']
                         for index in range(len(dataset))]
            if filenames:
                yield loop_name, step, filenames


@HOOKS.register_module()
class BuildFrameCacheHook(Hook):
    """Before the run, build the frame cache entries that its datasets' ``FrameCacheInit``
    steps will open: missing and stale ones, skipping fresh ones (cheap once built).

    Every loop the runner has built (train and val for ``tools/train.py``, test for
    ``tools/test.py``) is looked at; a dataset whose pipeline has no ``FrameCacheInit`` is left
    alone. Under distributed training rank 0 builds and the other ranks find the entries in
    place. A video that cannot be decoded is named in a warning and left without an entry, so
    the pipeline meets it as it would without the cache (``FrameCacheInit(on_stale='decode')``
    then fails on it the same way decoding does, which ``GuardedDataset`` can skip).

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
        for loop_name, step, filenames in cache_reads(runner):
            video_root, cache_root, videos = cache_plan(step, filenames)
            with main_process_first(what='building the frame cache'):
                summary = build_frame_cache(videos, video_root, cache_root,
                                            short_side=step.short_side, workers=self.workers,
                                            verify=self.verify, progress=is_main_process())
            runner.logger.info(f'BuildFrameCacheHook: {loop_name} videos: {summary}')
            for video, error in summary.failed.items():
                runner.logger.warning(f'BuildFrameCacheHook: no entry for {video}: {error}')
