"""The scenario reference configs: the seed's table, real input sizes, a forward of every model;
the auxiliary-supervision variant differs from the synthetic recipe only by its aux target."""
import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample
from mmengine.config import Config

from hyperframes_mm.analysis.config_utils import StreamSpec, dataloader_datasets, sampler_spec
from hyperframes_mm.apis.inference import example_inputs

from ..conftest import REPO

SCENARIOS = REPO / 'configs/hyperframes/scenarios'
AUX_CONFIG = next(SCENARIOS.glob('hyperframe_scratch-r18-auxframe_*_synthetic-rgb.py'))
#: the synthetic family's HyperResNet-18 config the aux variant is built on (its tuned picks:
#: the ones its ablation row was measured with)
SYNTHETIC_RECIPE, = (REPO / 'configs/hyperframes/synthetic').glob(
    'hyperframe_scratch-r18_*-5x8x1-*_synthetic-rgb.py')

#: the seed's table: config -> (T, interval, input side, backbone type, arch, batch per GPU,
#: test views (clips, crops), dataset folder)
TABLE = {
    'hyperframe_imagenet-pretrained-r18_8xb64-5x2x1-50e_sthv2-rgb.py':
    (5, 2, 224, 'HyperResNet', 18, 64, (4, 3), 'data/sthv2'),
    'hyperframe_imagenet-pretrained-r18_8xb32-8x8x1-100e_kinetics400-rgb.py':
    (8, 8, 224, 'HyperResNet', 18, 32, (5, 3), 'data/kinetics400'),
    'hyperframe_imagenet-pretrained-mobilenetv3-small_8xb8-3x1x1-100e_kinetics400-rgb.py':
    (3, 1, 160, 'HyperMobileNetV3', 'small', 8, (1, 1), 'data/kinetics400'),
    'hyperframe_imagenet-pretrained-vit-b16_8xb8-16x4x1-30e_kinetics400-rgb.py':
    (16, 4, 256, 'InflatedBackbone', 'b', 8, (4, 3), 'data/kinetics400'),
}


def _config(name) -> Config:
    cfg = Config.fromfile(str(SCENARIOS / name))
    cfg.model.backbone.pretrained = None
    return cfg


def test_every_scenario_config_is_in_the_table():
    names = {path.name for path in SCENARIOS.glob('*.py')}
    assert names == set(TABLE) | {AUX_CONFIG.name}


@pytest.mark.parametrize('name', sorted(TABLE))
def test_config_follows_the_seed_table(name):
    frames, interval, side, backbone, arch, batch, views, data = TABLE[name]
    cfg = _config(name)
    assert cfg.custom_imports == dict(imports=['hyperframes_mm'], allow_failed_imports=False)
    train = dataloader_datasets(cfg, ('train_dataloader', ))[0][1]
    spec = sampler_spec(train['pipeline'])
    assert spec.streams == (StreamSpec(None, frames, interval), )
    assert (spec.num_clips, spec.time_based) == (1, False)
    augment = [t for t in train['pipeline'] if t['type'] == 'ConsistentClipAugment']
    assert augment[0]['size'] == side
    assert cfg.train_dataloader.batch_size == batch
    assert cfg.auto_scale_lr.base_batch_size == 8 * batch
    assert cfg.model.backbone.type == backbone and cfg.model.backbone.num_frames == frames
    inner = cfg.model.backbone.get('backbone', cfg.model.backbone)
    assert inner.get('depth', inner.get('arch')) == arch
    for split in ('train', 'val', 'test'):
        (_, dataset), = dataloader_datasets(cfg, (f'{split}_dataloader', ))
        assert dataset['type'] == 'VideoDataset'
        assert dataset['ann_file'].startswith(data) and dataset['ann_file'].endswith('.txt')
        assert dataset['data_prefix']['video'].startswith(data)
    assert tuple(example_inputs(cfg, pipeline_key='val_pipeline').shape[2:]) == \
        (3 * frames, side, side)
    assert example_inputs(cfg).shape[:3] == (1, views[0] * views[1], 3 * frames)


@pytest.mark.parametrize('name', sorted(TABLE))
def test_model_builds_and_runs_at_a_small_size(name):
    frames = TABLE[name][0]
    cfg = _config(name)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.eval()
    data = dict(inputs=[torch.randint(0, 256, (2, 3 * frames, 32, 32), dtype=torch.uint8)],
                data_samples=[ActionDataSample().set_gt_label(1)])
    with torch.no_grad():
        result, = model.test_step(data)
    assert result.pred_score.shape == (cfg.model.cls_head.num_classes, )
    assert torch.isfinite(result.pred_score).all()
    torch.testing.assert_close(result.pred_score.sum(), torch.tensor(1.0))


def test_vit_config_loads_a_224_checkpoint_at_another_size(tmp_path):
    """The accuracy-first recipe: a 2D ViT checkpoint made at 224 (here 32, patch 16) loads into
    the inflated ViT built at 256 (here 48): position embedding resized, patch embedding
    inflated."""
    import mmpretrain.models  # noqa: F401
    arch = dict(embed_dims=32, num_layers=1, num_heads=2, feedforward_channels=64)
    vit_2d = MODELS.build(dict(type='mmpretrain.VisionTransformer', arch=arch, img_size=32,
                               patch_size=16))
    torch.save(vit_2d.state_dict(), tmp_path / 'vit.pth')
    backbone = MODELS.build(dict(
        type='InflatedBackbone', num_frames=16, first_conv='patch_embed.projection',
        backbone=dict(type='mmpretrain.VisionTransformer', arch=arch, img_size=48,
                      patch_size=16), pretrained=str(tmp_path / 'vit.pth')))
    backbone.init_weights()
    assert backbone.model.pos_embed.shape == (1, 1 + 9, 32)
    torch.testing.assert_close(backbone.model.pos_embed[:, 0], vit_2d.pos_embed[:, 0])
    torch.testing.assert_close(backbone.first_conv.weight,
                               vit_2d.patch_embed.projection.weight.repeat(1, 16, 1, 1) / 16)
    assert backbone(torch.zeros(1, 48, 48, 48)).shape == (1, 32, 1, 1)


def _without_aux(pipeline):
    return [dict(step, algorithm_keys=()) if step['type'] == 'PackActionInputs' else step
            for step in pipeline if step['type'] != 'CenterFrameTarget']


def test_aux_variant_is_the_synthetic_recipe_plus_the_aux_target():
    aux, base = Config.fromfile(str(AUX_CONFIG)), Config.fromfile(str(SYNTHETIC_RECIPE))
    pipeline = aux.train_dataloader.dataset.pipeline
    assert [step['type'] for step in pipeline][1:3] == ['HyperframeSampleFrames',
                                                        'CenterFrameTarget']
    assert pipeline[2] == dict(type='CenterFrameTarget',
                               ann_file=f'{aux.data_root}/train_frame_labels.jsonl',
                               data_prefix=aux.data_root)
    assert pipeline[-1] == dict(type='PackActionInputs', algorithm_keys=('aux_label', ))
    assert _without_aux(pipeline) == _without_aux(base.train_dataloader.dataset.pipeline)
    assert aux.model.cls_head == dict(type='AuxFrameHead', head=base.model.cls_head,
                                      aux_num_classes=2, aux_loss_weight=0.5)
    for key in ('train_cfg', 'optim_wrapper', 'param_scheduler', 'val_dataloader',
                'test_dataloader', 'val_evaluator', 'data_root'):
        assert aux[key] == base[key], key
    assert aux.model.backbone == base.model.backbone
    rest = {k: v for k, v in aux.train_dataloader.items() if k != 'dataset'}
    assert rest == {k: v for k, v in base.train_dataloader.items() if k != 'dataset'}


def test_aux_variant_trains_on_the_labelled_dataset(labelled_dataset):
    cfg = Config.fromfile(str(AUX_CONFIG))
    from mmengine.dataset import Compose
    pipeline = Compose([
        dict(step, ann_file=str(labelled_dataset / 'train_frame_labels.jsonl'),
             data_prefix=str(labelled_dataset)) if step['type'] == 'CenterFrameTarget'
        else step for step in cfg.train_dataloader.dataset.pipeline])
    samples = [pipeline(dict(filename=str(labelled_dataset / 'train' / name), label=label,
                             start_index=0, modality='RGB'))
               for name, label in (('swipe_left_0000.mp4', 0), ('drift_right_0001.mp4', 3))]
    assert samples[1]['data_samples'].aux_label == 0
    torch.manual_seed(0)
    model = MODELS.build(dict(cfg.model, cls_head=dict(cfg.model.cls_head,
                                                       head=dict(cfg.model.cls_head.head,
                                                                 num_classes=4))))
    model.init_weights()
    from mmengine.optim import OptimWrapper
    log = model.train_step(dict(inputs=[s['inputs'] for s in samples],
                                data_samples=[s['data_samples'] for s in samples]),
                           OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.01)))
    assert log['loss_aux'] > 0 and log['loss_cls'] > 0
