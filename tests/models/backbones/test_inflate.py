"""Inflation math: every mode and dtype, T -> T' re-inflation, conv surgery, errors, logs."""
import math
from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from mmcv.cnn.bricks.conv_ws import ConvWS2d
from timm.layers import StdConv2d
from torch import nn

from hyperframes_mm.models.backbones.inflate import (inflate_conv_weight, reinflate_conv_weight,
                                                     resize_conv_input, set_conv_weight,
                                                     temporal_resample_matrix)

from .helpers import centre_frame, repeat_frames

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
#: Relative precision of one rounding in each dtype (half an ulp at 1.0, doubled for margin).
EPS = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def kernel(dtype=torch.float32, channels=3, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(8, channels, 3, 3, generator=generator).to(dtype)


def temporal_sum(weight: torch.Tensor, channels: int = 3) -> torch.Tensor:
    out = weight.shape[0]
    return weight.float().reshape(out, -1, channels, *weight.shape[2:]).sum(1)


@pytest.mark.parametrize('dtype', DTYPES)
def test_replicate_tiles_and_divides_by_t(dtype):
    weight = kernel(dtype)
    inflated = inflate_conv_weight(weight, 5, 'replicate')
    assert inflated.dtype == dtype and inflated.shape == (8, 15, 3, 3)
    expected = (weight.float().repeat(1, 5, 1, 1) / 5).to(dtype)
    assert torch.equal(inflated, expected)
    torch.testing.assert_close(temporal_sum(inflated), weight.float(),
                               rtol=5 * EPS[dtype], atol=5 * EPS[dtype])


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('num_frames,centre', [(5, 2), (4, 2), (1, 0)])
def test_center_puts_the_kernel_on_frame_t_over_2(dtype, num_frames, centre):
    weight = kernel(dtype)
    inflated = inflate_conv_weight(weight, num_frames, 'center')
    assert inflated.dtype == dtype and inflated.shape == (8, 3 * num_frames, 3, 3)
    assert torch.equal(inflated[:, 3 * centre:3 * centre + 3], weight)
    rest = torch.cat([inflated[:, :3 * centre], inflated[:, 3 * centre + 3:]], dim=1)
    assert rest.numel() == 8 * 3 * (num_frames - 1) * 9 and not rest.any()


@pytest.mark.parametrize('dtype', DTYPES)
def test_random_is_kaiming_fan_out_and_ignores_the_kernel(dtype):
    weight = torch.zeros(64, 3, 7, 7, dtype=dtype)
    first = inflate_conv_weight(weight, 5, 'random', generator=torch.Generator().manual_seed(1))
    again = inflate_conv_weight(weight, 5, 'random', generator=torch.Generator().manual_seed(1))
    assert first.dtype == dtype and first.shape == (64, 15, 7, 7)
    assert torch.equal(first, again)
    # Kaiming normal, fan-out, ReLU gain: std = sqrt(2 / (64 * 7 * 7)) = 0.02525; 47040 draws.
    assert first.float().std().item() == pytest.approx(math.sqrt(2 / (64 * 49)), rel=0.02)
    assert first.float().mean().abs().item() < 0.001


def test_one_frame_replicate_is_the_2d_kernel():
    weight = kernel()
    assert torch.equal(inflate_conv_weight(weight, 1, 'replicate'), weight)


def test_identical_frames_give_the_2d_conv_output():
    weight, frame = kernel(), torch.randn(2, 3, 16, 16)
    expected = F.conv2d(frame, weight, padding=1)
    for num_frames in (2, 5, 8):
        inflated = inflate_conv_weight(weight, num_frames, 'replicate')
        torch.testing.assert_close(F.conv2d(repeat_frames(frame, num_frames), inflated, padding=1),
                                   expected, rtol=1e-5, atol=1e-5)


def test_center_gives_the_2d_conv_of_the_centre_frame():
    weight, clip = kernel(), torch.randn(2, 15, 16, 16)
    inflated = inflate_conv_weight(weight, 5, 'center')
    torch.testing.assert_close(F.conv2d(clip, inflated, padding=1),
                               F.conv2d(centre_frame(clip, 5), weight, padding=1),
                               rtol=1e-5, atol=1e-5)


def test_resample_matrix_exact_values():
    expected = [[Fraction(2, 3), 0], [Fraction(1, 3), Fraction(1, 3)], [0, Fraction(2, 3)]]
    assert temporal_resample_matrix(2, 3).tolist() == [[float(v) for v in row] for row in expected]
    assert torch.equal(temporal_resample_matrix(4, 4), torch.eye(4, dtype=torch.float64))
    assert torch.equal(temporal_resample_matrix(1, 4), torch.full((4, 1), 0.25,
                                                                 dtype=torch.float64))
    assert torch.equal(temporal_resample_matrix(4, 2),
                       torch.tensor([[1., 1., 0., 0.], [0., 0., 1., 1.]], dtype=torch.float64))
    # 3 -> 5: the centre frame [1/3, 2/3) spreads over frames 1..3 as 1/5, 3/5, 1/5.
    assert temporal_resample_matrix(3, 5)[:, 1].tolist() == [0, 0.2, 0.6, 0.2, 0]
    for src in range(1, 9):
        for dst in range(1, 9):
            sums = temporal_resample_matrix(src, dst).sum(0)
            torch.testing.assert_close(sums, torch.ones(src, dtype=torch.float64))


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('new_frames', [3, 7, 1])
def test_reinflation_keeps_the_identical_frames_output(dtype, new_frames):
    trained = kernel(dtype, channels=15, seed=3)  # an arbitrary (trained) 5-frame kernel
    resampled = reinflate_conv_weight(trained, new_frames)
    assert resampled.dtype == dtype and resampled.shape == (8, 3 * new_frames, 3, 3)
    torch.testing.assert_close(temporal_sum(resampled), temporal_sum(trained),
                               rtol=10 * EPS[dtype], atol=10 * EPS[dtype])
    if dtype == torch.float32:
        # the convolutions in float64, so that only the kernels' own rounding is compared, not
        # float32 sums of 27 against 45 products
        frame = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0)).double()
        torch.testing.assert_close(
            F.conv2d(repeat_frames(frame, new_frames), resampled.double(), padding=1),
            F.conv2d(repeat_frames(frame, 5), trained.double(), padding=1), rtol=1e-5,
            atol=1e-5)


def test_reinflation_of_replicate_and_center_kernels():
    weight = kernel()
    replicate5 = inflate_conv_weight(weight, 5, 'replicate')
    torch.testing.assert_close(reinflate_conv_weight(replicate5, 3),
                               inflate_conv_weight(weight, 3, 'replicate'), rtol=1e-6, atol=1e-7)
    center5 = inflate_conv_weight(weight, 5, 'center')
    assert torch.equal(reinflate_conv_weight(center5, 3), inflate_conv_weight(weight, 3, 'center'))
    assert torch.equal(reinflate_conv_weight(center5, 5), center5)
    # An inflated kernel given to inflate_conv_weight is resampled whatever the mode says.
    assert torch.equal(inflate_conv_weight(center5, 3, 'replicate'),
                       reinflate_conv_weight(center5, 3))


def test_inflation_logs_what_it_did(mm_logs):
    inflate_conv_weight(kernel(), 5, 'center')
    reinflate_conv_weight(kernel(channels=15), 7)
    assert any('(8, 3, 3, 3) kernel to (8, 15, 3, 3) over T=5 frames (mode=center)' in m
               for m in mm_logs)
    assert any('from T=5 to T=7 frames -> (8, 21, 3, 3)' in m for m in mm_logs)


@pytest.mark.parametrize('call,error,match', [
    (lambda: inflate_conv_weight(kernel(), 5, 'mean'), ValueError, 'inflate mode must be one of'),
    (lambda: inflate_conv_weight(kernel(), 0), ValueError, 'positive int, got 0'),
    (lambda: inflate_conv_weight(kernel(), 2.5), ValueError, 'positive int, got 2.5'),
    (lambda: inflate_conv_weight(kernel(), True), ValueError, 'positive int, got True'),
    (lambda: inflate_conv_weight(kernel(channels=4), 5), ValueError,
     '4 input channels is not a whole number of frames of 3'),
    (lambda: inflate_conv_weight(torch.zeros(8, 3), 5), ValueError, 'expected a conv kernel'),
    (lambda: reinflate_conv_weight(kernel(channels=15), -1), ValueError, 'positive int'),
    (lambda: temporal_resample_matrix(0, 3), ValueError, 'positive int'),
])
def test_inflation_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_resize_and_set_conv_weight_keep_the_module():
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=True)
    conv.weight.requires_grad_(False)
    assert resize_conv_input(conv, 15) is conv
    assert conv.in_channels == 15 and conv.weight.shape == (8, 15, 3, 3)
    assert conv.stride == (2, 2) and conv.bias is not None and not conv.weight.requires_grad
    new = torch.randn(8, 9, 3, 3)
    set_conv_weight(conv, new)
    assert conv.in_channels == 9 and torch.equal(conv.weight, new)
    assert conv(torch.randn(1, 9, 8, 8)).shape == (1, 8, 4, 4)


@pytest.mark.parametrize('call,error,match', [
    (lambda: resize_conv_input(nn.Conv2d(3, 6, 3, groups=3), 15), ValueError, 'grouped conv'),
    (lambda: resize_conv_input(nn.Linear(3, 4), 15), TypeError, 'expected an nn.Conv2d'),
    (lambda: resize_conv_input(StdConv2d(3, 8, 3), 15), TypeError,
     'conv is a StdConv2d, which standardises its kernel over its input channels'),
    (lambda: resize_conv_input(ConvWS2d(3, 8, 3), 15), TypeError,
     'conv is a ConvWS2d, which standardises its kernel over its input channels'),
    (lambda: set_conv_weight(nn.Conv2d(3, 8, 3), torch.zeros(8, 15, 5, 5)), ValueError,
     'does not fit a conv with 8 outputs and kernel'),
])
def test_conv_surgery_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
