"""Diagnostics: does a model use time (the temporal probe), and is a config sound (the doctor)."""
from .doctor import diagnose
from .findings import Finding
from .memory import MemoryEstimate, estimate_memory
from .temporal_probe import (ORDER_CONDITIONS, ConditionResult, ProbeReport, frame_order,
                             perturb_inputs, reorder_frames, run_temporal_probe,
                             scale_sampling_interval, write_probe_outputs)

__all__ = [
    'Finding', 'diagnose', 'MemoryEstimate', 'estimate_memory', 'ORDER_CONDITIONS',
    'ConditionResult', 'ProbeReport', 'frame_order', 'perturb_inputs', 'reorder_frames',
    'run_temporal_probe', 'scale_sampling_interval', 'write_probe_outputs'
]
