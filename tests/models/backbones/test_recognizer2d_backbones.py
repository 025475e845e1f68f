"""mmaction2's Recognizer2D + TSNHead + HyperframeDataPreprocessor on every hyperframe backbone."""
import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample
from mmengine.optim import OptimWrapper

T = 3
SIZE = 32
BACKBONES = {
    'HyperResNet-18': (dict(type='HyperResNet', depth=18, num_frames=T), 512),
    'HyperResNet-18+fa+extra_bn': (dict(type='HyperResNet', depth=18, num_frames=T,
                                        frame_attention=True, extra_bn=True), 512),
    'HyperMobileNetV3-small': (dict(type='HyperMobileNetV3', arch='small', num_frames=T), 576),
    'HyperMobileNetV2+extra_bn+diff': (dict(type='HyperMobileNetV2', num_frames=T, extra_bn=True,
                                            input_encoding='diff'), 1280),
    'InflatedBackbone-ViT': (dict(type='InflatedBackbone', num_frames=T,
                                  first_conv='patch_embed.projection',
                                  backbone=dict(type='mmpretrain.VisionTransformer', img_size=SIZE,
                                                patch_size=8,
                                                arch=dict(embed_dims=32, num_layers=2,
                                                          num_heads=2, feedforward_channels=64))),
                             32),
}


def build_recognizer(backbone: dict, channels: int):
    model = MODELS.build(dict(
        type='Recognizer2D',
        backbone=backbone,
        cls_head=dict(type='TSNHead', num_classes=4, in_channels=channels, dropout_ratio=0.0,
                      average_clips='prob'),
        data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[123.675, 116.28, 103.53],
                               std=[58.395, 57.12, 57.375])))
    model.init_weights()
    return model


#: (samples, side) of the batch a backbone trains on, where 4 samples of SIZE do not do: a
#: MobileNetV2 from scratch normalises its last 1x1 map over 4 samples at 32x32, and its loss
#: then rose or fell with the CPU's kernels within 6 steps
TRAIN_INPUTS = {'HyperMobileNetV2+extra_bn+diff': (8, 64)}


def batch(num_samples: int = 4, size: int = SIZE):
    """A fixed batch as PackActionInputs leaves it: ``[1, 3T, H, W]`` uint8 per sample."""
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, 256, (1, 3 * T, size, size), dtype=torch.uint8,
                            generator=generator) for _ in range(num_samples)]
    samples = [ActionDataSample().set_gt_label(index % 4) for index in range(num_samples)]
    return dict(inputs=inputs, data_samples=samples)


def train_batch(name: str):
    """The batch backbone ``name`` trains on in the loss test."""
    return batch(*TRAIN_INPUTS.get(name, (4, SIZE)))


@pytest.mark.filterwarnings('ignore:In MMCV v1.4.4')  # mmcv's HSigmoid, upstream
@pytest.mark.parametrize('name', list(BACKBONES))
@pytest.mark.trained
def test_train_step_lowers_the_loss_and_test_step_predicts(name):
    torch.manual_seed(0)
    model = build_recognizer(*BACKBONES[name])
    optim_wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    data = train_batch(name)
    model.train()
    losses = [model.train_step(data, optim_wrapper)['loss_cls'].item() for _ in range(6)]
    assert losses[-1] < losses[0], losses
    attention = model.backbone.frame_attention
    if attention is not None:  # the identity start is not a dead start
        assert attention.fc2.weight.abs().sum() > 0

    model.eval()
    with torch.no_grad():
        predictions = model.test_step(data)
    assert len(predictions) == len(data['inputs'])
    for sample in predictions:
        assert sample.pred_score.shape == (4, )
        torch.testing.assert_close(sample.pred_score.sum(), torch.tensor(1.0))


def test_sampler_and_backbone_disagreeing_on_t_is_a_clear_error():
    model = build_recognizer(dict(type='HyperResNet', depth=18, num_frames=5), 512)
    with pytest.raises(ValueError, match=r'HyperResNet\(num_frames=5\) expects 15 input channels, '
                       r"got 9 \(3 frames\): the sampler's num_frames must equal the backbone's"):
        model.test_step(batch(2))
