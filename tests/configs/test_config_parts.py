"""hyperframes_mm.config_parts: the pipeline rebuild a config writes when it changes its sampler,
as values, through mmengine's config loading and dumping."""
from mmengine.config import Config

from hyperframes_mm.config_parts import (at_side, dataloaders, pipelines, schedule_over,
                                         side_fields, segment_stack, with_test_clips,
                                         with_train_crops)

from ..conftest import REPO

READER = dict(type='DecordInit')
SAMPLER = dict(type='HyperframeSampleFrames', num_frames=5, mode='uniform')
FORMAT = [dict(type='HyperframeStack'), dict(type='PackActionInputs')]
PARTS = [(READER, dict(), [dict(type='DecordDecode')]),
         (READER, dict(num_clips=3, test_mode=True), [dict(type='Resize', scale=(96, 96))])]


def test_each_split_is_reader_sampler_with_its_views_transforms_format():
    train, test = pipelines(PARTS, dict(SAMPLER, num_frames=8), FORMAT)
    assert train == [READER, dict(SAMPLER, num_frames=8), dict(type='DecordDecode'), *FORMAT]
    assert test == [READER, dict(SAMPLER, num_frames=8, num_clips=3, test_mode=True),
                    dict(type='Resize', scale=(96, 96)), *FORMAT]
    # the sampler given is copied per split, never changed
    assert SAMPLER == dict(type='HyperframeSampleFrames', num_frames=5, mode='uniform')
    assert train[1] is not test[1]


def test_at_side_sets_the_crop_and_the_fixed_size_resize_and_nothing_else():
    crop = dict(type='ConsistentClipAugment', size=96, area_range=(0.6, 1.0))
    fixed = dict(type='Resize', scale=(96, 96), keep_ratio=False)
    short_side = dict(type='Resize', scale=(-1, 96), keep_ratio=True)
    decode = dict(type='DecordDecode')
    transforms = [decode, crop, fixed, short_side]
    assert at_side(transforms, 128) == [
        decode, dict(crop, size=128), dict(fixed, scale=(128, 128)), short_side]
    # copies: the base's transforms keep their side
    assert crop['size'] == 96 and fixed['scale'] == (96, 96)
    assert [side_fields(step, 64) for step in transforms] == [
        {}, dict(size=64), dict(scale=(64, 64)), {}]


def test_with_test_clips_changes_the_last_splits_clips_only():
    parts = with_test_clips(PARTS, 2)
    assert parts == [PARTS[0], (READER, dict(num_clips=2, test_mode=True),
                                [dict(type='Resize', scale=(96, 96))])]
    assert PARTS[1][1] == dict(num_clips=3, test_mode=True)  # a copy: the base keeps its views
    # a split without views gets them
    assert with_test_clips(PARTS[:1], 4)[0][1] == dict(num_clips=4)


def test_with_train_crops_changes_the_training_splits_augmentation_only():
    augment = dict(type='ConsistentClipAugment', size=96, area_range=(0.6, 1.0))
    parts = [(READER, dict(), [dict(type='DecordDecode'), augment]), PARTS[1]]
    assert with_train_crops(parts, (0.8, 1.0)) == [
        (READER, dict(), [dict(type='DecordDecode'), dict(augment, area_range=(0.8, 1.0))]),
        PARTS[1]]
    assert augment['area_range'] == (0.6, 1.0)  # a copy: the base keeps its crops


def test_segment_stack_ends_a_pipeline_in_segments_for_the_shifted_backbone():
    assert segment_stack(3) == [dict(type='HyperframeStack', segments=3),
                                   dict(type='PackActionInputs')]


def test_dataloaders_hand_each_pipeline_to_its_split_in_order():
    assert dataloaders(['a'], ['b'], ['c']) == (dict(dataset=dict(pipeline=['a'])),
                                                dict(dataset=dict(pipeline=['b'])),
                                                dict(dataset=dict(pipeline=['c'])))


def test_a_config_that_imports_them_after_base_loads_and_dumps_values(tmp_path):
    (tmp_path / 'base.py').write_text(
        f'pipeline_parts = {PARTS!r}\nhyperframe_sampler = {SAMPLER!r}\n'
        f'clip_format = {FORMAT!r}\n'
        'train_dataloader = dict(batch_size=2, dataset=dict(ann_file="a.txt", pipeline=[]))\n'
        'test_dataloader = dict(batch_size=1, dataset=dict(ann_file="b.txt", pipeline=[]))\n')
    (tmp_path / 'leaf.py').write_text(
        "_base_ = ['./base.py']\n"
        'from hyperframes_mm.config_parts import dataloaders, pipelines\n'
        "sampler = dict(_base_.hyperframe_sampler, num_frames=8)\n"
        'train_pipeline, test_pipeline = pipelines(_base_.pipeline_parts, sampler, '
        '_base_.clip_format)\n'
        'train_dataloader, test_dataloader = dataloaders(train_pipeline, test_pipeline)\n')
    cfg = Config.fromfile(str(tmp_path / 'leaf.py'))
    expected = pipelines(PARTS, dict(SAMPLER, num_frames=8), FORMAT)
    assert cfg.train_dataloader.to_dict() == dict(
        batch_size=2, dataset=dict(ann_file='a.txt', pipeline=expected[0]))
    assert cfg.test_dataloader.dataset.pipeline == expected[1]
    # the functions are not part of the config: it dumps and loads back as values
    assert 'pipelines' not in cfg and 'dataloaders' not in cfg
    cfg.dump(str(tmp_path / 'dumped.py'))
    assert 'config_parts' not in (tmp_path / 'dumped.py').read_text()
    assert Config.fromfile(str(tmp_path / 'dumped.py')).to_dict() == cfg.to_dict()


def test_schedule_over_scales_every_scheduler_as_set_epochs_does():
    """A config with its own epoch count stretches its base's warm-up and cosine decay (the
    45-epoch UTD-MHAD row), which it wrote out by hand before."""
    base = Config.fromfile(str(REPO / 'configs/_base_/schedules/sgd_mobilenet_v2_finetune_30e.py'))
    train_cfg, schedulers = schedule_over(base.train_cfg, base.param_scheduler, 45)
    assert (train_cfg['max_epochs'], train_cfg['val_interval']) == (45, 2)
    assert [(s['type'], s['begin'], s['end']) for s in schedulers] == [
        ('LinearLR', 0, 4), ('CosineAnnealingLR', 4, 45)]
    assert schedulers[1]['T_max'] == 41
    assert base.train_cfg.max_epochs == 30 and base.param_scheduler[0].end == 3  # untouched
