# Recognizer2D over hyperframes with timm's EfficientNet-Lite0, a network mmaction2 does not ship:
# InflatedBackbone widens its stem conv to 3T channels. tf_efficientnet_lite0, not
# efficientnet_lite0: the ImageNet weights were trained with TensorFlow's 'SAME' padding and norm
# eps 1e-3, which only the tf_ variant computes (docs/efficientnet_lite0.md). The head is
# hyper_r18.py's on the 1280 pooled features; the data preprocessor scales pixels to [-1, 1],
# the inputs those weights were trained on, instead of ImageNet's mean and std.
_base_ = ['hyper_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='InflatedBackbone',
        num_frames=5,
        first_conv='conv_stem',
        inflate_init='replicate',
        input_encoding='diff',  # as hyper_r18.py
        diff_gain=4.0,
        backbone=dict(type='timm.tf_efficientnet_lite0'),
        pretrained=None),
    cls_head=dict(in_channels=1280),
    data_preprocessor=dict(mean=[127.5, 127.5, 127.5], std=[127.5, 127.5, 127.5]))
