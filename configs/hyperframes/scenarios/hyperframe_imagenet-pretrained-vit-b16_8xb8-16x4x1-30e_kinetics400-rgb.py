# Scenario "accuracy first": cost is secondary. One T=16 hyperframe of frames 4 apart (61
# frames, ~2 s at 30 fps) through ViT-B/16 at 256x256 (256 patch tokens, each seeing its
# 16x16 patch in all 16 frames), 8 clips per GPU; the patch embedding inflated from an
# ImageNet ViT-B/16 checkpoint (its 224 position embedding resized to 256 on loading).
_base_ = [
    '../../_base_/models/hyper_vit_b16.py', '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/adamw_warmup_cosine_30e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(
        num_frames=16,
        backbone=dict(img_size=256),
        pretrained='checkpoints/vit-base-p16-imagenet.pth'),
    cls_head=dict(num_classes=400))

sampler = dict(type='HyperframeSampleFrames', num_frames=16, interval=4)
train_pipeline = [
    dict(type='SafeDecordInit'),
    sampler,
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=256, flip_ratio=0.5, brightness=0.4, contrast=0.4,
         saturation=0.4, hue=0.1),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=1, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='CenterCrop', crop_size=256),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(sampler, num_clips=4, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='ThreeCrop', crop_size=256),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
train_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
