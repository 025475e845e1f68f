# EfficientNet-Lite0's T=8 hyperframe at the frame-difference gain and learning rate its T=5 row's
# four training-subject folds chose (the gain at its input scale, 4x the recipe's rate): with both
# T at those settings, the folds chose T=8 for this network (docs/efficientnet_lite0.md). Only T
# differs from the T=5 config it builds on, as the family's T=8 rows differ from their T=5 rows.
_base_ = ['./hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 8
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
