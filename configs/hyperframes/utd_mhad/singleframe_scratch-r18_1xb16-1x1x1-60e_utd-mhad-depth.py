# The 2D baseline: the recipe's network, schedule and augmentation on one frame per clip (T=1,
# a random frame in training), 3 test frames averaged.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py']
model = dict(backbone=dict(num_frames=1, input_encoding='frames', motion_products=False))
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=1, mode='uniform')
train_pipeline = [
    {{_base_.frame_cache_init}},
    hyperframe_sampler,
    {{_base_.frame_cache_decode}},
    {{_base_.augment}},
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(hyperframe_sampler, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(96, 96), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
val_pipeline = test_pipeline
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
