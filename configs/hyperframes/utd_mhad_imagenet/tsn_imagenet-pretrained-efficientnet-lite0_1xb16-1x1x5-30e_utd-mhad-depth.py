# mmaction2's TSN on the ImageNet EfficientNet-Lite0 through its own timm.* backbone path: the
# file loaded by timm itself (pretrained_cfg_overlay names it; timm drops the classifier, as
# mmaction2 builds timm backbones without one), one frame from each of 5 equal segments of the
# clip, scores averaged; the MobileNetV2 TSN row's data, views and fine-tuning recipe, pixels
# scaled to [-1, 1] as the weights expect.
_base_ = ['./tsm_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py',
          '../../_base_/models/imagenet_efficientnet_lite0.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='timm.tf_efficientnet_lite0',
        pretrained=True,
        pretrained_cfg_overlay=dict(file=_base_.imagenet_efficientnet_lite0)),
    cls_head=dict(
        _delete_=True,
        type='TSNHead',
        num_classes=_base_.num_classes,
        in_channels=1280,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.4,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(mean=[127.5, 127.5, 127.5], std=[127.5, 127.5, 127.5]))
