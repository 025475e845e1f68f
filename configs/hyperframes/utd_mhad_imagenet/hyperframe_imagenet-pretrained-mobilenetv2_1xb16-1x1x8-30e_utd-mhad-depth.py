# The T=5 row on 8 picks spread over the clip: more of the action in the one hyperframe, for a
# wider conv1 (the only layer T widens), inflated from the same ImageNet kernel.
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
num_frames = 8
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
train_pipeline = [
    _base_.train_init, hyperframe_sampler, *_base_.train_transforms, *_base_.hyperframe_format
]
val_pipeline = [
    _base_.test_init,
    dict(hyperframe_sampler, num_clips=_base_.val_clips, test_mode=True),
    *_base_.test_transforms, *_base_.hyperframe_format
]
test_pipeline = [
    _base_.test_init,
    dict(hyperframe_sampler, num_clips=_base_.test_clips, test_mode=True),
    *_base_.test_transforms, *_base_.hyperframe_format
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=val_pipeline))
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
