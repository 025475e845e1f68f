"""From video file to model input inside mmaction2's VideoDataset, single and two-stream, checked
against frames decoded independently."""
import cv2
import decord
import numpy as np
import pytest
import torch
from mmaction.registry import DATASETS, MODELS
from mmengine.config import Config
from mmengine.dataset import default_collate, pseudo_collate

from hyperframes_mm.datasets.video_io import write_video

from ..conftest import REPO

MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
META = ('img_shape', 'filename', 'frame_inds', 'augment_params', 'label')


@pytest.fixture(scope='module')
def clips(tmp_path_factory):
    """Six real H.264 clips of 24 frames (64x64) and their VideoDataset list."""
    root = tmp_path_factory.mktemp('pipeline_clips')
    rng = np.random.default_rng(0)
    lines = []
    for index in range(6):
        write_video(root / f'clip_{index}.mp4', rng.integers(0, 256, (24, 64, 64, 3), np.uint8))
        lines.append(f'clip_{index}.mp4 {index % 4}')
    (root / 'train.txt').write_text('\n'.join(lines) + '\n')
    return root


def build_dataset(root, pipeline, test_mode=False):
    return DATASETS.build(dict(type='VideoDataset', ann_file=str(root / 'train.txt'),
                               data_prefix=dict(video=str(root)), pipeline=pipeline,
                               test_mode=test_mode))


def preprocess(samples, collate=pseudo_collate):
    preprocessor = MODELS.build(dict(type='HyperframeDataPreprocessor', mean=MEAN, std=STD))
    return preprocessor(collate(samples), training=True)


def expected_frames(filename, frame_inds, params, size):
    """Decode with decord directly and crop / resize / flip as the recorded draw says."""
    frames = decord.VideoReader(filename).get_batch(list(frame_inds)).asnumpy()
    x1, y1, x2, y2 = params['crop_bbox']
    out = [cv2.resize(frame[y1:y2, x1:x2], size, interpolation=cv2.INTER_LINEAR)
           for frame in frames]
    return [frame[:, ::-1] if params['flip'] else frame for frame in out]


def normalised(frame):
    return (torch.from_numpy(frame.astype(np.float32)).permute(2, 0, 1) -
            torch.tensor(MEAN).view(3, 1, 1)) / torch.tensor(STD).view(3, 1, 1)


def assert_model_input(hyperframe, frames):
    """``hyperframe`` [3T, H, W] holds the normalised ``frames``, frame-major."""
    assert hyperframe.shape[0] == 3 * len(frames)
    for t, frame in enumerate(frames):
        torch.testing.assert_close(hyperframe[3 * t:3 * t + 3], normalised(frame),
                                   rtol=0, atol=1e-5)


def test_single_stream_video_to_model_input(clips):
    pipeline = [
        dict(type='DecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=5, interval=2),
        dict(type='DecordDecode'),
        dict(type='ConsistentClipAugment', size=32, flip_ratio=0.5),
        dict(type='HyperframeStack'),
        dict(type='PackActionInputs', meta_keys=META)]
    dataset = build_dataset(clips, pipeline)
    np.random.seed(3)
    samples = [dataset[i] for i in (0, 3, 5)]
    data = preprocess(samples)
    assert data['inputs'].shape == (3, 1, 15, 32, 32) and data['inputs'].dtype == torch.float32
    for inputs, sample in zip(data['inputs'], data['data_samples']):
        inds = sample.metainfo['frame_inds']
        assert len(inds) == 5 and np.all(np.diff(inds) == 2)
        frames = expected_frames(sample.metainfo['filename'], inds,
                                 sample.metainfo['augment_params'], (32, 32))
        assert_model_input(inputs[0], frames)
    assert [int(s.gt_label) for s in data['data_samples']] == \
        [0, 3, 1]

    model = MODELS.build(Config.fromfile(REPO / 'configs/_base_/models/hyper_r18.py').model)
    model.cls_head.fc_cls = torch.nn.Linear(512, 4)
    losses = model(data['inputs'], data['data_samples'], mode='loss')
    assert torch.isfinite(losses['loss_cls'])


@pytest.mark.parametrize('collate', [default_collate, pseudo_collate])
def test_two_streams_video_to_model_input(clips, collate):
    pipeline = [
        dict(type='DecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=3,
             streams=dict(fast=dict(interval=1), slow=dict(interval=4))),
        dict(type='DecordDecode'),
        dict(type='ConsistentClipAugment', size=(40, 32), brightness=0.3, saturation=0.3),
        dict(type='HyperframeStack'),
        dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'), meta_keys=META)]
    dataset = build_dataset(clips, pipeline)
    np.random.seed(0)
    data = preprocess([dataset[i] for i in (1, 2)], collate)
    fast, slow = data['inputs']['imgs_fast'], data['inputs']['imgs_slow']
    assert fast.shape == slow.shape == (2, 1, 9, 32, 40)
    for index, sample in enumerate(data['data_samples']):
        inds = sample.metainfo['frame_inds']
        centre = inds[1]
        np.testing.assert_array_equal(inds, [centre - 1, centre, centre + 1,
                                             centre - 4, centre, centre + 4])
        # the shared centre frame went through one draw: identical in both streams
        torch.testing.assert_close(fast[index, 0, 3:6], slow[index, 0, 3:6], rtol=0, atol=0)
        assert not torch.equal(fast[index, 0, 0:3], slow[index, 0, 0:3])


def test_test_clips_and_three_crops_become_hyperframes(clips):
    pipeline = [
        dict(type='DecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=4, interval=3, num_clips=2,
             test_mode=True),
        dict(type='DecordDecode'),
        dict(type='Resize', scale=(-1, 40)),
        dict(type='ThreeCrop', crop_size=40),
        dict(type='HyperframeStack'),
        dict(type='PackActionInputs', meta_keys=META)]
    dataset = build_dataset(clips, pipeline, test_mode=True)
    sample = dataset[4]
    inds = sample['data_samples'].metainfo['frame_inds']
    # 24-frame clips, span 10: starts 0..14 in two halves, middles 3 and 11
    np.testing.assert_array_equal(inds, [3, 6, 9, 12, 11, 14, 17, 20])
    data = preprocess([sample])
    assert data['inputs'].shape == (1, 6, 12, 40, 40)
    decoded = decord.VideoReader(dataset.get_data_info(4)['filename']).get_batch(
        list(inds)).asnumpy()
    resized = [cv2.resize(frame, (40, 40), interpolation=cv2.INTER_LINEAR) for frame in decoded]
    for crop in range(3):  # 64x64 frames resized to 40x40: all three crops are the whole frame
        for clip in range(2):
            assert_model_input(data['inputs'][0, 2 * crop + clip], resized[4 * clip:4 * clip + 4])


@pytest.mark.parametrize('independent', [False, True])
def test_identical_frames_through_the_whole_pipeline(clips, independent):
    """A clip made of one repeated frame gives identical frames in the model input only when
    the augmentation is consistent."""
    pipeline = [
        dict(type='DecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=4, interval=1),
        dict(type='DecordDecode'),
        dict(type='ConsistentClipAugment', size=32, independent=independent, **dict(
            brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)),
        dict(type='HyperframeStack'),
        dict(type='PackActionInputs')]
    dataset = build_dataset(clips, pipeline)
    np.random.seed(0)
    results = dataset.get_data_info(0)
    transforms = dataset.pipeline.transforms
    for transform in transforms[:3]:
        results = transform(results)
    results['imgs'] = [results['imgs'][0]] * 4
    for transform in transforms[3:]:
        results = transform(results)
    hyperframe = results['inputs'][0]
    same = [torch.equal(hyperframe[0:3], hyperframe[3 * t:3 * t + 3]) for t in range(1, 4)]
    assert same == ([False] * 3 if independent else [True] * 3)
