"""Every config under configs/hyperframes/ builds and is named after what it does; the
real-dataset configs also run their pipelines on a stand-in list and take one training step."""
import math

import pytest
import torch
from mmaction.registry import MODELS
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from mmengine.runner import Runner

from hyperframes_mm.analysis.config_utils import dataloader_datasets, sampler_spec
from hyperframes_mm.datasets.transforms.pipeline_info import fuses_streams, stacked_segments
from hyperframes_mm.models.backbones.encoding import change_kernel_basis
from hyperframes_mm.models.backbones.hyperframe_backbone import HyperframeBackboneMixin
from .conftest import CONFIG_ROOT, FAMILIES

ALL_CONFIGS = sorted(CONFIG_ROOT.glob('*/*.py'))
REAL_CONFIGS = [path for path in ALL_CONFIGS if path.parent.name in FAMILIES]
FASTSLOW_UCF101 = (CONFIG_ROOT / 'ucf101' /
                   'fastslow_imagenet-pretrained-r18_8xb32-5x1x1-5x4x1-50e_ucf101-split1-rgb.py')
#: crop side of the stand-in runs (the configs crop 224 / 256)
CROP = 64
#: (family, algorithm, backbone) the model zoo must offer (issues 5 and 6)
REQUIRED = {
    ('ucf101', 'hyperframe', 'r18'), ('ucf101', 'hyperframe', 'r50'),
    ('ucf101', 'hyperframe', 'mobilenetv3-large'), ('ucf101', 'fastslow', 'r18'),
    ('ucf101', 'fastslow', 'mobilenetv3-large'), ('hmdb51', 'hyperframe', 'r18'),
    ('hmdb51', 'hyperframe', 'r50'), ('hmdb51', 'hyperframe', 'mobilenetv3-large'),
    ('kinetics400', 'hyperframe', 'r18'), ('kinetics400', 'hyperframe', 'r50'),
    ('kinetics400', 'fastslow', 'r18'), ('kinetics400', 'fastslow', 'mobilenetv3-large'),
}


def _id(path) -> str:
    return f'{path.parent.name}/{path.stem}'


def _config(path) -> Config:
    """The config with its backbone's checkpoint dropped (no ImageNet file in tests)."""
    cfg = Config.fromfile(str(path))
    if 'pretrained' in cfg.model.backbone:
        cfg.model.backbone.pretrained = None
    return cfg


def _train_pipeline(cfg):
    return dataloader_datasets(cfg, ('train_dataloader', ))[0][1]['pipeline']


def _train_streams(cfg):
    return sampler_spec(_train_pipeline(cfg)).streams


def test_zoo_offers_the_required_models(zoo_table):
    offered = set()
    for path in REAL_CONFIGS:
        name = zoo_table.parse_name(path)
        offered.add((path.parent.name, name['algorithm'], name['backbone']))
    assert REQUIRED <= offered, f'missing: {sorted(REQUIRED - offered)}'


@pytest.mark.parametrize('path', ALL_CONFIGS, ids=_id)
def test_config_builds_its_model(path):
    cfg = _config(path)
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == cfg.model.type
    backbones = ([model.stream_backbone(name) for name in model.streams]
                 if hasattr(model, 'streams') else [model.backbone])
    if not isinstance(backbones[0], HyperframeBackboneMixin):
        return  # mmaction2's own baselines (TSN/TSM) take segments, not hyperframes
    sampled = [stream.num_frames for stream in _train_streams(cfg)]
    if fuses_streams(_train_pipeline(cfg)):
        # the streams stacked into one hyperframe: their total T is the one backbone's
        assert len(sampled) == 2 and sum(sampled) == backbones[0].num_frames
        return
    # each stream's T (sampler) must be the backbone's T: 3T input channels; a clip split into
    # S hyperframes samples S x T
    segments = stacked_segments(_train_pipeline(cfg))
    assert segments == getattr(backbones[0], 'num_segments', 1)
    assert sampled == [segments * backbone.num_frames for backbone in backbones]


def _dataset_class_counts(dataset: dict) -> list:
    """``(type, num_classes)`` of a dataloader's dataset and of every dataset it wraps."""
    counts = [(dataset.get('type'), dataset.get('num_classes'))]
    if isinstance(dataset.get('dataset'), dict):
        counts += _dataset_class_counts(dataset['dataset'])
    return counts


@pytest.mark.parametrize('path', ALL_CONFIGS, ids=_id)
def test_datasets_leave_the_class_count_to_the_head(path):
    """No dataset is given a class count: a user who carries a config to another data set
    changes the head's (``model.cls_head.num_classes``), and a dataset count left behind
    refused the labels past it as out of range (the ucf101 configs with 121 classes: 'label 120
    is out of range (0..100)'). The runner checks every list's labels against the head before
    a loop runs (ClassCountHook), tools/doctor.py --data too."""
    cfg = Config.fromfile(str(path))
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        counts = _dataset_class_counts(cfg[key].dataset)
        assert all(count is None for _, count in counts), (key, counts)


@pytest.mark.parametrize('path', ALL_CONFIGS, ids=_id)
def test_config_name_agrees_with_its_values(zoo_table, path):
    assert zoo_table.check_name(path, Config.fromfile(str(path))) == []


def test_parse_name(zoo_table):
    assert zoo_table.parse_name(
        'fastslow_imagenet-pretrained-mobilenetv3-large_8xb32-5x1x1-5x4x1-100e_kinetics400-rgb.py'
    ) == dict(algorithm='fastslow', pretrain='imagenet-pretrained', backbone='mobilenetv3-large',
              gpus=8, batch=32, sampling=((5, 1, 1), (5, 4, 1)), epochs=100,
              dataset='kinetics400', modality='rgb')
    assert zoo_table.parse_name('hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py') == \
        dict(algorithm='hyperframe', pretrain='scratch', backbone='r18', gpus=1, batch=4,
             sampling=((5, 2, 1), ), epochs=2, dataset='synthetic-tiny', modality='rgb')
    assert zoo_table.parse_name(
        'tpn-slowonly_imagenet-pretrained-r50-nl_8xb8-8x8x1-150e_kinetics400-rgb.py') == dict(
            algorithm='tpn-slowonly', pretrain='imagenet-pretrained', backbone='r50-nl', gpus=8,
            batch=8, sampling=((8, 8, 1), ), epochs=150, dataset='kinetics400', modality='rgb')
    assert zoo_table.parse_name('tsm_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py')[
        'modality'] == 'depth'
    for bad in ('tsn_r50.py', 'hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-50e_ucf101.py',
                'hyperframe_imagenet-r18_8xb32-5x2x1-50e_ucf101-rgb.py',
                'hyperframe_imagenet-pretrained-r18_8x32-5x2x1-50e_ucf101-rgb.py',
                'hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-50e_ucf101-audio.py'):
        with pytest.raises(ValueError, match='does not follow'):
            zoo_table.parse_name(bad)


@pytest.mark.parametrize('change, problem', [
    (dict(train_dataloader=dict(batch_size=16)), 'batch 32, the config has 16'),
    (dict(auto_scale_lr=dict(base_batch_size=128)), 'gpus x batch 256, the config has 128'),
    (dict(train_cfg=dict(max_epochs=30)), 'epochs 50, the config has 30'),
    (dict(model=dict(cls_head=dict(num_classes=51))), 'classes 101, the config has 51'),
    (dict(model=dict(backbone=dict(depth=34))), 'backbone r18, the config has r34'),
    (dict(model=dict(backbone=dict(pretrained=None))),
     'pretrain imagenet-pretrained, the config has pretrained=None'),
    (dict(model=dict(type='Recognizer3D')), 'algorithm fastslow, the config has Recognizer3D'),
])
def test_check_name_reports_each_disagreement(zoo_table, change, problem):
    path = FASTSLOW_UCF101
    cfg = Config.fromfile(str(path))
    cfg.merge_from_dict(change)
    assert zoo_table.check_name(path, cfg) == [f'{path.name}: the name says {problem}']


def test_check_name_reads_variants_and_modifiers(zoo_table):
    cfg = Config.fromfile(str(FASTSLOW_UCF101))
    variant = FASTSLOW_UCF101.name.replace('fastslow_', 'fastslow-shared_').replace(
        '-r18_', '-r18-staggered_')
    assert zoo_table.check_name(variant, cfg) == []
    wrong = FASTSLOW_UCF101.name.replace('-r18_', '-r181_')
    assert zoo_table.check_name(wrong, cfg) == [
        f'{wrong}: the name says backbone r181, the config has r18']
    assert zoo_table.backbone_token(dict(
        type='InflatedBackbone', first_conv='patch_embed.projection',
        backbone=dict(type='mmpretrain.VisionTransformer', arch='b', patch_size=16))) == 'vit-b16'


def test_check_name_reports_sampling(zoo_table):
    path = FASTSLOW_UCF101
    cfg = Config.fromfile(str(path))
    sampler = cfg.train_dataloader.dataset.dataset.pipeline[1]
    sampler.streams.slow.interval = 3
    assert zoo_table.check_name(path, cfg) == [
        f'{path.name}: the name says clip_len x interval x clips ((5, 1, 1), (5, 4, 1)), the '
        'config has ((5, 1, 1), (5, 3, 1))'
    ]


def _use_standin(cfg: Config, root) -> None:
    """Point every dataloader at the stand-in list and shrink crops to CROP pixels."""
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        cfg[key].update(batch_size=2, num_workers=0, persistent_workers=False)
        for _, dataset in dataloader_datasets(cfg, (key, )):
            dataset.update(ann_file=str(root / 'list.txt'), data_prefix=dict(video=str(root)))
            for step in dataset.pipeline:
                if step['type'] == 'ConsistentClipAugment':
                    step['size'] = CROP
                elif step['type'] == 'Resize':
                    step['scale'] = (-1, CROP)
                elif step['type'] in ('CenterCrop', 'ThreeCrop', 'TenCrop'):
                    step['crop_size'] = CROP


def _views(batch, keys):
    """Shapes of the first sample's input (per stream) and the labels of the batch."""
    inputs = batch['inputs']  # pseudo_collate: a list, or a dict of lists for streams
    shapes = [tuple(inputs[key][0].shape) for key in keys] if keys else [tuple(inputs[0].shape)]
    return shapes, sorted(int(sample.gt_label) for sample in batch['data_samples'])


@pytest.mark.slow
@pytest.mark.parametrize('path', REAL_CONFIGS, ids=_id)
def test_real_config_trains_and_tests_on_standin_videos(path, standin_videos):
    cfg = _config(path)
    _use_standin(cfg, standin_videos)
    streams = _train_streams(cfg)
    fused = fuses_streams(_train_pipeline(cfg))
    keys = [f'imgs_{stream.name}' for stream in streams] if streams[0].name and not fused else []
    # T=5 frames a stream, every config; early fusion stacks the streams into one hyperframe
    hyperframes = ([(15 * len(streams), CROP, CROP)] if fused else
                   [(15, CROP, CROP)] * len(streams))
    batches = {key: next(iter(Runner.build_dataloader(cfg[key])))
               for key in ('train_dataloader', 'val_dataloader', 'test_dataloader')}
    views = dict(train_dataloader=1, val_dataloader=3, test_dataloader=10 * 3)
    for key, batch in batches.items():
        assert _views(batch, keys) == ([(views[key], ) + shape for shape in hyperframes],
                                       [0, 1]), key

    model = MODELS.build(cfg.model)
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    head_before = model.cls_head.fc_cls.weight.detach().clone()
    log_vars = model.train_step(batches['train_dataloader'], optim_wrapper)
    assert math.isfinite(log_vars['loss'].detach().item())
    assert not torch.equal(head_before, model.cls_head.fc_cls.weight)

    model.eval()
    predictions = model.test_step(batches['test_dataloader'])
    assert len(predictions) == 2
    for prediction in predictions:
        assert prediction.pred_score.shape == (cfg.model.cls_head.num_classes, )
        assert float(prediction.pred_score.sum()) == pytest.approx(1.0, abs=1e-5)


def _torchvision_model(name: str):
    import torchvision
    return getattr(torchvision.models, name)()


@pytest.mark.parametrize('path, torchvision_name, first_conv, torchvision_conv', [
    ('ucf101/hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-50e_ucf101-split1-rgb.py',
     'resnet18', 'conv1.conv', 'conv1'),
    ('hmdb51/hyperframe_imagenet-pretrained-r50_8xb32-5x2x1-50e_hmdb51-split1-rgb.py',
     'resnet50', 'conv1.conv', 'conv1'),
    ('kinetics400/fastslow_imagenet-pretrained-mobilenetv3-large_8xb32-5x1x1-5x4x1-100e_'
     'kinetics400-rgb.py', 'mobilenet_v3_large', 'layer0.conv', 'features.0.0'),
])
def test_pretrained_path_takes_the_torchvision_file(path, torchvision_name, first_conv,
                                                    torchvision_conv, tmp_path, monkeypatch):
    """The READMEs say: save torchvision's ImageNet file under the config's checkpoints/ path.
    A (randomly initialised) torchvision model saved there is loaded and inflated."""
    cfg = Config.fromfile(str(CONFIG_ROOT / path))
    reference = _torchvision_model(torchvision_name).state_dict()
    checkpoint = tmp_path / cfg.model.backbone.pretrained
    checkpoint.parent.mkdir(parents=True)
    torch.save(reference, checkpoint)
    monkeypatch.chdir(tmp_path)  # the configs name the file relative to the working directory
    model = MODELS.build(cfg.model)
    model.init_weights()
    weights = model.backbone.state_dict()
    kernel = reference[f'{torchvision_conv}.weight']
    # the kernel is stored in the basis of the config's input encoding; in the raw-frame basis
    # it is the replicated 2D kernel
    backbone_cfg = cfg.model.backbone
    num_frames = backbone_cfg.num_frames  # a fast/slow model's: both streams' (early fusion)
    raw = change_kernel_basis(weights[f'{first_conv}.weight'], num_frames,
                              backbone_cfg.get('input_encoding', 'frames'),
                              backbone_cfg.get('diff_gain', 4.0), to_encoded=False)
    torch.testing.assert_close(raw, kernel.repeat(1, num_frames, 1, 1) / num_frames, rtol=0,
                               atol=1e-6)
    last = [key for key in reference if key.endswith('.weight') and reference[key].dim() == 4]
    assert weights[_mapped_key(torchvision_name, last[-1])].equal(reference[last[-1]])


def _mapped_key(torchvision_name: str, key: str) -> str:
    """Where the backbone keeps torchvision's last conv weight."""
    if torchvision_name.startswith('resnet'):
        layer, block, conv, _ = key.split('.')  # layer4.1.conv2.weight -> layer4.1.conv2.conv
        return f'{layer}.{block}.{conv}.conv.weight'
    return 'layer16.conv.weight'  # mobilenet_v3_large: features.16.0 (960 channels)
