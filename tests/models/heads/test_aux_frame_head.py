"""AuxFrameHead: pooling, exact losses, prediction by the main head only, recognizer steps."""
import copy

import pytest
import torch
import torch.nn.functional as F
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample
from mmengine.model import BaseModule

from hyperframes_mm.models.heads import AuxFrameHead, pool_clip_features

NUM_CLASSES = 4
SIZE = 32


def tsn(in_channels=8):
    return dict(type='TSNHead', num_classes=NUM_CLASSES, in_channels=in_channels,
                dropout_ratio=0.0, average_clips='prob')


def samples(labels, aux=None, key='aux_label'):
    out = []
    for index, label in enumerate(labels):
        sample = ActionDataSample().set_gt_label(label)
        if aux is not None:
            sample.set_field(aux[index], key)
        out.append(sample)
    return out


def test_pool_clip_features_exact():
    feats = torch.arange(2 * 3 * 2 * 2 * 2, dtype=torch.float32).reshape(6, 2, 2, 2)
    pooled = pool_clip_features(feats, num_segs=3)
    spatial = feats.mean(dim=(2, 3))
    torch.testing.assert_close(pooled, torch.stack([spatial[:3].mean(0), spatial[3:].mean(0)]))
    assert pooled.tolist() == [[9.5, 13.5], [33.5, 37.5]]
    flat = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    assert pool_clip_features(flat, 1).tolist() == flat.tolist()
    assert pool_clip_features((flat[:, :, None, None], ), 2).tolist() == [[2.0, 4.0]]


def test_pool_clip_features_refuses_partial_samples():
    with pytest.raises(ValueError, match='5 feature rows are not whole samples of num_segs=2'):
        pool_clip_features(torch.zeros(5, 3), 2)
    with pytest.raises(ValueError, match='num_segs=0'):
        pool_clip_features(torch.zeros(4, 3), 0)


def test_loss_is_main_loss_plus_weighted_aux_cross_entropy():
    torch.manual_seed(0)
    head = MODELS.build(dict(type='AuxFrameHead', head=tsn(), aux_num_classes=3,
                             aux_loss_weight=0.25))
    head.init_weights()
    plain = MODELS.build(tsn())
    plain.load_state_dict({k[len('head.'):]: v for k, v in head.state_dict().items()
                           if k.startswith('head.')})
    feats = torch.randn(2 * 2, 8, 3, 3)
    data = samples([1, 3], aux=[2, 0])
    losses = head.loss(feats, data, num_segs=2)
    expected_main = plain.loss(feats, samples([1, 3]), num_segs=2)
    torch.testing.assert_close(losses['loss_cls'], expected_main['loss_cls'])
    pooled = feats.mean(dim=(2, 3)).reshape(2, 2, 8).mean(1)
    aux_scores = pooled @ head.aux_fc.weight.T + head.aux_fc.bias
    torch.testing.assert_close(losses['loss_aux'],
                               0.25 * F.cross_entropy(aux_scores, torch.tensor([2, 0])))
    expected_acc = (aux_scores.argmax(1) == torch.tensor([2, 0])).float().mean()
    assert losses['aux_top1_acc'].item() == pytest.approx(expected_acc.item())
    assert set(losses) == {'loss_cls', 'loss_aux', 'aux_top1_acc', 'top1_acc', 'top5_acc'}


def test_forward_predict_and_clip_averaging_are_the_main_heads():
    torch.manual_seed(0)
    head = MODELS.build(dict(type='AuxFrameHead', head=tsn(), aux_num_classes=2))
    head.init_weights()
    feats = torch.randn(3 * 2, 8, 2, 2)
    torch.testing.assert_close(head(feats, num_segs=2), head.head(feats, num_segs=2))
    predicted = head.predict(feats, samples([0, 1, 2]), num_segs=2)
    reference = head.head.predict(feats, samples([0, 1, 2]), num_segs=2)
    for ours, theirs in zip(predicted, reference):
        torch.testing.assert_close(ours.pred_score, theirs.pred_score)
    scores = torch.randn(6, NUM_CLASSES)
    torch.testing.assert_close(head.average_clip(scores, 2), head.head.average_clip(scores, 2))
    assert (head.num_classes, head.in_channels, head.average_clips) == (NUM_CLASSES, 8, 'prob')
    assert head.aux_fc.weight.shape == (2, 8)


def test_init_weights_normal_aux_classifier():
    torch.manual_seed(0)
    head = MODELS.build(dict(type='AuxFrameHead', head=tsn(512), aux_num_classes=2,
                             init_std=0.02))
    head.init_weights()
    assert head.aux_fc.bias.abs().max().item() == 0.0
    assert 0.015 < head.aux_fc.weight.std().item() < 0.025


def test_dropout_only_in_training():
    head = MODELS.build(dict(type='AuxFrameHead', head=tsn(), aux_num_classes=2,
                             aux_dropout_ratio=0.5))
    feats = torch.ones(2, 8, 1, 1)
    head.eval()
    torch.testing.assert_close(head.aux_scores(feats), head.aux_fc(torch.ones(2, 8)))
    head.train()
    torch.manual_seed(0)
    assert not torch.allclose(head.aux_scores(feats), head.aux_fc(torch.ones(2, 8)))


@pytest.mark.parametrize('kwargs, message', [
    (dict(aux_num_classes=1), 'aux_num_classes must be an int >= 2, got 1'),
    (dict(aux_num_classes=True), 'aux_num_classes must be an int >= 2, got True'),
    (dict(aux_num_classes=2.0), 'aux_num_classes must be an int >= 2, got 2.0'),
    (dict(aux_num_classes=2, aux_loss_weight=0), 'aux_loss_weight must be > 0, got 0 '),
    (dict(aux_num_classes=2, aux_loss_weight=-1.0), 'aux_loss_weight must be > 0'),
    (dict(aux_num_classes=2, aux_loss_weight=True), 'aux_loss_weight must be > 0'),
    (dict(aux_num_classes=2, aux_dropout_ratio=1.0), r'aux_dropout_ratio must be in \[0, 1\)'),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AuxFrameHead(head=tsn(), **kwargs)


@pytest.mark.parametrize('ratio, message', [
    # a string raised a bare TypeError from the range comparison
    ('0.1', "AuxFrameHead: aux_dropout_ratio must be a finite number, got '0.1'"),
    (float('nan'), 'AuxFrameHead: aux_dropout_ratio must be a finite number, got nan'),
    (-0.1, 'AuxFrameHead: aux_dropout_ratio must be in [0, 1), got -0.1'),
])
def test_a_bad_aux_dropout_ratio_is_refused_naming_it(ratio, message):
    with pytest.raises(ValueError) as error:
        AuxFrameHead(head=tsn(), aux_num_classes=2, aux_dropout_ratio=ratio)
    assert str(error.value) == message


def test_head_without_in_channels_is_refused():
    @MODELS.register_module(name='_HeadWithoutInChannels', force=True)
    class _HeadWithoutInChannels(BaseModule):
        def forward(self, x, **kwargs):
            return x

    with pytest.raises(ValueError, match='_HeadWithoutInChannels has no in_channels'):
        AuxFrameHead(head=dict(type='_HeadWithoutInChannels'), aux_num_classes=2)


def test_missing_and_out_of_range_targets():
    head = AuxFrameHead(head=tsn(), aux_num_classes=2, aux_key='motion')
    feats = torch.randn(2, 8, 1, 1)
    with pytest.raises(KeyError, match=r"data samples \[1\] have no 'motion'.*"
                                       r"algorithm_keys=\('motion', \)"):
        head.loss(feats, samples([0, 1], aux=[0, None], key='motion')[:1] + samples([1]),
                  num_segs=1)
    with pytest.raises(ValueError, match=r'motion values \[2\] are outside \[0, 2\)'):
        head.loss(feats, samples([0, 1], aux=[1, 2], key='motion'), num_segs=1)
    with pytest.raises(ValueError, match=r'values \[-1\]'):
        head.loss(feats, samples([0, 1], aux=[-1, 0], key='motion'), num_segs=1)


def _batch(batch_size=2, clips=1, frames=3, aux=True, streams=None):
    generator = torch.Generator().manual_seed(0)
    inputs, data = [], []
    for index in range(batch_size):
        shape = (clips, 3 * frames, SIZE, SIZE)
        if streams:
            inputs.append({f'imgs_{name}': torch.randint(0, 256, shape, generator=generator,
                                                         dtype=torch.uint8) for name in streams})
        else:
            inputs.append(torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8))
        sample = ActionDataSample().set_gt_label(index % NUM_CLASSES)
        if aux:
            sample.set_field(index % 2, 'aux_label')
        data.append(sample)
    return dict(inputs=inputs, data_samples=data)


def _recognizer(recognizer='Recognizer2D', in_channels=512, **kwargs):
    return MODELS.build(dict(
        type=recognizer,
        backbone=dict(type='HyperResNet', depth=18, num_frames=3),
        cls_head=dict(type='AuxFrameHead', head=tsn(in_channels), aux_num_classes=2,
                      aux_loss_weight=0.5),
        data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[128.0] * 3,
                               std=[64.0] * 3), **kwargs))


def test_recognizer2d_train_step_trains_the_aux_classifier_and_test_step_ignores_it():
    torch.manual_seed(0)
    model = _recognizer()
    model.init_weights()
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    from mmengine.optim import OptimWrapper
    before = copy.deepcopy(model.cls_head.aux_fc.weight.detach())
    log = model.train_step(_batch(), OptimWrapper(optim))
    assert {'loss', 'loss_cls', 'loss_aux', 'aux_top1_acc'} <= set(log)
    torch.testing.assert_close(log['loss'], log['loss_cls'] + log['loss_aux'])
    assert not torch.equal(before, model.cls_head.aux_fc.weight)
    model.eval()
    test = _batch(clips=2, aux=False)
    results = model.test_step(test)
    data = model.data_preprocessor(test, False)
    feats, kwargs = model.extract_feat(data['inputs'], test_mode=True)
    expected = model.cls_head.head.average_clip(model.cls_head.head(feats, **kwargs), 2)
    for result, score in zip(results, expected):
        torch.testing.assert_close(result.pred_score, score)
    torch.testing.assert_close(model(data['inputs'], mode='tensor', stage='head'),
                               model.cls_head.head(feats, **kwargs))


def test_fast_slow_recognizer_loss_with_aux_head():
    torch.manual_seed(0)
    model = _recognizer('FastSlowRecognizer', in_channels=1024, streams=('fast', 'slow'))
    data = model.data_preprocessor(_batch(clips=2, streams=('fast', 'slow')), True)
    losses = model(data['inputs'], data['data_samples'], mode='loss')
    assert losses['loss_aux'].item() > 0 and losses['loss_cls'].item() > 0
    losses['loss_aux'].backward()
    assert model.cls_head.aux_fc.weight.grad.abs().sum() > 0
    assert model.backbone.conv1.conv.weight.grad.abs().sum() > 0
    assert model.cls_head.head.fc_cls.weight.grad is None
