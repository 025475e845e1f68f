"""Early fusion of two streams: HyperframeStack(fuse_streams=True) in the pipeline, then
mmaction2's Recognizer2D over one hyperframe of the streams' total T."""
import numpy as np
import pytest
import torch
from mmaction.registry import MODELS
from mmcv.transforms import Compose

from hyperframes_mm.models.recognizers.fast_slow import pool_features
from ..backbones.helpers import randomise_norms, save_checkpoint

NUM_CLASSES = 4
SIZE = 32
#: fast T=3 then slow T=3, two test clips
STREAMS = [dict(name='fast', clip_len=3, num_clips=2), dict(name='slow', clip_len=3, num_clips=2)]


def build(num_frames=6, **backbone):
    return MODELS.build(dict(
        type='Recognizer2D',
        backbone=dict(type='HyperResNet', depth=18, num_frames=num_frames, norm_eval=False,
                      **backbone),
        cls_head=dict(type='TSNHead', num_classes=NUM_CLASSES, in_channels=512,
                      dropout_ratio=0.0, average_clips='prob'),
        data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[128.0] * 3,
                               std=[64.0] * 3)))


def packed(frames, fuse_streams=True):
    """Two-stream frames (fast clips, then slow clips) through the stacking and packing steps
    of a fused config."""
    pack = dict(type='PackActionInputs') if fuse_streams else dict(
        type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
    pipeline = Compose([dict(type='HyperframeStack', fuse_streams=fuse_streams), pack])
    return pipeline(dict(imgs=list(frames), clip_len=3, num_clips=2, hyperframe_streams=STREAMS,
                         label=1))


def random_frames(seed=0):
    return np.random.default_rng(seed).integers(0, 256, (12, SIZE, SIZE, 3), dtype=np.uint8)


@torch.no_grad()
def test_one_pass_over_each_clips_fast_then_slow_frames():
    model = build().eval()
    fused = packed(random_frames())
    apart = packed(random_frames(), fuse_streams=False)['inputs']
    assert fused['inputs'].shape == (2, 18, SIZE, SIZE)
    data = model.data_preprocessor(dict(inputs=[fused['inputs']],
                                        data_samples=[fused['data_samples']]), False)
    feats, kwargs = model.extract_feat(data['inputs'], stage='backbone')
    assert kwargs == dict(num_segs=2)
    fast, slow = (model.data_preprocessor(dict(inputs=[apart[key]], data_samples=None),
                                          False)['inputs'][0]
                  for key in ('imgs_fast', 'imgs_slow'))
    expected = model.backbone(torch.cat([fast, slow], dim=1))
    swapped = model.backbone(torch.cat([slow, fast], dim=1))
    torch.testing.assert_close(feats, expected, rtol=0, atol=0)
    assert not torch.allclose(pool_features(feats), pool_features(swapped))
    # the two clips' scores averaged, as for one-stream test clips
    predicted, = model.test_step(
        dict(inputs=[fused['inputs']], data_samples=[fused['data_samples']]))
    assert predicted.pred_score.shape == (NUM_CLASSES, )


@torch.no_grad()
def test_from_a_2d_checkpoint_a_still_scene_in_both_streams_gives_the_2d_features(tmp_path):
    """A still scene in both streams is 2T identical frames: the 2D model's features."""
    torch.manual_seed(0)
    model_2d = randomise_norms(MODELS.build(dict(type='HyperResNet', depth=18, num_frames=1)))
    checkpoint = save_checkpoint(tmp_path / 'r18_2d.pth', model_2d.eval().state_dict())
    model = build(pretrained=checkpoint, input_encoding='diff', motion_products=True)
    model.backbone.init_weights()
    model.eval()
    frame = np.random.default_rng(1).integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
    sample = packed(np.stack([frame] * 12))
    data = model.data_preprocessor(dict(inputs=[sample['inputs']],
                                        data_samples=[sample['data_samples']]), False)
    feats, _ = model.extract_feat(data['inputs'], stage='backbone')
    one_frame = data['inputs'][0, :1, :3]
    torch.testing.assert_close(pool_features(feats[:1]), pool_features(model_2d(one_frame)),
                               rtol=1e-5, atol=1e-5)


def test_the_backbone_must_read_the_streams_total_frames():
    sample = packed(random_frames())
    model = build(num_frames=3).eval()
    data = model.data_preprocessor(dict(inputs=[sample['inputs']],
                                        data_samples=[sample['data_samples']]), False)
    with pytest.raises(ValueError, match='expects 9 input channels, got 18'):
        model.extract_feat(data['inputs'])


def test_costs_one_backbone_and_one_head():
    model, backbone = build(), MODELS.build(dict(type='HyperResNet', depth=18, num_frames=6))
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(model) == count(backbone) + 512 * NUM_CLASSES + NUM_CLASSES
