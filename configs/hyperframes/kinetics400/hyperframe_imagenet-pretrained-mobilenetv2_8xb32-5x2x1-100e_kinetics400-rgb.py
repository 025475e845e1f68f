# HyperMobileNetV2 (mmaction2's MobileNetV2, conv1 widened) over one T=5 hyperframe (frames 2
# apart), initialised from the ImageNet MobileNetV2 file mmaction2's TSN/TSM-MobileNetV2 read
# (docs/imagenet_weights.md), trained on Kinetics-400.
_base_ = [
    '../../_base_/models/hyper_mobilenet_v2.py', '../../_base_/models/imagenet_mobilenet_v2.py',
    '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_100e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(num_frames=_base_.num_frames, pretrained=_base_.imagenet_mobilenet_v2),
    cls_head=dict(num_classes=400))
# mmaction2's MobileNetV2 TSM recipe (SGD lr 0.02 at a total batch of 128, weight decay 2e-5,
# gradient clip 20) rescaled to a batch of 256 and times 0.6, as for the ResNets.
optim_wrapper = dict(
    optimizer=dict(lr=0.024, weight_decay=2e-5), clip_grad=dict(max_norm=20))
