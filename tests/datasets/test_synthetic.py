"""The synthetic motion benchmark: classes, rendering, generation, determinism and the probes."""
import json
import os

import decord
import numpy as np
import pytest
from scipy import ndimage, stats

from hyperframes_mm.datasets.synthetic import (CLASS_GROUPS, MOTION_CLASSES, PRESETS, Preset,
                                               actor_motion, check_classes, class_groups,
                                               clip_rng, flip_label_map, load_meta,
                                               make_synthetic_dataset, render_clip,
                                               sample_scene)
from hyperframes_mm.datasets.synthetic import classes as cls
from hyperframes_mm.datasets.synthetic import render
from hyperframes_mm.datasets.synthetic.probe import (SoftmaxProbe, motion_features,
                                                     probe_accuracies, single_frame_features)

from ..conftest import load_script

TINY = ['swipe_left', 'swipe_right', 'drift_left', 'drift_right']


def _decode(path):
    reader = decord.VideoReader(str(path))
    return reader.get_batch(list(range(len(reader)))).asnumpy(), reader.get_avg_fps()


# ---- classes -------------------------------------------------------------------------------

def test_presets_classes_groups_and_flip_maps():
    assert list(PRESETS['tiny'].classes) == TINY
    assert len(PRESETS['default'].classes) == 10 and len(PRESETS['full'].classes) == 12
    assert flip_label_map(PRESETS['tiny'].classes) == {0: 1, 1: 0, 2: 3, 3: 2}
    assert flip_label_map(PRESETS['default'].classes) == {0: 1, 1: 0, 5: 6, 6: 5}
    assert flip_label_map(PRESETS['full'].classes) == {0: 1, 1: 0, 5: 6, 6: 5, 10: 11, 11: 10}
    assert class_groups(PRESETS['default'].classes) == dict(
        fast=['swipe_left', 'swipe_right', 'fall', 'hop', 'shake'],
        slow=['drift_left', 'drift_right', 'lie_down', 'approach', 'recede'])
    assert class_groups(['drift_left']) == dict(fast=[], slow=['drift_left'])
    assert sorted(CLASS_GROUPS['fast'] + CLASS_GROUPS['slow']) == sorted(MOTION_CLASSES)
    for name, motion_class in MOTION_CLASSES.items():
        mirror = MOTION_CLASSES[motion_class.mirror]
        assert mirror.mirror == name and mirror.group == motion_class.group


@pytest.mark.parametrize('classes, message', [
    (['swipe_left', 'fall'], 'becomes .swipe_right. under a horizontal flip'),
    (['nope'], 'unknown'), ([], 'empty'), (['fall', 'fall'], 'repeated')])
def test_bad_class_lists_are_refused(classes, message):
    with pytest.raises(ValueError, match=message):
        flip_label_map(classes)
    if message != 'becomes .swipe_right. under a horizontal flip':
        with pytest.raises(ValueError, match=message):
            check_classes(classes)


def test_smoothstep_exact():
    np.testing.assert_array_equal(cls.smoothstep(np.array([-1.0, 0.0, 0.5, 1.0, 2.0])),
                                  [0.0, 0.0, 0.5, 1.0, 1.0])


def test_slow_motions_exact():
    times = np.array([0.0, 1.0, 2.0])
    drift = actor_motion('drift_left', times, 2.0, np.random.default_rng(0))
    v = cls.SLOW_SPEED
    np.testing.assert_allclose(drift.offset, [[0, 0], [0, -v], [0, -2 * v]])
    assert np.ptp(drift.scale_phase) == 0 and 0 <= drift.scale_phase[0] <= 1
    np.testing.assert_array_equal(drift.turn, 0)
    lie_down = actor_motion('lie_down', times, 2.0, np.random.default_rng(0))
    np.testing.assert_allclose(lie_down.offset, [[0, 0], [v, 0], [2 * v, 0]])
    np.testing.assert_allclose(
        actor_motion('approach', times, 2.0, np.random.default_rng(0)).scale_phase, [0, .5, 1])
    np.testing.assert_allclose(
        actor_motion('recede', times, 2.0, np.random.default_rng(0)).scale_phase, [1, .5, 0])
    np.testing.assert_allclose(
        actor_motion('rotate_cw', times, 2.0, np.random.default_rng(0)).turn,
        [0, np.pi / 2, np.pi])


@pytest.mark.parametrize('name', ['swipe_left', 'fall'])
def test_fast_steps_are_quick_moves_of_fast_step_with_rests(name):
    times = np.arange(0, 30, 0.01)
    motion = actor_motion(name, times, 30.0, np.random.default_rng(3))
    along = -motion.offset[:, 1] if name == 'swipe_left' else motion.offset[:, 0]
    assert np.all(np.diff(along) >= 0)
    # one FAST_STEP per event, one event per period
    assert 30 / cls.FAST_PERIOD_S[1] - 1 <= along[-1] / cls.FAST_STEP <= 30 / cls.FAST_PERIOD_S[0] + 1
    # on average a fast class moves faster than the slow class of the same direction
    assert along[-1] / 30 > cls.SLOW_SPEED
    moving = np.diff(along) > 0
    # quick steps with rests: the actor moves during at most FAST_EVENT_S of each period
    assert moving.mean() <= cls.FAST_EVENT_S / cls.FAST_PERIOD_S[0] + 0.01
    assert moving.mean() >= cls.FAST_EVENT_S / cls.FAST_PERIOD_S[1] - 0.01


def test_hop_and_shake_return_to_rest():
    times = np.arange(0, 10, 0.001)
    hop = actor_motion('hop', times, 10.0, np.random.default_rng(1)).offset
    assert hop[:, 0].max() == 0 and abs(hop[:, 0].min() + cls.HOP_HEIGHT) < 1e-5
    np.testing.assert_array_equal(hop[:, 1], 0)
    shake = actor_motion('shake', times, 10.0, np.random.default_rng(1)).offset
    assert np.abs(shake[:, 1]).max() <= cls.SHAKE_AMPLITUDE
    assert np.mean(shake[:, 1] == 0) > 0.25  # rests between wiggles


def test_mirror_classes_are_horizontal_mirror_images():
    times = np.arange(0, 2, 1 / 30)
    for name, motion_class in MOTION_CLASSES.items():
        motion = actor_motion(name, times, 2.0, np.random.default_rng(5))
        mirrored = actor_motion(motion_class.mirror, times, 2.0, np.random.default_rng(5))
        np.testing.assert_array_equal(mirrored.offset[:, 0], motion.offset[:, 0])
        np.testing.assert_array_equal(mirrored.scale_phase, motion.scale_phase)
        if name == 'shake':  # flip-invariant in distribution: each wiggle starts either way
            continue
        np.testing.assert_array_equal(mirrored.offset[:, 1], -motion.offset[:, 1])
        np.testing.assert_array_equal(mirrored.turn, -motion.turn)


def test_every_class_moves_differently():
    times = np.arange(0, 2, 1 / 30)
    motions = {name: actor_motion(name, times, 2.0, np.random.default_rng(7))
               for name in MOTION_CLASSES}
    flat = {name: np.concatenate([m.offset.ravel(), m.scale_phase, m.turn])
            for name, m in motions.items()}
    names = list(flat)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not np.allclose(flat[a], flat[b]), (a, b)


def test_actor_motion_errors():
    with pytest.raises(ValueError, match='unknown'):
        actor_motion('moonwalk', np.zeros(3), 2.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match='too short'):
        actor_motion('fall', np.zeros(3), 1.0, np.random.default_rng(0))


# ---- rendering -----------------------------------------------------------------------------

def test_smooth_signal_is_bounded_and_defined_in_seconds():
    fast = render.smooth_signal(np.random.default_rng(2), np.arange(60) / 30, 0.5, (1, 3), 2)
    slow = render.smooth_signal(np.random.default_rng(2), np.arange(30) / 15, 0.5, (1, 3), 2)
    np.testing.assert_allclose(fast[::2], slow, atol=1e-12)
    assert np.abs(fast).max() <= 0.5


def test_background_matches_formula_and_shifts_with_camera():
    background = render.draw_background(np.random.default_rng(4))
    size = 32
    basis = render.background_basis(background, size)
    still = render.render_background(background, basis, np.zeros(2), size)
    coords = (np.arange(size) + 0.5) / size
    projection = (coords[:, None, None] * np.sin(background.directions)
                  + coords[None, :, None] * np.cos(background.directions))
    expected = background.base + np.sin(2 * np.pi * background.frequencies * projection
                                        + background.phases) @ background.amplitudes
    np.testing.assert_allclose(still, expected, atol=1e-2)
    moved = render.render_background(background, basis, np.array([0.0, 1.0 / size]), size)
    np.testing.assert_allclose(moved[:, 1:], still[:, :-1], atol=1e-2)


def _disc(colour=255.0):
    return render.Appearance(colours=np.full((2, 3), colour), harmonics=np.zeros(2),
                             harmonic_phases=np.zeros(2), stripe=np.array([1.0, 0.0, 0.0]))


def test_object_area_and_torus_wrap():
    frame = np.zeros((64, 64, 3), np.float32)
    render.composite_object(frame, _disc(), np.array([0.5, 0.5]), 0.125, 0.0)
    assert abs(frame[..., 0].sum() / 255 - np.pi * 8 ** 2) < 0.01 * np.pi * 8 ** 2
    corner = np.zeros_like(frame)
    render.composite_object(corner, _disc(), np.array([0.0, 0.0]), 0.125, 0.0)
    np.testing.assert_allclose(corner, np.roll(frame, (-32, -32), axis=(0, 1)), atol=1e-3)
    again = np.zeros_like(frame)
    render.composite_object(again, _disc(), np.array([1.0, 2.0]), 0.125, 0.0)
    np.testing.assert_allclose(again, corner, atol=1e-3)


def test_scene_structure_and_render():
    scene = sample_scene('hop', np.random.default_rng(0), 2.0, (15.0, 25.0))
    assert scene.fps in (15.0, 25.0) and len(scene.times) == round(2.0 * scene.fps)
    assert 2 <= len(scene.objects) <= 3 and 0 <= scene.actor < len(scene.objects)
    for track in scene.objects:
        assert np.all((track.centre >= 0) & (track.centre < 1))
    frames = render.render_scene(scene, 32, np.random.default_rng(1))
    assert frames.shape == (len(scene.times), 32, 32, 3) and frames.dtype == np.uint8
    np.testing.assert_array_equal(frames, render.render_scene(scene, 32,
                                                              np.random.default_rng(1)))


def _one_frame_state(name, count, frame=None):
    """Actor y, x, radius and angle at one frame (random unless given) of ``count`` scenes."""
    values = []
    for index in range(count):
        rng = np.random.default_rng([11, index])
        scene = sample_scene(name, rng, 2.0, (15.0, 25.0, 30.0))
        t = rng.integers(len(scene.times)) if frame is None else frame
        actor = scene.objects[scene.actor]
        values.append([*actor.centre[t], actor.radius[t], actor.angle[t] % (2 * np.pi)])
    return np.array(values)


def test_single_frame_state_has_one_distribution_in_every_class():
    reference = _one_frame_state('drift_left', 300)
    for name in MOTION_CLASSES:
        state = _one_frame_state(name, 300)
        for column, what in enumerate(['y', 'x', 'radius', 'angle']):
            p = stats.ks_2samp(state[:, column], reference[:, column]).pvalue
            assert p > 1e-3, f'{name}: {what} of one random frame differs (KS p={p:.2g})'
    # the test has power: a fixed first frame does give approach away through its size
    first = stats.ks_2samp(_one_frame_state('approach', 300, frame=0)[:, 2], reference[:, 2])
    assert first.pvalue < 1e-6


# ---- generation ----------------------------------------------------------------------------

def test_tiny_dataset_files_exact(tiny_dataset):
    assert (tiny_dataset / 'classes.txt').read_text() == ''.join(f'{c}\n' for c in TINY)
    assert (tiny_dataset / 'train.txt').read_text() == ''.join(
        f'train/{c}_{i:04d}.mp4 {label}\n' for label, c in enumerate(TINY) for i in range(4))
    assert (tiny_dataset / 'val.txt').read_text() == ''.join(
        f'val/{c}_{i:04d}.mp4 {label}\n' for label, c in enumerate(TINY) for i in range(2))
    raw = json.loads((tiny_dataset / 'meta.json').read_text())
    assert raw['flip_label_map'] == {'0': 1, '1': 0, '2': 3, '3': 2}
    meta = load_meta(tiny_dataset)
    assert meta['flip_label_map'] == {0: 1, 1: 0, 2: 3, 3: 2}
    assert meta['groups'] == dict(fast=TINY[:2], slow=TINY[2:])
    assert meta['params'] == dict(generator_version=4, preset='tiny', classes=TINY,
                                  clips_per_class=dict(train=4, val=2), seed=0, size=64,
                                  duration=2.0, fps=[15.0, 25.0, 30.0])
    assert len(meta['videos']) == 24
    for relative, info in meta['videos'].items():
        frames, fps = _decode(tiny_dataset / relative)
        assert frames.shape == (info['num_frames'], 64, 64, 3)
        assert fps == info['fps'] and info['num_frames'] == round(2.0 * fps)
        assert info['codec'] == 'libx264'


def test_mmaction_video_dataset_reads_the_lists(tiny_dataset):
    from mmaction.datasets import VideoDataset
    dataset = VideoDataset(str(tiny_dataset / 'val.txt'), pipeline=[],
                           data_prefix=dict(video=str(tiny_dataset)))
    assert len(dataset) == 8
    assert [dataset.get_data_info(i)['label'] for i in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert dataset.get_data_info(7)['filename'] == str(tiny_dataset / 'val/drift_right_0001.mp4')


def test_video_holds_the_rendered_clip(tiny_dataset):
    frames, fps = render_clip('drift_right', clip_rng(0, 'val', 'drift_right', 1), 64, 2.0,
                              (15.0, 25.0, 30.0))
    decoded, decoded_fps = _decode(tiny_dataset / 'val/drift_right_0001.mp4')
    assert decoded_fps == fps and decoded.shape == frames.shape
    # H.264 at crf 18 drops most of the per-pixel noise: compare the low-passed clips
    blur = lambda clip: ndimage.gaussian_filter(clip.astype(float), (0, 1.5, 1.5, 0))  # noqa
    assert np.abs(blur(decoded) - blur(frames)).mean() < 3.0
    other = _decode(tiny_dataset / 'val/drift_right_0000.mp4')[0]
    n = min(len(other), len(frames))
    assert np.abs(blur(other[:n]) - blur(frames[:n])).mean() > 20.0


def test_same_seed_same_bytes_whatever_the_workers(tiny_dataset, tmp_path):
    make_synthetic_dataset(tmp_path, dict(train=4, val=2), seed=0, workers=1, progress=False)
    for name in ['train.txt', 'val.txt', 'classes.txt', 'meta.json']:
        assert (tmp_path / name).read_bytes() == (tiny_dataset / name).read_bytes()
    videos = list(load_meta(tmp_path)['videos'])
    for relative in videos:  # libx264 with one thread and fixed options: identical files
        assert (tmp_path / relative).read_bytes() == (tiny_dataset / relative).read_bytes()
    for relative in videos[::6]:
        np.testing.assert_array_equal(_decode(tmp_path / relative)[0],
                                      _decode(tiny_dataset / relative)[0])


def test_clip_depends_only_on_seed_split_class_index(tiny_dataset, tmp_path):
    make_synthetic_dataset(tmp_path, dict(train=1), preset='default', classes=['drift_left'],
                           workers=1, progress=False)
    assert ((tmp_path / 'train/drift_left_0000.mp4').read_bytes()
            == (tiny_dataset / 'train/drift_left_0000.mp4').read_bytes())
    assert load_meta(tmp_path)['flip_label_map'] is None  # drift_right is missing
    draws = [clip_rng(*key).integers(1 << 30) for key in
             [(0, 'train', 'fall', 0), (1, 'train', 'fall', 0), (0, 'val', 'fall', 0),
              (0, 'train', 'hop', 0), (0, 'train', 'fall', 1)]]
    assert len(set(draws)) == 5


def test_rerun_keeps_a_complete_dataset_and_redoes_an_incomplete_one(tmp_path):
    def make(seed=0):
        return make_synthetic_dataset(tmp_path, dict(train=1, val=1), seed=seed, workers=1,
                                      progress=False)

    assert make() == dict(train=tmp_path / 'train.txt', val=tmp_path / 'val.txt')
    video = tmp_path / 'train/swipe_left_0000.mp4'
    stamp = video.stat().st_mtime_ns
    os.utime(video, ns=(stamp - 10 ** 9, stamp - 10 ** 9))
    make()
    assert video.stat().st_mtime_ns == stamp - 10 ** 9  # nothing rewritten
    (tmp_path / 'meta.json').unlink()  # as after a killed run, its mark left
    (tmp_path / '.synthetic-build.json').write_text('{}\n')
    make()
    assert video.stat().st_mtime_ns != stamp - 10 ** 9
    (tmp_path / 'val/drift_right_0000.mp4').unlink()
    make()
    assert (tmp_path / 'val/drift_right_0000.mp4').is_file()
    first = video.read_bytes()
    make(seed=1)
    assert load_meta(tmp_path)['params']['seed'] == 1 and video.read_bytes() != first


@pytest.mark.parametrize('kwargs, message', [
    (dict(preset='huge'), 'preset: unknown'),
    (dict(clips_per_class={}), 'no split'),
    (dict(clips_per_class={'tr ain': 1}), 'split name'),
    (dict(clips_per_class={'train': -1}), r'clips_per_class\[.train.\]'),
    (dict(clips_per_class={'train': True}), r'clips_per_class\[.train.\]'),
    (dict(clips_per_class={'train': 1.5}), r'clips_per_class\[.train.\]'),
    (dict(seed=-1), 'seed'), (dict(seed=True), 'seed'), (dict(workers=0), 'workers'),
    (dict(classes=['nope']), 'unknown'), (dict(classes=['hop', 'hop']), 'repeated'),
])
def test_generation_errors(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_synthetic_dataset(tmp_path, **kwargs)
    assert not (tmp_path / 'meta.json').exists()


def test_odd_frame_size_and_missing_meta_errors(tmp_path, monkeypatch):
    monkeypatch.setitem(PRESETS, 'odd', Preset(classes=('hop', ), clips_per_class=dict(val=1),
                                               size=63, duration=2.0, fps=(15.0, )))
    with pytest.raises(ValueError, match='size: 63 is odd'):
        make_synthetic_dataset(tmp_path, preset='odd')
    with pytest.raises(FileNotFoundError, match='meta.json'):
        load_meta(tmp_path)


# ---- command line --------------------------------------------------------------------------

def _tool():
    return load_script('tools/make_synthetic_dataset.py')


def test_cli_writes_and_probes(tiny_dataset, tmp_path, capsys):
    tool = _tool()
    tool.main([str(tmp_path), '--train', '1', '--val', '2', '--seed', '3', '--workers', '1'])
    out = capsys.readouterr().out
    assert '12 clips of 4 classes' in out
    assert "flip_label_map: {0: 1, 1: 0, 2: 3, 3: 2}" in out
    assert load_meta(tmp_path)['params']['clips_per_class'] == dict(train=1, val=2)
    assert load_meta(tmp_path)['params']['seed'] == 3
    tool.main([str(tiny_dataset), '--probe'])
    out = capsys.readouterr().out
    assert '24 clips of 4 classes' in out and 'probe on val: single frame' in out
    assert 'fast classes: single frame' in out and 'slow classes: single frame' in out
    with pytest.raises(SystemExit):
        tool.parse_args([str(tmp_path), '--preset', 'huge'])


# ---- probes --------------------------------------------------------------------------------

def test_single_frame_features_of_a_flat_frame_exact():
    features = single_frame_features(np.full((64, 64, 3), 100, np.uint8))
    histogram = np.tile([0.0, 1.0, 0.0, 0.0], 3)
    np.testing.assert_array_equal(
        features, np.concatenate([[100] * 3, [0] * 3, [100] * 9, histogram, [0, 0],
                                  [100] * 64]))


def test_motion_features_measure_velocity():
    rng = np.random.default_rng(0)
    background = ndimage.gaussian_filter(rng.uniform(0, 255, (64, 64)), 2)
    background = (background - background.mean()) * 4 + 128
    yy, xx = np.mgrid[:64, :64]

    def clip(speed):
        frames = []
        for t in range(20):
            cx = 20 + speed * t
            blob = np.clip(8.5 - np.hypot(yy - 32, xx - cx), 0, 1)
            frame = background * (1 - blob) + (128 + 100 * np.sin((xx - cx) / 2)) * blob
            frames.append(np.repeat(np.clip(frame, 0, 255)[..., None], 3, 2))
        return motion_features(np.array(frames).astype(np.uint8), 10.0)

    expected = 10.0 / 64  # one pixel a frame at 10 fps, in frame widths per second
    right, left, half = clip(1.0)[0], clip(-1.0)[0], clip(0.5)[0]
    assert 0.5 * expected < right < 1.2 * expected
    assert -1.2 * expected < left < -0.5 * expected
    assert abs(half / right - 0.5) < 0.1


def test_softmax_probe_separates_separable_data():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    labels = np.repeat(np.arange(3), 20)
    features = centres[labels] + rng.normal(0, 1, (60, 2))
    probe = SoftmaxProbe(l2=1e-3).fit(features, labels, 3)
    np.testing.assert_array_equal(probe.predict(centres), [0, 1, 2])
    assert np.mean(probe.predict(features) == labels) == 1.0


@pytest.mark.trained
def test_single_frame_probe_is_near_chance_and_motion_oracle_is_not():
    names = PRESETS['default'].classes

    def clips(split, count):
        out = []
        for label, name in enumerate(names):
            for index in range(count):
                frames, fps = render_clip(name, clip_rng(0, split, name, index), 64, 2.0,
                                          (15.0, ))
                out.append((frames, fps, label))
        return out

    result = probe_accuracies(clips('train', 6), clips('val', 3), len(names))
    assert result['chance'] == 0.1
    assert result['single_frame'] <= 0.3, result['single_frame']  # chance is 0.1
    assert result['motion'] >= 0.6, result['motion']


def test_written_after_dataset_compares_with_meta_json(tmp_path):
    from hyperframes_mm.datasets.synthetic import written_after_dataset
    (tmp_path / 'meta.json').write_text('{}')
    os.utime(tmp_path / 'meta.json', (1000, 1000))
    result = tmp_path / 'result.json'
    assert not written_after_dataset(result, tmp_path)  # no result
    result.write_text('{}')
    os.utime(result, (999, 999))
    assert not written_after_dataset(result, tmp_path)  # made from older clips
    os.utime(result, (1001, 1001))
    assert written_after_dataset(result, tmp_path)
    (tmp_path / 'meta.json').unlink()
    assert not written_after_dataset(result, tmp_path)  # no dataset any more


@pytest.mark.parametrize('umask, mode', [(0o022, 0o644), (0o077, 0o600)])
def test_the_data_set_is_written_with_the_modes_the_umask_gives(tmp_path, umask, mode):
    """tempfile.mkstemp makes every file 0o600: a data set written through it was readable by
    its owner alone, whatever the umask, so another user or a container could not train on
    it."""
    previous = os.umask(umask)
    try:
        make_synthetic_dataset(tmp_path, dict(train=1, val=1), seed=0, workers=1,
                               progress=False)
    finally:
        os.umask(previous)
    files = [path for path in tmp_path.rglob('*') if path.is_file()]
    assert {'meta.json', 'train.txt', 'val.txt'} <= {path.name for path in files}
    assert any(path.suffix == '.mp4' for path in files)
    assert {path.name: path.stat().st_mode & 0o777 for path in files} == {
        path.name: mode for path in files}


def test_a_folder_of_other_files_is_not_built_over(tmp_path):
    """The build writes train.txt, meta.json and the videos' names over whatever is there."""
    own = tmp_path / 'mine'
    (own / 'train').mkdir(parents=True)
    (own / 'train.txt').write_text('my list\n')
    (own / 'train' / 'swipe_left_0000.mp4').write_bytes(b'my video')
    with pytest.raises(FileExistsError) as refused:
        make_synthetic_dataset(own, dict(train=1, val=1), seed=0, workers=1, progress=False)
    assert str(refused.value) == (
        f'{own}: holds train, train.txt, and no data set of this generator (no meta.json of '
        'it): building there would write over those files. Give a new or empty folder.')
    assert (own / 'train.txt').read_text() == 'my list\n'
    with pytest.raises(FileExistsError, match=r'a file, not a folder'):
        make_synthetic_dataset(own / 'train.txt', dict(train=1, val=1), progress=False)
    # a folder holding hidden files only (.gitkeep) is an empty one
    kept = tmp_path / 'kept'
    kept.mkdir()
    (kept / '.gitkeep').write_text('')
    make_synthetic_dataset(kept, dict(train=1, val=1), seed=0, workers=1, progress=False)
    assert (kept / 'meta.json').is_file()
    # its own folder: a finished build is found, a stopped one (its mark left) is finished
    ours = tmp_path / 'ours'
    make_synthetic_dataset(ours, dict(train=1, val=1), seed=0, workers=1, progress=False)
    assert not (ours / '.synthetic-build.json').exists()
    first = (ours / 'meta.json').read_bytes()
    (ours / 'meta.json').unlink()
    (ours / '.synthetic-build.json').write_text('{}\n')
    make_synthetic_dataset(ours, dict(train=1, val=1), seed=0, workers=1, progress=False)
    assert (ours / 'meta.json').read_bytes() == first
    # and the tool says so in one line
    tool = load_script('tools/make_synthetic_dataset.py')
    with pytest.raises(SystemExit, match=r'^make_synthetic_dataset\.py: .*mine: holds train'):
        tool.main([str(own), '--train', '1', '--val', '1', '--workers', '1'])


# ---- rebuilding a folder in place -----------------------------------------------------------

class Killed(Exception):
    """A build stopped at its first video, as by a kill."""


def killed_build(monkeypatch, root, **kwargs):
    """Start a build of ``root`` and stop it when it writes its first video."""
    from hyperframes_mm.datasets.synthetic import generate

    def kill(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(generate, 'write_video', kill)
        with pytest.raises(Killed):
            make_synthetic_dataset(root, workers=1, progress=False, **kwargs)


def test_a_killed_rebuild_leaves_no_list_and_says_how_to_finish(tmp_path, monkeypatch):
    """A rebuild with another seed, killed midway, left the old lists, which a training read
    beside videos of both seeds. The lists (and meta.json) go before any video is written,
    and the build mark says how to finish the build."""
    from hyperframes_mm.datasets.synthetic import interrupted_build
    root = tmp_path / 'set'
    make_synthetic_dataset(root, dict(train=2, val=1), seed=0, workers=1, progress=False)
    assert interrupted_build(root) is None
    killed_build(monkeypatch, root, clips_per_class=dict(train=2, val=1), seed=9)
    assert sorted(path.name for path in root.iterdir()) == [
        '.synthetic-build.json', 'classes.txt', 'train', 'val']
    assert interrupted_build(root) == (
        f'python tools/make_synthetic_dataset.py {root} --preset tiny --train 2 --val 1 --seed 9')
    make_synthetic_dataset(root, dict(train=2, val=1), seed=9, workers=1, progress=False)
    assert interrupted_build(root) is None and load_meta(root)['params']['seed'] == 9
    # a build the command line cannot say (its own splits and classes): the Python call
    other = tmp_path / 'other'
    killed_build(monkeypatch, other, clips_per_class=dict(test=1), classes=['hop', 'fall'])
    assert interrupted_build(other) == (
        f"make_synthetic_dataset('{other}', clips_per_class={{'test': 1}}, preset='tiny', "
        "seed=0, classes=['hop', 'fall'])")
    (other / '.synthetic-build.json').write_text('{}\n')  # the mark of older code
    assert interrupted_build(other) == (
        f'tools/make_synthetic_dataset.py {other} (or make_synthetic_dataset()) with the '
        f'arguments of the interrupted build (its mark {other}/.synthetic-build.json does not '
        'say them: KeyError)')


def test_a_rebuild_removes_the_previous_sets_videos_and_nothing_else(tmp_path, monkeypatch):
    """Rebuilt in place with fewer clips, a folder kept the old set's videos beside the new
    lists. The old videos go, through an interrupted rebuild too (its mark names both sets'
    files); files the generator did not name stay, whatever a hand-edited meta.json says."""
    root = tmp_path / 'set'
    make_synthetic_dataset(root, dict(train=3, val=2), seed=0, workers=1, progress=False)
    theirs = ['notes.md', 'train/notes.txt', 'train/my_clip.mp4',
              'train/swipe_left_0002.mp4.hfc']  # a frame cache entry is the cache's
    for name in theirs:
        (root / name).write_text('not the generator\'s\n')
    (tmp_path / 'outside_0000.mp4').write_text('mine\n')
    meta = json.loads((root / 'meta.json').read_text())
    meta['videos']['../outside_0000.mp4'] = {}
    meta['annotations']['mine'] = 'train/notes.txt'
    (root / 'meta.json').write_text(json.dumps(meta))
    killed_build(monkeypatch, root, clips_per_class=dict(train=2, val=1), seed=1)
    make_synthetic_dataset(root, dict(train=1, val=1), seed=2, workers=1, progress=False)
    listed = [line.split()[0] for split in ('train', 'val')
              for line in (root / f'{split}.txt').read_text().splitlines()]
    assert sorted(path.relative_to(root).as_posix() for path in root.rglob('*.mp4')) == sorted(
        listed + ['train/my_clip.mp4'])
    assert len(listed) == 8
    assert all((root / name).read_text() == 'not the generator\'s\n' for name in theirs)
    assert (tmp_path / 'outside_0000.mp4').read_text() == 'mine\n'


def test_a_rebuild_removes_the_temporary_files_of_killed_writers(tmp_path, monkeypatch):
    """A writer killed inside a video's encoding (or a list's write) leaves a hidden temporary
    file, which no later build removed. A rebuild removes those that writers killed on this
    host left beside the set's files; a live writer's stays (a process alive, or one holding
    the file's lock: a writer of another PID namespace), another host's, and every one where
    the file system has no locks to tell a live writer's apart (the build goes on unlocked)."""
    import errno
    import fcntl
    import socket
    import subprocess
    import sys

    def make(seed):
        make_synthetic_dataset(tmp_path, dict(train=1, val=1), seed=seed, workers=1,
                               progress=False)

    make(0)
    host = socket.gethostname()
    alive = subprocess.Popen(['sleep', '600'])
    dead = subprocess.Popen(['true'])
    dead.wait()
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import fcntl, sys; f = open(sys.argv[1], "wb"); '
         'fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); sys.stdin.read()',
         str(tmp_path / f'train/.swipe_right_0000.mp4.{host}.{dead.pid}.tmp')],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()  # it holds the lock
        killed = [f'train/.swipe_left_0000.mp4.{host}.{dead.pid}.tmp',
                  f'.meta.json.{host}.{dead.pid}.tmp', f'.train.txt.{host}.{dead.pid}.tmp',
                  f'..synthetic-build.json.{host}.{dead.pid}.tmp',
                  f'.val_frame_labels.jsonl.{host}.{dead.pid}.tmp']
        others = [f'train/.swipe_right_0000.mp4.{host}.{dead.pid}.tmp',
                  f'val/.swipe_left_0000.mp4.{host}.{alive.pid}.tmp',
                  f'train/.swipe_left_0000.mp4.otherhost.{dead.pid}.tmp',
                  f'train/.my_clip.mp4.{host}.{dead.pid}.tmp', 'train/.gitkeep',
                  f'.notes.json.{host}.{dead.pid}.tmp']
        for name in killed + others[1:]:
            (tmp_path / name).write_text('')

        def no_locks(handle, operation):
            raise OSError(errno.ENOLCK, 'No locks available')
        with monkeypatch.context() as patch:
            patch.setattr(fcntl, 'flock', no_locks)
            make(1)
        assert load_meta(tmp_path)['params']['seed'] == 1
        assert [name for name in killed + others if not (tmp_path / name).exists()] == []
        make(2)
        assert [name for name in killed + others if not (tmp_path / name).exists()] == killed
    finally:
        holder.communicate()
        alive.kill()
        alive.wait()
