"""Every hyperframe backbone offers its 2D base's arguments, with the base's defaults."""
import inspect

import pytest
from mmaction.models.backbones.mobilenet_v2 import MobileNetV2
from mmaction.models.backbones.resnet import ResNet
from mmpretrain.models.backbones.mobilenet_v3 import MobileNetV3

from hyperframes_mm.models.backbones import HyperMobileNetV2, HyperMobileNetV3, HyperResNet


@pytest.mark.parametrize('backbone,base,set_by_the_backbone', [
    # conv1's input channels follow num_frames; pretrained reads torchvision's layout itself
    (HyperResNet, ResNet, {'in_channels', 'torchvision_pretrain'}),
    (HyperMobileNetV3, MobileNetV3, set()),
    (HyperMobileNetV2, MobileNetV2, set()),
])
def test_every_base_argument_is_offered_with_the_bases_default(backbone, base,
                                                              set_by_the_backbone):
    ours = inspect.signature(backbone.__init__).parameters
    theirs = inspect.signature(base.__init__).parameters
    offered = set(theirs) - set_by_the_backbone
    assert offered <= set(ours) and not set_by_the_backbone & set(ours)
    # pretrained is the backbone's own (a checkpoint it inflates), None by default as the base's
    for name in offered - {'self'}:
        assert ours[name].default == theirs[name].default, name
    assert list(ours)[-1] == 'stem' and ours['stem'].kind is inspect.Parameter.VAR_KEYWORD
