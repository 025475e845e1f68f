# The ImageNet MobileNetV2 every MobileNetV2 config starts from, named once: the float file in
# mmaction2's MobileNetV2 layout that docs/imagenet_weights.md converts (the hyperframe models
# inflate its conv1, mmaction2's MobileNetV2 and MobileNetV2TSM load it as it is). Set
# HF_IMAGENET_MOBILENET_V2 to use another copy, e.g. one converted from a float torchvision or
# mmpretrain checkpoint.
imagenet_mobilenet_v2 = '{{$HF_IMAGENET_MOBILENET_V2:checkpoints/mobilenet_v2_imagenet_mmaction.pth}}'
