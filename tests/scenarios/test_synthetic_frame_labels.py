"""Per-frame motion-state labels of the synthetic benchmark: exact speeds, files, errors."""
import dataclasses
import json

import numpy as np
import pytest

from hyperframes_mm.datasets.frame_label_dataset import (FrameLabelVideoDataset,
                                                         load_frame_annotations)
from hyperframes_mm.datasets.synthetic import (FAST_SPEED, MOTION_STATES, PRESETS, actor_speed,
                                               clip_rng, frame_labels_path, load_meta,
                                               make_synthetic_dataset, motion_state_labels,
                                               sample_scene, write_frame_labels)
from hyperframes_mm.datasets.synthetic import generate


def _scene_with_actor_path(centre, fps=10.0):
    scene = sample_scene('drift_left', clip_rng(0, 'train', 'drift_left', 0), 2.0, (fps, ))
    times = np.arange(len(centre)) / fps
    actor = dataclasses.replace(scene.objects[scene.actor], centre=np.asarray(centre, float))
    objects = list(scene.objects)
    objects[scene.actor] = actor
    return dataclasses.replace(scene, times=times, objects=objects)


def test_actor_speed_exact_and_wraps_round_the_torus():
    # x: 0.80, 0.90, 0.00 (crossed the edge: +0.1), 0.04, 0.08; y fixed; 10 fps.
    scene = _scene_with_actor_path([[0.5, 0.8], [0.5, 0.9], [0.5, 0.0], [0.5, 0.04],
                                    [0.5, 0.08]])
    np.testing.assert_allclose(actor_speed(scene), [1.0, 1.0, 0.7, 0.4, 0.4])
    np.testing.assert_array_equal(motion_state_labels(scene), [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(motion_state_labels(scene, fast_speed=0.9), [1, 1, 0, 0, 0])
    diagonal = _scene_with_actor_path([[0.0, 0.0], [0.03, 0.04]])
    np.testing.assert_allclose(actor_speed(diagonal), [0.5, 0.5])
    assert actor_speed(_scene_with_actor_path([[0.2, 0.3]])).tolist() == [0.0]
    assert MOTION_STATES == ('steady', 'fast') and FAST_SPEED == 0.5


def test_slow_classes_never_fast_fast_classes_fast_inside_events():
    for name in PRESETS['full'].classes:
        for index in range(4):
            scene = sample_scene(name, clip_rng(0, 'train', name, index), 2.0,
                                 (15.0, 25.0, 30.0))
            labels = motion_state_labels(scene)
            if name in ('swipe_left', 'swipe_right', 'fall', 'hop', 'shake'):
                assert 0.15 < labels.mean() < 0.8, name
            else:
                assert labels.max() == 0, name


def test_files_exact_and_readable_as_frame_labels(labelled_dataset):
    meta = load_meta(labelled_dataset)
    for split in ('train', 'val'):
        path = frame_labels_path(labelled_dataset, split)
        assert path == labelled_dataset / f'{split}_frame_labels.jsonl'
        records = [json.loads(line) for line in path.read_text().splitlines()]
        listed = [line.split() for line in (labelled_dataset / f'{split}.txt').read_text()
                  .splitlines()]
        assert [r['video'] for r in records] == [video for video, _ in listed]
        assert [r['label'] for r in records] == [int(label) for _, label in listed]
        for record in records:
            video = meta['videos'][record['video']]
            assert (record['num_frames'], record['fps']) == (video['num_frames'], video['fps'])
            assert len(record['frame_labels']) == record['num_frames']
            name, index = record['video'].split('/')[1].rsplit('_', 1)
            scene = sample_scene(name, clip_rng(0, split, name, int(index[:4])), 2.0,
                                 (15.0, 25.0, 30.0))
            assert record['frame_labels'] == motion_state_labels(scene).tolist()
        assert len(load_frame_annotations(path)) == len(records)
    dataset = FrameLabelVideoDataset(str(frame_labels_path(labelled_dataset, 'val')), [],
                                     window=16, stride=16, label_mode='video',
                                     data_prefix=dict(video=str(labelled_dataset)))
    assert sorted({dataset.get_data_info(i)['label'] for i in range(len(dataset))}) == [0, 1,
                                                                                        2, 3]


def test_rerun_with_frame_labels_rewrites_them_and_keeps_the_rest(labelled_dataset):
    path = frame_labels_path(labelled_dataset, 'train')
    expected = path.read_bytes()
    meta = (labelled_dataset / 'meta.json').read_bytes()
    path.unlink()
    make_synthetic_dataset(labelled_dataset, dict(train=2, val=1), seed=0, workers=1,
                           progress=False, frame_labels=True)
    assert path.read_bytes() == expected
    assert (labelled_dataset / 'meta.json').read_bytes() == meta
    assert write_frame_labels(labelled_dataset, progress=False) == {
        'train': path, 'val': frame_labels_path(labelled_dataset, 'val')}


def test_without_the_flag_no_frame_labels(tmp_path):
    make_synthetic_dataset(tmp_path, dict(train=1), seed=0, workers=1, progress=False,
                           classes=['fall'])
    assert not frame_labels_path(tmp_path, 'train').exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['classes.txt', 'meta.json', 'train',
                                                          'train.txt']


def _copy_meta(labelled_dataset, out_dir, edit):
    meta = json.loads((labelled_dataset / 'meta.json').read_text())
    edit(meta)
    out_dir.mkdir()
    (out_dir / 'meta.json').write_text(json.dumps(meta))
    return out_dir


def test_errors(labelled_dataset, tmp_path):
    with pytest.raises(FileNotFoundError, match='no meta.json'):
        write_frame_labels(tmp_path / 'nothing')
    old = _copy_meta(labelled_dataset, tmp_path / 'old',
                     lambda m: m['params'].update(generator_version=1))
    with pytest.raises(ValueError, match=f'generator version 1, this code is version '
                                         f'{generate.GENERATOR_VERSION}; regenerate'):
        write_frame_labels(old, progress=False)
    other = _copy_meta(labelled_dataset, tmp_path / 'other',
                       lambda m: m['videos']['train/drift_left_0000.mp4'].update(num_frames=7))
    with pytest.raises(ValueError, match=r'train/drift_left_0000.mp4 has 7 frames at .* but '
                                         r'replaying its scene gives .*regenerate'):
        write_frame_labels(other, progress=False)


def test_regenerating_the_clips_removes_their_old_frame_labels(tmp_path):
    make_synthetic_dataset(tmp_path, dict(train=1), seed=0, workers=1, progress=False,
                           classes=['fall'], frame_labels=True)
    assert frame_labels_path(tmp_path, 'train').is_file()
    make_synthetic_dataset(tmp_path, dict(train=1), seed=1, workers=1, progress=False,
                           classes=['fall'])
    assert not frame_labels_path(tmp_path, 'train').exists()
