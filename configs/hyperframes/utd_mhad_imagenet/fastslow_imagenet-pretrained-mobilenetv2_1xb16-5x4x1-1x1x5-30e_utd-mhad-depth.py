# Two time scales in one backbone pass, as the UTD-MHAD family's fast/slow model: a fast
# hyperframe (T=5 picks 4/30 s apart, anywhere in the clip) and a slow one (T=5 spread over the
# clip), one augmentation draw for both, stacked into one T=10 hyperframe (early fusion), with
# motion products; conv1 inflated over the 10 frames from the same ImageNet kernel.
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
# the streams' frames in one hyperframe: the backbone reads both streams' T
model = dict(backbone=dict(num_frames=2 * _base_.num_frames, motion_products=True))
hyperframe_sampler = dict(
    type='HyperframeSampleFrames',
    num_frames=_base_.num_frames,
    time_based=True,
    streams=dict(fast=dict(interval=4 / 30), slow=dict(mode='uniform')))
# the family's pipelines (its dataset base's pipeline_parts) with these streams, stacked into
# one hyperframe per clip
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.fused_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
