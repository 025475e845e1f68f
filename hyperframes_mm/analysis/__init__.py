"""Diagnostics: does a model use time (the temporal probe), and is a config sound (the doctor)."""
from .temporal_probe import (ORDER_CONDITIONS, ConditionResult, ProbeReport, frame_order,
                             perturb_inputs, reorder_frames, run_temporal_probe,
                             scale_sampling_interval, write_probe_outputs)

__all__ = [
    'ORDER_CONDITIONS', 'ConditionResult', 'ProbeReport', 'frame_order', 'perturb_inputs',
    'reorder_frames', 'run_temporal_probe', 'scale_sampling_interval', 'write_probe_outputs'
]
