# Finding span (needs --data): 5 frames 0.5 s apart span 2 s, as long as the whole clip.
_base_ = ['good.py']
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=0.5, time_based=True),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0),
         flip_label_map={{_base_.flip_label_map}}),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
