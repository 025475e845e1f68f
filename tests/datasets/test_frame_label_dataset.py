"""Frame-label windows and their labels are exact for every label mode; bad annotations are
refused naming file:line."""
import json

import decord
import numpy as np
import pytest
from mmaction.registry import DATASETS

from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
from hyperframes_mm.datasets.frame_label_dataset import (
    FrameLabelVideoDataset, derive_video_label, load_frame_annotations, window_label,
    window_starts)
from hyperframes_mm.datasets.video_io import write_video

from ..conftest import REPO

# A: frames 0-4 background, 5-8 label 1, 9-11 background, 12-19 label 2.
# B: label 3 on frames 6-7 of 12, video label given. C: 3 frames, shorter than a window.
LINES = [
    dict(video='a.mp4', num_frames=20, fps=25, segments=[[5, 9, 1], [12, 20, 2]]),
    dict(video='sub/b.mp4', label=7, frame_labels=[0] * 6 + [3, 3] + [0] * 4),
    dict(video='c.mp4', num_frames=3, segments=[[1, 2, 4]]),
]


@pytest.fixture()
def ann_file(tmp_path):
    path = tmp_path / 'frames.jsonl'
    path.write_text('\n'.join(json.dumps(line) for line in LINES) + '\n\n')
    return path


def _windows(ann_file, **kwargs):
    dataset = FrameLabelVideoDataset(str(ann_file), [], data_prefix=dict(video='videos'),
                                     **kwargs)
    return [(info['filename'], info['window_start'], info['window_end'], info['center_frame'],
             info['label']) for info in (dataset.get_data_info(i) for i in range(len(dataset)))]


def test_center_labels(ann_file):
    assert _windows(ann_file, window=6, stride=4) == [
        ('videos/a.mp4', 0, 6, 3, 0), ('videos/a.mp4', 4, 10, 7, 1),
        ('videos/a.mp4', 8, 14, 11, 0), ('videos/a.mp4', 12, 18, 15, 2),
        ('videos/sub/b.mp4', 0, 6, 3, 0), ('videos/sub/b.mp4', 4, 10, 7, 3),
        ('videos/c.mp4', 0, 3, 1, 4)]


def test_center_labels_skip_unstable_windows(ann_file):
    # radius 1: a.mp4's centre 11 sees frame 12 (label 2); b.mp4's centre 7 sees frame 8.
    assert _windows(ann_file, window=6, stride=4, stable_radius=1) == [
        ('videos/a.mp4', 0, 6, 3, 0), ('videos/a.mp4', 4, 10, 7, 1),
        ('videos/a.mp4', 12, 18, 15, 2), ('videos/sub/b.mp4', 0, 6, 3, 0)]
    # radius 2: a.mp4's centre 3 sees frame 5, centre 7 sees frame 9; c.mp4's centre 1 sees
    # frames 0 and 2 (inside the video only).
    assert _windows(ann_file, window=6, stride=4, stable_radius=2) == [
        ('videos/a.mp4', 12, 18, 15, 2), ('videos/sub/b.mp4', 0, 6, 3, 0)]


def test_any_labels(ann_file):
    assert [w[-1] for w in _windows(ann_file, window=6, stride=4, label_mode='any')] == [
        1, 1, 1, 1, 0, 1, 1]
    assert [w[-1] for w in _windows(ann_file, window=6, stride=4, label_mode='any',
                                    positive_labels=[2, 4])] == [0, 0, 1, 1, 0, 0, 1]


def test_video_labels(ann_file):
    # a.mp4: label 2 covers 8 frames, label 1 four; b.mp4 gives 7; c.mp4 has only label 4.
    assert [w[-1] for w in _windows(ann_file, window=6, stride=4, label_mode='video')] == [
        2, 2, 2, 2, 7, 7, 4]


def test_default_stride_is_the_window(ann_file):
    assert [w[1:3] for w in _windows(ann_file, window=6)] == [
        (0, 6), (6, 12), (12, 18), (0, 6), (6, 12), (0, 3)]


def test_background_label(ann_file):
    windows = _windows(ann_file, window=6, stride=4, background_label=9, label_mode='any')
    assert [w[-1] for w in windows] == [1, 1, 1, 1, 1, 1, 1]
    assert [w[-1] for w in _windows(ann_file, window=6, stride=4, background_label=9)] == [
        9, 1, 9, 2, 0, 3, 4]


def test_data_info_keys(ann_file):
    dataset = DATASETS.build(dict(type='FrameLabelVideoDataset', ann_file=str(ann_file),
                                  pipeline=[], window=6, stride=4,
                                  data_prefix=dict(video='videos'), test_mode=True))
    info = dataset.get_data_info(1)
    assert {k: info[k] for k in ('filename', 'label', 'center_frame', 'window_start',
                                 'window_end', 'total_frames', 'start_index', 'modality')} == dict(
        filename='videos/a.mp4', label=1, center_frame=7, window_start=4, window_end=10,
        total_frames=20, start_index=0, modality='RGB')
    assert dataset.get_data_info(4)['total_frames'] == 12


def test_pure_functions_exact():
    assert window_starts(20, 6, 4).tolist() == [0, 4, 8, 12]
    assert window_starts(10, 3, 3).tolist() == [0, 3, 6]
    assert window_starts(6, 6, 2).tolist() == [0]
    assert window_starts(3, 6, 2).tolist() == [0]
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    assert window_label(labels, 0, 5, 'center') == 1
    assert window_label(labels, 0, 5, 'center', stable_radius=1) is None
    assert window_label(labels, 1, 6, 'center', stable_radius=1) is None
    assert window_label(labels, 3, 7, 'center', stable_radius=1) == 2
    assert window_label(labels, 0, 2, 'any') == 0
    assert window_label(labels, 0, 3, 'any', positive_labels=[2]) == 0
    assert window_label(labels, 0, 5, 'any', positive_labels=[2]) == 1
    assert window_label(labels, 0, 2, 'video', video_label=5) == 5
    with pytest.raises(ValueError, match=r"label_mode must be one of .*got 'majority'"):
        window_label(labels, 0, 2, 'majority')
    assert derive_video_label(np.array([1, 1, 2, 2, 0]), 0) == 1
    assert derive_video_label(np.array([0, 3, 0, 0]), 0) == 3
    assert derive_video_label(np.array([5, 5]), 5) == 5


def test_example_annotation_file():
    example = REPO / 'docs' / 'examples' / 'frame_labels.jsonl'
    annotations = load_frame_annotations(example)
    assert [(a.video, a.num_frames, a.fps, a.video_label, a.line) for a in annotations] == [
        ('cam1/0001.mp4', 300, 30.0, 2, 1), ('cam1/0002.mp4', 150, 30.0, 0, 2),
        ('cam2/0003.mp4', 16, 25.0, 1, 3)]
    first = annotations[0].labels
    assert (first[:40] == 0).all() and (first[40:95] == 1).all()
    assert (first[95:180] == 0).all() and (first[180:240] == 2).all() and (first[240:] == 0).all()
    assert read_video_list(example) == ['cam1/0001.mp4', 'cam1/0002.mp4', 'cam2/0003.mp4']
    dataset = FrameLabelVideoDataset(str(example), [], window=16, stride=8, label_mode='any')
    # 300 frames: starts 0..280; 150 frames: 0..128; 16 frames: one window.
    assert len(dataset) == 36 + 17 + 1
    # Windows touching [40, 95) start at 32..88, touching [180, 240) at 168..232.
    assert sum(dataset.get_data_info(i)['label'] for i in range(len(dataset))) == 8 + 9 + 1


GOOD = '{"video": "ok.mp4", "num_frames": 5, "segments": []}'


@pytest.mark.parametrize('line, message', [
    ('not json', 'not valid JSON'),
    ('[1, 2]', 'expected a JSON object, got list'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [], "segment": 1}',
     r"unknown keys \['segment'\]"),
    ('{"num_frames": 5, "segments": []}', '"video" must be a non-empty path, got None'),
    ('{"video": "/abs/a.mp4", "num_frames": 5, "segments": []}',
     '"video" \'/abs/a.mp4\' must be relative to the video root'),
    ('{"video": "a.mp4", "num_frames": 0, "segments": []}',
     '"num_frames" must be a positive int of at most 100000000 frames, got 0'),
    ('{"video": "a.mp4", "num_frames": true, "segments": []}',
     '"num_frames" must be a positive int of at most 100000000 frames, got True'),
    # a mistyped count allocated a label per frame (hundreds of GiB) before any message
    ('{"video": "a.mp4", "num_frames": 100000000000, "segments": []}',
     '"num_frames" must be a positive int of at most 100000000 frames, got 100000000000'),
    ('{"video": "a.mp4", "num_frames": 5, "fps": -1, "segments": []}',
     '"fps" must be a finite number > 0, got -1'),
    ('{"video": "a.mp4", "num_frames": 5, "fps": Infinity, "segments": []}',
     '"fps" must be a finite number > 0, got inf'),
    ('{"video": "a.mp4", "num_frames": 5, "label": -1, "segments": []}',
     '"label" must be an int >= 0 that int64 holds, got -1'),
    ('{"video": "a.mp4", "num_frames": 5, "label": 99999999999999999999, "segments": []}',
     '"label" must be an int >= 0 that int64 holds, got 99999999999999999999'),
    ('{"video": "a.mp4", "num_frames": 5}', 'give exactly one of "segments" and "frame_labels"'),
    ('{"video": "a.mp4", "segments": [], "frame_labels": [0]}', 'give exactly one of'),
    ('{"video": "a.mp4", "segments": []}', '"segments" need "num_frames"'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": 3}', '"segments" must be a list'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[1, 2]]}',
     r'segment 0 must be \[start, end, label\] ints, got \[1, 2\]'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[3, 3, 1]]}',
     r'segment 0 \[3, 3, 1\] needs 0 <= start < end <= num_frames \(5\)'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[0, 6, 1]]}',
     r'segment 0 \[0, 6, 1\] needs 0 <= start < end'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[0, 2, -1]]}',
     r'segment 0 \[0, 2, -1\] needs a label >= 0 that int64 holds'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[0, 2, 99999999999999999999]]}',
     r'segment 0 \[0, 2, 99999999999999999999\] needs a label >= 0 that int64 holds'),
    ('{"video": "a.mp4", "num_frames": 5, "segments": [[0, 3, 1], [2, 4, 2]]}',
     r'segment 1 \[2, 4, 2\] overlaps an earlier segment'),
    ('{"video": "a.mp4", "frame_labels": []}', '"frame_labels" must be a non-empty list'),
    ('{"video": "a.mp4", "frame_labels": [0, -1]}', '"frame_labels" must be a non-empty list'),
    ('{"video": "a.mp4", "frame_labels": [0, 99999999999999999999]}',
     '"frame_labels" must be a non-empty list of ints >= 0 that int64 holds'),
    ('{"video": "a.mp4", "num_frames": 3, "frame_labels": [0, 1]}',
     '"num_frames" is 3 but "frame_labels" has 2 entries'),
    (GOOD, "video 'ok.mp4' is already annotated on line 1"),
])
def test_bad_annotations_name_file_and_line(tmp_path, line, message):
    path = tmp_path / 'bad.jsonl'
    path.write_text(GOOD + '\n' + line + '\n')
    with pytest.raises(ValueError, match=f'{path}:2: {message}'):
        load_frame_annotations(path)


def test_annotation_not_utf8_names_file_and_line(tmp_path):
    path = tmp_path / 'latin1.jsonl'
    line = '{"video": "caf\u00e9.mp4", "frame_labels": [0]}'
    path.write_bytes(f'{GOOD}\n{line}\n'.encode('latin-1'))
    with pytest.raises(ValueError, match=f'{path}:2: byte 0xe9 is not UTF-8 at column 15: not a '
                       'UTF-8 text list'):
        load_frame_annotations(path)


def test_empty_annotation_file(tmp_path):
    path = tmp_path / 'empty.jsonl'
    path.write_text('\n')
    with pytest.raises(ValueError, match=f'{path}: annotates no videos'):
        load_frame_annotations(path)


@pytest.mark.parametrize('kwargs, message', [
    (dict(label_mode='majority'), r"label_mode must be one of \('center', 'any', 'video'\)"),
    (dict(window=0), 'window must be an int >= 1, got 0'),
    (dict(stride=0), 'stride must be an int >= 1, got 0'),
    (dict(stable_radius=-1), 'stable_radius must be an int >= 0, got -1'),
    (dict(background_label=-1), 'background_label must be an int >= 0, got -1'),
    (dict(label_mode='any', stable_radius=2),
     "stable_radius=2 applies to label_mode='center' only, not 'any'"),
    (dict(positive_labels=[1]), "positive_labels applies to label_mode='any' only"),
    (dict(label_mode='any', positive_labels=[]), 'positive_labels must be a non-empty list'),
])
def test_bad_arguments(ann_file, kwargs, message):
    kwargs = dict(dict(window=6), **kwargs)
    with pytest.raises(ValueError, match=f'FrameLabelVideoDataset: {message}'):
        FrameLabelVideoDataset(str(ann_file), [], **kwargs)


def test_no_window_left(ann_file):
    with pytest.raises(ValueError, match=rf'{ann_file}: no window left \(7 skipped as unstable '
                       'with stable_radius=9\\)'):
        FrameLabelVideoDataset(str(ann_file), [], window=6, stride=4, stable_radius=9)


def test_clips_centred_on_windows_from_video_and_from_cache(tmp_path):
    videos = tmp_path / 'videos'
    rng = np.random.default_rng(0)
    write_video(videos / 'a.mp4', rng.integers(0, 256, (20, 64, 64, 3), dtype=np.uint8))
    ann_file = tmp_path / 'frames.jsonl'
    ann_file.write_text(json.dumps(LINES[0]) + '\n')
    summary = build_frame_cache(read_video_list(ann_file), videos, tmp_path / 'cache',
                                progress=False)
    assert summary.built == 1
    sample = dict(type='HyperframeSampleFrames', num_frames=3, interval=2, test_mode=True,
                  out_of_bound='repeat_last')
    pipelines = dict(
        video=[dict(type='DecordInit'), sample, dict(type='DecordDecode')],
        cache=[dict(type='FrameCacheInit', cache_root=str(tmp_path / 'cache'),
                    video_root=str(videos)), sample, dict(type='FrameCacheDecode')])
    samples = {}
    for name, pipeline in pipelines.items():
        dataset = FrameLabelVideoDataset(str(ann_file), pipeline, window=6, stride=4,
                                         data_prefix=dict(video=str(videos)), test_mode=True)
        samples[name] = [dataset[i] for i in range(len(dataset))]
    assert [s['frame_inds'].tolist() for s in samples['video']] == [
        [1, 3, 5], [5, 7, 9], [9, 11, 13], [13, 15, 17]]
    assert [s['label'] for s in samples['video']] == [0, 1, 0, 2]
    reader = decord.VideoReader(str(videos / 'a.mp4'), num_threads=1)
    frames = reader.get_batch(list(range(len(reader)))).asnumpy()
    for from_video, from_cache in zip(samples['video'], samples['cache']):
        assert from_cache['frame_inds'].tolist() == from_video['frame_inds'].tolist()
        assert from_cache['label'] == from_video['label']
        np.testing.assert_array_equal(np.stack(from_cache['imgs']),
                                      frames[from_cache['frame_inds']])


def test_an_annotation_of_another_frame_count_is_logged_once_per_video(tmp_path, log_lines):
    """An annotation of 10 frames on a video that decodes to 20 (made on another copy, at
    another frame rate) labelled its windows by frames the video does not show, silently."""
    videos = tmp_path / 'videos'
    write_video(videos / 'a.mp4', np.zeros((20, 32, 32, 3), np.uint8))
    ann_file = tmp_path / 'frames.jsonl'
    ann_file.write_text(json.dumps(dict(video='a.mp4', num_frames=10,
                                        segments=[[2, 6, 1]])) + '\n')
    pipeline = [dict(type='DecordInit'),
                dict(type='HyperframeSampleFrames', num_frames=3, interval=1, test_mode=True,
                     out_of_bound='repeat_last')]
    dataset = FrameLabelVideoDataset(str(ann_file), pipeline, window=4, stride=2,
                                     data_prefix=dict(video=str(videos)), test_mode=True)
    assert dataset.get_data_info(0)['annotated_frames'] == 10
    assert [dataset[i]['total_frames'] for i in range(len(dataset))] == [20] * 4
    warned = [line for line in log_lines if 'its annotation gives' in line]
    assert warned == [f'HyperframeSampleFrames: {videos / "a.mp4"}: its annotation gives 10 '
                      'frames and the video decodes to 20: the frame labels may not be those '
                      'of the frames shown (was the annotation made on another copy, at '
                      'another frame rate?)']
    # a frame apart is how often two tools count one video: not logged
    ann_file.write_text(json.dumps(dict(video='a.mp4', num_frames=19,
                                        segments=[[2, 6, 1]])) + '\n')
    log_lines.clear()
    near = FrameLabelVideoDataset(str(ann_file), pipeline, window=4, stride=2,
                                  data_prefix=dict(video=str(videos)), test_mode=True)
    assert near[0]['total_frames'] == 20
    assert not [line for line in log_lines if 'its annotation gives' in line]
