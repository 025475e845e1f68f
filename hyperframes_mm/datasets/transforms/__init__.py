from .stacking import HyperframeStack, stack_hyperframes

__all__ = ['HyperframeStack', 'stack_hyperframes']
