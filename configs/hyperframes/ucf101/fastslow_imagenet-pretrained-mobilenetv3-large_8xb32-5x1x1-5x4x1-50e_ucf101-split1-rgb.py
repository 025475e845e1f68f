# Two time scales in one HyperMobileNetV3-large pass: a fast T=5 hyperframe (frames 1 apart) centred
# in a slow one (frames 4 apart), stacked into one T=10 hyperframe (early fusion: a wider first
# conv rather than a second backbone pass, the design that beat two passes on UTD-MHAD),
# initialised from ImageNet weights, fine-tuned on UCF101 split 1.
_base_ = [
    '../../_base_/models/hyper_mobilenet_v3_large.py',
    '../../_base_/datasets/ucf101_split1_fastslow_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_50e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(
        num_frames=2 * _base_.num_frames,
        pretrained='checkpoints/mobilenet_v3_large-imagenet.pth'),
    cls_head=dict(num_classes=101))
# mmaction2's MobileNetV2 TSM recipe (SGD lr 0.02 at a total batch of 128, weight decay 2e-5,
# gradient clip 20) rescaled to a batch of 256 and times 0.6, as for the ResNets.
optim_wrapper = dict(
    optimizer=dict(lr=0.024, weight_decay=2e-5), clip_grad=dict(max_norm=20))
