# Scenario "accuracy first": cost is secondary. One T=16 hyperframe of frames 4 apart (61
# frames, ~2 s at 30 fps) through ViT-B/16 at 256x256 (256 patch tokens, each seeing its
# 16x16 patch in all 16 frames), 8 clips per GPU; the patch embedding inflated from an
# ImageNet ViT-B/16 checkpoint (its 224 position embedding resized to 256 on loading).
_base_ = [
    '../../_base_/models/hyper_vit_b16.py', '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/adamw_warmup_cosine_30e.py', '../../_base_/default_runtime.py'
]

# set once: T, the input size (ViT's position embedding) and the views, which every pipeline
# below reads; validation and test resize the short side to the input size
num_frames = 16
input_size = test_scale = 256
val_clips = 1
test_clips = 4
model = dict(
    backbone=dict(
        num_frames=num_frames,
        backbone=dict(img_size=input_size),
        pretrained='checkpoints/vit-base-p16-imagenet.pth'),
    cls_head=dict(num_classes=400))

sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=4)
train_pipeline = [
    _base_.train_init, sampler,
    dict(type='DecordDecode'),
    dict(_base_.augment, size=input_size), *_base_.hyperframe_format
]
test_decode_resize = [dict(type='DecordDecode'), dict(type='Resize', scale=(-1, test_scale))]
val_pipeline = [
    _base_.test_init,
    dict(sampler, num_clips=val_clips, test_mode=True), *test_decode_resize,
    dict(type='CenterCrop', crop_size=input_size), *_base_.hyperframe_format
]
test_pipeline = [
    _base_.test_init,
    dict(sampler, num_clips=test_clips, test_mode=True), *test_decode_resize,
    dict(type='ThreeCrop', crop_size=test_scale), *_base_.hyperframe_format
]
train_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
