"""FastSlowRecognizer: shapes, parameter sharing, mmaction2 train/test steps."""
import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample

from hyperframes_mm.models.recognizers.fast_slow import (pool_features,
                                                         stream_dropout_mask)

NUM_CLASSES = 4
SIZE = 32


def backbone_cfg(num_frames=3):
    return dict(type='HyperResNet', depth=18, num_frames=num_frames, norm_eval=False)


def build(streams=('fast', 'slow'), share=True, fusion='concat', backbone=None, **kwargs):
    feat = 512 * (len(streams) if fusion == 'concat' else 1)
    return MODELS.build(dict(
        type='FastSlowRecognizer', streams=streams, share_backbone=share, fusion=fusion,
        backbone=backbone or backbone_cfg(),
        cls_head=dict(type='TSNHead', num_classes=NUM_CLASSES, in_channels=feat,
                      dropout_ratio=0.0, average_clips='prob'),
        data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[128.0] * 3,
                               std=[64.0] * 3),
        **kwargs))


def batch(streams=('fast', 'slow'), frames=None, batch_size=2, clips=1, seed=0):
    generator = torch.Generator().manual_seed(seed)
    frames = frames or {name: 3 for name in streams}
    inputs, samples = [], []
    for index in range(batch_size):
        inputs.append({f'imgs_{name}': torch.randint(
            0, 256, (clips, 3 * frames[name], SIZE, SIZE), generator=generator,
            dtype=torch.uint8) for name in streams})
        samples.append(ActionDataSample().set_gt_label(index % NUM_CLASSES))
    return dict(inputs=inputs, data_samples=samples)


@pytest.mark.parametrize('streams', [('fast', 'slow'), ('fast', 'mid', 'slow')])
@pytest.mark.parametrize('share', [True, False])
@pytest.mark.parametrize('fusion', ['concat', 'sum'])
def test_feature_and_score_shapes(streams, share, fusion):
    model = build(streams, share, fusion).eval()
    data = model.data_preprocessor(batch(streams, clips=2), False)
    feats, kwargs = model.extract_feat(data['inputs'], stage='backbone')
    width = 512 * (len(streams) if fusion == 'concat' else 1)
    assert feats.shape == (2 * 2, width)
    assert kwargs == dict(num_segs=2)
    scores = model(data['inputs'], mode='tensor', stage='head')
    assert scores.shape == (2, NUM_CLASSES)


def test_separate_backbones_may_differ_in_frames():
    model = build(share=False, backbone=dict(fast=backbone_cfg(3), slow=backbone_cfg(5)))
    data = model.data_preprocessor(batch(frames=dict(fast=3, slow=5)), False)
    feats, _ = model.extract_feat(data['inputs'], stage='backbone')
    assert feats.shape == (2, 1024)
    assert model.stream_backbone('fast').conv1.conv.in_channels == 9
    assert model.stream_backbone('slow').conv1.conv.in_channels == 15


@pytest.mark.parametrize('share', [True, False])
def test_every_stream_backbone_starts_from_its_pretrained_file(tmp_path, share):
    """Separate backbones sat in torch's ModuleDict, which mmengine's init_weights does not
    recurse into: their pretrained= was never loaded, and training ran from random weights."""
    import torchvision
    weights = torchvision.models.resnet18().state_dict()
    path = tmp_path / 'r18.pth'
    torch.save(weights, path)
    backbone = dict(backbone_cfg(3), pretrained=str(path))
    model = build(share=share, backbone=backbone if share else dict(
        fast=backbone, slow=dict(backbone, num_frames=5)))
    model.init_weights()
    for name in ('fast', 'slow'):
        stream = model.stream_backbone(name)
        assert torch.equal(stream.layer1[0].conv1.conv.weight, weights['layer1.0.conv1.weight'])
        assert torch.equal(stream.layer4[1].conv2.bn.running_var,
                           weights['layer4.1.bn2.running_var'])


def test_a_downsampled_stream_is_its_average_pooled_hyperframes_through_the_backbone():
    model = build(stream_downsample=dict(fast=2)).eval()
    data = model.data_preprocessor(batch(), False)
    feats, _ = model.extract_feat(data['inputs'], stage='backbone')
    fast = data['inputs']['imgs_fast'].flatten(0, 1)
    # 2x2 means by hand: the backbone sees a 16x16 fast stream, the slow one at full size
    pooled = fast.unflatten(-1, (SIZE // 2, 2)).unflatten(-3, (SIZE // 2, 2)).mean((-1, -3))
    with torch.no_grad():
        expected_fast = pool_features(model.backbone(pooled))
        expected_slow = pool_features(model.backbone(data['inputs']['imgs_slow'].flatten(0, 1)))
    torch.testing.assert_close(feats, torch.cat([expected_fast, expected_slow], dim=1))
    full = build(stream_downsample=None).eval()
    full.load_state_dict(model.state_dict())
    with torch.no_grad():
        full_feats, _ = full.extract_feat(data['inputs'], stage='backbone')
    torch.testing.assert_close(full_feats[:, 512:], feats[:, 512:])
    assert not torch.allclose(full_feats[:, :512], feats[:, :512])
    with pytest.raises(ValueError, match=r'imgs_fast of size \(32, 32\) cannot be downsampled'):
        build(stream_downsample=dict(fast=64)).eval().extract_feat(data['inputs'])


def count(module):
    return sum(p.numel() for p in module.parameters())


def test_shared_backbone_costs_one_backbone_plus_the_larger_head():
    shared, separate = build(share=True), build(share=False)
    single_backbone = count(MODELS.build(backbone_cfg()))
    larger_head = 1024 * NUM_CLASSES + NUM_CLASSES
    assert count(shared) == single_backbone + larger_head
    assert count(separate) == 2 * single_backbone + larger_head


@pytest.mark.trained
def test_train_step_lowers_loss_and_test_step_gives_probabilities():
    torch.manual_seed(0)
    model = build()
    from mmengine.optim import OptimWrapper
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    data = batch(batch_size=4)
    # four samples are memorised within a few steps at this rate (at 0.05 the loss oscillates)
    losses = [float(model.train_step(data, wrapper)['loss']) for _ in range(8)]
    assert losses[-1] < 0.1 * losses[0]
    model.eval()
    predictions = model.test_step(batch(batch_size=3, clips=2))
    assert len(predictions) == 3
    for sample in predictions:
        scores = sample.pred_score
        assert scores.shape == (NUM_CLASSES, )
        assert torch.all((scores >= 0) & (scores <= 1))
        assert abs(float(scores.sum()) - 1) < 1e-5
        assert sample.pred_label.item() == int(scores.argmax())


def test_multi_clip_test_averages_clip_scores():
    """K test clips give the mean of the K single-clip scores before softmax (TSNHead consensus)."""
    model = build().eval()
    data = model.data_preprocessor(batch(batch_size=1, clips=3), False)
    together = model(data['inputs'], mode='tensor', stage='head')
    singles = [model({k: v[:, i:i + 1] for k, v in data['inputs'].items()}, mode='tensor',
                     stage='head') for i in range(3)]
    torch.testing.assert_close(together, torch.stack(singles).mean(0), rtol=1e-4, atol=1e-5)


def test_stream_dropout_mask_is_inverted_dropout_that_never_drops_every_stream():
    torch.manual_seed(0)
    keep = torch.rand(1000, 2) >= 0.5
    torch.manual_seed(0)
    mask = stream_dropout_mask(1000, 2, 0.5, torch.device('cpu'))
    expected = torch.where(keep.any(1, keepdim=True), keep.float() * 2.0, torch.ones(1000, 2))
    assert torch.equal(mask, expected)
    assert torch.all(mask.sum(1) > 0)
    assert (~keep.any(1)).sum() > 0  # the reset branch was exercised


def test_pool_features_shapes():
    assert pool_features(torch.ones(2, 8, 3, 3)).shape == (2, 8)
    assert pool_features((torch.zeros(2, 4, 1, 1), torch.ones(2, 5, 6))).shape == (2, 6)
    assert pool_features(torch.ones(2, 7)).shape == (2, 7)
    with pytest.raises(ValueError, match='cannot pool'):
        pool_features(torch.ones(2))


@pytest.mark.parametrize('kwargs,message', [
    (dict(streams=('fast', )), 'streams must be >= 2'),
    (dict(streams=('fast', 'fast')), 'streams must be >= 2 distinct'),
    (dict(fusion='max'), 'fusion must be one of'),
    (dict(fusion='early'), r"got 'early' \(early fusion is HyperframeStack\(fuse_streams=True\)"),
    (dict(stream_dropout=1.0), 'stream_dropout'),
    (dict(share=True, backbone=dict(fast=backbone_cfg(3), slow=backbone_cfg(5))),
     'share_backbone=True needs one backbone'),
    (dict(share=False, backbone=dict(fast=backbone_cfg(3))), 'exactly the streams'),
    (dict(stream_downsample=dict(mid=2)), r"stream_downsample names \['mid'\]"),
    (dict(stream_downsample=dict(fast=1.5)), r"stream_downsample\['fast'\] must be a positive"),
    (dict(stream_downsample=dict(fast=0)), r"stream_downsample\['fast'\] must be a positive"),
])
def test_bad_configs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build(**kwargs)


@pytest.mark.parametrize('kwargs,message', [
    # a string was split into its characters, and the head's in_channels failed later
    (dict(streams='fast'), "FastSlowRecognizer: streams must be a sequence of names, got 'fast'"),
    (dict(stream_dropout='0.1'),
     "FastSlowRecognizer: stream_dropout must be a finite number, got '0.1'"),
    # 'False' is a true string: it built one shared backbone
    (dict(share='False'), "FastSlowRecognizer: share_backbone must be True or False, got 'False'"),
])
def test_mistyped_arguments_are_refused_at_build_naming_them(kwargs, message):
    with pytest.raises(ValueError) as error:
        build(**kwargs)
    assert str(error.value) == message


def test_bad_inputs_name_the_stream():
    model = build().eval()
    data = model.data_preprocessor(batch(), False)
    with pytest.raises(KeyError, match='imgs_slow'):
        model.extract_feat({'imgs_fast': data['inputs']['imgs_fast']})
    with pytest.raises(KeyError, match=r"inputs hold \['imgs_mid'\], which no stream of the "
                       r'recognizer \(fast, slow\) reads'):
        model.extract_feat(dict(data['inputs'], imgs_mid=data['inputs']['imgs_fast']))
    with pytest.raises(TypeError, match='dict of streams'):
        model.extract_feat(data['inputs']['imgs_fast'])
    uneven = dict(data['inputs'], imgs_slow=data['inputs']['imgs_slow'].repeat(1, 2, 1, 1, 1))
    with pytest.raises(ValueError, match='same number of hyperframes'):
        model.extract_feat(uneven)


def test_a_head_of_another_width_than_the_fused_features_is_named():
    """The rule (S x C for concat, C for sum) was unchecked: a bare matmul error in the fc."""
    for fusion, width in (('concat', 512), ('sum', 1024)):
        model = build(fusion=fusion)
        model.cls_head = MODELS.build(dict(type='TSNHead', num_classes=NUM_CLASSES,
                                           in_channels=width))
        data = model.data_preprocessor(batch(), True)
        fused = 1024 if fusion == 'concat' else 512
        with pytest.raises(ValueError) as refused:
            model(**data, mode='loss')
        assert str(refused.value) == (
            f'FastSlowRecognizer: cls_head.in_channels={width}, and fusion={fusion!r} of the '
            f"streams' features {{'fast': 512, 'slow': 512}} gives {fused}: set "
            f'cls_head.in_channels={fused}')
    # streams of two widths cannot be added
    model = build(fusion='sum', share=False, backbone=dict(
        fast=backbone_cfg(3), slow=dict(backbone_cfg(3), depth=50)))
    data = model.data_preprocessor(batch(), False)
    with pytest.raises(ValueError, match=r"fusion='sum' adds the streams' features, which need "
                       r"one width, got \{'fast': 512, 'slow': 2048\}; use fusion='concat'"):
        model.extract_feat(data['inputs'], stage='backbone')


def test_a_stream_of_another_t_than_its_backbone_is_named_by_its_key():
    """The backbone's error named the backbone alone, not which stream brought the frames."""
    model = build(share=False, backbone=dict(fast=backbone_cfg(3), slow=backbone_cfg(5)))
    data = model.data_preprocessor(batch(frames=dict(fast=3, slow=3)), False)
    with pytest.raises(ValueError, match=r'expects 15 input channels, got 9') as refused:
        model.extract_feat(data['inputs'])
    assert refused.value.__notes__ == ['FastSlowRecognizer: while reading imgs_slow']
