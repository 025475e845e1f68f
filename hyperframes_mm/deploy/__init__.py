"""Deployment: streaming inference with alerts, screening/confirming cascades, dynamic frame
counts and ONNX export (see ``docs/deployment.md``); built on :mod:`hyperframes_mm.apis`."""
from .alerts import (AlertRule, Hysteresis, alert_events, check_alert_classes,
                     check_score_thresholds)
from .cascade import build_cascade, compare_with_confirmer
from .dynamic_frames import DynamicFrameStage, choose_num_frames, motion_score
from .export import check_parity, export_onnx
from .sources import SourceError, VideoSource
from .stages import ModelStage
from .stream import StreamEngine, StreamReport, StreamStats, report_dict, should_confirm

__all__ = [
    'AlertRule', 'Hysteresis', 'alert_events', 'check_alert_classes', 'check_score_thresholds',
    'build_cascade', 'compare_with_confirmer', 'check_parity', 'export_onnx', 'DynamicFrameStage',
    'choose_num_frames', 'motion_score', 'SourceError', 'VideoSource', 'ModelStage',
    'StreamEngine', 'StreamReport', 'StreamStats', 'report_dict', 'should_confirm'
]
