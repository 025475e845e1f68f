"""PadAwareConv2d: the taps it skips, exact outputs and gradients, HyperResNet, tracing."""
import itertools

import pytest
import torch
from mmaction.registry import MODELS
from mmcv.cnn import build_conv_layer
from mmengine.registry import DefaultScope
from torch import nn

from hyperframes_mm.models.backbones import PadAwareConv2d, live_taps


@pytest.mark.parametrize('args, expected', [
    # (size, kernel, stride, padding, dilation): a 3x3 conv on a 1x1 map reads its centre only
    ((1, 3, 1, 1, 1), (1, 1, 0, 0)),
    # ResNet's 7x7 stride-2 stem on a 1-pixel axis: the centre tap
    ((1, 7, 2, 3, 1), (3, 3, 0, 0)),
    # layer4's first 3x3 stride-2 conv on a 2x2 map: one output reads rows -1, 0, 1
    ((2, 3, 2, 1, 1), (1, 2, 0, 0)),
    # a 5-tap kernel with padding 2 on 2 rows: taps 2 and 3
    ((2, 5, 3, 2, 1), (2, 3, 0, 0)),
    # every tap reads the input somewhere: nothing to skip
    ((8, 3, 1, 1, 1), None),
    ((2, 3, 1, 1, 1), None),
    ((5, 1, 1, 0, 1), None),
])
def test_live_taps(args, expected):
    assert live_taps(*args) == expected


def test_live_taps_are_the_taps_some_output_reads_the_input_with():
    """The closed form against the definition, tap by tap and output by output."""
    for size, kernel, stride, padding, dilation in itertools.product(
            range(1, 7), range(1, 8), range(1, 4), range(0, 4), range(1, 3)):
        out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
        taps = live_taps(size, kernel, stride, padding, dilation)
        if out < 1:
            assert taps is None
            continue
        live = [tap for tap in range(kernel) if any(
            0 <= o * stride - padding + tap * dilation < size for o in range(out))]
        # only taps beyond the first or last live one are skipped (a dead tap between live ones
        # is computed); nothing read at all: the plain conv
        if not live or (live[0], live[-1]) == (0, kernel - 1):
            assert taps is None
        else:
            assert taps[:2] == (live[0], live[-1]), (size, kernel, stride, padding, dilation)


def pair(kernel, stride, padding, dilation, groups=1, bias=True):
    """An nn.Conv2d and a PadAwareConv2d with the same float64 weights."""
    torch.manual_seed(0)
    reference = nn.Conv2d(4, 6, kernel, stride, padding, dilation, groups, bias).double()
    conv = PadAwareConv2d(4, 6, kernel, stride, padding, dilation, groups, bias).double()
    conv.load_state_dict(reference.state_dict())
    return reference, conv


def outputs_and_grads(conv, x):
    out = conv(x)
    grads = torch.autograd.grad((out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype)
                                 .view_as(out)).sum(), [x] + list(conv.parameters()))
    return [out] + list(grads)


CASES = [case for case in itertools.product((1, 2, 3), (1, 2, 5), (1, 3, 5), (1, 2), (0, 1, 2),
                                            (1, 2))
         if min(case[:2]) + 2 * case[4] - case[5] * (case[2] - 1) - 1 >= 0]


@pytest.mark.parametrize('height, width, kernel, stride, padding, dilation', CASES)
def test_outputs_and_gradients_equal_nn_conv2d(height, width, kernel, stride, padding, dilation):
    reference, conv = pair(kernel, stride, padding, dilation)
    x = torch.randn(2, 4, height, width, dtype=torch.float64, requires_grad=True)
    for expected, got in zip(outputs_and_grads(reference, x), outputs_and_grads(conv, x)):
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_dead_taps_get_zero_gradient_and_weights_keep_their_shape():
    reference, conv = pair(3, 1, 1, 1, groups=2)
    x = torch.randn(3, 4, 1, 1, dtype=torch.float64)
    conv(x).sum().backward()
    assert conv.weight.shape == (6, 2, 3, 3)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[1, 1] = True
    assert torch.count_nonzero(conv.weight.grad[..., ~mask]) == 0
    assert torch.count_nonzero(conv.weight.grad[..., mask]) > 0
    torch.testing.assert_close(conv(x), reference(x), rtol=0, atol=1e-12)


def test_traced_graph_does_not_depend_on_the_traced_size():
    reference, conv = pair(3, 1, 1, 1)
    traced = torch.jit.trace(conv, torch.randn(1, 4, 1, 1, dtype=torch.float64))
    x = torch.randn(1, 4, 5, 5, dtype=torch.float64)
    torch.testing.assert_close(traced(x), reference(x), rtol=0, atol=1e-12)


def test_built_by_conv_cfg_from_any_scope():
    for scope in (None, 'mmaction'):
        with DefaultScope.overwrite_default_scope(scope):
            conv = build_conv_layer(dict(type='PadAwareConv2d'), 3, 8, 3, padding=1)
        assert type(conv) is PadAwareConv2d


def test_hyper_resnet_uses_it_when_asked_and_matches_plain_convs_at_32px():
    torch.manual_seed(0)
    cfg = dict(type='HyperResNet', depth=18, num_frames=5, norm_eval=False)
    model = MODELS.build(dict(cfg, conv_cfg=dict(type='PadAwareConv2d'))).eval()
    plain = MODELS.build(cfg).eval()  # the default: mmcv's plain convs, as mmaction2's ResNet
    plain.load_state_dict(model.state_dict())
    assert type(model.layer4[1].conv2.conv) is PadAwareConv2d
    assert not isinstance(plain.layer4[1].conv2.conv, PadAwareConv2d)
    x = torch.randn(2, 15, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), plain(x), rtol=1e-5, atol=1e-5)
