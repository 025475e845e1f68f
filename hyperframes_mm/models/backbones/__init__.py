from .frame_attention import FrameAttention, frame_descriptors
from .hyper_mobilenet_v2 import HyperMobileNetV2
from .hyper_mobilenet_v3 import HyperMobileNetV3, mobilenet_v3_state_dict_to_mmpretrain
from .hyper_resnet import HyperResNet, resnet_state_dict_to_mmaction
from .hyperframe_backbone import (HyperframeBackboneMixin, load_inflated_checkpoint,
                                  reinflate_backbone)
from .inflate import (INFLATE_MODES, inflate_conv_weight, reinflate_conv_weight,
                      temporal_resample_matrix)
from .inflated_backbone import InflatedBackbone
from .pad_aware_conv import PadAwareConv2d, live_taps
from .shifted_backbone import TemporalShiftBackbone
from .stem import HyperframeStem
from .temporal_shift import shiftable_blocks

__all__ = [
    'FrameAttention', 'HyperMobileNetV2', 'HyperMobileNetV3', 'HyperResNet',
    'HyperframeBackboneMixin', 'HyperframeStem', 'load_inflated_checkpoint',
    'INFLATE_MODES', 'InflatedBackbone', 'PadAwareConv2d', 'frame_descriptors',
    'inflate_conv_weight', 'live_taps', 'mobilenet_v3_state_dict_to_mmpretrain',
    'reinflate_backbone', 'reinflate_conv_weight', 'resnet_state_dict_to_mmaction',
    'temporal_resample_matrix', 'TemporalShiftBackbone', 'shiftable_blocks'
]
