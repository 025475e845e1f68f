# A sound hyperframe config for the doctor's tests: T=5 frames sampled by time (the synthetic
# clips come at 15/25/30 fps), one augmentation draw per sample with the flip label map of the
# tiny synthetic set (swipe_left, swipe_right, drift_left, drift_right), 3-value mean/std.
# Every other config in this folder changes one thing and should trigger exactly one finding.
_base_ = ['../../../../configs/_base_/default_runtime.py']

data_root = '{{$HF_SYNTHETIC_TINY:data/synthetic_tiny}}'
flip_label_map = {0: 1, 1: 0, 2: 3, 3: 2}
model = dict(
    type='Recognizer2D',
    backbone=dict(type='HyperResNet', depth=18, num_frames=5),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=512, average_clips='prob'),
    data_preprocessor=dict(type='HyperframeDataPreprocessor',
                           mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]))

train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0),
         flip_label_map=flip_label_map, brightness=0.3, contrast=0.3, saturation=0.3,
         hue=0.05),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=1 / 15, time_based=True,
         num_clips=2, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(
    batch_size=16,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(type='VideoDataset', ann_file=f'{data_root}/train.txt',
                 data_prefix=dict(video=data_root), pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=16,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type='VideoDataset', ann_file=f'{data_root}/val.txt',
                 data_prefix=dict(video=data_root), pipeline=test_pipeline, test_mode=True))
test_dataloader = val_dataloader
val_evaluator = dict(type='AccMetric')
test_evaluator = val_evaluator

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=2, val_interval=1)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=1e-4))
