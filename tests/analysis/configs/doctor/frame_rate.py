# Finding frame-rate (needs --data): 2 frames apart is 67 ms at 30 fps but 133 ms at 15 fps.
_base_ = ['good.py']
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=2),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0),
         flip_label_map={{_base_.flip_label_map}}),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
