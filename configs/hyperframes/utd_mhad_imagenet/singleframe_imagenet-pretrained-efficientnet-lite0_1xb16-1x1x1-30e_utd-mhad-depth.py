# The 2D reference for EfficientNet-Lite0: the ImageNet network as it is (stem conv not widened:
# T=1) on one frame per clip (a random frame in training), the test frames' scores averaged; the
# T=5 row's schedule.
_base_ = ['./hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 1
model = dict(backbone=dict(num_frames=num_frames, input_encoding='frames'))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
