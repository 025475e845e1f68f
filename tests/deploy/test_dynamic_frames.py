"""Dynamic frame count: motion score, T' choice, span-keeping samplers, re-inflated copies."""
import numpy as np
import pytest
import torch

from hyperframes_mm.apis import init_recognizer
from hyperframes_mm.deploy import ModelStage, StreamEngine
from hyperframes_mm.deploy.dynamic_frames import (DynamicFrameStage, backbone_num_frames,
                                                choose_num_frames, motion_score,
                                                reinflated_copies, sampler_overrides)


def test_motion_score_exact():
    frames = [np.full((4, 4, 3), value, np.uint8) for value in (0, 10, 10, 40)]
    assert motion_score(frames) == pytest.approx((10 + 0 + 30) / 3)
    # subsampled by 2 above 128 px: only the even rows and columns count
    odd = np.zeros((256, 256, 3), np.uint8)
    odd[1::2, 1::2] = 255
    assert motion_score([np.zeros_like(odd), odd]) == 0.0
    assert motion_score([np.zeros_like(odd), odd], max_side=256) == pytest.approx(255 / 4)
    with pytest.raises(ValueError, match='at least 2 frames'):
        motion_score(frames[:1])


def test_choose_num_frames_boundaries():
    choices = (3, 5, 7)
    assert [choose_num_frames(s, (2.0, 5.0), choices) for s in (1.99, 2.0, 5.0, 5.01)] == \
        [3, 5, 5, 7]


def test_sampler_overrides_keep_the_span():
    hyper = dict(type='HyperframeSampleFrames', num_frames=5, interval=2, num_clips=2)
    assert sampler_overrides(hyper, 3) == dict(num_frames=3, interval=4)  # span 9 -> 9
    assert sampler_overrides(hyper, 7) == dict(num_frames=7, interval=1)  # 8/6 rounds to 1
    assert sampler_overrides(hyper, 3, keep_span=False) == dict(num_frames=3, interval=2)
    timed = dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True)
    assert sampler_overrides(timed, 7)['interval'] == pytest.approx(4 / 15 / 6)
    streams = dict(type='HyperframeSampleFrames', num_frames=3,
                   streams=dict(fast=dict(interval=1), slow=dict(interval=3)))
    assert sampler_overrides(streams, 5)['streams'] == dict(
        fast=dict(num_frames=5, interval=1), slow=dict(num_frames=5, interval=2))
    assert sampler_overrides(dict(type='SampleFrames', clip_len=5, frame_interval=2), 3) == \
        dict(clip_len=3, frame_interval=4)
    assert sampler_overrides(dict(type='HyperframeSampleFrames', num_frames=5, mode='uniform'),
                             3) == dict(num_frames=3)
    with pytest.raises(ValueError, match='cannot change the frame count of sampler'):
        sampler_overrides(dict(type='UniformSample', clip_len=5), 3)
    with pytest.raises(ValueError, match='has its own num_frames'):
        sampler_overrides(dict(streams, streams=dict(fast=dict(num_frames=4))), 5)


def test_reinflated_copies_are_made_once(api_models):
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    base_weight = model.backbone.conv1.conv.weight.detach().clone()
    models = reinflated_copies(model, (2, 3, 6))
    assert models[3] is model and backbone_num_frames(models[6]) == 6
    assert models[2].backbone.conv1.conv.weight.shape[1] == 6
    assert torch.equal(model.backbone.conv1.conv.weight, base_weight)  # the original is intact
    # the temporal sum is kept: 2 identical frames at T'=2 give what 3 gave at T=3
    frame = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        three = model.backbone(frame.repeat(1, 3, 1, 1))
        two = models[2].backbone(frame.repeat(1, 2, 1, 1))
    torch.testing.assert_close(two, three, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match='expected hyperframe backbone'):
        backbone_num_frames(torch.nn.Linear(2, 2))


def test_dynamic_stage_follows_the_motion_of_each_window(api_models, api_videos):
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    stage = DynamicFrameStage(model, choices=(2, 3, 5), thresholds=(1.0, 1000.0))
    weights = {t: m.backbone.conv1.conv.weight for t, m in stage.models.items()}
    assert {t: w.shape[1] for t, w in weights.items()} == {2: 6, 3: 9, 5: 15}
    # T=3 at interval 2 spans 5 frames; T'=2 -> interval 4, T'=5 -> interval 1: all span 5
    assert [stage.pipelines[t].span() for t in (2, 3, 5)] == [5, 5, 5]
    report = StreamEngine(stage, stride=2, keep_records=True, progress=False).run(
        [str(api_videos['still_then_moving'])])
    windows = [r for r in report.records if 'scores' in r]
    import decord
    frames = decord.VideoReader(str(api_videos['still_then_moving']))[:].asnumpy()
    window = stage.window_length(25.0)
    chosen = []
    for record in windows:
        own = list(frames[record['end_frame'] - window + 1:record['end_frame'] + 1])
        expected = choose_num_frames(stage.score_window(own, 25.0), stage.thresholds,
                                     stage.choices)
        assert record['num_frames'] == expected
        chosen.append(expected)
    # still until frame 20: the noise alone stays under 1 grey level, then the square moves
    assert chosen[0] == 2 and chosen[-1] == 3
    for t, weight in weights.items():  # nothing was re-inflated while streaming
        assert stage.models[t].backbone.conv1.conv.weight is weight
    # at the trained T the stage is the plain model
    plain = StreamEngine(ModelStage(model), stride=2, keep_records=True, progress=False).run(
        [str(api_videos['still_then_moving'])])
    for record, other in zip(windows, [r for r in plain.records if 'scores' in r]):
        if record['num_frames'] == 3:
            np.testing.assert_allclose(record['scores'], other['scores'], atol=1e-5)


def test_dynamic_stage_errors(api_models):
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    with pytest.raises(ValueError, match='three frame counts'):
        DynamicFrameStage(model, choices=(3, 5))
    with pytest.raises(ValueError, match='low <= high'):
        DynamicFrameStage(model, thresholds=(5.0, 2.0))
    one = init_recognizer(api_models['single'], None, 'cpu', {
        'model.backbone.num_frames': 1, 'test_pipeline.1.num_frames': 1})
    with pytest.raises(ValueError, match='a motion score needs a model trained on at least 2'):
        DynamicFrameStage(one)
    # two T=3 streams stacked into one hyperframe for a T=6 Recognizer2D
    early = init_recognizer(api_models['single'], None, 'cpu', {
        'model.backbone.num_frames': 6,
        'test_pipeline.1.streams': dict(fast=dict(interval=1), slow=dict(interval=2)),
        'test_pipeline.5.fuse_streams': True})
    with pytest.raises(ValueError, match='an early-fusion fast/slow model reads every stream'):
        DynamicFrameStage(early)


def test_dynamic_stage_refuses_a_clip_split_into_segments(api_models):
    # two T=3 hyperframes of 6 picks a clip: changing T would change the split, not one T
    split = init_recognizer(api_models['single'], None, 'cpu', {
        'test_pipeline.1.num_frames': 6, 'test_pipeline.5.segments': 2})
    with pytest.raises(ValueError, match=r'several shifted hyperframes \(HyperframeStack'):
        DynamicFrameStage(split)
