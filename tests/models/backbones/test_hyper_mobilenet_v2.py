"""HyperMobileNetV2 against mmaction2's MobileNetV2, and one 2D file for it and MobileNetV2TSM."""
from pathlib import Path

import pytest
import torch
import torchvision
from mmaction.models.backbones.mobilenet_v2 import MobileNetV2
from mmaction.models.backbones.mobilenet_v2_tsm import MobileNetV2TSM
from mmaction.registry import MODELS
from mmengine.config import Config
from torch.nn.modules.batchnorm import _BatchNorm

from hyperframes_mm.models.backbones import HyperMobileNetV2, reinflate_backbone

from .helpers import centre_frame, randomise_norms, repeat_frames, save_checkpoint

T = 5
SIZE = 32
CONFIG = Path(__file__).parents[3] / 'configs' / '_base_' / 'models' / 'hyper_mobilenet_v2.py'


@pytest.fixture(scope='module')
def mobilenet_2d(tmp_path_factory):
    """mmaction2's 2D MobileNetV2 (fixed seed, batch norms that change the output when loaded)
    and the path of its checkpoint, a bare state dict in mmaction2's layout."""
    torch.manual_seed(0)
    model = MobileNetV2()
    model.init_weights()
    randomise_norms(model).eval()  # mmaction2's MobileNetV2.train() returns None: no chaining
    path = tmp_path_factory.mktemp('mobilenet_v2') / 'mobilenet_v2_2d.pth'
    return model, save_checkpoint(path, model.state_dict())


def load_hyper(path: str, **kwargs) -> HyperMobileNetV2:
    model = HyperMobileNetV2(num_frames=kwargs.pop('num_frames', T), pretrained=path, **kwargs)
    model.init_weights()
    return model.eval()


def inflated_by_hand(kernel: torch.Tensor, mode: str) -> torch.Tensor:
    """The 2D conv1 kernel ``[32, 3, 3, 3]`` spread over T frames, written out independently."""
    if mode == 'replicate':
        return kernel.repeat(1, T, 1, 1) / T
    spread = torch.zeros(kernel.shape[0], 3 * T, *kernel.shape[2:])
    spread[:, 3 * (T // 2):3 * (T // 2) + 3] = kernel
    return spread


@pytest.mark.parametrize('mode', ['replicate', 'center'])
def test_inflation_keeps_the_2d_output_and_every_other_weight(mobilenet_2d, mode):
    model, path = mobilenet_2d
    hyper = load_hyper(path, inflate_init=mode)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        if mode == 'replicate':  # T identical frames give the 2D output
            frame = clip[:, :3]
            torch.testing.assert_close(hyper(repeat_frames(frame, T)), model(frame),
                                       rtol=1e-5, atol=1e-5)
        else:  # any clip gives the 2D output on its centre frame
            torch.testing.assert_close(hyper(clip), model(centre_frame(clip, T)),
                                       rtol=1e-5, atol=1e-5)
    expected, loaded = model.state_dict(), hyper.state_dict()
    assert set(loaded) == set(expected)
    assert torch.equal(loaded['conv1.conv.weight'],
                       inflated_by_hand(expected['conv1.conv.weight'], mode))
    for key in set(expected) - {'conv1.conv.weight'}:
        assert torch.equal(loaded[key], expected[key]), key


@torch.no_grad()
def test_a_torchvision_float_checkpoint_loads_without_a_converter(tmp_path):
    torch.manual_seed(0)
    net2d = randomise_norms(torchvision.models.mobilenet_v2(num_classes=4)).eval()
    hyper = load_hyper(save_checkpoint(tmp_path / 'torchvision.pth', net2d.state_dict()))
    frame = torch.randn(2, 3, SIZE, SIZE)
    torch.testing.assert_close(hyper(repeat_frames(frame, T)), net2d.features(frame),
                               rtol=1e-5, atol=1e-5)


def test_random_conv1_keeps_every_other_weight(mobilenet_2d):
    model, path = mobilenet_2d
    torch.manual_seed(1)
    hyper = load_hyper(path, inflate_init='random')
    expected, loaded = model.state_dict(), hyper.state_dict()
    for key in set(expected) - {'conv1.conv.weight'}:
        assert torch.equal(loaded[key], expected[key]), key
    # a fresh Kaiming-normal kernel (fan-out, ReLU gain): std sqrt(2 / (32 * 3 * 3))
    weight = loaded['conv1.conv.weight']
    assert weight.shape == (32, 3 * T, 3, 3)
    assert abs(weight.std().item() / (2 / (32 * 9)) ** 0.5 - 1) < 0.05


def test_mobilenet_v2_tsm_loads_the_same_file_strictly(mobilenet_2d):
    model, path = mobilenet_2d
    tsm = MobileNetV2TSM(num_segments=5, pretrained=path)
    tsm.init_weights()  # pretrained2d: load_state_dict(strict=True) of the 2D file
    # TSM wraps the shifted convs in TemporalShift(net=...): every other name is the file's
    loaded = {key.replace('.net.', '.'): value for key, value in tsm.state_dict().items()}
    assert any('.net.' in key for key in tsm.state_dict())
    assert set(loaded) == set(model.state_dict())
    for key, value in model.state_dict().items():
        assert torch.equal(loaded[key], value), key
    # and the hyperframe model reads the same file (the tests above check what it loads)
    assert load_hyper(path).conv1.conv.in_channels == 3 * T


def test_shifted_segments_at_t1_are_mmaction2s_tsm(mobilenet_2d):
    """num_segments=S puts mmaction2's TemporalShift where MobileNetV2TSM puts it: at T=1 (no
    inflation) the hyperframe model is MobileNetV2TSM on the same 2D file, output for output;
    at T=5 the same file loads with the shifted convs' keys under .net."""
    _, path = mobilenet_2d
    tsm = MobileNetV2TSM(num_segments=2, pretrained=path)
    tsm.init_weights()
    tsm.eval()
    shifted = load_hyper(path, num_frames=1, num_segments=2)
    assert shifted.shifted == ['layer2.1.conv.0', 'layer3.1.conv.0', 'layer3.2.conv.0',
                               'layer4.1.conv.0', 'layer4.2.conv.0', 'layer4.3.conv.0',
                               'layer5.1.conv.0', 'layer5.2.conv.0', 'layer6.1.conv.0',
                               'layer6.2.conv.0']
    x = torch.randn(4, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = tsm(x)
        torch.testing.assert_close(shifted(x), expected, rtol=0, atol=1e-6)
        # the shift does exchange the segments' features: unshifted, the output moves by far
        # more than the match above allows (random weights keep the residual branches small)
        assert (load_hyper(path, num_frames=1)(x) - expected).abs().max() > 5e-5
    five = load_hyper(path, num_segments=2)
    assert five.state_dict()['layer2.1.conv.0.net.conv.weight'].shape == (144, 24, 1, 1)
    # its own checkpoint (keys under .net already) loads back as it is
    own = save_checkpoint(Path(path).with_name('shifted.pth'), five.state_dict())
    reloaded = load_hyper(str(own), num_segments=2)
    for key, value in five.state_dict().items():
        assert torch.equal(reloaded.state_dict()[key], value), key


def test_extra_bn_and_the_diff_encoding_keep_the_2d_output(mobilenet_2d):
    model, path = mobilenet_2d
    hyper = load_hyper(path, extra_bn=True, input_encoding='diff', frame_attention=True)
    frame = torch.randn(2, 3, SIZE, SIZE)
    with torch.no_grad():
        torch.testing.assert_close(hyper(repeat_frames(frame, T)), model(frame),
                                   rtol=1e-5, atol=1e-5)
    # extra_bn starts from the pretrained stem norm's statistics (the identity in eval mode)
    assert torch.equal(hyper.extra_bn.running_var, model.conv1.bn.running_var)
    assert torch.equal(hyper.extra_bn.bias, model.conv1.bn.running_mean)


def test_reinflation_keeps_the_2d_output(mobilenet_2d):
    model, path = mobilenet_2d
    hyper = load_hyper(path)
    assert reinflate_backbone(hyper, 3) == ['']
    assert hyper.num_frames == 3 and hyper.conv1.conv.in_channels == 9
    frame = torch.randn(2, 3, SIZE, SIZE)
    with torch.no_grad():
        torch.testing.assert_close(hyper(repeat_frames(frame, 3)), model(frame),
                                   rtol=1e-5, atol=1e-5)


def test_a_checkpoint_that_does_not_fit_is_an_error_naming_the_file(mobilenet_2d, tmp_path):
    model, _ = mobilenet_2d
    state = model.state_dict()
    # layer7 is one block of 3 ConvModules: 3 kernels and 3 x 4 norm tensors
    partial = {key: value for key, value in state.items() if not key.startswith('layer7.')}
    with pytest.raises(KeyError, match=r'no_layer7.pth leaves 15 weights of HyperMobileNetV2 '
                       r"unset .*'layer7.0.conv.0.conv.weight'"):
        load_hyper(save_checkpoint(tmp_path / 'no_layer7.pth', partial))
    narrow = MobileNetV2(widen_factor=0.5).state_dict()  # conv1 3 -> 16, not 32
    with pytest.raises(RuntimeError, match='(?s)narrow.pth does not fit HyperMobileNetV2: .*size '
                       'mismatch for conv1.conv.weight'):
        load_hyper(save_checkpoint(tmp_path / 'narrow.pth', narrow))
    six = dict(state, **{'conv1.conv.weight': torch.zeros(32, 6, 3, 3)})
    with pytest.raises(ValueError, match=r"six.pth: first conv 'conv1.conv.weight' has 6 input "
                       r'channels; HyperMobileNetV2\(num_frames=5\) loads a 2D checkpoint'):
        load_hyper(save_checkpoint(tmp_path / 'six.pth', six))


def stem_norm_names(model: HyperMobileNetV2, training: bool = True) -> list:
    """Names of the batch norms in train mode (or, ``training=False``, in eval mode)."""
    return sorted(name for name, module in model.named_modules()
                  if isinstance(module, _BatchNorm) and module.training == training)


def test_partial_bn_freezes_every_norm_but_the_stems():
    hyper = HyperMobileNetV2(num_frames=3, partial_bn=True, extra_bn=True).train()
    assert stem_norm_names(hyper) == ['conv1.bn', 'hyperframe_stem.extra_bn']
    for name, module in hyper.named_modules():
        if isinstance(module, _BatchNorm):
            trains = name in ('conv1.bn', 'hyperframe_stem.extra_bn')
            assert module.weight.requires_grad is trains and module.bias.requires_grad is trains
    assert all(conv.weight.requires_grad for conv in hyper.modules()
               if isinstance(conv, torch.nn.Conv2d))
    assert stem_norm_names(hyper.eval()) == []


def test_norm_eval_keeps_only_extra_bn_training():
    hyper = HyperMobileNetV2(num_frames=3, norm_eval=True, extra_bn=True).train()
    assert stem_norm_names(hyper) == ['hyperframe_stem.extra_bn']
    assert all(param.requires_grad for param in hyper.parameters())


def test_frozen_stages_freeze_the_stem_with_its_parts():
    hyper = HyperMobileNetV2(num_frames=3, frozen_stages=2, out_indices=(0, 2, 7),
                             extra_bn=True, frame_attention=True).train()
    frozen = [hyper.conv1, hyper.layer1, hyper.layer2, hyper.extra_bn, hyper.frame_attention]
    assert all(not param.requires_grad for module in frozen for param in module.parameters())
    assert all(not module.training for module in frozen)
    assert all(param.requires_grad for param in hyper.layer3.parameters())
    outs = hyper(torch.randn(2, 9, SIZE, SIZE))
    assert [tuple(out.shape) for out in outs] == [(2, 16, 16, 16), (2, 32, 4, 4),
                                                  (2, 1280, 1, 1)]


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(num_frames=0), ValueError, 'HyperMobileNetV2: num_frames must be a positive int'),
    (dict(inflate_init='mean'), ValueError, 'HyperMobileNetV2: inflate_init must be one of'),
    (dict(pretrained=True), TypeError, 'pretrained must be a checkpoint path or None'),
    (dict(in_channels=15), TypeError, "unexpected keyword argument 'in_channels'"),
    (dict(num_segments=0), ValueError, 'HyperMobileNetV2: num_segments must be a positive int'),
    (dict(extra_bn=True, norm_cfg=dict(type='GN', num_groups=8)), ValueError,
     'extra_bn needs a batch norm; norm_cfg builds GroupNorm'),
    (dict(init_cfg=dict(type='Pretrained', checkpoint='m.pth')), ValueError,
     r'give the checkpoint as HyperMobileNetV2\(pretrained=PATH\)'),
])
def test_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        HyperMobileNetV2(**kwargs)


OUT_INDICES = ('HyperMobileNetV2: out_indices must be a non-empty list or tuple of distinct ints '
               'in increasing order, each in 0..7 (layer1..7, then conv2), got ')
FROZEN_STAGES = ('HyperMobileNetV2: frozen_stages must be an int in -1..8 (-1 freezes nothing, '
                 '0 the stem; layer1..7, then conv2), got ')


@pytest.mark.parametrize('kwargs,message', [
    # mmaction2's message named no component
    (dict(out_indices=(8, )), OUT_INDICES + '(8,)'),
    (dict(frozen_stages=9), FROZEN_STAGES + '9'),
    (dict(frozen_stages=-2), FROZEN_STAGES + '-2'),
    # an int not iterable; range(1, 2.0) in train()
    (dict(out_indices=7), OUT_INDICES + '7'),
    (dict(frozen_stages=1.0), FROZEN_STAGES + '1.0'),
    # built, and returned no output, one of two, or the two in the other order
    (dict(out_indices=()), OUT_INDICES + '()'),
    (dict(out_indices=(7, 7)), OUT_INDICES + '(7, 7)'),
    (dict(out_indices=[7, 2]), OUT_INDICES + '[7, 2]'),
])
def test_layer_arguments_that_do_not_fit_are_refused_at_build(kwargs, message):
    with pytest.raises(ValueError) as error:
        MODELS.build(dict(type='HyperMobileNetV2', num_frames=T, pretrained=None, **kwargs))
    assert str(error.value) == message


def test_the_widest_layer_arguments_still_build():
    hyper = MODELS.build(dict(type='HyperMobileNetV2', num_frames=T, pretrained=None,
                              out_indices=list(range(8)), frozen_stages=8)).train()
    outs = hyper(torch.randn(2, 3 * T, SIZE, SIZE))
    assert [o.shape[1] for o in outs] == [16, 24, 32, 64, 96, 160, 320, 1280]
    assert not any(p.requires_grad for p in hyper.parameters())


@pytest.mark.parametrize('widen_factor', [0, -1, float('nan'), '1'])
def test_a_widen_factor_that_is_no_positive_number_is_refused(widen_factor):
    # 0 and -1 built a tiny network of minimum-width layers
    with pytest.raises(ValueError) as error:
        HyperMobileNetV2(widen_factor=widen_factor)
    assert str(error.value) == ('HyperMobileNetV2: widen_factor must be a finite number > 0, '
                                f'got {widen_factor!r}')


def test_the_base_config_builds_a_hyperframe_recognizer():
    cfg = Config.fromfile(str(CONFIG))
    model = MODELS.build(cfg.model)
    model.init_weights()
    assert type(model.backbone) is HyperMobileNetV2
    assert model.cls_head.in_channels == 1280 == model.backbone.conv2.conv.out_channels
    num_frames = cfg.model.backbone.num_frames
    with torch.no_grad():
        features = model.eval().extract_feat(torch.rand(1, 2, 3 * num_frames, SIZE, SIZE),
                                             test_mode=True)[0]
    assert features.shape == (2, 1280, 1, 1)
