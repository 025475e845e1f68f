"""HyperMobileNetV3 against mmpretrain's MobileNetV3 and torchvision's mobilenet_v3 forward."""
import pytest
import torch
import torchvision
from mmaction.registry import MODELS
from mmpretrain.models.backbones.mobilenet_v3 import MobileNetV3
from torch.nn.modules.batchnorm import _BatchNorm

from hyperframes_mm.models.backbones import (HyperMobileNetV3, inflate_conv_weight,
                                             mobilenet_v3_state_dict_to_mmpretrain,
                                             reinflate_backbone)

from .helpers import centre_frame, randomise_norms, repeat_frames, save_checkpoint

T = 5
SIZE = 32
# mmcv's HSigmoid warns on every build that its defaults changed in 2021 (we pass them).
pytestmark = pytest.mark.filterwarnings('ignore:In MMCV v1.4.4')


@pytest.fixture(scope='module')
def references(tmp_path_factory):
    """Per (arch, layout): a 2D MobileNetV3, the path of its checkpoint, its reference forward."""
    made = {}
    for arch in ('small', 'large'):
        torch.manual_seed(0)
        mmpretrain = randomise_norms(MobileNetV3(arch), seed=1)
        mmpretrain.eval()
        path = tmp_path_factory.mktemp(f'mmpretrain_{arch}') / 'mnv3.pth'
        made[arch, 'mmpretrain'] = (mmpretrain, save_checkpoint(path, mmpretrain.state_dict(),
                                                                'mmpretrain'),
                                    lambda x, model=mmpretrain: model(x)[-1])
        tv = randomise_norms(getattr(torchvision.models, f'mobilenet_v3_{arch}')(), seed=2).eval()
        path = tmp_path_factory.mktemp(f'torchvision_{arch}') / 'mnv3.pth'
        made[arch, 'torchvision'] = (tv, save_checkpoint(path, tv.state_dict()), tv.features)
    return made


def load_hyper(path: str, arch: str, **kwargs) -> HyperMobileNetV3:
    model = HyperMobileNetV3(arch, num_frames=T, pretrained=path, **kwargs)
    model.init_weights()
    return model.eval()


@pytest.mark.parametrize('arch', ['small', 'large'])
@pytest.mark.parametrize('layout', ['mmpretrain', 'torchvision'])
@pytest.mark.parametrize('mode', ['replicate', 'center'])
def test_loads_both_layouts_and_keeps_the_2d_output(references, arch, layout, mode):
    model, path, forward = references[arch, layout]
    hyper = load_hyper(path, arch, inflate_init=mode)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        if mode == 'replicate':
            frame = clip[:, :3]
            torch.testing.assert_close(hyper(repeat_frames(frame, T)), forward(frame),
                                       rtol=1e-5, atol=1e-5)
        else:
            torch.testing.assert_close(hyper(clip), forward(centre_frame(clip, T)),
                                       rtol=1e-5, atol=1e-5)
    # Every weight but the stem conv's is the checkpoint's own; the stem is its inflation.
    expected = mobilenet_v3_state_dict_to_mmpretrain(model.state_dict(),
                                                     MobileNetV3.arch_settings[arch])
    loaded = hyper.state_dict()
    assert set(loaded) == set(expected)
    for key, value in expected.items():
        if key == 'layer0.conv.weight':
            assert torch.equal(loaded[key], inflate_conv_weight(value, T, mode))
        else:
            assert torch.equal(loaded[key], value), key


@pytest.mark.parametrize('arch', ['small', 'large'])
def test_torchvision_mapping_covers_every_key(arch):
    tv = getattr(torchvision.models, f'mobilenet_v3_{arch}')().state_dict()
    converted = mobilenet_v3_state_dict_to_mmpretrain(tv, MobileNetV3.arch_settings[arch])
    assert set(converted) == set(MobileNetV3(arch).state_dict())
    assert len(tv) - len(converted) == 4  # classifier.0/.3 weight and bias


def test_extra_bn_and_frame_attention_keep_the_2d_output(references):
    model, path, forward = references['small', 'mmpretrain']
    # mmpretrain's init_cfg draws every Linear from N(0, 0.01): frame attention must re-zero.
    hyper = load_hyper(path, 'small', extra_bn=True, frame_attention=True)
    assert not hyper.frame_attention.fc2.weight.any()
    frame = torch.randn(2, 3, SIZE, SIZE)
    with torch.no_grad():
        torch.testing.assert_close(hyper(repeat_frames(frame, T)), forward(frame),
                                   rtol=1e-5, atol=1e-5)
    assert torch.equal(hyper.extra_bn.running_var, model.layer0.bn.running_var)


def test_reinflation_keeps_the_2d_output(references):
    _, path, forward = references['small', 'torchvision']
    hyper = load_hyper(path, 'small')
    frame = torch.randn(2, 3, SIZE, SIZE)
    reinflate_backbone(hyper, 3)
    assert hyper.num_frames == 3 and hyper.layer0.conv.in_channels == 9
    with torch.no_grad():
        torch.testing.assert_close(hyper(repeat_frames(frame, 3)), forward(frame),
                                   rtol=1e-5, atol=1e-5)


def test_out_indices_frozen_stages_norm_eval():
    hyper = HyperMobileNetV3('small', num_frames=3, out_indices=(0, 3, 12), frozen_stages=2,
                             norm_eval=True, extra_bn=True, frame_attention=True).train()
    outs = hyper(torch.randn(2, 9, SIZE, SIZE))
    assert [tuple(o.shape) for o in outs] == [(2, 16, 16, 16), (2, 24, 4, 4), (2, 576, 1, 1)]
    frozen = [hyper.layer0, hyper.layer1, hyper.layer2, hyper.extra_bn, hyper.frame_attention]
    assert all(not p.requires_grad for m in frozen for p in m.parameters())
    assert all(p.requires_grad for p in hyper.layer3.parameters())
    assert not any(m.training for m in hyper.modules() if isinstance(m, _BatchNorm))

    hyper = HyperMobileNetV3('large', num_frames=3, norm_eval=True, extra_bn=True).train()
    assert hyper.extra_bn.training and not hyper.layer0.bn.training
    assert hyper(torch.randn(2, 9, SIZE, SIZE)).shape == (2, 960, 1, 1)


def test_checkpoint_with_neither_3_nor_3t_channels_is_an_error(tmp_path, references):
    state = dict(references['small', 'mmpretrain'][0].state_dict())
    state['layer0.conv.weight'] = torch.zeros(16, 6, 3, 3)
    path = save_checkpoint(tmp_path / 'six.pth', state)
    with pytest.raises(ValueError, match=r"six.pth: first conv 'layer0.conv.weight' has 6 input "
                       r'channels; HyperMobileNetV3\(num_frames=5\) loads a 2D checkpoint'):
        load_hyper(path, 'small')
    with pytest.raises(RuntimeError, match='does not fit HyperMobileNetV3'):
        load_hyper(references['large', 'torchvision'][1], 'small')


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(arch='tiny'), ValueError, r"arch must be one of \['large', 'small', 'small_050', "),
    (dict(num_frames=-2), ValueError, 'num_frames must be a positive int, got -2'),
    (dict(depth=18), TypeError, "HyperframeStem.__init__.. got an unexpected keyword argument "
     "'depth'"),
    (dict(inflate_init='mean'), ValueError, 'HyperMobileNetV3: inflate_init must be one of'),
    (dict(init_cfg=[dict(type='Pretrained', checkpoint='m.pth')]), ValueError,
     r'give the checkpoint as HyperMobileNetV3\(pretrained=PATH\)'),
    (dict(pretrained='https://example.com/m.pth'), ValueError,
     'pretrained must name a local checkpoint file'),
])
def test_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        HyperMobileNetV3(**kwargs)


OUT_INDICES = ('HyperMobileNetV3: out_indices must be a non-empty list or tuple of distinct ints '
               "in increasing order, each in 0..{last} (arch='{arch}': layer0..{last}), got ")
FROZEN_STAGES = ('HyperMobileNetV3: frozen_stages must be an int in -1..{last} (-1 freezes '
                 "nothing, 0 the stem; arch='{arch}': layer0..{last}), got ")


@pytest.mark.parametrize('kwargs,message', [
    # mmpretrain's message named no component
    (dict(out_indices=(13, )), OUT_INDICES + '(13,)'),
    (dict(frozen_stages=20), FROZEN_STAGES + '20'),
    (dict(arch='large', frozen_stages=17), FROZEN_STAGES + '17'),
    (dict(frozen_stages=-2), FROZEN_STAGES + '-2'),
    # an int not iterable; range(0, 2.0) in train()
    (dict(out_indices=12), OUT_INDICES + '12'),
    (dict(frozen_stages=1.0), FROZEN_STAGES + '1.0'),
    # built, and returned no output, one of two, or the two in the other order
    (dict(out_indices=()), OUT_INDICES + '()'),
    (dict(arch='large', out_indices=(16, 16)), OUT_INDICES + '(16, 16)'),
    (dict(out_indices=[12, 3]), OUT_INDICES + '[12, 3]'),
])
def test_layer_arguments_that_do_not_fit_are_refused_at_build(kwargs, message):
    arch = kwargs.get('arch', 'small')
    with pytest.raises(ValueError) as error:
        MODELS.build(dict(type='HyperMobileNetV3', num_frames=T, pretrained=None, **kwargs))
    assert str(error.value) == message.format(arch=arch, last=16 if arch == 'large' else 12)


def test_the_widest_layer_arguments_still_build():
    hyper = MODELS.build(dict(type='HyperMobileNetV3', arch='large', num_frames=T,
                              pretrained=None, out_indices=[0, 16], frozen_stages=16)).train()
    outs = hyper(torch.randn(2, 3 * T, SIZE, SIZE))
    assert [tuple(o.shape) for o in outs] == [(2, 16, 16, 16), (2, 960, 1, 1)]
    assert not any(p.requires_grad for p in hyper.parameters())
    assert MODELS.build(dict(type='HyperMobileNetV3', num_frames=T)).out_indices == (12, )


def test_wrong_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"^HyperMobileNetV3\(num_frames=3\) expects 9 input "
                       r"channels, got 15 \(5 frames\): the sampler's num_frames must equal"):
        HyperMobileNetV3('small', num_frames=3)(torch.randn(1, 15, SIZE, SIZE))
