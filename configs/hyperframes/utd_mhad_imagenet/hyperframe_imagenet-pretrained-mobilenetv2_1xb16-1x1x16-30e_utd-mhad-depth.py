# The T=5 row on 16 picks spread over the clip: the frame-count axis one step past T=8 (denser
# motion in the one hyperframe; conv1, the only layer T widens, is still a small part of the
# network's cost), inflated from the same ImageNet kernel.
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 16
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
