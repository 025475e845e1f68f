"""HyperframeStack: exact frame-major channel order, per stream, after mmaction2's crops."""
import numpy as np
import pytest
from mmaction.datasets.transforms import CenterCrop, Resize, TenCrop, ThreeCrop

from hyperframes_mm.datasets.transforms.stacking import (HyperframeStack, fuse_streams,
                                                         stack_hyperframes)


def numbered_frames(count, height=6, width=8):
    """Frame i holds 100*i + 10*c + (y*width + x) % 10 in channel c: every value is traceable."""
    pixel = (np.arange(height * width).reshape(height, width) % 10)[..., None]
    channel = np.arange(3)[None, None, :] * 10
    return [(100 * i + channel + pixel).astype(np.int32) for i in range(count)]


def assert_hyperframe(hyperframe, frames):
    """Channels 3t..3t+2 of the hyperframe are frame t (C, H, W)."""
    assert hyperframe.shape[0] == 3 * len(frames)
    for t, frame in enumerate(frames):
        np.testing.assert_array_equal(hyperframe[3 * t:3 * t + 3], frame.transpose(2, 0, 1))


def test_stack_hyperframes_frame_major():
    frames = np.stack(numbered_frames(6))
    stacked = stack_hyperframes(frames, 3)
    assert stacked.shape == (2, 9, 6, 8) and stacked.flags['C_CONTIGUOUS']
    assert stacked[0, :, 0, 0].tolist() == [0, 10, 20, 100, 110, 120, 200, 210, 220]
    assert stacked[1, :, 0, 1].tolist() == [301, 311, 321, 401, 411, 421, 501, 511, 521]


def test_single_clip_channel_order_matches_the_input_frames():
    frames = numbered_frames(5)
    results = HyperframeStack()(dict(imgs=list(frames), clip_len=5, num_clips=1))
    assert results['imgs'].shape == (1, 15, 6, 8)
    assert_hyperframe(results['imgs'][0], frames)
    assert results['num_hyperframes'] == 1 and results['input_shape'] == (1, 15, 6, 8)


def test_clips_become_hyperframes_in_order():
    frames = numbered_frames(6)
    results = HyperframeStack()(dict(imgs=frames, clip_len=2, num_clips=3))
    assert results['imgs'].shape == (3, 6, 6, 8)
    for k in range(3):
        assert_hyperframe(results['imgs'][k], frames[2 * k:2 * k + 2])


def test_segments_split_each_clip_in_time_order():
    """segments=2: each clip's 4 frames become 2 consecutive hyperframes of 2 frames, clip by
    clip, so that a shift over 2 segments pairs a clip's early half with its late half."""
    frames = numbered_frames(8)  # 2 clips of 4
    results = HyperframeStack(segments=2)(dict(imgs=frames, clip_len=4, num_clips=2))
    assert results['imgs'].shape == (4, 6, 6, 8) and results['num_hyperframes'] == 4
    for k in range(4):
        assert_hyperframe(results['imgs'][k], frames[2 * k:2 * k + 2])
    with pytest.raises(ValueError, match='3 frames a clip cannot be split into 2 segments'):
        HyperframeStack(segments=2)(dict(imgs=frames[:6], clip_len=3, num_clips=2))
    streams = [dict(name='fast', clip_len=4, num_clips=1), dict(name='slow', clip_len=4,
                                                                  num_clips=1)]
    with pytest.raises(ValueError, match=r"single-stream sample; this one has streams "
                       r"\['fast', 'slow'\]"):
        HyperframeStack(segments=2)(dict(imgs=frames, clip_len=4, num_clips=1,
                                         hyperframe_streams=streams))
    with pytest.raises(ValueError, match='segments must be a positive int, got 0'):
        HyperframeStack(segments=0)


def test_two_streams_give_one_array_each():
    frames = numbered_frames(4 + 2 * 2)  # fast: 1 clip of 4, slow: 2 clips of 2
    streams = [dict(name='fast', clip_len=4, num_clips=1), dict(name='slow', clip_len=2,
                                                                  num_clips=2)]
    results = HyperframeStack()(dict(imgs=frames, clip_len=4, num_clips=1,
                                     hyperframe_streams=streams))
    assert 'imgs' not in results
    assert results['imgs_fast'].shape == (1, 12, 6, 8)
    assert results['imgs_slow'].shape == (2, 6, 6, 8)
    assert_hyperframe(results['imgs_fast'][0], frames[:4])
    assert_hyperframe(results['imgs_slow'][0], frames[4:6])
    assert_hyperframe(results['imgs_slow'][1], frames[6:8])
    assert results['num_hyperframes'] == 1


def crop(frame, bbox):
    x1, y1, x2, y2 = bbox
    return frame[y1:y2, x1:x2]


def test_after_mmaction_three_crop_crops_become_clips():
    frames = numbered_frames(6, height=6, width=12)  # K=2 clips of T=3
    results = ThreeCrop(crop_size=6)(dict(imgs=list(frames), img_shape=(6, 12)))
    results.update(clip_len=3, num_clips=2)
    boxes = results['crop_bbox'][::6]  # one box per crop
    np.testing.assert_array_equal(boxes, [[0, 0, 6, 6], [6, 0, 12, 6], [3, 0, 9, 6]])
    stacked = HyperframeStack()(results)['imgs']
    assert stacked.shape == (6, 9, 6, 6)
    for c, box in enumerate(boxes):
        for k in range(2):
            assert_hyperframe(stacked[2 * c + k], [crop(f, box) for f in frames[3 * k:3 * k + 3]])


def test_after_mmaction_ten_crop_including_the_flipped_crops():
    frames = numbered_frames(2, height=8, width=8)  # K=1 clip of T=2
    results = TenCrop(crop_size=4)(dict(imgs=list(frames), img_shape=(8, 8)))
    results.update(clip_len=2, num_clips=1)
    boxes = results['crop_bbox'][::4]  # each corner box serves its crop and its flip
    stacked = HyperframeStack()(results)['imgs']
    assert stacked.shape == (10, 6, 4, 4)
    np.testing.assert_array_equal(boxes[:, :2], [[0, 0], [4, 0], [0, 4], [4, 4], [2, 2]])
    for c, box in enumerate(boxes):
        assert_hyperframe(stacked[2 * c], [crop(f, box) for f in frames])
        assert_hyperframe(stacked[2 * c + 1], [crop(f, box)[:, ::-1] for f in frames])


def test_two_streams_after_three_crop():
    frames = numbered_frames(3 + 2, height=6, width=12)  # fast T=3, slow T=2, K=1
    streams = [dict(name='fast', clip_len=3, num_clips=1), dict(name='slow', clip_len=2,
                                                                  num_clips=1)]
    results = ThreeCrop(crop_size=6)(dict(imgs=list(frames), img_shape=(6, 12)))
    results.update(clip_len=3, num_clips=1, hyperframe_streams=streams)
    boxes = results['crop_bbox'][::5]
    results = HyperframeStack()(results)
    assert results['imgs_fast'].shape == (3, 9, 6, 6)
    assert results['imgs_slow'].shape == (3, 6, 6, 6)
    for c, box in enumerate(boxes):
        assert_hyperframe(results['imgs_fast'][c], [crop(f, box) for f in frames[:3]])
        assert_hyperframe(results['imgs_slow'][c], [crop(f, box) for f in frames[3:]])


def test_fused_streams_are_one_frame_major_hyperframe_per_clip_and_crop():
    # 2 clips of fast T=3 then 2 clips of slow T=2, after ThreeCrop: per crop and clip one
    # hyperframe of the clip's fast frames, then its slow frames
    frames = numbered_frames(2 * 3 + 2 * 2, height=6, width=12)
    streams = [dict(name='fast', clip_len=3, num_clips=2), dict(name='slow', clip_len=2,
                                                                  num_clips=2)]
    results = ThreeCrop(crop_size=6)(dict(imgs=list(frames), img_shape=(6, 12)))
    results.update(clip_len=3, num_clips=2, hyperframe_streams=streams)
    boxes = results['crop_bbox'][::10]
    results = HyperframeStack(fuse_streams=True)(results)
    assert 'imgs_fast' not in results and 'imgs_slow' not in results
    assert results['imgs'].shape == (6, 15, 6, 6)
    assert results['num_hyperframes'] == 6 and results['input_shape'] == (6, 15, 6, 6)
    for c, box in enumerate(boxes):
        for k in range(2):
            fast, slow = frames[3 * k:3 * k + 3], frames[6 + 2 * k:6 + 2 * k + 2]
            assert_hyperframe(results['imgs'][2 * c + k], [crop(f, box) for f in fast + slow])
    # channel by channel at one pixel of the first crop's second clip: fast frames 3, 4, 5,
    # then slow frames 8, 9
    assert results['imgs'][1, :, 0, 0].tolist() == [
        300, 310, 320, 400, 410, 420, 500, 510, 520, 800, 810, 820, 900, 910, 920]


def test_fused_streams_equal_the_streams_stacked_in_stream_order():
    frames = numbered_frames(4 + 2)
    streams = [dict(name='fast', clip_len=4, num_clips=1), dict(name='slow', clip_len=2,
                                                                  num_clips=1)]
    sample = dict(imgs=frames, clip_len=4, num_clips=1, hyperframe_streams=streams)
    apart = HyperframeStack()(dict(sample))
    fused = HyperframeStack(fuse_streams=True)(dict(sample))['imgs']
    np.testing.assert_array_equal(
        fused, np.concatenate([apart['imgs_fast'], apart['imgs_slow']], axis=1))
    # a one-stream sample is the same either way
    one = dict(imgs=frames[:4], clip_len=4, num_clips=1)
    np.testing.assert_array_equal(HyperframeStack(fuse_streams=True)(dict(one))['imgs'],
                                  HyperframeStack()(dict(one))['imgs'])
    assert repr(HyperframeStack(fuse_streams=True)) == \
        'HyperframeStack(fuse_streams=True, segments=1)'
    assert repr(HyperframeStack(segments=2)) == 'HyperframeStack(fuse_streams=False, segments=2)'


def test_fusing_needs_as_many_hyperframes_per_stream():
    with pytest.raises(ValueError, match=r'fuse_streams=True\): the streams need the same '
                                         r"number of hyperframes .*'fast': \(1, 12, 6, 8\), "
                                         r"'slow': \(2, 6, 6, 8\)"):
        fuse_streams([np.zeros((1, 12, 6, 8)), np.zeros((2, 6, 6, 8))], ['fast', 'slow'])


def test_after_mmaction_resize_and_center_crop():
    frames = [frame.astype(np.uint8) for frame in numbered_frames(3, height=8, width=16)]
    results = Resize(scale=(-1, 4), interpolation='nearest')(dict(imgs=list(frames),
                                                                   img_shape=(8, 16)))
    results = CenterCrop(crop_size=4)(results)
    results.update(clip_len=3, num_clips=1)
    x1, y1, x2, y2 = results['crop_bbox']
    expected = [frame[::2, ::2][y1:y2, x1:x2] for frame in frames]
    stacked = HyperframeStack()(results)['imgs']
    assert stacked.shape == (1, 9, 4, 4) and stacked.dtype == np.uint8
    assert_hyperframe(stacked[0], expected)


def test_grayscale_frames_stack_one_channel_each():
    frames = [np.full((4, 4), value, np.uint8) for value in (1, 2, 3)]
    stacked = HyperframeStack()(dict(imgs=frames, clip_len=3, num_clips=1))['imgs']
    assert stacked.shape == (1, 3, 4, 4)
    assert stacked[0, :, 0, 0].tolist() == [1, 2, 3]


def test_errors_name_the_file():
    with pytest.raises(ValueError, match=r'7 frames in v\.mp4 are not a whole number of crops '
                                         r'of 3 frames'):
        HyperframeStack()(dict(imgs=numbered_frames(7), clip_len=3, num_clips=1,
                               filename='v.mp4'))
    frames = numbered_frames(2) + numbered_frames(1, height=4)
    with pytest.raises(ValueError, match=r'v\.mp4: frame 2 has shape \(4, 8, 3\) but frame 0 '
                                         r'has \(6, 8, 3\)'):
        HyperframeStack()(dict(imgs=frames, clip_len=3, num_clips=1, filename='v.mp4'))
    with pytest.raises(ValueError, match=r'expected frames \[N, H, W, C\]'):
        stack_hyperframes(np.zeros((2, 4, 4)), 2)
    with pytest.raises(ValueError, match='4 frames cannot be split into hyperframes of 0'):
        stack_hyperframes(np.zeros((4, 2, 2, 3)), 0)


def test_pipeline_info_reads_step_names_and_stream_keys():
    from hyperframes_mm.datasets.transforms.pipeline_info import (SAMPLER_TRANSFORMS,
                                                                  stream_key, transform_type)
    from hyperframes_mm.datasets.transforms.sampling import HyperframeSampleFrames
    assert transform_type(dict(type='mmaction.DecordInit')) == 'DecordInit'
    assert transform_type(dict(type=HyperframeSampleFrames)) == 'HyperframeSampleFrames'
    assert transform_type({}) == ''
    assert 'HyperframeSampleFrames' in SAMPLER_TRANSFORMS
    assert (stream_key(), stream_key('fast')) == ('imgs', 'imgs_fast')


def test_frames_that_are_not_pixels_are_named_by_file():
    """mmaction2's DecordDecode(mode='efficient') hands on decord 0.6's 4-channel garbage for
    some narrow widths; the data preprocessor refused "20 channels", naming no file."""
    garbage = [np.zeros((8, 8, 4), np.uint8)] * 5
    with pytest.raises(ValueError, match=r"^HyperframeStack: narrow\.mp4: frames of shape "
                       r"\(8, 8, 4\) are not H x W x 3 \(RGB\) or H x W x 1 \(grey\)"):
        HyperframeStack()(dict(imgs=garbage, clip_len=5, num_clips=1, filename='narrow.mp4'))
    grey = HyperframeStack()(dict(imgs=[np.zeros((8, 8), np.uint8)] * 5, clip_len=5,
                                  num_clips=1, filename='grey.mp4'))
    assert grey['imgs'].shape == (1, 5, 8, 8)


def test_fuse_streams_must_be_a_bool():
    """The string 'no' is true, and fused the streams."""
    with pytest.raises(ValueError) as info:
        HyperframeStack(fuse_streams='no')
    assert str(info.value) == "HyperframeStack: fuse_streams must be True or False, got 'no'"
