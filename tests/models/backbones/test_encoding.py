"""Input encodings: exact matrices, the kernel basis change, and inflation guarantees under 'diff'."""
import pytest
import torch
from mmaction.registry import MODELS

from hyperframes_mm.models.backbones import reinflate_backbone
from hyperframes_mm.models.backbones.encoding import (change_kernel_basis, encode_frames,
                                                      encoding_matrix)

from .helpers import centre_frame, randomise_norms, repeat_frames, save_checkpoint


def test_diff_matrix_is_centre_frame_then_scaled_consecutive_differences():
    expected = torch.tensor([[0., 0., 1., 0., 0.],
                             [-2., 2., 0., 0., 0.],
                             [0., -2., 2., 0., 0.],
                             [0., 0., -2., 2., 0.],
                             [0., 0., 0., -2., 2.]], dtype=torch.float64)
    assert torch.equal(encoding_matrix(5, 'diff', 2.0), expected)
    assert torch.equal(encoding_matrix(4, 'frames'), torch.eye(4, dtype=torch.float64))
    assert torch.equal(encoding_matrix(1, 'diff', 3.0), torch.eye(1, dtype=torch.float64))


def test_encode_frames_matches_the_matrix_on_every_pixel():
    frames = torch.arange(9, dtype=torch.float32).view(1, 9, 1, 1) ** 2
    encoded = encode_frames(frames, 3, 'diff', 4.0)
    # frames: f0 = (0, 1, 4), f1 = (9, 16, 25), f2 = (36, 49, 64); anchor is f1
    assert encoded.flatten().tolist() == [9, 16, 25, 36, 60, 84, 108, 132, 156]
    assert encode_frames(frames, 3, 'frames') is frames


@pytest.mark.parametrize('dtype', [torch.float32, torch.float16, torch.bfloat16])
def test_kernel_basis_change_round_trips(dtype):
    # a fixed draw: a half-precision round trip of an unlucky one (a tiny weight whose encoded
    # terms are large) can exceed any fixed tolerance
    weight = torch.randn(4, 15, 3, 3, generator=torch.Generator().manual_seed(0)).to(dtype)
    there = change_kernel_basis(weight, 5, 'diff', 4.0, to_encoded=True)
    back = change_kernel_basis(there, 5, 'diff', 4.0, to_encoded=False)
    assert there.dtype == dtype
    tolerance = 1e-6 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(back.float(), weight.float(), rtol=tolerance, atol=tolerance)


def test_encoded_kernel_on_encoded_input_equals_raw_kernel_on_frames():
    torch.manual_seed(0)
    raw = torch.randn(8, 15, 3, 3, dtype=torch.float64)
    frames = torch.randn(2, 15, 6, 6, dtype=torch.float64)
    encoded_kernel = change_kernel_basis(raw, 5, 'diff', 4.0)
    out_raw = torch.nn.functional.conv2d(frames, raw)
    out_encoded = torch.nn.functional.conv2d(encode_frames(frames, 5, 'diff', 4.0),
                                             encoded_kernel)
    torch.testing.assert_close(out_encoded, out_raw, rtol=1e-10, atol=1e-10)


@pytest.fixture
def resnet_2d_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = randomise_norms(MODELS.build(dict(type='HyperResNet', depth=18, num_frames=1)))
    return model.eval(), save_checkpoint(tmp_path / 'r18_2d.pth', model.state_dict())


def build(checkpoint, **kwargs):
    model = MODELS.build(dict(type='HyperResNet', depth=18, pretrained=checkpoint,
                              input_encoding='diff', **kwargs))
    model.init_weights()
    return model.eval()


@torch.no_grad()
def test_diff_encoding_keeps_the_identical_frames_guarantee(resnet_2d_checkpoint):
    model_2d, checkpoint = resnet_2d_checkpoint
    frame = torch.randn(2, 3, 32, 32)
    hyper = build(checkpoint, num_frames=5, inflate_init='replicate')
    torch.testing.assert_close(hyper(repeat_frames(frame, 5)), model_2d(frame),
                               rtol=1e-5, atol=1e-5)
    reinflate_backbone(hyper, 3)
    torch.testing.assert_close(hyper(repeat_frames(frame, 3)), model_2d(frame),
                               rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_diff_encoding_with_center_init_is_the_2d_model_on_the_centre_frame(
        resnet_2d_checkpoint):
    model_2d, checkpoint = resnet_2d_checkpoint
    clip = torch.randn(2, 15, 32, 32)
    hyper = build(checkpoint, num_frames=5, inflate_init='center')
    torch.testing.assert_close(hyper(clip), model_2d(centre_frame(clip, 5)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('kwargs,message', [
    (dict(input_encoding='flow'), 'input_encoding must be one of'),
    (dict(input_encoding='diff', diff_gain=0), 'diff_gain must be a positive finite number'),
    (dict(input_encoding='diff', diff_gain=float('nan')),
     'diff_gain must be a positive finite number, got nan'),
    (dict(input_encoding='diff', diff_gain=float('inf')),
     'diff_gain must be a positive finite number, got inf'),
])
def test_bad_encoding_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MODELS.build(dict(type='HyperResNet', depth=18, num_frames=3, **kwargs))
