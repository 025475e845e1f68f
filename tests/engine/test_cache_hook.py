"""BuildFrameCacheHook writes, before the run, exactly the entries the run's FrameCacheInit
steps open; the transforms then read them and write nothing."""
import logging

import numpy as np
import pytest
from mmengine.dataset import ConcatDataset, RepeatDataset
from mmengine.logging import MMLogger
from mmengine.runner import BaseLoop
from torch.utils.data import DataLoader

from hyperframes_mm.datasets.bad_video import GuardedDataset
from hyperframes_mm.datasets.frame_cache import entry_path, open_entry, read_header
from hyperframes_mm.datasets.video_io import open_video, write_video
from hyperframes_mm.engine import BuildFrameCacheHook
from hyperframes_mm.engine.cache_hook import cache_plan

from ..conftest import moving_frames

NAMES = ('a.mp4', 'sub/b.mp4', 'sub/deeper/c.mp4')


@pytest.fixture()
def videos(tmp_path):
    root = tmp_path / 'videos'
    for index, name in enumerate(NAMES):
        write_video(root / name, moving_frames(12 + index, seed=index, size=32), fps=25)
    (root / 'list.txt').write_text(''.join(f'{name} {i}\n' for i, name in enumerate(NAMES)))
    return root


class Loop(BaseLoop):
    def run(self):
        pass


class Runner:
    """What the hook reads of an mmengine Runner: its built loops and its logger."""

    def __init__(self, **datasets):
        self.logger = MMLogger.get_current_instance()
        for name, dataset in datasets.items():
            setattr(self, f'_{name}_loop', Loop(self, DataLoader(dataset)))
        self._val_loop = getattr(self, '_val_loop', dict(type='ValLoop'))  # not built


def video_dataset(root, **init):
    from mmaction.datasets import VideoDataset
    return VideoDataset(str(root / 'list.txt'), data_prefix=dict(video=str(root)),
                        pipeline=[dict(type='FrameCacheInit', on_stale='error', **init)])


def decoded(path):
    reader = open_video(str(path))
    return reader.get_batch(list(range(len(reader)))).asnumpy()


def test_entries_beside_the_videos_are_built_then_read_with_no_fallback(videos):
    dataset = video_dataset(videos)
    with pytest.raises(Exception, match='no frame cache entry'):
        dataset[0]
    BuildFrameCacheHook().before_run(Runner(train=dataset))
    for index, name in enumerate(NAMES):
        header, frames = open_entry(videos / f'{name}.hfc', videos / name)
        np.testing.assert_array_equal(frames, decoded(videos / name))
        assert header.num_frames == 12 + index
        assert dataset[index]['total_frames'] == 12 + index  # on_stale='error': the entry


def test_a_second_run_finds_every_entry_fresh_and_writes_nothing(videos):
    hook, runner = BuildFrameCacheHook(), Runner(train=video_dataset(videos))
    hook.before_run(runner)
    stamps = {name: (videos / f'{name}.hfc').stat().st_mtime_ns for name in NAMES}
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    runner.logger.addHandler(handler)
    try:
        hook.before_run(runner)
    finally:
        runner.logger.removeHandler(handler)
    assert {name: (videos / f'{name}.hfc').stat().st_mtime_ns for name in NAMES} == stamps
    assert [line.split(' in ')[0] for line in lines if line.startswith('BuildFrameCacheHook')] \
        == ['BuildFrameCacheHook: train videos: 3 videos: 0 built, 0 rebuilt, 3 fresh, 0 failed; '
            '39 frames, 0.1 MiB cached (0.0 MiB written)']


def test_a_cache_root_with_its_video_root_and_a_short_side(videos, tmp_path):
    cache = tmp_path / 'cache'
    dataset = video_dataset(videos, cache_root=str(cache), video_root=str(videos), short_side=16)
    BuildFrameCacheHook(workers=2).before_run(Runner(test=dataset))
    for name in NAMES:
        header = read_header(entry_path(cache, name))
        assert (header.short_side, header.height, header.width) == (16, 16, 16)
    assert not list(videos.rglob('*.hfc'))


def test_wrapped_datasets_and_loops_without_the_cache(videos, tmp_path):
    from mmaction.datasets import VideoDataset
    other = tmp_path / 'other'
    write_video(other / 'x.mp4', moving_frames(10, seed=9, size=32), fps=25)
    write_video(other / 'y.mp4', moving_frames(10, seed=8, size=32), fps=25)
    (other / 'list.txt').write_text('x.mp4 0\n')
    (other / 'plain.txt').write_text('y.mp4 0\n')
    plain = VideoDataset(str(other / 'plain.txt'), data_prefix=dict(video=str(other)),
                         pipeline=[dict(type='SafeDecordInit')])
    BuildFrameCacheHook().before_run(Runner(
        train=GuardedDataset(video_dataset(videos)),
        val=RepeatDataset(plain, times=2),
        test=ConcatDataset([video_dataset(other), plain])))
    assert sorted(p.relative_to(videos).as_posix() for p in videos.rglob('*.hfc')) == sorted(
        f'{name}.hfc' for name in NAMES)
    assert sorted(p.name for p in other.glob('*.hfc')) == ['x.mp4.hfc']


def test_a_bad_video_is_named_and_the_others_are_built(videos):
    (videos / 'sub' / 'b.mp4').write_bytes(b'not a video')
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append((record.levelno, record.getMessage()))
    runner = Runner(train=video_dataset(videos))
    runner.logger.addHandler(handler)
    try:
        BuildFrameCacheHook().before_run(runner)
    finally:
        runner.logger.removeHandler(handler)
    warnings = [message for level, message in lines if level == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith('BuildFrameCacheHook: no entry for sub/b.mp4: ')
    assert (videos / 'a.mp4.hfc').is_file() and (videos / 'sub/deeper/c.mp4.hfc').is_file()
    assert not (videos / 'sub' / 'b.mp4.hfc').exists()


def test_cache_plan_names_the_entries_the_step_opens(videos):
    from hyperframes_mm.datasets.transforms import FrameCacheInit
    filenames = [str(videos / name) for name in NAMES]
    step = FrameCacheInit()
    video_root, cache_root, relatives = cache_plan(step, filenames)
    assert video_root == cache_root == str(videos)
    planned = [entry_path(cache_root, relative) for relative in relatives]
    assert planned == [step.entry_of(name) for name in filenames]
    step = FrameCacheInit(cache_root='cache')
    assert cache_plan(step, list(NAMES)) == ('.', 'cache', list(NAMES))


def test_bad_workers_are_refused():
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match='workers must be a positive int'):
            BuildFrameCacheHook(workers=bad)
