"""TemporalShiftBackbone and InflatedBackbone(num_segments=S): mmaction2's temporal shift where
MobileNetV2TSM puts it, in a timm network (over frames, or over hyperframes whose stem is
inflated); the 2D file loads into it; segments mix within a clip and never across clips."""
import pytest
import timm
import torch
from mmaction.models.backbones.resnet_tsm import TemporalShift

from hyperframes_mm.models.backbones import (InflatedBackbone, TemporalShiftBackbone,
                                             inflate_conv_weight, shiftable_blocks)
from hyperframes_mm.models.backbones.temporal_shift import move_under_shift

SEGMENTS = 4
FRAMES = 3
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


def assert_shifted_where_mobilenet_v2_tsm_shifts(backbone):
    assert backbone.shifted == LITE0_SHIFTED
    shifts = [name for name, module in backbone.model.named_modules()
              if isinstance(module, TemporalShift)]
    assert shifts == [f'{name}.conv_pw' for name in LITE0_SHIFTED]
    assert {backbone.model.get_submodule(name).num_segments for name in shifts} == {SEGMENTS}


def assert_holds_the_2d_file(loaded, state, stem=lambda weight: weight):
    """Every weight of the 2D file ``state`` is in ``loaded`` (a shifted backbone's state dict),
    each shifted conv's under the shift's ``net``, the stem conv's as ``stem`` makes it; the
    file's classifier is not."""
    for key, value in state.items():
        if key.startswith('classifier.'):
            assert f'model.{key}' not in loaded
            continue
        block = key.rsplit('.conv_pw.', 1)[0]
        mine = (f'model.{block}.conv_pw.net.{key.rsplit(".conv_pw.", 1)[1]}'
                if block in LITE0_SHIFTED and '.conv_pw.' in key else f'model.{key}')
        expected = stem(value) if key == 'conv_stem.weight' else value
        assert torch.equal(loaded[mine], expected), key


def test_the_blocks_mobilenet_v2_tsm_would_shift_are_shifted():
    assert_shifted_where_mobilenet_v2_tsm_shifts(build())
    assert shiftable_blocks(timm.create_model('tf_efficientnet_lite0')) == LITE0_SHIFTED


def test_the_2d_file_loads_every_weight_under_the_shift(source):
    path, state = source
    loaded = build(path).state_dict()
    assert_holds_the_2d_file(loaded, state)
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
    # '' was read as no file: random weights, exit 0
    with pytest.raises(ValueError, match=r"^TemporalShiftBackbone: pretrained must name a "
                       r"checkpoint file or be None, got ''$"):
        TemporalShiftBackbone(dict(type='timm.tf_efficientnet_lite0'), num_segments=SEGMENTS,
                              pretrained='')


def test_move_under_shift_moves_each_wrapped_convs_keys_once():
    state = {'a.conv_pw.weight': 1, 'a.conv_pw.net.bias': 2, 'a.conv_pwl.weight': 3,
             'b.conv_pw.weight': 4}
    assert move_under_shift(state, ['a.conv_pw']) == {
        'a.conv_pw.net.weight': 1, 'a.conv_pw.net.bias': 2, 'a.conv_pwl.weight': 3,
        'b.conv_pw.weight': 4}
    assert move_under_shift(state, []) == state


def build_inflated(path=None, segments=SEGMENTS):
    backbone = InflatedBackbone(dict(type='timm.tf_efficientnet_lite0'), first_conv='conv_stem',
                                num_frames=FRAMES, num_segments=segments,
                                pretrained=None if path is None else str(path))
    backbone.init_weights()
    return backbone.eval()


def test_shifted_hyperframes_are_shifted_where_the_tsm_baseline_is_and_load_the_2d_file(
        tmp_path, source):
    path, state = source
    backbone = build_inflated(path)
    assert backbone.num_segments == SEGMENTS
    assert_shifted_where_mobilenet_v2_tsm_shifts(backbone)
    loaded = backbone.state_dict()
    assert_holds_the_2d_file(loaded, state,
                             stem=lambda weight: inflate_conv_weight(weight, FRAMES, 'replicate'))
    # a hyperframe checkpoint trained without shifts loads into the shifted network, weight for
    # weight, and the shifted network's own checkpoint loads back as it is
    plain = build_inflated(path, segments=1)
    for checkpoint, weights in (('plain.pth', plain.state_dict()), ('own.pth', loaded)):
        torch.save(weights, tmp_path / checkpoint)
        again = build_inflated(tmp_path / checkpoint).state_dict()
        assert again.keys() == loaded.keys()
        assert all(torch.equal(again[key], value) for key, value in loaded.items()), checkpoint


def test_shifted_hyperframes_mix_within_a_clip_and_never_across_clips(source):
    torch.manual_seed(1)
    clips = torch.randn(2 * SEGMENTS, 3 * FRAMES, 64, 64)
    changed = clips.clone()
    changed[0] += 1.0  # the first hyperframe of the first clip
    for segments, reaches_the_last in ((SEGMENTS, True), (1, False)):
        backbone = build_inflated(source[0], segments=segments)
        with torch.no_grad():
            out, out_changed = backbone(clips), backbone(changed)
        assert out.shape == (2 * SEGMENTS, 1280, 1, 1)
        # with shifts the change reaches the clip's last hyperframe; without, no other one
        assert torch.equal(out[SEGMENTS - 1], out_changed[SEGMENTS - 1]) != reaches_the_last
        assert torch.equal(out[SEGMENTS:], out_changed[SEGMENTS:])


def test_inflated_backbone_shift_errors_name_the_backbone_or_the_argument():
    with pytest.raises(ValueError, match='InflatedBackbone: timm.resnet18 has no inverted '
                                         'residual block'):
        InflatedBackbone(dict(type='timm.resnet18'), first_conv='conv1', num_segments=2)
    with pytest.raises(ValueError, match='num_segments must be a positive int'):
        InflatedBackbone(dict(type='timm.tf_efficientnet_lite0'), first_conv='conv_stem',
                         num_segments=0)
    # one segment shifts nothing, whatever the network
    assert InflatedBackbone(dict(type='timm.resnet18'), first_conv='conv1').shifted == []


def test_a_batch_that_is_not_whole_clips_is_refused_naming_num_segments(source):
    """The shift's reshape failed with a bare view error naming neither setting."""
    from hyperframes_mm.models.backbones import HyperMobileNetV2
    for backbone, channels in ((build_inflated(source[0], segments=SEGMENTS), 3 * FRAMES),
                               (HyperMobileNetV2(num_frames=FRAMES, num_segments=SEGMENTS),
                                3 * FRAMES),
                               (build(), 3)):
        name = type(backbone).__name__
        with pytest.raises(ValueError, match=rf'^{name}\(num_segments={SEGMENTS}\) got '
                           rf'{SEGMENTS + 1} hyperframes, no multiple of {SEGMENTS}: a sample '
                           rf'brings {SEGMENTS} hyperframes a clip'):
            backbone(torch.randn(SEGMENTS + 1, channels, 32, 32))
