# The 2D baseline: the recipe's network, schedule and augmentation on one frame per clip (T=1,
# a random frame in training), 3 test frames averaged.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 1
model = dict(backbone=dict(num_frames=num_frames, input_encoding='frames', motion_products=False))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
