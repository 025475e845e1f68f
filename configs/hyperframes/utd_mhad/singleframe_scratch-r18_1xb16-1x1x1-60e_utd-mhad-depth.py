# The 2D baseline: the recipe's network, schedule and augmentation on one frame per clip (T=1,
# a random frame in training), 3 test frames averaged.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py']
num_frames = 1
model = dict(backbone=dict(num_frames=num_frames, input_encoding='frames', motion_products=False))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=num_frames)
train_pipeline = [
    _base_.train_init, hyperframe_sampler, *_base_.train_transforms, *_base_.hyperframe_format
]
val_pipeline = [
    _base_.test_init,
    dict(hyperframe_sampler, num_clips=_base_.test_clips, test_mode=True),
    *_base_.test_transforms, *_base_.hyperframe_format
]
test_pipeline = val_pipeline
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=val_pipeline))
test_dataloader = val_dataloader
