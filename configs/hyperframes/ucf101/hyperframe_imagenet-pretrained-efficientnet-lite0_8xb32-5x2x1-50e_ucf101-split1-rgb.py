# timm's EfficientNet-Lite0 (stem conv widened by InflatedBackbone) over one T=5 hyperframe (frames
# 2 apart), initialised from the ImageNet EfficientNet-Lite0 file (docs/efficientnet_lite0.md),
# fine-tuned on UCF101 split 1; beside the MobileNetV2 row, on its recipe.
_base_ = [
    '../../_base_/models/hyper_efficientnet_lite0.py',
    '../../_base_/models/imagenet_efficientnet_lite0.py',
    '../../_base_/datasets/ucf101_split1_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_50e.py', '../../_base_/default_runtime.py'
]

model = dict(
    backbone=dict(num_frames=_base_.num_frames, pretrained=_base_.imagenet_efficientnet_lite0),
    cls_head=dict(num_classes=101))
# the MobileNetV2 row's optimiser (mmaction2's MobileNetV2 TSM recipe rescaled to a batch of 256
# and times 0.6): both are inverted-residual networks of one size, fine-tuned alike
optim_wrapper = dict(
    optimizer=dict(lr=0.024, weight_decay=2e-5), clip_grad=dict(max_norm=20))
