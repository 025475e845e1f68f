from .aux_frame_head import AuxFrameHead, pool_clip_features

__all__ = ['AuxFrameHead', 'pool_clip_features']
