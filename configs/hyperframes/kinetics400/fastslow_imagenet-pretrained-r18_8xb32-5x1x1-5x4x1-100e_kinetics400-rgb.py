# Two-stream HyperResNet-18 (one shared backbone): a fast T=5 hyperframe (frames 1 apart)
# centred in a slow one (frames 4 apart),
# initialised from ImageNet weights, trained on Kinetics-400.
_base_ = [
    '../../_base_/models/fastslow_r18.py',
    '../../_base_/datasets/kinetics400_fastslow_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_100e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(
        num_frames=2 * _base_.num_frames,
        pretrained='checkpoints/resnet18-imagenet.pth'),
    cls_head=dict(num_classes=400))
