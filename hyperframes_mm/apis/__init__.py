"""Inference: a recognizer from a config and checkpoint, the test pipeline over windows of
frames, class scores (deployment builds on it: :mod:`hyperframes_mm.deploy`)."""
from .inference import (WindowPipeline, default_device, example_inputs, init_recognizer,
                        load_config, predict_scores, stream_keys)

__all__ = [
    'WindowPipeline', 'default_device', 'example_inputs', 'init_recognizer', 'load_config',
    'predict_scores', 'stream_keys'
]
