"""TemporalShiftBackbone: mmaction2's temporal shift where MobileNetV2TSM puts it, in a timm
network; the 2D file loads strictly into it; frames mix within a clip and never across clips."""
import pytest
import timm
import torch
from mmaction.models.backbones.resnet_tsm import TemporalShift

from hyperframes_mm.models.backbones import TemporalShiftBackbone, shiftable_blocks

SEGMENTS = 4
#: the inverted residual blocks of tf_efficientnet_lite0 with a skip connection: the second and
#: later block of every stage but the first (one block, no expansion) and the last (one block)
LITE0_SHIFTED = ['blocks.1.1', 'blocks.2.1', 'blocks.3.1', 'blocks.3.2', 'blocks.4.1',
                 'blocks.4.2', 'blocks.5.1', 'blocks.5.2', 'blocks.5.3']


@pytest.fixture(scope='module')
def source(tmp_path_factory):
    """A 2D tf_efficientnet_lite0 with random weights and running statistics, its file (with
    the classifier timm's ImageNet files have) and its state dict."""
    torch.manual_seed(0)
    model = timm.create_model('tf_efficientnet_lite0', num_classes=10)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    path = tmp_path_factory.mktemp('shift') / 'lite0.pth'
    torch.save(model.state_dict(), path)
    return path, model.state_dict()


def build(path=None, segments=SEGMENTS):
    backbone = TemporalShiftBackbone(dict(type='timm.tf_efficientnet_lite0'),
                                     num_segments=segments, shift_div=8,
                                     pretrained=None if path is None else str(path))
    backbone.init_weights()
    return backbone.eval()


def test_the_blocks_mobilenet_v2_tsm_would_shift_are_shifted():
    backbone = build()
    assert backbone.shifted == LITE0_SHIFTED
    assert shiftable_blocks(timm.create_model('tf_efficientnet_lite0')) == LITE0_SHIFTED
    shifts = [name for name, module in backbone.model.named_modules()
              if isinstance(module, TemporalShift)]
    assert shifts == [f'{name}.conv_pw' for name in LITE0_SHIFTED]
    assert {backbone.model.get_submodule(name).num_segments for name in shifts} == {SEGMENTS}


def test_the_2d_file_loads_every_weight_under_the_shift(source):
    path, state = source
    loaded = build(path).state_dict()
    for key, value in state.items():
        if key.startswith('classifier.'):
            assert f'model.{key}' not in loaded
            continue
        block = key.rsplit('.conv_pw.', 1)[0]
        mine = (f'model.{block}.conv_pw.net.{key.rsplit(".conv_pw.", 1)[1]}'
                if block in LITE0_SHIFTED and '.conv_pw.' in key else f'model.{key}')
        assert torch.equal(loaded[mine], value), key
    # its own checkpoint (as a recognizer saves it) loads back as it is
    own = build()
    own.pretrained = None
    own.load_state_dict(build(path).state_dict())
    assert all(torch.equal(own.state_dict()[key], value) for key, value in loaded.items())


def test_frames_mix_within_a_clip_and_never_across_clips(source):
    backbone = build(source[0])
    torch.manual_seed(1)
    clips = torch.randn(2 * SEGMENTS, 3, 64, 64)
    changed = clips.clone()
    changed[0] += 1.0  # the first frame of the first clip
    with torch.no_grad():
        out, out_changed = backbone(clips), backbone(changed)
    assert out.shape == (2 * SEGMENTS, 1280, 1, 1)
    # the shifts carry the first frame's change to the clip's last frame (3 blocks away)...
    assert not torch.allclose(out[SEGMENTS - 1], out_changed[SEGMENTS - 1])
    # ...and nothing to the other clip of the batch
    assert torch.equal(out[SEGMENTS:], out_changed[SEGMENTS:])
    # a 2D network sees no other frame: without shifts the last frame's output is unchanged
    plain = timm.create_model('tf_efficientnet_lite0', num_classes=0).eval()
    with torch.no_grad():
        assert torch.equal(plain(clips)[SEGMENTS - 1], plain(changed)[SEGMENTS - 1])


def test_errors_name_the_backbone_or_the_file(tmp_path, source):
    with pytest.raises(ValueError, match='timm.resnet18 has no inverted residual block'):
        TemporalShiftBackbone(dict(type='timm.resnet18'), num_segments=SEGMENTS)
    with pytest.raises(ValueError, match='num_segments must be a positive int'):
        TemporalShiftBackbone(dict(type='timm.tf_efficientnet_lite0'), num_segments=0)
    other = tmp_path / 'mobilenetv2.pth'
    torch.save(timm.create_model('mobilenetv2_100').state_dict(), other)
    with pytest.raises(ValueError, match=f'{other} is not a checkpoint of this backbone'):
        build(other)
