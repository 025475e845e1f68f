# UTD-MHAD depth, cross-subject (utd_mhad_depth.py) for ImageNet-initialised networks: the same
# data, frame cache and views, at an input size of their own. ImageNet networks see objects at
# 224 pixels; the depth videos are 128x128, and a side of 112 halves ImageNet's, so every stride
# of the network sees features at the scale it learnt at half the resolution (the benchmark
# measures 160 as a row edit). The depth maps are grey in all three channels: ImageNet's mean and
# std (the data preprocessors') apply to them as they are.
_base_ = ['./utd_mhad_depth.py']
from hyperframes_mm.config_parts import at_side, dataloaders, pipelines  # after _base_
input_size = 112  # training crop and test frame side, every row of the family
# Validation is a cheap proxy of the test, run every few epochs for the learning curves (the
# epochs a model needs to reach an accuracy): one clip, where the test averages test_clips.
val_clips = 1
train_transforms = at_side(_base_.train_transforms, input_size)
test_transforms = at_side(_base_.test_transforms, input_size)
# each split's parts, as in utd_mhad_depth.py: (reader, the sampler's views, transforms)
pipeline_parts = [
    (_base_.train_init, dict(), train_transforms),
    (_base_.test_init, dict(num_clips=val_clips, test_mode=True), test_transforms),
    (_base_.test_init, dict(num_clips=_base_.test_clips, test_mode=True), test_transforms),
]
train_pipeline, val_pipeline, test_pipeline = pipelines(
    pipeline_parts, _base_.hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
