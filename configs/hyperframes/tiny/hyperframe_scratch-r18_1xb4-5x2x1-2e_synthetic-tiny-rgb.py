# The foundation's end-to-end slice: a T=5 hyperframe ResNet-18 trained from scratch for 2 epochs
# on the tiny synthetic set that `python tools/make_synthetic_dataset.py --preset tiny` writes.
_base_ = [
    '../../_base_/models/hyper_r18.py', '../../_base_/default_runtime.py'
]

# set once: T, the frame side and the clips, which every pipeline below reads when the file is
# read (so --cfg-options num_frames=... changes this line's value alone, not the pipelines)
num_frames = 5
input_size = 56
val_clips = 1
test_clips = 2
model = dict(
    backbone=dict(num_frames=num_frames),
    cls_head=dict(num_classes=4, dropout_ratio=0.0))

# mmaction2's VideoDataset and DecordInit, checked: a bad list line, an unlabelled or twice
# labelled video, and a video that cannot be read are named by list, line and file
dataset_type = 'CheckedVideoDataset'
data_root = '{{$HF_SYNTHETIC_TINY:data/synthetic_tiny}}'
sampler = dict(type='SampleFrames', clip_len=num_frames, frame_interval=2, num_clips=1)
transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(input_size, input_size), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_pipeline = [dict(type='SafeDecordInit'), sampler, *transforms]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=val_clips, test_mode=True), *transforms
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=test_clips, test_mode=True), *transforms
]

train_dataloader = dict(
    batch_size=4,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        ann_file=f'{data_root}/train.txt',
        data_prefix=dict(video=data_root),
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        ann_file=f'{data_root}/val.txt',
        data_prefix=dict(video=data_root),
        pipeline=val_pipeline,
        test_mode=True))
# the validation videos, one a batch, with the test's clips
test_dataloader = dict(
    val_dataloader, batch_size=1, dataset=dict(val_dataloader['dataset'], pipeline=test_pipeline))

val_evaluator = dict(type='AccMetric')
test_evaluator = val_evaluator

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=2, val_begin=1, val_interval=1)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
param_scheduler = [dict(type='CosineAnnealingLR', T_max=2, eta_min=0, by_epoch=True)]
optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=1e-4),
    clip_grad=dict(max_norm=40, norm_type=2))
default_hooks = dict(logger=dict(interval=1))
