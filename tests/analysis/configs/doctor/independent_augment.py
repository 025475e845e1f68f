# Finding per-frame-augment: every frame of the hyperframe gets its own crop, flip and colour.
_base_ = ['good.py']
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0), independent=True),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
