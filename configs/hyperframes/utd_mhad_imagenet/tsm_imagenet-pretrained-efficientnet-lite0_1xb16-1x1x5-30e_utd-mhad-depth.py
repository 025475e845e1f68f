# TSM on the ImageNet EfficientNet-Lite0: mmaction2's TemporalShift where MobileNetV2TSM puts it
# (the expansion conv of every inverted residual block with a skip connection, 1/8 of the
# channels shifted each way), in timm's tf_efficientnet_lite0 loaded from the family's file
# (TemporalShiftBackbone), on the TSM-MobileNetV2 row's 5 segments, views and fine-tuning recipe;
# pixels scaled to [-1, 1] as the weights expect. The temporal baseline for the
# EfficientNet-Lite0 hyperframes, as TSM-MobileNetV2-5 is for MobileNetV2's.
_base_ = ['./tsm_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py',
          '../../_base_/models/imagenet_efficientnet_lite0.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='TemporalShiftBackbone',
        backbone=dict(type='timm.tf_efficientnet_lite0'),
        num_segments=_base_.num_frames,
        shift_div=8,
        pretrained=_base_.imagenet_efficientnet_lite0),
    data_preprocessor=dict(mean=[127.5, 127.5, 127.5], std=[127.5, 127.5, 127.5]))
