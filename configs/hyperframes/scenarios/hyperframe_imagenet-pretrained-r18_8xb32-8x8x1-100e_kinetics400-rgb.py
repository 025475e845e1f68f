# Scenario "slow behaviour": actions that unfold over seconds (a person sitting down, walking
# off). One T=8 hyperframe of frames 8 apart (57 frames, ~2 s at 30 fps) through
# HyperResNet-18 at 224x224, 32 clips per GPU; conv1 inflated from the ImageNet kernel.
_base_ = [
    '../../_base_/models/hyper_r18.py', '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_100e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(num_frames=8, pretrained='checkpoints/resnet18-imagenet.pth'),
    cls_head=dict(num_classes=400))

sampler = dict(type='HyperframeSampleFrames', num_frames=8, interval=8)
train_pipeline = [
    dict(type='SafeDecordInit'),
    sampler,
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=224, flip_ratio=0.5, brightness=0.4, contrast=0.4,
         saturation=0.4, hue=0.1),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='CenterCrop', crop_size=224),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=5, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='ThreeCrop', crop_size=256),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(batch_size=32, dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
