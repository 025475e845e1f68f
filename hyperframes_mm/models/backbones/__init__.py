from .hyper_resnet import HyperResNet
from .inflate import INFLATE_MODES, inflate_conv_weight

__all__ = ['HyperResNet', 'INFLATE_MODES', 'inflate_conv_weight']
