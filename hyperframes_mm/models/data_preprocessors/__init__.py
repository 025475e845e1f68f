from .hyperframe_data_preprocessor import HyperframeDataPreprocessor

__all__ = ['HyperframeDataPreprocessor']
