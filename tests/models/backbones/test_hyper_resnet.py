"""HyperResNet against 2D ResNets of mmaction2, torchvision and mmpretrain (their own forward)."""
import pytest
import torch
import torchvision
from mmaction.models.backbones.resnet import ResNet as MMActionResNet
from mmaction.registry import MODELS
from mmpretrain.models.backbones.resnet import ResNet as MMPretrainResNet
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from hyperframes_mm.models.backbones import (HyperResNet, inflate_conv_weight, reinflate_backbone,
                                             resnet_state_dict_to_mmaction)

from .helpers import centre_frame, randomise_norms, repeat_frames, save_checkpoint

T = 5
SIZE = 32


def torchvision_features(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    return model.layer4(model.layer3(model.layer2(model.layer1(x))))


def reference_resnet(layout: str, depth: int):
    """A 2D ResNet in ``layout``, its checkpoint wrapping, and its own forward as the reference."""
    torch.manual_seed(depth)
    if layout == 'torchvision':
        model = getattr(torchvision.models, f'resnet{depth}')()
    elif layout == 'mmaction':
        model = MMActionResNet(depth, pretrained=None)
    else:
        model = MMPretrainResNet(depth)
    randomise_norms(model).eval()  # mmaction2's ResNet.train() returns None: no chaining
    if layout == 'torchvision':
        return model, '', lambda x: torchvision_features(model, x)
    if layout == 'mmaction':
        return model, 'mmaction', model
    return model, 'mmpretrain', lambda x: model(x)[-1]


def load_hyper(path: str, depth: int = 18, **kwargs) -> HyperResNet:
    model = HyperResNet(depth, num_frames=kwargs.pop('num_frames', T), pretrained=path, **kwargs)
    model.init_weights()
    return model.eval()


@pytest.fixture(scope='module')
def references(tmp_path_factory):
    """Per layout: a 2D ResNet-18, the path of its checkpoint, and its reference forward."""
    made = {}
    for layout in ('mmaction', 'torchvision', 'mmpretrain'):
        model, wrap, forward = reference_resnet(layout, 18)
        path = tmp_path_factory.mktemp(layout) / 'r18.pth'
        made[layout] = (model, save_checkpoint(path, model.state_dict(), wrap), forward)
    return made


@pytest.fixture(scope='module')
def resnet18_checkpoint(references):
    """The mmaction2-layout (recognizer checkpoint) 2D ResNet-18: path, model, forward."""
    model, path, forward = references['mmaction']
    return path, model, forward


@pytest.mark.parametrize('layout', ['mmaction', 'torchvision', 'mmpretrain'])
@pytest.mark.parametrize('mode', ['replicate', 'center'])
def test_loads_every_layout_and_keeps_the_2d_output(references, layout, mode):
    model, path, forward = references[layout]
    hyper = load_hyper(path, inflate_init=mode)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        if mode == 'replicate':
            frame = clip[:, :3]
            torch.testing.assert_close(hyper(repeat_frames(frame, T)), forward(frame),
                                       rtol=1e-5, atol=1e-5)
        else:
            torch.testing.assert_close(hyper(clip), forward(centre_frame(clip, T)),
                                       rtol=1e-5, atol=1e-5)
    # Every weight but conv1's is the checkpoint's own; conv1 is its exact inflation.
    expected = resnet_state_dict_to_mmaction(model.state_dict())
    loaded = hyper.state_dict()
    assert set(loaded) == set(expected)
    for key, value in expected.items():
        if key == 'conv1.conv.weight':
            assert torch.equal(loaded[key], inflate_conv_weight(value, T, mode))
        else:
            assert torch.equal(loaded[key], value), key


@pytest.mark.parametrize('depth,channels', [(34, 512), (101, 2048)])
def test_every_depth_builds(depth, channels):
    hyper = HyperResNet(depth, num_frames=3).eval()
    assert hyper(torch.randn(1, 9, SIZE, SIZE)).shape == (1, channels, 1, 1)


@pytest.mark.parametrize('depth', [50])  # Bottleneck blocks; ResNet-18 covers BasicBlock
def test_deeper_resnets_from_torchvision(tmp_path, depth):
    # In float64 (checkpoint, inflation and forward): a deep random-weight network amplifies the
    # float32 rounding of W / T (and of summing 15 products instead of 3) beyond 1e-5, while in
    # float64 any mapping or inflation error would still show at full size.
    model, wrap, forward = reference_resnet('torchvision', depth)
    path = save_checkpoint(tmp_path / f'r{depth}.pth', model.double().state_dict(), wrap)
    hyper = HyperResNet(depth, num_frames=T, pretrained=path).double()
    hyper.init_weights()
    hyper.eval()
    frame = torch.randn(1, 3, SIZE, SIZE, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(hyper(repeat_frames(frame, T)), forward(frame),
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize('mode', ['replicate', 'center'])
def test_extra_bn_and_frame_attention_keep_the_2d_output(resnet18_checkpoint, mode):
    path, model, forward = resnet18_checkpoint
    hyper = load_hyper(path, inflate_init=mode, extra_bn=True, frame_attention=True)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    inputs = repeat_frames(clip[:, :3], T) if mode == 'replicate' else clip
    reference = clip[:, :3] if mode == 'replicate' else centre_frame(clip, T)
    with torch.no_grad():
        torch.testing.assert_close(hyper(inputs), forward(reference), rtol=1e-5, atol=1e-5)
    # extra_bn starts from the pretrained stem norm's statistics.
    stem = model.conv1.bn
    assert torch.equal(hyper.extra_bn.running_mean, stem.running_mean)
    assert torch.equal(hyper.extra_bn.running_var, stem.running_var)
    assert torch.equal(hyper.extra_bn.bias, stem.running_mean)
    torch.testing.assert_close(hyper.extra_bn.weight, (stem.running_var + 1e-5).sqrt())


def test_extra_bn_restores_the_2d_statistics_in_train_mode(resnet18_checkpoint):
    path, model, _ = resnet18_checkpoint
    hyper = load_hyper(path, extra_bn=True).train()
    seen = []
    hyper.extra_bn.register_forward_hook(lambda module, args, out: seen.append(out))
    hyper(torch.randn(4, 3 * T, SIZE, SIZE) * 3 + 1)
    out = seen[0].transpose(0, 1).flatten(1)
    torch.testing.assert_close(out.mean(1), model.conv1.bn.running_mean, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.var(1, unbiased=False), model.conv1.bn.running_var,
                               rtol=1e-3, atol=1e-3)


def test_without_checkpoint_extra_bn_is_the_identity_in_eval():
    hyper = HyperResNet(18, num_frames=3, extra_bn=True).eval()
    hyper.init_weights()
    x = torch.randn(2, 64, 8, 8)
    torch.testing.assert_close(hyper.extra_bn(x), x, rtol=1e-6, atol=1e-6)


def test_hyperframe_checkpoint_loads_as_is(tmp_path):
    trained = HyperResNet(18, num_frames=T, extra_bn=True, frame_attention=True)
    trained.init_weights()
    randomise_norms(trained)
    torch.nn.init.normal_(trained.frame_attention.fc2.weight)
    path = save_checkpoint(tmp_path / 'hyper.pth', trained.state_dict(), 'mmaction')
    hyper = load_hyper(path, extra_bn=True, frame_attention=True, inflate_init='random')
    for key, value in trained.state_dict().items():
        assert torch.equal(hyper.state_dict()[key], value), key
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        assert torch.equal(hyper(clip), trained.eval()(clip))


def test_a_checkpoint_trained_with_extra_parts_needs_them(tmp_path):
    trained = HyperResNet(18, num_frames=T, extra_bn=True, frame_attention=True)
    path = save_checkpoint(tmp_path / 'with_parts.pth', trained.state_dict())
    with pytest.raises(ValueError, match=r"with_parts.pth was trained with \['extra_bn', "
                       r"'frame_attention'\], which this HyperResNet lacks: build it with "
                       r'extra_bn=True, frame_attention=True'):
        load_hyper(path)


def test_random_mode_leaves_only_conv1_fresh(resnet18_checkpoint, mm_logs):
    path, model, _ = resnet18_checkpoint
    hyper = load_hyper(path, inflate_init='random')
    assert not torch.equal(hyper.conv1.conv.weight[:, :3] * T, model.conv1.conv.weight)
    assert torch.equal(hyper.layer1[0].conv1.conv.weight, model.layer1[0].conv1.conv.weight)
    assert any(f'loaded {path}: first conv inflated 3 -> 15 channels (inflate_init=random)' in m
               for m in mm_logs)


def test_reinflation_t_to_t_prime_keeps_the_2d_output(resnet18_checkpoint):
    path, _, forward = resnet18_checkpoint
    recognizer = MODELS.build(dict(
        type='Recognizer2D',
        backbone=dict(type='HyperResNet', depth=18, num_frames=T, pretrained=path),
        cls_head=dict(type='TSNHead', num_classes=4, in_channels=512)))
    recognizer.init_weights()
    recognizer.eval()
    frame = torch.randn(2, 3, SIZE, SIZE)
    for new_frames in (3, 7):
        assert reinflate_backbone(recognizer, new_frames) == ['backbone']
        backbone = recognizer.backbone
        assert backbone.num_frames == new_frames and backbone.in_channels == 3 * new_frames
        assert backbone.conv1.conv.in_channels == 3 * new_frames
        with torch.no_grad():
            torch.testing.assert_close(backbone(repeat_frames(frame, new_frames)), forward(frame),
                                       rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r'HyperResNet\(num_frames=7\) expects 21 input channels, '
                       r'got 15 \(5 frames\)'):
        recognizer.backbone(repeat_frames(frame, 5))


def test_reinflating_a_trained_kernel_keeps_its_identical_frames_output():
    hyper = HyperResNet(18, num_frames=T, frame_attention=True)
    hyper.init_weights()
    hyper.eval()
    frame = torch.randn(1, 3, SIZE, SIZE)
    with torch.no_grad():
        before = hyper(repeat_frames(frame, T))
        reinflate_backbone(hyper, 8)
        torch.testing.assert_close(hyper(repeat_frames(frame, 8)), before, rtol=1e-5, atol=1e-5)


def test_reinflate_errors():
    with pytest.raises(ValueError, match='Sequential holds no hyperframe backbone'):
        reinflate_backbone(nn.Sequential(nn.Conv2d(3, 4, 3)), 3)
    with pytest.raises(ValueError, match='positive int, got 0'):
        reinflate_backbone(HyperResNet(18, num_frames=3), 0)


def test_frozen_stages_norm_eval_partial_bn():
    hyper = HyperResNet(18, num_frames=3, frozen_stages=1, norm_eval=True, extra_bn=True,
                        frame_attention=True).train()
    frozen = [hyper.conv1, hyper.layer1, hyper.extra_bn, hyper.frame_attention]
    assert all(not p.requires_grad for m in frozen for p in m.parameters())
    assert all(p.requires_grad for p in hyper.layer2.parameters())
    assert not hyper.extra_bn.training and not hyper.frame_attention.training
    assert not any(m.training for m in hyper.layer3.modules() if isinstance(m, _BatchNorm))

    hyper = HyperResNet(18, num_frames=3, norm_eval=True, extra_bn=True).train()
    assert hyper.extra_bn.training and not hyper.conv1.bn.training and hyper.conv1.conv.training

    hyper = HyperResNet(18, num_frames=3, partial_bn=True, extra_bn=True).train()
    norms = [m for m in hyper.modules() if isinstance(m, _BatchNorm)]
    trainable = [m for m in norms if m.weight.requires_grad and m.training]
    assert trainable == [hyper.conv1.bn, hyper.extra_bn]
    hyper.eval()
    assert not hyper.extra_bn.training


@pytest.mark.filterwarnings('ignore:torch.utils.checkpoint')  # mmaction2's blocks, upstream
def test_out_indices_and_with_cp():
    hyper = HyperResNet(50, num_frames=3, out_indices=(0, 3), with_cp=True).train()
    outs = hyper(torch.randn(2, 9, SIZE, SIZE, requires_grad=True))
    assert [tuple(o.shape) for o in outs] == [(2, 256, 8, 8), (2, 2048, 1, 1)]
    outs[1].sum().backward()
    assert hyper.conv1.conv.weight.grad.shape == (64, 9, 7, 7)


@pytest.mark.parametrize('channels,match', [
    (6, r'first conv \'conv1.conv.weight\' has 6 input channels; HyperResNet\(num_frames=5\) loads '
        r'a 2D checkpoint \(3 channels\) or a hyperframe one with 15'),
    (9, 'call reinflate_backbone'),
])
def test_checkpoint_with_neither_3_nor_3t_channels_is_an_error(tmp_path, channels, match):
    model = MMActionResNet(18, pretrained=None, in_channels=channels)
    path = save_checkpoint(tmp_path / 'bad.pth', model.state_dict())
    with pytest.raises(ValueError, match=match):
        load_hyper(path)
    with pytest.raises(ValueError, match='bad.pth'):
        load_hyper(path)


def test_checkpoint_errors_name_the_file(tmp_path, resnet18_checkpoint):
    saved = torch.load(resnet18_checkpoint[0])['state_dict']
    state = {key[len('backbone.'):]: value for key, value in saved.items()
             if key.startswith('backbone.')}
    partial = {k: v for k, v in state.items() if not k.startswith('layer4.')}
    with pytest.raises(KeyError, match=r'partial.pth leaves 25 weights of HyperResNet unset'):
        load_hyper(save_checkpoint(tmp_path / 'partial.pth', partial))
    no_conv1 = {k: v for k, v in state.items() if not k.startswith('conv1.conv')}
    with pytest.raises(KeyError, match=r"no_conv1.pth: no first conv weight 'conv1.conv.weight'"):
        load_hyper(save_checkpoint(tmp_path / 'no_conv1.pth', no_conv1))
    r50 = MMActionResNet(50, pretrained=None).state_dict()
    with pytest.raises(RuntimeError, match='r50.pth does not fit HyperResNet'):
        load_hyper(save_checkpoint(tmp_path / 'r50.pth', r50))
    # a deeper network of the same blocks: every weight of the model has its place, and the
    # blocks past the model's would be dropped with a warning
    r34 = MMActionResNet(34, pretrained=None).state_dict()
    with pytest.raises(RuntimeError, match=r"r34\.pth does not fit HyperResNet: it holds blocks "
                       r"HyperResNet does not have \(another depth or width\?\): "
                       r"\['layer1\.2\.conv1\.conv\.weight'"):
        load_hyper(save_checkpoint(tmp_path / 'r34.pth', r34))
    with pytest.raises(IsADirectoryError, match=rf'^{tmp_path}: is a directory, not a checkpoint'):
        load_hyper(str(tmp_path))
    # W / T of an integer kernel truncates to zeros: refused, not inflated to a zero conv1
    ints = dict(state, **{'conv1.conv.weight': (state['conv1.conv.weight'] * 100).to(torch.int8)})
    with pytest.raises(TypeError, match='a conv kernel of torch.int8 cannot be inflated'):
        load_hyper(save_checkpoint(tmp_path / 'int8.pth', ints))


@pytest.mark.parametrize('shape,match', [
    ((1, 9, SIZE, SIZE), r"^HyperResNet\(num_frames=5\) expects 15 input channels, got 9 \(3 "
     r"frames\): the sampler's num_frames must equal the backbone's$"),
    ((1, 16, SIZE, SIZE), r'expects 15 input channels, got 16: the sampler'),
    # one frame's channels: FormatShape in place of HyperframeStack, whatever T was sampled
    ((1, 3, SIZE, SIZE), r"^HyperResNet\(num_frames=5\) expects 15 input channels, got 3 \(1 "
     r"frame\): the pipeline has no HyperframeStack \(frames reach the model one by one\), or "
     r"the sampler's num_frames differs from the backbone's$"),
    ((1, 1, 15, SIZE, SIZE), r'expects hyperframes \[N, 15, H, W\], got a tensor of shape'),
])
def test_wrong_input_is_a_clear_error(shape, match):
    with pytest.raises(ValueError, match=match):
        HyperResNet(18, num_frames=T)(torch.randn(shape))


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(num_frames=0), ValueError, 'HyperResNet: num_frames must be a positive int, got 0'),
    (dict(inflate_init='mean'), ValueError, 'inflate_init must be one of'),
    (dict(pretrained=True), TypeError, 'pretrained must be a checkpoint path or None'),
    (dict(extra_bn=True, norm_cfg=dict(type='GN', num_groups=8, requires_grad=True)), ValueError,
     'extra_bn needs a batch norm; norm_cfg builds GroupNorm'),
    # what is neither HyperResNet's nor ResNet's goes to the stem, which refuses it
    (dict(num_frame=5), TypeError, "unexpected keyword argument 'num_frame'"),
    # conv1's input channels follow num_frames, and pretrained reads every layout
    (dict(in_channels=3), TypeError, "unexpected keyword argument 'in_channels'"),
    (dict(torchvision_pretrain=True), TypeError,
     "unexpected keyword argument 'torchvision_pretrain'"),
    (dict(input_encoding='flow'), ValueError, "input_encoding must be one of"),
    # nothing is downloaded, and the empty name names nothing
    (dict(pretrained=''), ValueError, "pretrained must name a local checkpoint file .*got ''"),
    (dict(pretrained='torchvision://resnet18'), ValueError,
     "pretrained must name a local checkpoint file"),
    # mmengine's loader would leave the widened conv1 random (shape mismatch), unverified
    (dict(init_cfg=dict(type='Pretrained', checkpoint='r18.pth')), ValueError,
     r"give the checkpoint as HyperResNet\(pretrained=PATH\), which inflates its first conv"),
    # conv1 is built for 3-channel frames: later errors described a network of another T
    (dict(num_frames=2, channels_per_frame=1), ValueError,
     r'^HyperResNet: channels_per_frame=1 makes 2 input channels of num_frames=2, and its first '
     r'conv is built for 6 \(3 channels a frame\); leave channels_per_frame out$'),
])
def test_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        HyperResNet(18, **kwargs)


@pytest.mark.parametrize('kwargs,message', [
    # failed in train(), looking for a layer5 that is not there
    (dict(frozen_stages=7), 'frozen_stages must be an int in -1..4 (-1 freezes nothing, 0 the '
     'stem; num_stages=4), got 7'),
    (dict(num_stages=2, strides=(1, 2), dilations=(1, 1), out_indices=(1, ), frozen_stages=3),
     'frozen_stages must be an int in -1..2 (-1 freezes nothing, 0 the stem; num_stages=2), '
     'got 3'),
    # froze nothing, silently; failed in train() on range(1, 2.5); froze one stage
    (dict(frozen_stages=-2), 'frozen_stages must be an int in -1..4 (-1 freezes nothing, 0 the '
     'stem; num_stages=4), got -2'),
    (dict(frozen_stages=1.5), 'frozen_stages must be an int in -1..4 (-1 freezes nothing, 0 the '
     'stem; num_stages=4), got 1.5'),
    (dict(frozen_stages=True), 'frozen_stages must be an int in -1..4 (-1 freezes nothing, 0 '
     'the stem; num_stages=4), got True'),
    # a bare AssertionError, max() of nothing, an int not iterable, inside mmaction2
    (dict(out_indices=(4, )), 'out_indices must be a non-empty list or tuple of distinct ints '
     'in increasing order, each in 0..3 (num_stages=4), got (4,)'),
    (dict(out_indices=()), 'out_indices must be a non-empty list or tuple of distinct ints in '
     'increasing order, each in 0..3 (num_stages=4), got ()'),
    (dict(out_indices=3), 'out_indices must be a non-empty list or tuple of distinct ints in '
     'increasing order, each in 0..3 (num_stages=4), got 3'),
    # built, and returned no output, one of two, or the two in the other order
    (dict(out_indices=(-1, )), 'out_indices must be a non-empty list or tuple of distinct ints '
     'in increasing order, each in 0..3 (num_stages=4), got (-1,)'),
    (dict(out_indices=(3, 3)), 'out_indices must be a non-empty list or tuple of distinct ints '
     'in increasing order, each in 0..3 (num_stages=4), got (3, 3)'),
    (dict(out_indices=[3, 0]), 'out_indices must be a non-empty list or tuple of distinct ints '
     'in increasing order, each in 0..3 (num_stages=4), got [3, 0]'),
    # bare AssertionErrors inside mmaction2
    (dict(num_stages=5), 'num_stages must be an int in 1..4, got 5'),
    (dict(num_stages=0), 'num_stages must be an int in 1..4, got 0'),
    (dict(num_stages=2), 'strides must be a list or tuple of 2 positive ints, one a stage '
     '(num_stages=2), got (1, 2, 2, 2)'),
    (dict(dilations=(1, 1)), 'dilations must be a list or tuple of 4 positive ints, one a stage '
     '(num_stages=4), got (1, 1)'),
    (dict(style='tf'), "style must be 'pytorch' or 'caffe', got 'tf'"),
    # a KeyError inside mmaction2
    (dict(depth=17), 'invalid depth 17: depth must be one of [18, 34, 50, 101, 152]'),
    (dict(depth='18'), "invalid depth '18': depth must be one of [18, 34, 50, 101, 152]"),
])
def test_stage_arguments_that_do_not_fit_are_refused_at_build(kwargs, message):
    cfg = dict(type='HyperResNet', depth=18, num_frames=T, pretrained=None)
    with pytest.raises(ValueError) as error:
        MODELS.build(dict(cfg, **kwargs))
    assert str(error.value) == f'HyperResNet: {message}'


def test_the_widest_stage_arguments_still_build():
    cfg = dict(type='HyperResNet', depth=18, num_frames=T, pretrained=None)
    hyper = MODELS.build(dict(cfg, out_indices=[0, 1, 2, 3], frozen_stages=4)).train()
    outs = hyper(torch.randn(2, 3 * T, SIZE, SIZE))
    assert [tuple(o.shape) for o in outs] == [(2, 64, 8, 8), (2, 128, 4, 4), (2, 256, 2, 2),
                                              (2, 512, 1, 1)]
    assert not any(p.requires_grad for p in hyper.parameters())
    one = MODELS.build(dict(cfg, num_stages=1, strides=[1], dilations=[1], out_indices=(0, )))
    assert one.res_layers == ['layer1'] and one.frozen_stages == -1


def test_resnet_arguments_reach_resnet():
    backbone = HyperResNet(18, num_frames=2, num_stages=3, out_indices=(1, 2), frozen_stages=1,
                           partial_bn=True, strides=(1, 2, 1), dilations=(1, 1, 1))
    assert (backbone.num_stages, backbone.out_indices, backbone.frozen_stages) == (3, (1, 2), 1)
    assert backbone.partial_bn and backbone.res_layers == ['layer1', 'layer2', 'layer3']
    assert backbone.layer3[0].conv1.conv.stride == (1, 1)
    assert backbone.conv1.conv.in_channels == 6


def test_a_hyperframe_checkpoint_of_another_encoding_is_refused(tmp_path):
    """Loaded as is (its conv1 is already 3T wide), a kernel trained on stacked frames would
    read frame differences; the file's config names what it was trained on."""
    trained = HyperResNet(18, num_frames=T)
    path = tmp_path / 'frames.pth'
    torch.save({'state_dict': {f'backbone.{k}': v for k, v in trained.state_dict().items()},
                'meta': {'cfg': f"model = dict(backbone=dict(type='HyperResNet', depth=18, "
                                f"num_frames={T}))"}}, path)
    with pytest.raises(ValueError, match=r"frames\.pth: trained with input_encoding='frames', "
                       r"diff_gain=4 \(the config it keeps\), and the model has "
                       r"input_encoding='diff', diff_gain=4"):
        load_hyper(str(path), input_encoding='diff')
    assert isinstance(load_hyper(str(path)), HyperResNet)


def test_numpy_integers_count_as_ints_in_the_stage_arguments():
    """``tuple(np.arange(4))`` as ``out_indices`` indexes as ints do; it was refused with a
    message that showed ``np.int64(3)`` as the reason."""
    import numpy as np
    from mmaction.registry import MODELS
    model = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=2, pretrained=None,
                              out_indices=tuple(np.arange(4)),
                              strides=tuple(np.array([1, 2, 2, 2])), frozen_stages=np.int64(1)))
    assert [output.shape[1] for output in model.eval()(torch.zeros(1, 6, 32, 32))] == [
        64, 128, 256, 512]
