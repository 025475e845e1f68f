# Two time scales in one HyperResNet-18 pass: a fast T=5 hyperframe (frames 1 apart) centred
# in a slow one (frames 4 apart), stacked into one T=10 hyperframe (early fusion: a wider first
# conv rather than a second backbone pass, the design that beat two passes on UTD-MHAD),
# initialised from ImageNet weights, fine-tuned on UCF101 split 1.
_base_ = [
    '../../_base_/models/hyper_r18.py',
    '../../_base_/datasets/ucf101_split1_fastslow_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_50e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(
        num_frames=2 * _base_.num_frames,
        pretrained='checkpoints/resnet18-imagenet.pth'),
    cls_head=dict(num_classes=101))
