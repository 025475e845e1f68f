"""InflatedBackbone: ViT patch embeddings (mmpretrain and timm) inflated by name."""
import pytest
import timm
import torch
from mmaction.registry import MODELS

from hyperframes_mm.models.backbones import InflatedBackbone, inflate_conv_weight

from .helpers import centre_frame, repeat_frames, save_checkpoint

T = 5
SIZE = 32
MMPRETRAIN_VIT = dict(type='mmpretrain.VisionTransformer', img_size=SIZE, patch_size=8,
                      arch=dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64))
TIMM_VIT = dict(type='timm.vit_tiny_patch16_224', img_size=SIZE, patch_size=8, depth=2,
                embed_dim=32, num_heads=2)
FIRST_CONV = {'mmpretrain': 'patch_embed.projection', 'timm': 'patch_embed.proj'}


def build_2d(source: str):
    """A 2D ViT, the state dict its checkpoint holds, and its features ``[N, C, 1, 1]``."""
    torch.manual_seed(0)
    if source == 'mmpretrain':
        model = MODELS.build(MMPRETRAIN_VIT)
        model.init_weights()
        model.eval()
        return model, model.state_dict(), lambda x: model(x)[0][:, :, None, None]
    # A timm classifier checkpoint keeps its head; the wrapper builds the model headless.
    classifier = timm.create_model(TIMM_VIT['type'][5:], num_classes=10,
                                   **{k: v for k, v in TIMM_VIT.items() if k != 'type'}).eval()
    return classifier, classifier.state_dict(), \
        lambda x: classifier.forward_head(classifier.forward_features(x),
                                          pre_logits=True)[:, :, None, None]


@pytest.fixture(scope='module')
def references(tmp_path_factory):
    made = {}
    for source in ('mmpretrain', 'timm'):
        model, state_dict, forward = build_2d(source)
        wrap = 'mmpretrain' if source == 'mmpretrain' else ''
        path = save_checkpoint(tmp_path_factory.mktemp(source) / 'vit.pth', state_dict, wrap)
        made[source] = (state_dict, path, forward)
    return made


def inflated(source: str, **kwargs) -> InflatedBackbone:
    cfg = MMPRETRAIN_VIT if source == 'mmpretrain' else TIMM_VIT
    model = MODELS.build(dict(type='InflatedBackbone', backbone=cfg,
                              first_conv=FIRST_CONV[source], num_frames=T, **kwargs))
    model.init_weights()
    return model.eval()


@pytest.mark.parametrize('source', ['mmpretrain', 'timm'])
@pytest.mark.parametrize('mode', ['replicate', 'center'])
def test_vit_patch_embedding_keeps_the_2d_output(references, source, mode, mm_logs):
    state_dict, path, forward = references[source]
    model = inflated(source, pretrained=path, inflate_init=mode, frame_attention=True)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        if mode == 'replicate':
            frame = clip[:, :3]
            torch.testing.assert_close(model(repeat_frames(frame, T)), forward(frame),
                                       rtol=1e-5, atol=1e-5)
        else:
            torch.testing.assert_close(model(clip), forward(centre_frame(clip, T)),
                                       rtol=1e-5, atol=1e-5)
    conv_key = f'{FIRST_CONV[source]}.weight'
    loaded = model.model.state_dict()
    for key, value in loaded.items():
        expected = state_dict[key]
        if key == conv_key:
            expected = inflate_conv_weight(expected, T, mode)
        assert torch.equal(value, expected), key
    if source == 'timm':  # the classifier head has no place in the headless model: reported
        assert any("2 weights InflatedBackbone has no place for, ignored: ['model.head.weight', "
                   "'model.head.bias']" in message for message in mm_logs)


def test_own_hyperframe_checkpoint_reloads(tmp_path, references):
    model = inflated('mmpretrain', pretrained=references['mmpretrain'][1], frame_attention=True)
    torch.nn.init.normal_(model.frame_attention.fc2.weight)
    path = save_checkpoint(tmp_path / 'hyper.pth', model.state_dict(), 'mmaction')
    again = inflated('mmpretrain', pretrained=path, frame_attention=True)
    clip = torch.randn(2, 3 * T, SIZE, SIZE)
    with torch.no_grad():
        assert torch.equal(again(clip), model(clip))


@pytest.mark.filterwarnings('ignore:In MMCV v1.4.4')  # mmcv's HSigmoid, upstream
def test_a_convmodule_name_resolves_to_its_conv():
    model = InflatedBackbone(backbone=dict(type='mmpretrain.MobileNetV3', arch='small'),
                             first_conv='layer0', num_frames=3)
    assert model.first_conv_name == 'model.layer0.conv'
    assert model.first_conv.in_channels == 9
    assert model.eval()(torch.randn(1, 9, SIZE, SIZE)).shape == (1, 576, 1, 1)


def test_wrong_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r'InflatedBackbone\(num_frames=5\) expects 15 input '
                       r'channels, got 3 \(1 frame\)'):
        inflated('timm')(torch.randn(1, 3, SIZE, SIZE))


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(first_conv='patch_embed.conv'), ValueError,
     r"has no module 'patch_embed.conv'; its first convolutions are \['patch_embed.projection'\]"),
    (dict(first_conv='layers.0.attn.qkv'), TypeError, 'is a Linear, not a Conv2d'),
    (dict(backbone=dict(MMPRETRAIN_VIT, in_channels=6)), ValueError,
     r'mmpretrain.VisionTransformer.patch_embed.projection takes 6 channels and no conv of the '
     r'network reads 3: build the 2D backbone at 3 channels. A network whose image reaches its '
     r"first conv through another layer \(TResNet's SpaceToDepth\) cannot be inflated"),
    (dict(backbone=dict(type='timm.resnet18'), first_conv='layer1.0.conv1'), ValueError,
     r'InflatedBackbone: timm.resnet18.layer1.0.conv1 takes 64 channels, so it is not the first '
     r"conv: the convs reading 3 channels are \['conv1'\]$"),
    (dict(backbone=dict(MMPRETRAIN_VIT, init_cfg=dict(type='Pretrained', checkpoint='x.pth'))),
     ValueError, r'give the 2D checkpoint as InflatedBackbone\(pretrained=...\)'),
    # on the wrapper itself: its keys carry model., the file's not, so it loaded nothing
    (dict(init_cfg=dict(type='Pretrained', checkpoint='x.pth')), ValueError,
     r'give the checkpoint as InflatedBackbone\(pretrained=PATH\), which inflates its first '
     r'conv'),
    (dict(backbone=dict(TIMM_VIT, pretrained=True), first_conv='patch_embed.proj'), ValueError,
     'timm pretrained=True downloads weights'),
    (dict(backbone=dict(img_size=SIZE)), TypeError, 'backbone needs a type name'),
    # mmaction2's recognizers take it; mmengine's registry would answer with a bare KeyError
    (dict(backbone=dict(type='torchvision.resnet18')), ValueError,
     r"^InflatedBackbone: torchvision.resnet18: torchvision models are not supported; use the "
     r"timm model of that architecture \(e.g. type='timm.resnet18'\), or HyperResNet, "
     r'HyperMobileNetV2 or HyperMobileNetV3, which load torchvision ResNet and MobileNet files$'),
    (dict(extra_bn=True), ValueError, 'InflatedBackbone has no conv-norm stem to put extra_bn in'),
    (dict(motion_products=True), ValueError,
     'InflatedBackbone has no conv-norm stem to put motion_products in'),
    (dict(num_frame=T), TypeError, "unexpected keyword argument 'num_frame'"),
    # its first conv is widened to 3 channels a frame: a grey C=1 input would fail in torch
    (dict(channels_per_frame=1), ValueError,
     r'InflatedBackbone: channels_per_frame=1 makes 5 input channels of num_frames=5, and its '
     r'first conv is built for 15 \(3 channels a frame\); leave channels_per_frame out'),
    (dict(pretrained=True), TypeError,
     'InflatedBackbone: pretrained must be a checkpoint path or None'),
])
def test_constructor_errors(kwargs, error, match):
    cfg = dict(backbone=MMPRETRAIN_VIT, first_conv='patch_embed.projection', num_frames=T)
    with pytest.raises(error, match=match):
        InflatedBackbone(**dict(cfg, **kwargs))


def test_checkpoint_with_neither_3_nor_3t_channels_is_an_error(tmp_path, references):
    state = dict(references['mmpretrain'][0])
    state['patch_embed.projection.weight'] = torch.zeros(32, 12, 8, 8)
    path = save_checkpoint(tmp_path / 'four_frames.pth', state)
    with pytest.raises(ValueError, match=r"four_frames.pth: first conv 'model.patch_embed."
                       r"projection.weight' has 12 input channels"):
        inflated('mmpretrain', pretrained=path)
