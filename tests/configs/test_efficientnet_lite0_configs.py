"""Every EfficientNet-Lite0 config reads the one file configs/_base_/models/
imagenet_efficientnet_lite0.py names (HF_IMAGENET_EFFICIENTNET_LITE0 overrides it): the
hyperframe models through InflatedBackbone (stem conv inflated), mmaction2's TSN through timm's
own loader (as it is), TSM through TemporalShiftBackbone (as it is, under the shifts); every
other layer is the file's, and each model takes a training and a test step. The file is made
here: random timm weights in the converter's output format."""
import copy
import math

import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper

from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
    PIXEL_MEAN, PIXEL_STD, build_timm_efficientnet_lite)
from hyperframes_mm.models.backbones.encoding import change_kernel_basis
from .conftest import CONFIG_ROOT

CONFIGS = sorted(CONFIG_ROOT.glob('*/*imagenet-pretrained-efficientnet-lite0_*.py'))
SIDE = 64


@pytest.fixture(scope='module')
def imagenet_file(tmp_path_factory):
    torch.manual_seed(0)
    weights = build_timm_efficientnet_lite().state_dict()
    path = tmp_path_factory.mktemp('imagenet') / 'efficientnet_lite0_timm.pth'
    torch.save(dict(state_dict=weights), path)
    return path, weights


def test_the_configs_are_the_families_efficientnet_rows():
    assert sorted(f'{path.parent.name}/{path.name.split("_")[0]}' for path in CONFIGS) == [
        'hmdb51/hyperframe', 'kinetics400/hyperframe', 'ucf101/hyperframe',
        'utd_mhad_imagenet/hyperframe', 'utd_mhad_imagenet/hyperframe',
        'utd_mhad_imagenet/hyperframe-scaledgain', 'utd_mhad_imagenet/hyperframe-scaledgain-lr4x',
        'utd_mhad_imagenet/hyperframe-scaledgain-lr4x',
        'utd_mhad_imagenet/hyperframe-shift-scaledgain-lr4x', 'utd_mhad_imagenet/singleframe',
        'utd_mhad_imagenet/tsm', 'utd_mhad_imagenet/tsn']


def test_the_scaled_gain_row_is_the_t5_row_with_the_gain_at_its_input_scale():
    """The recipe's gain times this network's pixel std over the MobileNetV2 rows' (ImageNet's):
    the frame differences reach its stem at their scale; nothing else changes."""
    scaled, t5 = (Config.fromfile(str(next(path for path in CONFIGS if path.name.startswith(
        prefix)))) for prefix in ('hyperframe-scaledgain_', 'hyperframe_imagenet-pretrained-'
                                  'efficientnet-lite0_1xb16-1x1x5-'))
    imagenet = Config.fromfile(str(CONFIG_ROOT.parent / '_base_/models/hyper_r18.py'))
    assert imagenet.model.data_preprocessor.std == [58.395, 57.12, 57.375]
    assert t5.model.backbone.diff_gain == 4.0
    assert scaled.model.backbone.diff_gain == pytest.approx(4.0 * 127.5 / 57.63, abs=1e-12)
    assert scaled.model.to_dict() == dict(t5.model.to_dict(), backbone=dict(
        t5.model.backbone.to_dict(), diff_gain=scaled.model.backbone.diff_gain))


def test_the_chosen_rate_row_is_the_scaled_gain_row_at_4x_its_learning_rate():
    lr4x, scaled = (Config.fromfile(str(next(path for path in CONFIGS if path.name.startswith(
        prefix)))) for prefix in ('hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-'
                                  'lite0_1xb16-1x1x5-', 'hyperframe-scaledgain_'))
    assert scaled.optim_wrapper.optimizer.lr == 0.02 * 16 / 128
    assert lr4x.optim_wrapper.to_dict() == dict(scaled.optim_wrapper.to_dict(), optimizer=dict(
        scaled.optim_wrapper.optimizer.to_dict(), lr=4 * 0.02 * 16 / 128))
    assert lr4x.model.to_dict() == scaled.model.to_dict()
    assert (lr4x.param_scheduler, lr4x.train_cfg) == (scaled.param_scheduler, scaled.train_cfg)


def test_the_chosen_t_row_is_the_chosen_rate_row_on_the_t8_rows_picks():
    """T=8 at the gain and rate T=5 chose: the chosen-rate T=5 config with the T=8 row's
    sampling and stem, as the T=8 row is the T=5 row on 8 picks."""
    t8_lr4x, lr4x, t8 = (Config.fromfile(str(next(
        path for path in CONFIGS if path.name.startswith(prefix)))) for prefix in (
            'hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x8-',
            'hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-',
            'hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x8-'))
    assert t8_lr4x.model.to_dict() == dict(lr4x.model.to_dict(), backbone=dict(
        lr4x.model.backbone.to_dict(), num_frames=8))
    assert (t8_lr4x.optim_wrapper, t8_lr4x.param_scheduler) == (lr4x.optim_wrapper,
                                                                  lr4x.param_scheduler)
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        assert t8_lr4x[loader] == t8[loader]
    assert t8_lr4x.test_dataloader.dataset.pipeline[1]['num_frames'] == 8


def test_the_shifted_row_is_the_chosen_t_row_over_two_segments():
    """Two of the chosen T=8 row's hyperframes a clip, shifted between them as the MobileNetV2
    shifted rows are (TSMHead over 2 segments, 2 test clips); the network, its file, gain and
    rate are that row's."""
    shifted, t8 = (Config.fromfile(str(next(path for path in CONFIGS if path.name.startswith(
        prefix)))) for prefix in (
            'hyperframe-shift-scaledgain-lr4x_',
            'hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x8-'))
    assert shifted.model.to_dict() == dict(
        t8.model.to_dict(), backbone=dict(t8.model.backbone.to_dict(), num_segments=2),
        cls_head=dict(t8.model.cls_head.to_dict(), type='TSMHead', num_segments=2,
                      is_shift=True))
    assert (shifted.optim_wrapper, shifted.param_scheduler, shifted.train_cfg) == (
        t8.optim_wrapper, t8.param_scheduler, t8.train_cfg)
    for loader, clips in (('train_dataloader', None), ('val_dataloader', 1),
                          ('test_dataloader', 2)):
        mine, theirs = shifted[loader].dataset.pipeline, t8[loader].dataset.pipeline
        views = {key: value for key, value in theirs[1].items() if key != 'num_clips'}
        assert mine[1] == dict(views, num_frames=16, **({} if clips is None else
                                                         dict(num_clips=clips)))
        assert mine[2:-2] == theirs[2:-2]
        assert mine[-2:] == [dict(type='HyperframeStack', segments=2),
                             dict(type='PackActionInputs')]


def batch(cfg, clips: int, count: int = 2):
    """Random uint8 inputs shaped as the config's pipeline packs them (hyperframes ``[clips *
    segments, 3T, H, W]``, TSN's segments ``[segments, 3, H, W]``) and labels 0, 1."""
    backbone = cfg.model.backbone
    if backbone.type == 'InflatedBackbone':
        shape = (clips * backbone.get('num_segments', 1), 3 * backbone.num_frames, SIDE, SIDE)
    else:
        shape = (cfg.num_frames * clips, 3, SIDE, SIDE)
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
              for _ in range(count)]
    samples = [ActionDataSample().set_gt_label(label) for label in range(count)]
    return dict(inputs=inputs, data_samples=samples)


@pytest.mark.parametrize('path', CONFIGS, ids=lambda path: f'{path.parent.name}/{path.stem}')
def test_every_config_loads_the_one_file_and_steps(path, imagenet_file, monkeypatch):
    file, weights = imagenet_file
    monkeypatch.setenv('HF_IMAGENET_EFFICIENTNET_LITE0', str(file))
    cfg = Config.fromfile(str(path))
    assert list(cfg.model.data_preprocessor.mean) == list(PIXEL_MEAN)
    assert list(cfg.model.data_preprocessor.std) == list(PIXEL_STD)
    # mmaction2 pops the type of a timm backbone from the dict it is given
    model = MODELS.build(copy.deepcopy(cfg.model))
    model.init_weights()
    backbone = cfg.model.backbone
    if backbone.type == 'InflatedBackbone':  # the file, stem inflated (and shifts in between)
        assert backbone.pretrained == str(file)
        loaded = {key[len('model.'):].replace('.conv_pw.net.', '.conv_pw.'): value
                  for key, value in model.backbone.state_dict().items()}
        num_frames = backbone.num_frames
        stem = change_kernel_basis(loaded['conv_stem.weight'], num_frames,
                                   backbone.get('input_encoding', 'frames'),
                                   backbone.get('diff_gain', 4.0), to_encoded=False)
        torch.testing.assert_close(stem, weights['conv_stem.weight'].repeat(1, num_frames, 1, 1)
                                   / num_frames, rtol=0, atol=1e-6)
    elif backbone.type == 'TemporalShiftBackbone':  # the file as it is, shifts in between
        assert backbone.pretrained == str(file)
        loaded = {key[len('model.'):].replace('.conv_pw.net.', '.conv_pw.'): value
                  for key, value in model.backbone.state_dict().items()}
        assert torch.equal(loaded['conv_stem.weight'], weights['conv_stem.weight'])
    else:
        assert backbone.pretrained_cfg_overlay.file == str(file)
        loaded = model.backbone.state_dict()
        assert torch.equal(loaded['conv_stem.weight'], weights['conv_stem.weight'])
    for key in ('conv_head.weight', 'blocks.5.3.conv_pw.weight', 'blocks.5.3.conv_pwl.weight',
                'bn1.running_var'):
        assert torch.equal(loaded[key], weights[key]), key

    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    head_before = model.cls_head.fc_cls.weight.detach().clone()
    log_vars = model.train_step(batch(cfg, clips=1), optim_wrapper)
    assert math.isfinite(log_vars['loss'].item())
    assert not torch.equal(head_before, model.cls_head.fc_cls.weight)
    model.eval()
    predictions = model.test_step(batch(cfg, clips=2))
    assert len(predictions) == 2
    for prediction in predictions:
        assert prediction.pred_score.shape == (cfg.model.cls_head.num_classes, )
        assert float(prediction.pred_score.sum()) == pytest.approx(1.0, abs=1e-5)
