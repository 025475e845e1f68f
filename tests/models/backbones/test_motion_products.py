"""Motion products: exact maps, the zero start, identical frames, T -> T', checkpoints, export."""
import pytest
import torch
from mmaction.registry import MODELS
from torch import nn

from hyperframes_mm.models.backbones import reinflate_backbone
from hyperframes_mm.models.backbones.encoding import change_kernel_basis
from hyperframes_mm.models.backbones.motion_products import MotionProducts, motion_product_maps

from .helpers import randomise_norms, repeat_frames, save_checkpoint


def ramp_pair(shift: int) -> torch.Tensor:
    """Two 1-channel 5x6 frames of the ramp ``I = 2x``, the second moved ``shift`` px in x."""
    x = torch.arange(6, dtype=torch.float64).expand(5, 6)
    return torch.stack([2 * x, 2 * (x - shift)]).view(1, 2, 1, 5, 6)


@pytest.mark.parametrize('shift', [1, -1])
def test_products_have_the_sign_of_the_motion_whatever_the_direction(shift):
    products = motion_product_maps(ramp_pair(shift))
    assert products.shape == (1, 2, 5, 6)
    # I_t = -2 * shift everywhere; I_x = 2 inside (central difference), 1 at the replicated
    # edges; I_y = 0: the x product is -4 * shift inside, -2 * shift on the left/right columns.
    expected_x = torch.full((5, 6), -4.0 * shift, dtype=torch.float64)
    expected_x[:, [0, -1]] = -2.0 * shift
    assert torch.equal(products[0, 0], expected_x)
    assert torch.equal(products[0, 1], torch.zeros(5, 6, dtype=torch.float64))


def test_products_are_summed_over_colours_and_ordered_by_pair():
    frames = torch.zeros(1, 3, 2, 4, 4)
    frames[:, 2, 1] = torch.arange(4.).view(4, 1).expand(4, 4)  # frame 2, colour 1: I = y
    products = motion_product_maps(frames)
    assert products.shape == (1, 4, 4, 4)
    # pair 0 (frames 0, 1) is static; pair 1: I_t = y, I_y of (y / 2) is 0.5 inside, 0.25 at
    # the replicated top and bottom rows, I_x = 0
    assert torch.count_nonzero(products[0, :3]) == 0
    expected_y = torch.arange(4.).view(4, 1).expand(4, 4) * 0.5
    expected_y[[0, -1]] *= 0.5
    assert torch.equal(products[0, 3], expected_y)


def test_output_has_the_stem_conv_shape_and_starts_at_zero():
    conv = nn.Conv2d(15, 8, 7, stride=2, padding=3)
    module = MotionProducts(5, conv)
    module.init_weights()
    x = torch.randn(2, 15, 33, 31)
    out = module(x)
    assert out.shape == conv(x).shape
    assert torch.count_nonzero(out) == 0


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match='at least 2 frames'):
        MotionProducts(1, nn.Conv2d(3, 8, 3, padding=1))
    with pytest.raises(ValueError, match='"same" padding'):
        MotionProducts(5, nn.Conv2d(15, 8, 7, stride=2, padding=0))
    with pytest.raises(ValueError, match='at least 2 frames'):
        MODELS.build(dict(type='HyperResNet', depth=18, num_frames=1, motion_products=True))


def build(**kwargs):
    model = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=5, **kwargs))
    model.init_weights()
    return model


@torch.no_grad()
@pytest.mark.parametrize('encoding', ['frames', 'diff'])
def test_untrained_products_change_nothing_and_identical_frames_never_see_them(encoding):
    torch.manual_seed(0)
    with_products = randomise_norms(build(input_encoding=encoding, motion_products=True)).eval()
    without = build(input_encoding=encoding).eval()
    missing, unexpected = without.load_state_dict(with_products.state_dict(), strict=False)
    assert unexpected == ['hyperframe_stem.motion_products.conv.weight'] and not missing
    clip = torch.randn(2, 15, 32, 32)
    assert torch.equal(with_products(clip), without(clip))

    nn.init.normal_(with_products.motion_products.conv.weight)
    assert not torch.allclose(with_products(clip), without(clip))
    still = repeat_frames(torch.randn(2, 3, 32, 32), 5)
    torch.testing.assert_close(with_products(still), without(still), rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_products_are_formed_from_the_frames_whatever_the_input_encoding():
    torch.manual_seed(0)
    raw = randomise_norms(build(input_encoding='frames', motion_products=True)).eval()
    nn.init.normal_(raw.motion_products.conv.weight)
    diff = build(input_encoding='diff', motion_products=True).eval()
    state = raw.state_dict()
    state['conv1.conv.weight'] = change_kernel_basis(state['conv1.conv.weight'], 5, 'diff', 4.0)
    diff.load_state_dict(state)
    clip = torch.randn(2, 15, 32, 32)
    torch.testing.assert_close(diff(clip), raw(clip), rtol=1e-4, atol=1e-4)


def test_products_learn_and_freeze_with_the_stem():
    model = build(input_encoding='diff', motion_products=True).train()
    model(torch.randn(4, 15, 32, 32)).sum().backward()
    assert model.motion_products.conv.weight.grad.abs().sum() > 0
    frozen = build(motion_products=True, frozen_stages=0).train()
    assert not frozen.motion_products.conv.weight.requires_grad
    assert not frozen.motion_products.training


@torch.no_grad()
def test_reinflation_resamples_the_kernel_over_frame_pairs():
    torch.manual_seed(0)
    model = build(input_encoding='diff', motion_products=True).eval()
    nn.init.normal_(model.motion_products.conv.weight)
    old = model.motion_products.conv.weight.clone().view(64, 4, 2, 3, 3)
    reinflate_backbone(model, 3)
    new = model.motion_products.conv.weight.view(64, 2, 2, 3, 3)
    # 4 pairs -> 2: area interpolation, each new pair is the sum of two old ones (sum kept)
    torch.testing.assert_close(new, old[:, 0::2] + old[:, 1::2])
    assert model(torch.randn(1, 9, 32, 32)).shape == (1, 512, 1, 1)
    weights = {key: value.clone() for key, value in model.state_dict().items()}
    with pytest.raises(ValueError, match='cannot re-inflate to num_frames=1'):
        reinflate_backbone(model, 1)
    # refused before anything changed: the stem and conv1 stayed at T=3, and the model runs
    assert model.num_frames == 3 and model.in_channels == 9
    assert all(torch.equal(value, weights[key]) for key, value in model.state_dict().items())
    assert model(torch.randn(1, 9, 32, 32)).shape == (1, 512, 1, 1)


def test_checkpoints_with_and_without_products(tmp_path):
    torch.manual_seed(0)
    trained = build(input_encoding='diff', motion_products=True)
    nn.init.normal_(trained.motion_products.conv.weight)
    path = save_checkpoint(tmp_path / 'mp.pth', trained.state_dict(), wrap='mmaction')
    loaded = build(input_encoding='diff', motion_products=True, pretrained=path)
    assert torch.equal(loaded.motion_products.conv.weight, trained.motion_products.conv.weight)
    with pytest.raises(ValueError, match=r"trained with \['motion_products'\]"):
        build(input_encoding='diff', pretrained=path)
    plain = save_checkpoint(tmp_path / 'r18_2d.pth',
                            MODELS.build(dict(type='HyperResNet', depth=18,
                                              num_frames=1)).state_dict())
    from_2d = build(motion_products=True, pretrained=plain)
    assert torch.count_nonzero(from_2d.motion_products.conv.weight) == 0


def test_mobilenet_stem_takes_the_products():
    model = MODELS.build(dict(type='HyperMobileNetV3', arch='small', num_frames=3,
                              input_encoding='diff', motion_products=True))
    model.init_weights()
    assert model.motion_products.conv.weight.shape == (16, 4, 3, 3)
    assert model(torch.randn(1, 9, 64, 64)).shape == (1, 576, 2, 2)


def test_onnx_export_keeps_the_products(tmp_path):
    pytest.importorskip('onnxruntime')
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.deploy.export import check_parity, export_onnx, random_pixels
    config = ('configs/hyperframes/synthetic/'
              'hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py')
    model = init_recognizer(config, device='cpu',
                            cfg_options={'model.backbone.motion_products': True})
    torch.manual_seed(0)
    nn.init.normal_(model.backbone.motion_products.conv.weight)
    inputs = random_pixels((1, 3, 15, 32, 32), 2)
    path = export_onnx(model, tmp_path / 'mp.onnx', inputs)
    check_parity(model, path, inputs)
