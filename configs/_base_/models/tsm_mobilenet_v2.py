# mmaction2's TSM-MobileNetV2 (recognition/tsm/tsm_imagenet-pretrained-mobilenetv2_8xb16-1x1x8-
# 100e_kinetics400-rgb.py): tsm_r18.py's head and data preprocessor on MobileNetV2TSM (1/8 of the
# channels of every residual block shifted between segments), whose own loader reads a 2D
# MobileNetV2 file strictly, block names mapped around the shift wrappers; conv2 gives the head
# 1280 channels.
_base_ = ['tsm_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='MobileNetV2TSM',
        num_segments=5,
        is_shift=True,
        shift_div=8,
        pretrained2d=True,
        pretrained=None),
    cls_head=dict(in_channels=1280))
