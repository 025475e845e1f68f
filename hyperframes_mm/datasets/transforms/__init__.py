from .cache_loading import FrameCacheDecode, FrameCacheInit
from .frame_targets import CenterFrameTarget, center_pick
from .augment import ConsistentClipAugment
from .sampling import HyperframeSampleFrames
from .stacking import HyperframeStack, stack_hyperframes

__all__ = ['FrameCacheInit', 'FrameCacheDecode', 'HyperframeStack', 'stack_hyperframes']
__all__ += ['ConsistentClipAugment', 'HyperframeSampleFrames']
__all__ += ['CenterFrameTarget', 'center_pick']
