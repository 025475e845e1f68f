# The EfficientNet-Lite0 T=5 row on 8 picks spread over the clip, as the MobileNetV2 T=8 row:
# more of the action in the one hyperframe, for a wider stem conv (the only layer T widens).
_base_ = ['./hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
num_frames = 8
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
# the family's pipelines (its dataset base's pipeline_parts) with this sampler
train_pipeline, val_pipeline, test_pipeline = (
    [init, dict(hyperframe_sampler, **views), *transforms, *_base_.hyperframe_format]
    for init, views, transforms in _base_.pipeline_parts)
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=val_pipeline))
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
