# Finding color-jitter: mmaction2's ColorJitter, whose hue shift overflows uint8 under numpy 2.
_base_ = ['good.py']
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0),
         flip_label_map={{_base_.flip_label_map}}),
    dict(type='ColorJitter', brightness=0.3, contrast=0.3, saturation=0.3, hue=0.05),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
