# Scenario "slow behaviour": actions that unfold over seconds (a person sitting down, walking
# off). One T=8 hyperframe of frames 8 apart (57 frames, ~2 s at 30 fps) through
# HyperResNet-18 at 224x224, 32 clips per GPU; conv1 inflated from the ImageNet kernel.
_base_ = [
    '../../_base_/models/hyper_r18.py', '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_100e.py', '../../_base_/default_runtime.py'
]

# T and the test clips, set once; the input size and the validation views are the dataset's
num_frames = 8
test_clips = 5
model = dict(
    backbone=dict(num_frames=num_frames, pretrained='checkpoints/resnet18-imagenet.pth'),
    cls_head=dict(num_classes=400))

sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=8)
train_pipeline = [_base_.train_init, sampler, *_base_.train_transforms, *_base_.hyperframe_format]
val_pipeline = [
    _base_.test_init,
    dict(sampler, num_clips=_base_.val_clips, test_mode=True), *_base_.val_transforms,
    *_base_.hyperframe_format
]
test_pipeline = [
    _base_.test_init,
    dict(sampler, num_clips=test_clips, test_mode=True), *_base_.test_transforms,
    *_base_.hyperframe_format
]
train_dataloader = dict(batch_size=32, dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
