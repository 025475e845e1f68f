# Finding num-frames, per stream: the slow backbone is built for T=3, its sampler stream takes 5.
_base_ = ['good.py']
backbone = dict(type='HyperResNet', depth=18, num_frames=5)
model = dict(
    _delete_=True,
    type='FastSlowRecognizer',
    streams=('fast', 'slow'),
    share_backbone=False,
    backbone=dict(fast=backbone, slow=dict(backbone, num_frames=3)),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=1024, average_clips='prob'),
    data_preprocessor={{_base_.model.data_preprocessor}})
streams = dict(fast=dict(interval=1 / 30), slow=dict(interval=2 / 15))
train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, time_based=True, streams=streams),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=32, area_range=(0.5, 1.0),
         flip_label_map={{_base_.flip_label_map}}),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, time_based=True, streams=streams,
         num_clips=2, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
