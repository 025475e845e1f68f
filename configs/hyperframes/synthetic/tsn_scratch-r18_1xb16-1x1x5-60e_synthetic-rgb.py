# mmaction2's TSN as the video baseline of the ablations: its own ResNet-18 on 5 segments spread
# over the clip (one frame each, SampleFrames), scores averaged; trained like the hyperframe
# models (same augmentation draw for all frames, schedule, input size).
_base_ = [
    '../../_base_/datasets/synthetic_hyperframe.py',
    '../../_base_/schedules/adamw_cosine_60e_synthetic.py', '../../_base_/default_runtime.py'
]
model = dict(
    type='Recognizer2D',
    backbone=dict(type='ResNet', depth=18, pretrained=None, norm_eval=False),
    cls_head=dict(
        type='TSNHead',
        num_classes=10,
        in_channels=512,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.2,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(
        type='ActionDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        format_shape='NCHW'))
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=5)
train_pipeline = [
    {{_base_.frame_cache_init}},
    segments,
    {{_base_.frame_cache_decode}},
    dict(type='ConsistentClipAugment', size=32, area_range=(0.8, 1.0),
         flip_label_map={0: 1, 1: 0, 5: 6, 6: 5}),
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(segments, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='FormatShape', input_format='NCHW'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_pipeline = test_pipeline
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
default_hooks = dict(logger=dict(interval=10))
