"""CenterFrameTarget: the centre frame's label, exact, from per-frame annotations, into the data
sample; every error names the file."""
import json

import numpy as np
import pytest
from mmaction.registry import TRANSFORMS
from mmengine.dataset import Compose

from hyperframes_mm.datasets.frame_label_dataset import FrameLabelVideoDataset
from hyperframes_mm.datasets.synthetic import frame_labels_path
from hyperframes_mm.datasets.transforms import CenterFrameTarget, center_pick

LINES = [
    dict(video='a.mp4', num_frames=12, segments=[[4, 8, 1]]),
    dict(video='sub/b.mp4', frame_labels=[0, 2, 2, 1, 0, 0]),
]


@pytest.fixture()
def ann_file(tmp_path):
    path = tmp_path / 'frames.jsonl'
    path.write_text(''.join(json.dumps(line) + '\n' for line in LINES))
    return str(path)


def test_center_pick_exact():
    assert center_pick(np.array([0, 2, 4, 6, 8]), 5, 1) == 4
    assert center_pick(np.array([0, 1, 2, 3]), 4, 1) == 2
    three_clips = np.array([0, 2, 4, 10, 12, 14, 20, 22, 24])
    assert center_pick(three_clips, 3, 3) == 12
    assert center_pick(np.array([1, 3, 5, 7, 9, 1, 5, 9, 13, 17]), 5, 1, start_index=1) == 4
    assert center_pick(np.array([[5, 6, 7]]), 3, 1) == 6


def test_center_pick_refuses_too_few_picks():
    with pytest.raises(ValueError, match='3 picks cannot hold 2 clips of 2 frames'):
        center_pick(np.arange(3), 2, 2)
    with pytest.raises(ValueError, match='cannot hold 1 clips of 0 frames'):
        center_pick(np.arange(3), 0, 1)


def test_labels_of_the_middle_pick_and_of_center_frame(ann_file):
    target = TRANSFORMS.build(dict(type='CenterFrameTarget', ann_file=ann_file,
                                   data_prefix='videos'))
    a = dict(filename='videos/a.mp4', frame_inds=np.array([1, 3, 5, 7, 9]), clip_len=5,
             num_clips=1)
    assert target(dict(a))['aux_label'] == 1                  # middle pick 5
    assert target(dict(a, frame_inds=np.array([0, 1, 2]), clip_len=3))['aux_label'] == 0
    assert target(dict(a, center_frame=7))['aux_label'] == 1
    assert target(dict(a, center_frame=8))['aux_label'] == 0
    b = dict(filename='videos/x/../sub/b.mp4', frame_inds=np.array([0, 1, 2]), clip_len=3,
             num_clips=1)
    assert target(dict(b))['aux_label'] == 2
    assert target(dict(b, center_frame=3))['aux_label'] == 1
    assert target(dict(center_frame=2, filename='videos/a.mp4'))['aux_label'] == 0
    motion = CenterFrameTarget(ann_file, data_prefix='videos', key='motion')
    assert motion(dict(b))['motion'] == 2 and 'aux_label' not in motion(dict(b))
    assert repr(motion) == (f"CenterFrameTarget(ann_file={ann_file!r}, data_prefix='videos', "
                            "key='motion', background_label=0)")


def test_background_label_of_uncovered_frames(ann_file):
    target = CenterFrameTarget(ann_file, data_prefix='videos', background_label=3)
    assert target(dict(filename='videos/a.mp4', center_frame=0))['aux_label'] == 3
    assert target(dict(filename='videos/a.mp4', center_frame=4))['aux_label'] == 1


def test_errors(ann_file, tmp_path):
    target = CenterFrameTarget(ann_file, data_prefix='videos')
    with pytest.raises(KeyError, match=r"'videos/c.mp4' is not annotated in .*frames.jsonl "
                                       r"\(with data_prefix='videos'\)"):
        target(dict(filename='videos/c.mp4', center_frame=0))
    with pytest.raises(KeyError, match=r"videos/a.mp4: results lack \['frame_inds', "
                                       r"'clip_len', 'num_clips'\]; put it after the sampler"):
        target(dict(filename='videos/a.mp4'))
    with pytest.raises(ValueError, match='videos/sub/b.mp4: centre frame 6 is outside the 6 '
                                         'frames .*frames.jsonl labels'):
        target(dict(filename='videos/sub/b.mp4', center_frame=6))
    with pytest.raises(ValueError, match='centre frame -1 is outside'):
        target(dict(filename='videos/sub/b.mp4', frame_inds=np.array([-1]), clip_len=1,
                    num_clips=1))
    with pytest.raises(ValueError, match="key must be a non-empty string, got ''"):
        CenterFrameTarget(ann_file, key='')
    bad = tmp_path / 'bad.jsonl'
    bad.write_text('{"video": "a.mp4"}\n')
    with pytest.raises(ValueError, match='bad.jsonl:1: give exactly one of'):
        CenterFrameTarget(str(bad))


def _pipeline(ann_file, root, **sampler):
    return Compose([
        dict(type='SafeDecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=5, **sampler),
        dict(type='CenterFrameTarget', ann_file=str(ann_file), data_prefix=str(root)),
        dict(type='DecordDecode'),
        dict(type='Resize', scale=(32, 32), keep_ratio=False),
        dict(type='HyperframeStack'),
        dict(type='PackActionInputs', algorithm_keys=('aux_label', )),
    ])


def test_video_dataset_sample_carries_the_centre_frame_label(labelled_dataset):
    ann_file = frame_labels_path(labelled_dataset, 'train')
    records = [json.loads(line) for line in ann_file.read_text().splitlines()]
    pipeline = _pipeline(ann_file, labelled_dataset, interval=3, num_clips=3, test_mode=True)
    seen = set()
    for record in records:
        packed = pipeline(dict(filename=str(labelled_dataset / record['video']), label=0,
                               start_index=0, modality='RGB'))
        total = record['num_frames']
        middle_clip_start = int(np.floor(1.5 * (total - 13 + 1) / 3))
        centre = middle_clip_start + 6
        assert packed['data_samples'].aux_label == record['frame_labels'][centre]
        assert packed['inputs'].shape == (3, 15, 32, 32)
        seen.add(packed['data_samples'].aux_label)
    assert seen == {0, 1}


def test_frame_label_dataset_sample_uses_center_frame(labelled_dataset):
    ann_file = frame_labels_path(labelled_dataset, 'val')
    records = {json.loads(line)['video']: json.loads(line)['frame_labels']
               for line in ann_file.read_text().splitlines()}
    dataset = FrameLabelVideoDataset(
        str(ann_file), _pipeline(ann_file, labelled_dataset, interval=2,
                                 out_of_bound='repeat_last').transforms,
        window=10, stride=10, label_mode='video', data_prefix=dict(video=str(labelled_dataset)))
    for index in range(0, len(dataset), 3):
        info = dataset.get_data_info(index)
        video = info['filename'][len(str(labelled_dataset)) + 1:]
        assert dataset[index]['data_samples'].aux_label == records[video][info['center_frame']]
