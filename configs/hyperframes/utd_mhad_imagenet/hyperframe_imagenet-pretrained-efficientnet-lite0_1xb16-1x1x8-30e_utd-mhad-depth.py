# The EfficientNet-Lite0 T=5 row on 8 picks spread over the clip, as the MobileNetV2 T=8 row:
# more of the action in the one hyperframe, for a wider stem conv (the only layer T widens).
_base_ = ['./hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 8
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
