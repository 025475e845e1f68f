"""BuildFrameCacheHook writes, before the run, exactly the entries the run's FrameCacheInit
steps open; the transforms then read them and write nothing."""
import logging
import textwrap

import numpy as np
import pytest
from mmengine.dataset import ConcatDataset, RepeatDataset
from mmengine.logging import MMLogger
from mmengine.runner import BaseLoop
from torch.utils.data import DataLoader

from hyperframes_mm.datasets.annotations import AnnotationError
from hyperframes_mm.datasets.bad_video import BadVideoError, GuardedDataset
from hyperframes_mm.datasets.frame_cache import (FrameCacheError, entry_path, open_entry,
                                                 read_header)
from hyperframes_mm.datasets.video_io import open_video, write_video
from hyperframes_mm.engine import BuildFrameCacheHook
from hyperframes_mm.engine.cache_hook import MissingVideosHook
from hyperframes_mm.engine.cache_hook import cache_plan
from hyperframes_mm.utils import upstream_tool_path

from ..conftest import TINY_CONFIG, moving_frames, run_tool

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
                        pipeline=[dict(dict(type='FrameCacheInit', on_stale='error'), **init)])


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
    # a config of another short side on the same cache writes every entry again: each named,
    # with why, where the counts alone read like new videos
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    runner = Runner(test=video_dataset(videos, cache_root=str(cache), video_root=str(videos),
                                       short_side=24))
    runner.logger.addHandler(handler)
    try:
        BuildFrameCacheHook().before_run(runner)
    finally:
        runner.logger.removeHandler(handler)
    assert [line for line in lines if line.startswith('BuildFrameCacheHook: rebuilt')] == [
        f'BuildFrameCacheHook: rebuilt {name}: built with short_side=16, expected short_side=24'
        for name in sorted(NAMES)]


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


def test_a_bad_video_stops_the_run_after_the_others_are_built(videos):
    """The pipeline would decode it when it drew it, and fail there, part-way through an
    epoch: the run stops before it starts, naming the list and the video."""
    (videos / 'sub' / 'b.mp4').write_bytes(b'not a video')
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append((record.levelno, record.getMessage()))
    runner = Runner(train=video_dataset(videos))
    runner.logger.addHandler(handler)
    try:
        with pytest.raises(BadVideoError) as caught:
            BuildFrameCacheHook().before_run(runner)
    finally:
        runner.logger.removeHandler(handler)
    message = str(caught.value).splitlines()
    assert message[0] == (f'{videos / "list.txt"}: 1 video(s) cannot be decoded, so the train '
                          'loop would fail when it drew one:')
    assert message[1].startswith(f'  sub/b.mp4: {videos / "sub/b.mp4"}: cannot open the video')
    assert message[2] == ("(replace them, or wrap the dataset in "
                          "GuardedDataset(on_bad_video='skip') to skip them)")
    warnings = [message for level, message in lines if level == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith('BuildFrameCacheHook: no entry for sub/b.mp4: ')
    assert (videos / 'a.mp4.hfc').is_file() and (videos / 'sub/deeper/c.mp4.hfc').is_file()
    assert not (videos / 'sub' / 'b.mp4.hfc').exists()
    # skipped under GuardedDataset's 'skip': named in the warning, the run goes on
    BuildFrameCacheHook().before_run(Runner(train=GuardedDataset(
        video_dataset(videos, on_stale='decode'), on_bad_video='skip')))


def test_an_entry_that_cannot_be_written_leaves_the_video_to_the_pipeline(videos):
    """Not the video's fault (a directory where the entry goes: the build of that entry
    fails, the others are built): the pipeline decodes it, and the run starts."""
    (videos / 'a.mp4.hfc').mkdir()
    summary_lines = []
    handler = logging.Handler()
    handler.emit = lambda record: summary_lines.append(record.getMessage())
    runner = Runner(train=video_dataset(videos, on_stale='decode'))
    runner.logger.addHandler(handler)
    try:
        BuildFrameCacheHook().before_run(runner)
    finally:
        runner.logger.removeHandler(handler)
    assert any(line.startswith('BuildFrameCacheHook: no entry for a.mp4: ')
               for line in summary_lines)
    assert (videos / 'sub/b.mp4.hfc').is_file() and (videos / 'sub/deeper/c.mp4.hfc').is_file()


def test_a_validation_list_naming_a_missing_video_stops_training_before_it_starts(
        videos, tmp_path):
    """A dataset that decodes its videos (no frame cache): the validation loop would fail at
    its first run, after the epochs before it, and before a checkpoint of them."""
    from mmaction.datasets import VideoDataset
    (videos / 'val.txt').write_text('a.mp4 0\ngone.mp4 1\n')
    val = VideoDataset(str(videos / 'val.txt'), data_prefix=dict(video=str(videos)),
                       pipeline=[dict(type='SafeDecordInit')], test_mode=True)
    with pytest.raises(AnnotationError) as caught:
        MissingVideosHook().before_run(Runner(train=video_dataset(videos), val=val))
    assert str(caught.value).splitlines()[0] == (
        f'{videos / "val.txt"}: 1 video(s) do not exist, so the val loop would fail when it drew '
        f'one: {videos / "gone.mp4"}')
    # a folder where a video is listed is named as one
    (videos / 'gone.mp4').mkdir()
    with pytest.raises(AnnotationError) as caught:
        MissingVideosHook().before_run(Runner(train=video_dataset(videos), val=val))
    assert str(caught.value).splitlines()[0].endswith(
        f'{videos / "gone.mp4"} (a directory, not a video file)')
    (videos / 'gone.mp4').rmdir()
    # skipped under GuardedDataset's 'skip'; a run whose videos exist starts
    MissingVideosHook().before_run(Runner(val=GuardedDataset(val, on_bad_video='skip')))
    MissingVideosHook().before_run(Runner(train=video_dataset(videos)))


def test_the_runner_checks_the_videos_of_every_loop():
    from hyperframes_mm.engine.runner import HyperframeRunner
    runner = HyperframeRunner.__new__(HyperframeRunner)
    registered = []
    runner.register_hook = lambda hook, priority=None: registered.append(type(hook).__name__)
    from mmengine.runner import Runner as MMRunner
    original = MMRunner.register_hooks
    try:
        MMRunner.register_hooks = lambda self, default_hooks=None, custom_hooks=None: None
        runner.register_hooks()
    finally:
        MMRunner.register_hooks = original
    assert registered[:3] == ['ClassCountHook', 'MissingVideosHook', 'SegmentsHook']


def missing_list(root, gone):
    """``list.txt`` naming the three videos and, after the first, the ``gone`` ones."""
    names = [NAMES[0], *gone, *NAMES[1:]]
    (root / 'list.txt').write_text(''.join(f'{name} {i % 3}\n' for i, name in enumerate(names)))
    return root / 'list.txt'


@pytest.mark.parametrize('on_stale', ['decode', 'error'])
def test_a_list_naming_videos_that_do_not_exist_stops_the_run_before_anything_is_built(
        videos, on_stale):
    """Each would fail the run part-way through an epoch, when drawn; nothing is written."""
    ann = missing_list(videos, ['gone.mp4'])
    with pytest.raises(AnnotationError) as caught:
        BuildFrameCacheHook().before_run(Runner(train=video_dataset(videos, on_stale=on_stale)))
    assert str(caught.value) == (
        f'{ann}: 1 video(s) do not exist and have no frame cache entry, so the train loop would '
        f'fail when it drew one: {videos / "gone.mp4"}\n(fix the paths or data_prefix, or wrap '
        "the dataset in GuardedDataset(on_bad_video='skip') to skip them)")
    assert caught.value.ann_file == str(ann)
    # an evaluation must not skip them: it would score another sample in their place
    with pytest.raises(AnnotationError) as caught:
        BuildFrameCacheHook().before_run(Runner(test=video_dataset(videos, on_stale=on_stale)))
    assert str(caught.value).endswith(
        '(fix the paths or data_prefix, or remove them from the list (an evaluation scores '
        'every line; skipping would score another sample in their place))')
    assert sorted(path.name for path in videos.rglob('*') if path.is_file()) == [
        'a.mp4', 'b.mp4', 'c.mp4', 'list.txt']


def test_the_error_names_the_first_missing_videos_and_counts_them(videos, tmp_path):
    ann = missing_list(videos, ['x/1.mp4', '2.mp4', '3.mp4', '2.mp4', '4.mp4'])
    cache = tmp_path / 'cache'
    dataset = video_dataset(videos, cache_root=str(cache), video_root=str(videos))
    with pytest.raises(AnnotationError) as caught:
        BuildFrameCacheHook().before_run(Runner(val=GuardedDataset(dataset)))
    assert str(caught.value).splitlines()[0] == (
        f'{ann}: 4 video(s) do not exist and have no frame cache entry, so the val loop would '
        f'fail when it drew one: {videos / "x/1.mp4"}, {videos / "2.mp4"}, {videos / "3.mp4"}, '
        '... (4 in all)')
    assert not cache.exists()


def test_missing_videos_are_skipped_under_guarded_dataset_skip(videos, log_lines):
    missing_list(videos, ['gone.mp4'])
    BuildFrameCacheHook().before_run(Runner(train=GuardedDataset(
        video_dataset(videos, on_stale='decode'), on_bad_video='skip')))
    warnings = [line for line in log_lines if line.startswith('BuildFrameCacheHook: no entry')]
    assert warnings == [f'BuildFrameCacheHook: no entry for gone.mp4: {videos / "gone.mp4"}: '
                        f'source video not found (for frame cache {videos / "gone.mp4.hfc"})']
    assert sorted(path.relative_to(videos).as_posix() for path in videos.rglob('*.hfc')) == \
        sorted(f'{name}.hfc' for name in NAMES)


def test_a_missing_video_with_a_usable_entry_is_read_from_the_cache(videos):
    """The cache may outlive its videos."""
    hook = BuildFrameCacheHook()
    hook.before_run(Runner(train=video_dataset(videos)))
    frames = decoded(videos / 'a.mp4')
    (videos / 'a.mp4').unlink()
    hook.before_run(Runner(train=video_dataset(videos)))
    header, mapped = open_entry(videos / 'a.mp4.hfc')
    np.testing.assert_array_equal(mapped, frames)


def test_mmaction_train_stops_before_the_first_iteration(videos, tmp_path):
    """mmaction2's own tools/train.py on a frame-cache training list naming a missing video:
    the run stops at its start, where it used to fail part-way through the epoch with a
    decoding error and advice to build the cache."""
    ann = missing_list(videos, ['gone.mp4'])
    config = tmp_path / 'missing.py'
    config.write_text(textwrap.dedent(f"""
        _base_ = [{str(TINY_CONFIG)!r}]
        train_dataloader = dict(dataset=dict(
            type='CheckedVideoDataset', ann_file={str(ann)!r},
            data_prefix=dict(video={str(videos)!r}),
            pipeline=[dict(type='FrameCacheInit', on_stale='decode'),
                      dict(type='SampleFrames', clip_len=5, frame_interval=2, num_clips=1),
                      dict(type='FrameCacheDecode'),
                      dict(type='Resize', scale=(32, 32), keep_ratio=False),
                      dict(type='HyperframeStack'), dict(type='PackActionInputs')]))
        val_dataloader = val_cfg = val_evaluator = None
        custom_hooks = [dict(type='BuildFrameCacheHook')]
        train_cfg = dict(max_epochs=1, val_interval=1)
    """))
    result = run_tool([upstream_tool_path('train'), config, '--work-dir', tmp_path / 'work'],
                      videos, check=False)
    assert result.returncode != 0
    assert result.stderr.rstrip().splitlines()[-2:] == [
        f'hyperframes_mm.datasets.annotations.AnnotationError: {ann}: 1 video(s) do not exist '
        'and have no frame cache entry, so the train loop would fail when it drew one: '
        f'{videos / "gone.mp4"}',
        "(fix the paths or data_prefix, or wrap the dataset in GuardedDataset(on_bad_video="
        "'skip') to skip them)"]
    assert 'Epoch(train)' not in result.stdout + result.stderr
    assert not list(videos.rglob('*.hfc'))


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


@pytest.mark.parametrize('on_stale', ['decode', 'error'])
def test_entries_that_cannot_be_written_stop_a_run_that_reads_entries_only(videos, tmp_path,
                                                                           on_stale):
    """With on_stale='error' the first video drawn failed part-way through an epoch; with
    'decode' the pipeline decodes it, and the run goes on."""
    blocked = tmp_path / 'a_file'
    blocked.write_text('not a folder')
    runner = Runner(train=video_dataset(videos, on_stale=on_stale,
                                        cache_root=str(blocked / 'cache'),
                                        video_root=str(videos)))
    if on_stale == 'decode':
        BuildFrameCacheHook().before_run(runner)
        return
    with pytest.raises(FrameCacheError) as caught:
        BuildFrameCacheHook().before_run(runner)
    message = str(caught.value).splitlines()
    assert message[0] == (
        f'{videos / "list.txt"}: 3 frame cache entries could not be written, and '
        "FrameCacheInit(on_stale='error') reads entries only, so the train loop would fail when "
        'it drew one:')
    assert message[1].startswith(f'  {NAMES[0]}: ') and len(message) == 5
    assert message[4] == ("(give the cache a folder it can write, or on_stale='decode' to "
                          'decode those videos)')
