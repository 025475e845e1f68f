"""ConsistentClipAugment: one draw for every frame of a sample, exact pixel operations."""

import cv2
import numpy as np
import pytest

from hyperframes_mm.datasets.transforms.augment import (ConsistentClipAugment, adjust_color,
                                                         crop_resize, draw_color_params,
                                                         random_resized_box, scale_jitter_box,
                                                         to_rgb_frames)

ALL_OPS = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.2)


def textured(seed=0, height=48, width=64):
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def identity_color():
    return dict(brightness=1.0, contrast=1.0, saturation=1.0, hue=0.0, color_order=[])


# --- parameter draws --------------------------------------------------------------------------

def test_random_resized_box_respects_area_and_ratio():
    rng = np.random.default_rng(0)
    for _ in range(200):
        x1, y1, x2, y2 = random_resized_box(120, 160, (0.2, 0.6), (0.5, 2.0), rng)
        assert 0 <= x1 < x2 <= 160 and 0 <= y1 < y2 <= 120
        area = (x2 - x1) * (y2 - y1) / (120 * 160)
        assert 0.18 <= area <= 0.62
        assert 0.45 <= (x2 - x1) / (y2 - y1) <= 2.2


def test_random_resized_box_falls_back_to_a_centred_box():
    # a whole-frame box of ratio >= 2 never fits a square frame: centred full-width box
    rng = np.random.default_rng(0)
    assert random_resized_box(100, 100, (1.0, 1.0), (2.0, 3.0), rng) == (0, 25, 100, 75)
    assert random_resized_box(100, 100, (1.0, 1.0), (0.25, 0.5), rng) == (25, 0, 75, 100)


def test_scale_jitter_box_size_follows_the_drawn_scale():
    rng = np.random.default_rng(0)
    for _ in range(50):
        (x1, y1, x2, y2), short = scale_jitter_box(240, 320, (120, 120), (112, 112), rng)
        assert short == 120.0
        assert (x2 - x1, y2 - y1) == (224, 224)  # 112 px at half scale
        assert 0 <= x1 <= 96 and 0 <= y1 <= 16
    (x1, y1, x2, y2), short = scale_jitter_box(240, 320, (128, 256), (112, 112), rng)
    assert 128 <= short <= 256 and x2 - x1 == round(112 * 240 / short)


def test_color_params_ranges_and_per_call_order():
    rng = np.random.default_rng(0)
    orders = set()
    for _ in range(400):
        params = draw_color_params(rng, **ALL_OPS)
        assert 0.6 <= params['brightness'] <= 1.4 and 0.6 <= params['saturation'] <= 1.4
        assert 0.6 <= params['contrast'] <= 1.4 and -0.2 <= params['hue'] <= 0.2
        assert sorted(params['color_order']) == sorted(ALL_OPS)
        orders.add(tuple(params['color_order']))
    assert len(orders) == 24  # every order of the four ops is drawn
    disabled = draw_color_params(rng, contrast=0.5)
    assert disabled['color_order'] == ['contrast']
    assert (disabled['brightness'], disabled['saturation'], disabled['hue']) == (1.0, 1.0, 0.0)


# --- pixel operations -------------------------------------------------------------------------

def test_crop_resize_exact_crop_and_resize():
    frames = [textured(0), textured(1)]
    out = crop_resize(frames, (10, 5, 42, 37), None)
    np.testing.assert_array_equal(out, np.stack([f[5:37, 10:42] for f in frames]))
    out = crop_resize(frames, (10, 5, 42, 37), (16, 20))
    assert out.shape == (2, 20, 16, 3) and out.flags['C_CONTIGUOUS']
    np.testing.assert_array_equal(out[1], cv2.resize(frames[1][5:37, 10:42], (16, 20),
                                                     interpolation=cv2.INTER_LINEAR))


def test_brightness_and_contrast_exact_values_with_clamping():
    batch = np.full((1, 4, 4, 3), 100, np.uint8)
    batch[0, 0] = 200
    params = identity_color()
    params.update(brightness=1.5, color_order=['brightness'])
    out = adjust_color(batch, params)
    assert out[0, 1, 0, 0] == 150 and out[0, 0, 0, 0] == 255
    # contrast 0.5 towards the grey mean 125: 100 -> 112.5 -> 113, 200 -> 162.5 -> 163
    params = identity_color()
    params.update(contrast=0.5, color_order=['contrast'])
    out = adjust_color(batch, params)
    assert out[0, 1, 0, 0] == 113 and out[0, 0, 0, 0] == 163


def test_saturation_and_hue_exact_values():
    red = np.zeros((1, 2, 2, 3), np.uint8)
    red[..., 0] = 255
    params = identity_color()
    params.update(saturation=0.0, color_order=['saturation'])
    np.testing.assert_array_equal(adjust_color(red, params)[0, 0, 0], [76, 76, 76])  # luma
    params = identity_color()
    params.update(hue=0.5, color_order=['hue'])
    # half a turn of the 8-bit HSV hue circle takes red to cyan (OpenCV's 8-bit rounding)
    np.testing.assert_array_equal(adjust_color(red, params)[0, 0, 0], [0, 252, 255])
    grey = np.full((1, 2, 2, 3), 90, np.uint8)
    np.testing.assert_array_equal(adjust_color(grey, params), grey)  # grey has no hue


def test_color_order_matters_because_each_op_clamps():
    # a grey frame: a quarter at 40, the rest at 120
    batch = np.full((1, 4, 4, 3), 120, np.uint8)
    batch[0, 0] = 40
    params = identity_color()
    params.update(brightness=2.5, contrast=0.0)
    # brightness first: 100 and 300 -> 255; then contrast 0 gives the mean 216.25
    params['color_order'] = ['brightness', 'contrast']
    assert set(adjust_color(batch, params).ravel()) == {216}
    # contrast first: the mean 100; then brightness: 250
    params['color_order'] = ['contrast', 'brightness']
    assert set(adjust_color(batch, params).ravel()) == {250}


def test_to_rgb_frames_converts_grayscale_and_rgba():
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for frames in ([grey, grey], [grey[..., None]]):
        frames, converted = to_rgb_frames(frames, 'g.mp4')
        assert converted == 'grayscale'
        for frame in frames:
            np.testing.assert_array_equal(frame, np.repeat(grey[..., None], 3, axis=2))
    rgba = np.concatenate([textured(0, 4, 6), np.full((4, 6, 1), 7, np.uint8)], axis=2)
    frames, converted = to_rgb_frames([rgba], 'a.mov')
    assert converted == 'RGBA'
    np.testing.assert_array_equal(frames[0], rgba[..., :3])
    frames, converted = to_rgb_frames([textured(0)], 'x.mp4')
    assert converted is None


# --- the transform ----------------------------------------------------------------------------

def test_identical_frames_stay_identical_with_every_op():
    frame = textured(3, 96, 128)
    augment = ConsistentClipAugment(size=(56, 40), **ALL_OPS)
    np.random.seed(0)
    for _ in range(20):
        results = augment(dict(imgs=[frame.copy() for _ in range(5)]))
        assert results['img_shape'] == (40, 56)
        for img in results['imgs'][1:]:
            np.testing.assert_array_equal(img, results['imgs'][0])
    assert set(results['augment_params']) == {'crop_bbox', 'scale', 'flip', 'brightness',
                                              'contrast', 'saturation', 'hue', 'color_order'}


def test_both_streams_get_the_same_draw():
    # a two-stream sample: fast frames 0..3, slow frames 0, 2, 4, 6 of the same clip; the
    # frames both streams share must come out identical
    clip = [textured(seed, 96, 128) for seed in range(8)]
    fast, slow = [clip[i] for i in range(4)], [clip[i] for i in (0, 2, 4, 6)]
    augment = ConsistentClipAugment(size=48, **ALL_OPS)
    np.random.seed(1)
    for _ in range(10):
        out = augment(dict(imgs=[f.copy() for f in fast + slow]))['imgs']
        np.testing.assert_array_equal(out[0], out[4])  # frame 0
        np.testing.assert_array_equal(out[2], out[5])  # frame 2
        assert not np.array_equal(out[1], out[0])


def test_independent_draws_differ_per_frame():
    frame = textured(3, 96, 128)
    augment = ConsistentClipAugment(size=48, independent=True, **ALL_OPS)
    np.random.seed(0)
    results = augment(dict(imgs=[frame.copy() for _ in range(5)]))
    params = results['augment_params']
    assert isinstance(params, list) and len(params) == 5
    assert len({p['crop_bbox'] for p in params}) == 5
    for img in results['imgs'][1:]:
        assert not np.array_equal(img, results['imgs'][0])


def test_output_is_the_recorded_crop_of_the_input():
    frames = [textured(seed, 96, 128) for seed in range(3)]
    augment = ConsistentClipAugment(size=(32, 24), flip_ratio=0.0)
    np.random.seed(5)
    results = augment(dict(imgs=[f.copy() for f in frames]))
    x1, y1, x2, y2 = results['augment_params']['crop_bbox']
    for frame, img in zip(frames, results['imgs']):
        np.testing.assert_array_equal(img, cv2.resize(frame[y1:y2, x1:x2], (32, 24),
                                                      interpolation=cv2.INTER_LINEAR))


def test_scale_jitter_crop():
    frame = textured(0, 120, 160)
    augment = ConsistentClipAugment(size=56, area_range=None, scale_range=(64, 96),
                                    flip_ratio=0.0)
    np.random.seed(0)
    results = augment(dict(imgs=[frame]))
    params = results['augment_params']
    assert 64 <= params['scale'] <= 96 and results['img_shape'] == (56, 56)
    x1, y1, x2, y2 = params['crop_bbox']
    assert x2 - x1 == y2 - y1 == round(56 * 120 / params['scale'])
    np.testing.assert_array_equal(results['imgs'][0],
                                  cv2.resize(frame[y1:y2, x1:x2], (56, 56),
                                             interpolation=cv2.INTER_LINEAR))


def test_flip_is_exact_and_the_label_follows():
    frames = [textured(seed) for seed in range(2)]
    flip = ConsistentClipAugment(size=None, area_range=None, flip_ratio=1.0,
                                 flip_label_map={0: 1, 1: 0})
    results = flip(dict(imgs=[f.copy() for f in frames], label=0))
    assert results['label'] == 1 and results['augment_params']['flip'] is True
    for frame, img in zip(frames, results['imgs']):
        np.testing.assert_array_equal(img, frame[:, ::-1])
    assert flip(dict(imgs=[frames[0]], label=np.int64(1)))['label'] == 0
    assert flip(dict(imgs=[frames[0]], label=5))['label'] == 5  # not in the map
    keep = ConsistentClipAugment(size=None, area_range=None, flip_ratio=0.0,
                                 flip_label_map={0: 1, 1: 0})
    results = keep(dict(imgs=[frames[0].copy()], label=0))
    assert results['label'] == 0 and results['augment_params']['flip'] is False
    np.testing.assert_array_equal(results['imgs'][0], frames[0])


def test_flip_label_map_keys_from_text_configs():
    augment = ConsistentClipAugment(size=None, area_range=None, flip_ratio=1.0,
                                    flip_label_map={'86': '87', '87': '86'})
    assert augment(dict(imgs=[textured(0)], label=86))['label'] == 87


def test_seeded_draws_are_reproducible():
    augment = ConsistentClipAugment(size=32, **ALL_OPS)
    np.random.seed(42)
    first = augment(dict(imgs=[textured(0)]))['augment_params']
    np.random.seed(42)
    assert augment(dict(imgs=[textured(0)]))['augment_params'] == first
    assert augment(dict(imgs=[textured(0)]))['augment_params'] != first


def test_grayscale_and_rgba_frames_are_converted_and_logged_once(log_lines):
    augment = ConsistentClipAugment(size=None, area_range=None, flip_ratio=0.0)
    grey = np.arange(48 * 64, dtype=np.uint8).reshape(48, 64)
    for _ in range(2):
        results = augment(dict(imgs=[grey, grey], filename='grey.avi'))
    np.testing.assert_array_equal(results['imgs'][1], np.repeat(grey[..., None], 3, axis=2))
    assert sum('grey.avi has grayscale frames; converted to RGB' in line
               for line in log_lines) == 1
    rgba = np.concatenate([textured(0), np.zeros((48, 64, 1), np.uint8)], axis=2)
    results = augment(dict(imgs=[rgba], filename='alpha.mov'))
    np.testing.assert_array_equal(results['imgs'][0], rgba[..., :3])
    assert any('alpha.mov has RGBA frames' in line for line in log_lines)


def test_bad_frames_name_the_file():
    augment = ConsistentClipAugment(size=32)
    with pytest.raises(ValueError, match=r'clip\.mp4: frames change size inside the video: '
                                         r'frame 0 is 48x64, frame 2 is 32x80'):
        augment(dict(imgs=[textured(0), textured(1), textured(2, 32, 80)], filename='clip.mp4'))
    with pytest.raises(ValueError, match=r'clip\.mp4: frame 0 is float32'):
        augment(dict(imgs=[textured(0).astype(np.float32)], filename='clip.mp4'))
    with pytest.raises(ValueError, match=r'clip\.mp4: frame 0 has shape \(48, 64, 2\)'):
        augment(dict(imgs=[textured(0)[..., :2]], filename='clip.mp4'))
    with pytest.raises(ValueError, match=r'clip\.mp4: frame 1 has shape \(48, 64, 4\) but '
                                         r'frame 0 has \(48, 64, 3\)'):
        rgba = np.concatenate([textured(0), textured(0)[..., :1]], axis=2)
        augment(dict(imgs=[textured(0), rgba], filename='clip.mp4'))
    with pytest.raises(ValueError, match=r'clip\.mp4: no frames'):
        augment(dict(imgs=[], filename='clip.mp4'))
    flip = ConsistentClipAugment(size=32, flip_ratio=1.0, flip_label_map={0: 1})
    with pytest.raises(ValueError, match=r'clip\.mp4: flip_label_map needs a single int label'):
        flip(dict(imgs=[textured(0)], label=[0, 1], filename='clip.mp4'))


@pytest.mark.parametrize('kwargs, message', [
    (dict(size=0), r'size must be a positive int or \(w, h\), got 0'),
    (dict(size=(32, 32, 3)), 'size must be a positive int'),
    (dict(area_range=(0.0, 1.0)), r'area_range must be \(min, max\)'),
    (dict(area_range=(0.5, 1.5)), r'area_range must be \(min, max\)'),
    (dict(area_range=(0.8, 0.2)), r'area_range must be \(min, max\)'),
    (dict(aspect_ratio_range=(0, 1)), r'aspect_ratio_range must be \(min, max\)'),
    (dict(area_range=None, scale_range=(0, 256)), r'scale_range must be \(min, max\)'),
    (dict(scale_range=(256, 320)), 'scale_range has no effect with area_range'),
    (dict(size=None), 'size=None only works without a crop'),
    (dict(size=224, area_range=None, scale_range=(200, 256)),
     r'scale_range=\(200, 256\) must not go below the crop size'),
    (dict(flip_ratio=1.5), r'flip_ratio must be in \[0, 1\], got 1.5'),
    (dict(brightness=-0.1), 'brightness must be >= 0, got -0.1'),
    (dict(saturation=-1), 'saturation must be >= 0'),
    (dict(hue=0.6), r'hue must be in \[0, 0.5\], got 0.6'),
    (dict(independent=True, flip_label_map={0: 1}), 'flip_label_map needs one flip per sample'),
    (dict(flip_label_map={'left': 'right'}), 'flip_label_map must map int labels'),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConsistentClipAugment(**kwargs)


@pytest.mark.parametrize('kwargs, message', [
    (dict(brightness=float('inf')), 'brightness must be a finite number, got inf'),
    (dict(hue=float('nan')), 'hue must be a finite number, got nan'),
    (dict(aspect_ratio_range=(0.5, float('inf'))),
     'aspect_ratio_range[1] must be a finite number, got inf'),
    (dict(area_range=None, scale_range=(256, float('inf'))),
     'scale_range[1] must be a finite number, got inf'),
    (dict(size=2.5), 'size must be a positive int or (w, h), got 2.5'),
    (dict(flip_ratio='0.5'), "flip_ratio must be a finite number, got '0.5'"),
    (dict(brightness='0.4'), "brightness must be a finite number, got '0.4'"),
    (dict(area_range='ab'), 'area_range must be (min, max) with 0 < min <= max, min >= 0, '
                            "max <= 1; got 'ab'"),
    (dict(area_range=0.5), 'area_range must be (min, max) with 0 < min <= max, min >= 0, '
                           'max <= 1; got 0.5'),
    (dict(independent='False'), "independent must be True or False, got 'False'"),
])
def test_unusable_parameters_are_refused_at_build(kwargs, message):
    """An infinite bound or jitter overflowed at the first sample, a str or a number where a
    pair belongs was a bare TypeError, and the string 'False' turned ``independent`` on."""
    with pytest.raises(ValueError) as info:
        ConsistentClipAugment(**kwargs)
    assert str(info.value) == f'ConsistentClipAugment: {message}'


def test_repr():
    text = repr(ConsistentClipAugment(size=112, brightness=0.2))
    assert text.startswith('ConsistentClipAugment(size=(112, 112), area_range=(0.08, 1.0)')
    assert 'brightness=0.2' in text and text.endswith('independent=False)')
