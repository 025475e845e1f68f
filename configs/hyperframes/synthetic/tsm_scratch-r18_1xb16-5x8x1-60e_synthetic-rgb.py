# mmaction2's TSM on the recipe's frames: ResNetTSM-18 (shift 1/8 of the channels between the 5
# frames at every block) fed the same 5 picks as the hyperframe recipe (8/30 s apart, one random
# window per sample, 3 test clips) instead of TSN-style segments, whose random frame per segment
# scatters the spacing between frames in training. The fair temporal baseline for motion.
_base_ = ['./tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py']
picks = dict(type='HyperframeSampleFrames', num_frames=5, interval=8 / 30, time_based=True)
train_pipeline = [
    {{_base_.frame_cache_init}},
    picks,
    {{_base_.frame_cache_decode}},
    dict(type='ConsistentClipAugment', size=32, area_range=(0.8, 1.0),
         flip_label_map={0: 1, 1: 0, 5: 6, 6: 5}),
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(picks, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_pipeline = test_pipeline
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
