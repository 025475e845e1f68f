# The EfficientNet-Lite0 T=5 row with its frame differences at the MobileNetV2 rows' input scale.
# This network divides pixels by 127.5, MobileNetV2 by ImageNet's smaller std, so under the
# recipe's gain a frame difference reaches its stem weaker by the ratio of the two, and its motion
# weights learn slower (the inflated kernel computes the same function at any gain; the gain sets
# how fast SGD moves it along the differences). Here the gain is the recipe's times that ratio,
# the option the four validation folds chose over the recipe's (docs/efficientnet_lite0.md).
_base_ = ['./hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
# the MobileNetV2 rows' pixel std (hyper_r18.py's data preprocessor), against this network's
imagenet_std = [58.395, 57.12, 57.375]
own_std = _base_.model.data_preprocessor.std
model = dict(backbone=dict(diff_gain=_base_.model.backbone.diff_gain * (
    (sum(own_std) / len(own_std)) / (sum(imagenet_std) / len(imagenet_std)))))
