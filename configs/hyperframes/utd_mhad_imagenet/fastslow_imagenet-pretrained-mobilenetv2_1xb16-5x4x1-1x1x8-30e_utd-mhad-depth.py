# The fast/slow model with the T=8 row's slow stream: the fast hyperframe (T=5 picks 4/30 s
# apart) for short motion, 8 picks spread over the clip for the whole action, stacked into one
# T=13 hyperframe, one backbone pass.
_base_ = ['./fastslow_imagenet-pretrained-mobilenetv2_1xb16-5x4x1-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
slow_frames = 8
# the streams' frames in one hyperframe: the backbone reads both streams' T
model = dict(backbone=dict(num_frames=_base_.num_frames + slow_frames))
# mmengine merges an inherited dict into its base's, so _base_.hyperframe_sampler carries the
# recipe's mode='uniform'; the streams need mode='interval', as the base's own pipelines have it
hyperframe_sampler = dict(
    _base_.hyperframe_sampler,
    mode='interval',
    streams=dict(fast=dict(interval=4 / 30), slow=dict(mode='uniform', num_frames=slow_frames)))
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.fused_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
