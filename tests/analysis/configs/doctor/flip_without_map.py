# Finding flip-label-map: ConsistentClipAugment flips half the clips (flip_ratio=0.5 by default)
# but a flipped swipe_left keeps its label.
_base_ = ['good.py']
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0)),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
