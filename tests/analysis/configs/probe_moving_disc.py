# A small T=5 hyperframe model for the temporal probe's tests: four classes of a disc moving
# left, right, up or down (tests/analysis/conftest.py writes the clips; set HF_PROBE_DATA).
# Horizontal flips swap left and right, so training flips carry the label map.
_base_ = ['../../../configs/_base_/default_runtime.py']

data_root = '{{$HF_PROBE_DATA:data/moving_disc}}'
num_frames = 5
flip_label_map = {0: 1, 1: 0}
model = dict(
    type='Recognizer2D',
    backbone=dict(type='HyperResNet', depth=18, num_frames=num_frames, num_stages=2,
                  out_indices=(1, ), strides=(1, 2), dilations=(1, 1)),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=128, dropout_ratio=0.0,
                  average_clips='prob'),
    data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[128.0] * 3,
                           std=[64.0] * 3))

train_pipeline = [
    dict(type='DecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=2),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.7, 1.0),
         flip_label_map=flip_label_map),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='DecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=2, num_clips=2,
         test_mode=True),
    dict(type='DecordDecode'),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(
    batch_size=8,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(type='VideoDataset', ann_file=f'{data_root}/train.txt',
                 data_prefix=dict(video=data_root), pipeline=train_pipeline))
test_dataloader = dict(
    batch_size=6,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type='VideoDataset', ann_file=f'{data_root}/val.txt',
                 data_prefix=dict(video=data_root), pipeline=test_pipeline, test_mode=True))
val_dataloader = test_dataloader
val_evaluator = dict(type='AccMetric')
test_evaluator = val_evaluator

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=20, val_interval=20)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
optim_wrapper = dict(optimizer=dict(type='AdamW', lr=2e-3, weight_decay=1e-4))
randomness = dict(seed=0)
