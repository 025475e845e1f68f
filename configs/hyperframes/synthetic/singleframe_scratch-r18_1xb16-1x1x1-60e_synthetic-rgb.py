# The 2D baseline: the same ResNet-18, schedule and augmentation on one frame per clip (T=1),
# three test frames averaged. Only motion separates the classes, so it should stay at chance.
_base_ = ['./hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py']
model = dict(backbone=dict(num_frames=1, input_encoding='frames', motion_products=False))
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=1, interval=1)
train_pipeline = [
    {{_base_.frame_cache_init}},
    hyperframe_sampler,
    {{_base_.frame_cache_decode}},
    dict(type='ConsistentClipAugment', size=32, area_range=(0.8, 1.0),
         flip_label_map={0: 1, 1: 0, 5: 6, 6: 5}),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(hyperframe_sampler, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_pipeline = test_pipeline
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
