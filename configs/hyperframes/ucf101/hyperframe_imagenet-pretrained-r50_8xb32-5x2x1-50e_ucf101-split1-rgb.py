# HyperResNet-50 over one T=5 hyperframe (frames 2 apart),
# initialised from ImageNet weights, fine-tuned on UCF101 split 1.
_base_ = [
    '../../_base_/models/hyper_r50.py',
    '../../_base_/datasets/ucf101_split1_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_50e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(
        num_frames=_base_.num_frames,
        pretrained='checkpoints/resnet50-imagenet.pth'),
    cls_head=dict(num_classes=101))
