# mmaction2's TSN as the video baseline of the ablations: its own ResNet-18 on 5 segments spread
# over the clip (one frame each, SampleFrames), scores averaged; trained like the hyperframe
# models (same augmentation draw for all frames, schedule, input size).
_base_ = [
    '../../_base_/datasets/synthetic_hyperframe.py',
    '../../_base_/schedules/adamw_warmup_cosine_60e.py', '../../_base_/default_runtime.py'
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
# T segments over the clip, one frame each; the test takes the same T segments, centred
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=_base_.num_frames)
segment_format = [dict(type='FormatShape', input_format='NCHW'), dict(type='PackActionInputs')]
train_pipeline = [_base_.train_init, segments, *_base_.train_transforms, *segment_format]
val_pipeline = [
    _base_.test_init,
    dict(segments, test_mode=True), *_base_.test_transforms, *segment_format
]
test_pipeline = val_pipeline
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=val_pipeline))
test_dataloader = val_dataloader
default_hooks = dict(logger=dict(interval=10))
