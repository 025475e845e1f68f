"""FrameAttention: exact descriptors, identity at start, learnable, independent of T."""
import math

import pytest
import torch

from hyperframes_mm.models.backbones import FrameAttention, frame_descriptors


def test_descriptors_are_colour_and_distance_from_the_mean_frame():
    first = torch.tensor([1., 2., 3.])[:, None, None].expand(3, 4, 4)
    second = torch.tensor([3., 2., 1.])[:, None, None].expand(3, 4, 4)
    clip = torch.cat([first, second])[None]
    expected = torch.tensor([[[1., 2., 3., 1., 0., 1.], [3., 2., 1., 1., 0., 1.]]])
    assert torch.equal(frame_descriptors(clip), expected)


def test_large_inputs_are_described_at_16x16():
    clip = torch.rand(2, 9, 64, 48)
    expected = frame_descriptors(torch.nn.functional.avg_pool2d(clip, (4, 3)))
    torch.testing.assert_close(frame_descriptors(clip), expected)
    colour = clip.reshape(2, 3, 3, -1).mean(-1)
    torch.testing.assert_close(frame_descriptors(clip)[..., :3], colour)


def test_starts_as_the_exact_identity_and_has_257_parameters():
    attention = FrameAttention()
    assert sum(p.numel() for p in attention.parameters()) == 257
    for channels in (9, 15, 24):  # the same module serves every T
        clip = torch.randn(2, channels, 8, 8)
        assert torch.equal(attention(clip), clip)
        assert torch.equal(attention.frame_weights(clip), torch.ones(2, channels // 3))
    torch.nn.init.normal_(attention.fc2.weight)
    attention.init_weights()
    clip = torch.randn(2, 15, 8, 8)
    assert torch.equal(attention(clip), clip)


def test_weights_follow_the_formula_and_scale_each_frame():
    attention = FrameAttention(hidden_channels=4)
    with torch.no_grad():
        attention.fc2.weight.copy_(torch.tensor([[0.5, -1.0, 0.25, 2.0]]))
        attention.fc2.bias.fill_(math.log(3))
    clip = torch.randn(2, 9, 8, 8)
    hidden = torch.relu(attention.fc1(frame_descriptors(clip)))
    weights = 2 * torch.sigmoid(hidden @ attention.fc2.weight.T + attention.fc2.bias)[..., 0]
    torch.testing.assert_close(attention.frame_weights(clip), weights)
    out = attention(clip)
    for frame in range(3):
        torch.testing.assert_close(out[:, 3 * frame:3 * frame + 3],
                                   clip[:, 3 * frame:3 * frame + 3] *
                                   weights[:, frame, None, None, None])


def test_the_identity_start_still_learns():
    attention = FrameAttention()
    clip = torch.randn(2, 15, 8, 8)
    (attention(clip) * torch.randn_like(clip)).sum().backward()
    assert attention.fc2.weight.grad.abs().sum() > 0 and attention.fc2.bias.grad.abs() > 0


def test_channels_must_be_whole_frames():
    with pytest.raises(ValueError, match='10 channels are not a whole number of frames of 3'):
        FrameAttention()(torch.randn(1, 10, 4, 4))
