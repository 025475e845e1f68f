"""HyperframeStem: the composition order, where its parts live, a stem without a conv stem, a
switch that is no bool."""
import pickle

import pytest
import torch
import torch.nn.functional as F

from hyperframes_mm.models.backbones import HyperMobileNetV2, HyperResNet
from hyperframes_mm.models.backbones.encoding import encode_frames
from hyperframes_mm.models.backbones.stem import HyperframeStem

from .helpers import randomise_norms, save_checkpoint

T, SIZE = 4, 32
PARTS = dict(extra_bn=True, frame_attention=True, motion_products=True, input_encoding='diff')


def trained_resnet(seed=0, **parts):
    """A HyperResNet-18 whose stem parts all do something (none at its identity start)."""
    torch.manual_seed(seed)
    model = HyperResNet(18, num_frames=T, **parts)
    model.init_weights()
    randomise_norms(model, seed)
    with torch.no_grad():
        for param in model.hyperframe_stem.parameters():
            param.normal_(0, 0.1)
    return model.eval()


@torch.no_grad()
def test_the_stem_composes_its_parts_around_the_conv_stem_in_order():
    model = trained_resnet(**PARTS)
    stem, conv1 = model.hyperframe_stem, model.conv1
    x = torch.rand(2, 3 * T, SIZE, SIZE) * 4 - 2
    frames = stem.frame_attention(x)
    out = conv1.conv(encode_frames(frames, T, 'diff', 4.0, 3)) + stem.motion_products(frames)
    expected = F.relu(conv1.bn(stem.extra_bn(out)))
    torch.testing.assert_close(model.hyperframe_stem(x, conv1), expected, rtol=0, atol=0)
    torch.testing.assert_close(model(x), model.layer4(model.layer3(model.layer2(model.layer1(
        model.maxpool(expected))))), rtol=0, atol=0)


def test_the_parts_live_in_the_stem_and_the_2d_layers_keep_their_keys():
    keys = list(trained_resnet(**PARTS).state_dict())
    assert 'conv1.conv.weight' in keys and 'conv1.bn.running_var' in keys
    assert {key.split('.')[1] for key in keys if key.startswith('hyperframe_stem.')} == {
        'frame_attention', 'extra_bn', 'motion_products'}
    assert not [key for key in keys if key.startswith(('extra_bn.', 'motion_products.',
                                                       'frame_attention.'))]


def test_a_stem_part_without_a_conv_stem_is_an_error():
    with pytest.raises(ValueError, match='Owner has no conv-norm stem to put extra_bn in'):
        HyperframeStem(T, 'Owner', None, extra_bn=True)
    stem = HyperframeStem(T, 'Owner', None, input_encoding='diff')
    x = torch.rand(1, 3 * T, 8, 8)
    assert torch.equal(stem(x), encode_frames(x, T, 'diff', 4.0, 3))
    with pytest.raises(ValueError, match=r'Owner\(num_frames=4\) expects 12 input channels, '
                       r'got 9 \(3 frames\)'):
        stem(torch.rand(1, 9, 8, 8))


def test_a_hyperframe_backbone_pickles():
    model = trained_resnet(**PARTS)
    copy = pickle.loads(pickle.dumps(model))
    clip = torch.rand(1, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        assert torch.equal(copy(clip), model(clip))


@torch.no_grad()
def test_load_inflated_checkpoint_inflates_a_widened_torchvision_network(tmp_path):
    import torchvision

    from hyperframes_mm.models.backbones import load_inflated_checkpoint
    torch.manual_seed(0)
    net2d = randomise_norms(torchvision.models.resnet18(num_classes=5)).eval()
    path = save_checkpoint(tmp_path / 'r18.pth', net2d.state_dict())
    widened = torchvision.models.resnet18(num_classes=5)
    widened.conv1 = torch.nn.Conv2d(3 * T, 64, 7, 2, 3, bias=False)
    loaded = load_inflated_checkpoint(widened, path, first_conv='conv1')
    assert loaded == set(net2d.state_dict())
    frame = torch.rand(2, 3, SIZE, SIZE)
    # 'replicate' divides the 2D kernel by T: T identical frames give the 2D output
    torch.testing.assert_close(widened.eval()(frame.repeat(1, T, 1, 1)), net2d(frame))
    with pytest.raises(ValueError, match='name its first conv'):
        load_inflated_checkpoint(widened, path)
    with pytest.raises(ValueError, match="HyperResNet's first conv is 'conv1.conv', not 'conv1'"):
        load_inflated_checkpoint(HyperResNet(18, num_frames=T), path, first_conv='conv1')


def test_a_bare_hyperframe_state_dict_warns_that_its_encoding_cannot_be_checked(tmp_path,
                                                                                  mm_logs):
    """No weight's shape records the input encoding: a kernel learnt on frame differences
    loads into a model fed frames, so a file without its config is loaded with a warning."""
    from hyperframes_mm.models.backbones import load_inflated_checkpoint
    trained = trained_resnet(input_encoding='diff')
    path = save_checkpoint(tmp_path / 'bare.pth', trained.state_dict())
    model = HyperResNet(18, num_frames=T)
    load_inflated_checkpoint(model, path)
    warned = [line for line in mm_logs if 'cannot be checked' in line]
    assert warned == [f'HyperResNet: {path} holds a {T}-frame first conv but no config naming '
                      'the input encoding it was trained on, so it cannot be checked; it will '
                      "read inputs as input_encoding='frames', diff_gain=4. Save it with its "
                      'config (an mmengine checkpoint) or make sure they match.']
    torch.testing.assert_close(model.conv1.conv.weight, trained.conv1.conv.weight, rtol=0, atol=0)
    # a file that keeps its config is checked instead: no warning
    mm_logs.clear()
    torch.save({'state_dict': trained.state_dict(), 'meta': {'cfg': (
        "model = dict(backbone=dict(type='HyperResNet', input_encoding='diff'))")}},
        tmp_path / 'with_config.pth')
    load_inflated_checkpoint(HyperResNet(18, num_frames=T, input_encoding='diff'),
                             str(tmp_path / 'with_config.pth'))
    assert mm_logs and not [line for line in mm_logs if 'cannot be checked' in line]


@pytest.mark.parametrize('encoding', ['frames', 'diff'])
def test_encoding_map_is_encode_at_every_pixel(encoding):
    stem = HyperframeStem(3, 'test', input_encoding=encoding, diff_gain=2.5)
    frames = torch.randn(2, 9, 4, 5)
    mapped = torch.einsum('oc,nchw->nohw', stem.encoding_map().float(), frames)
    assert torch.allclose(mapped, stem.encode(frames), atol=1e-6)
    if encoding == 'diff':  # slot 2, channel 0: 2.5 * (frame 2 - frame 1)
        assert stem.encoding_map()[6].tolist() == [0, 0, 0, -2.5, 0, 0, 2.5, 0, 0]
    else:
        assert torch.equal(stem.encoding_map(), torch.eye(9, dtype=torch.float64))


@pytest.mark.parametrize('backbone', [HyperResNet, HyperMobileNetV2])
@pytest.mark.parametrize('part', ['frame_attention', 'extra_bn', 'motion_products'])
def test_a_stem_switch_that_is_no_bool_is_refused_for_every_backbone(backbone, part):
    # a config's 'False' is a true string: it built the part it meant to leave out
    args = (18, ) if backbone is HyperResNet else ()
    with pytest.raises(ValueError) as error:
        backbone(*args, num_frames=T, **{part: 'False'})
    assert str(error.value) == f"{backbone.__name__}: {part} must be True or False, got 'False'"
