# The T=5 hyperframe row on a network mmaction2 does not ship: timm's EfficientNet-Lite0 with its
# stem conv inflated to one T=5 hyperframe (the RGB kernel replicated over the 5 picks and
# divided by 5), every other weight the ImageNet file's, fine-tuned with the MobileNetV2 rows'
# data, picks, encoding and recipe, so that the two networks compare on one footing.
_base_ = [
    '../../_base_/models/hyper_efficientnet_lite0.py',
    '../../_base_/models/imagenet_efficientnet_lite0.py',
    '../../_base_/datasets/utd_mhad_depth_imagenet.py',
    '../../_base_/schedules/sgd_mobilenet_v2_finetune_30e.py', '../../_base_/default_runtime.py'
]
model = dict(
    backbone=dict(
        num_frames=_base_.num_frames,
        inflate_init='replicate',
        pretrained=_base_.imagenet_efficientnet_lite0),
    cls_head=dict(num_classes=_base_.num_classes))
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
