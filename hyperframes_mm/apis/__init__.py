"""Deployment and inspection: inference on windows, streaming, cascades, dynamic frame counts,
ONNX export and pictures of what the model sees (see ``docs/deployment.md``)."""
from .alerts import AlertRule, Hysteresis, alert_events
from .cascade import build_cascade, compare_with_confirmer, make_event_stream
from .complexity import measure_latency, model_complexity
from .dynamic_frames import DynamicFrameStage, choose_num_frames, motion_score
from .export import check_parity, export_onnx
from .inference import (WindowPipeline, default_device, example_inputs, init_recognizer,
                        load_config, predict_scores, stream_keys)
from .sources import SourceError, VideoSource
from .stages import ModelStage
from .stream import StreamEngine, StreamReport, StreamStats, report_dict, should_confirm

__all__ = [
    'AlertRule', 'Hysteresis', 'alert_events', 'build_cascade', 'compare_with_confirmer',
    'make_event_stream', 'measure_latency', 'model_complexity', 'check_parity', 'export_onnx',
    'DynamicFrameStage', 'choose_num_frames', 'motion_score', 'WindowPipeline', 'default_device',
    'example_inputs', 'init_recognizer', 'load_config', 'predict_scores', 'stream_keys',
    'SourceError', 'VideoSource', 'ModelStage', 'StreamEngine', 'StreamReport', 'StreamStats',
    'report_dict', 'should_confirm'
]
