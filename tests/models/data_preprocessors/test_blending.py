"""HyperframeDataPreprocessor's batch blending: a clip is mixed whole (one weight for every frame
of it, so its motion stays its own), the labels blend with the same weight, and a label the
blending's width cannot hold fails naming the parameter; a bad mean, std or channels_per_frame fails
at build, naming it."""
import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample

import hyperframes_mm  # noqa: F401  (registers the preprocessor)

T = 4  # frames per hyperframe: 3T channels


def _preprocessor(**blending):
    return MODELS.build(dict(type='HyperframeDataPreprocessor', mean=[0.0] * 3, std=[1.0] * 3,
                             blending=dict(type='MixupBlending', **blending)))


def _batch(labels, filenames=None):
    # sample i holds the value i in every channel of every frame
    inputs = [torch.full((1, 3 * T, 6, 6), float(i)) for i in range(len(labels))]
    samples = [ActionDataSample().set_gt_label(label) for label in labels]
    for sample, name in zip(samples, filenames or ()):
        sample.set_metainfo(dict(filename=name))
    return dict(inputs=inputs, data_samples=samples)


def test_mixup_mixes_every_frame_of_a_clip_with_the_weight_of_its_label():
    torch.manual_seed(0)
    out = _preprocessor(num_classes=5, alpha=1.0)(_batch([1, 3]), training=True)
    inputs, samples = out['inputs'], out['data_samples']
    assert inputs.shape == (2, 1, 3 * T, 6, 6)
    for index, sample in enumerate(samples):
        # one value over all 3T channels and pixels: the same mix reached every frame
        value = inputs[index].flatten()
        assert torch.equal(value, value[:1].expand_as(value))
        # sample 0 holds 0, sample 1 holds 1: the value is the weight of sample 1 in the mix,
        # which is the weight of sample 1's class (3) in the blended label
        label = sample.gt_label
        assert label.shape == (5, )
        assert torch.allclose(label.sum(), torch.tensor(1.0))
        assert torch.allclose(label[3], value[0]) and torch.allclose(label[1], 1 - value[0])
        assert torch.count_nonzero(label[[0, 2, 4]]) == 0


def test_blending_runs_only_in_training():
    out = _preprocessor(num_classes=5, alpha=1.0)(_batch([1, 3]), training=False)
    assert torch.equal(out['inputs'][1], torch.ones(1, 3 * T, 6, 6))
    assert [int(sample.gt_label) for sample in out['data_samples']] == [1, 3]


def test_a_label_outside_the_blending_width_names_the_sample_and_the_parameter():
    batch = _batch([1, 7], filenames=['a.mp4', 'b.mp4'])
    with pytest.raises(ValueError, match=r"label 7 of b\.mp4 is outside the blending's "
                                         r"num_classes=5: set model\.data_preprocessor"):
        _preprocessor(num_classes=5, alpha=1.0)(batch, training=True)


@pytest.mark.parametrize('kwargs, message', [
    # a zero std normalised to inf/NaN, a NaN one to NaN, a negative one flipped the channel
    (dict(mean=[1, 2, 3], std=[0, 1, 1]),
     'HyperframeDataPreprocessor: std[0] must be a finite number > 0, got 0'),
    (dict(mean=[1, 2, 3], std=[1, float('nan'), 1]),
     'HyperframeDataPreprocessor: std[1] must be a finite number > 0, got nan'),
    (dict(mean=[1, 2, 3], std=[1, 1, -1]),
     'HyperframeDataPreprocessor: std[2] must be a finite number > 0, got -1'),
    (dict(mean=[1, float('inf'), 3], std=[1, 1, 1]),
     'HyperframeDataPreprocessor: mean[1] must be a finite number, got inf'),
    # a string is no per-channel values (it failed inside torch.tensor, naming no parameter)
    (dict(mean='abc', std=[1, 1, 1]),
     "HyperframeDataPreprocessor: mean must be a sequence of numbers, got 'abc'"),
    # 0 raised ZeroDivisionError
    (dict(channels_per_frame=0),
     'HyperframeDataPreprocessor: channels_per_frame must be a positive int, got 0'),
    (dict(mean=[1, 2, 3], std=[1, 1, 1], channels_per_frame=0),
     'HyperframeDataPreprocessor: channels_per_frame must be a positive int, got 0'),
])
def test_a_bad_mean_std_or_channels_per_frame_fails_at_build_naming_it(kwargs, message):
    with pytest.raises(ValueError) as error:
        MODELS.build(dict(type='HyperframeDataPreprocessor', **kwargs))
    assert str(error.value) == message
