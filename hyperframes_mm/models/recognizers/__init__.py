from .fast_slow import FastSlowRecognizer

__all__ = ['FastSlowRecognizer']
