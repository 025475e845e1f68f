# mmaction2's TSM: ResNetTSM-18 (1/8 of the channels shifted between the 5 segments in every
# block), one frame from each of 5 equal segments of the clip (TSN sampling), scores averaged;
# mmaction2's from-scratch SGD schedule. ResNetTSM(pretrained=None) needs pretrained2d=False to
# skip its 2D-checkpoint loader.
_base_ = [
    '../../_base_/datasets/utd_mhad_depth.py',
    '../../_base_/schedules/sgd_scratch_warmup_cosine_60e.py',
    '../../_base_/default_runtime.py'
]
model = dict(
    type='Recognizer2D',
    backbone=dict(
        type='ResNetTSM',
        depth=18,
        pretrained=None,
        pretrained2d=False,
        num_segments=5,
        shift_div=8,
        norm_eval=False),
    cls_head=dict(
        type='TSMHead',
        num_classes=27,
        in_channels=512,
        num_segments=5,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.5,
        init_std=0.001,
        is_shift=True,
        average_clips='prob'),
    data_preprocessor=dict(
        type='ActionDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        format_shape='NCHW'))
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=5)
# the test views of every row of the family: 3 clips of 5 frames, each frame at the fraction
# (k + 0.5) / 3 of its segment, the whole 96x96 frame
test_segments = dict(type='HyperframeSampleFrames', num_frames=5, mode='uniform', num_clips=3,
                     test_mode=True)
train_pipeline = [
    {{_base_.frame_cache_init}},
    segments,
    {{_base_.frame_cache_decode}},
    {{_base_.augment}},
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    test_segments,
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(96, 96), keep_ratio=False),
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
val_pipeline = test_pipeline
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
