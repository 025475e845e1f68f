# Scenario "fast actions": short, quick motions decided within a fraction of a second (hand
# gestures, Something-Something's hand-object actions). One T=5 hyperframe of frames 2 apart
# (9 frames, 0.75 s at SthV2's 12 fps) through HyperResNet-18 at 224x224, 64 clips per GPU;
# conv1 inflated from the ImageNet kernel.
_base_ = [
    '../../_base_/models/hyper_r18.py', '../../_base_/datasets/sthv2_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_50e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(num_frames=_base_.num_frames, pretrained='checkpoints/resnet18-imagenet.pth'),
    cls_head=dict(num_classes=174))
train_dataloader = dict(batch_size=64)
# The base lr (0.006 at a total batch of 256) scaled linearly to 8 GPUs x 64.
optim_wrapper = dict(optimizer=dict(lr=0.012))
auto_scale_lr = dict(base_batch_size=512)
