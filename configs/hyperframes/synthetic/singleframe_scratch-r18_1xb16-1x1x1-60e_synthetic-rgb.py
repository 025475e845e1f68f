# The 2D baseline: the same ResNet-18, schedule and augmentation on one frame per clip (T=1),
# three test frames averaged. Only motion separates the classes, so it should stay at chance.
_base_ = ['./hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 1
model = dict(backbone=dict(num_frames=num_frames, input_encoding='frames', motion_products=False))
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=1)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
