"""Analysis: does a model use time (the temporal probe), is a config sound (the doctor), what
does a model cost (FLOPs, latency) and what does it see (pictures of its input)."""
from .complexity import compare_latency, measure_latency, model_complexity
from .doctor import diagnose
from .findings import Finding
from .memory import MemoryEstimate, estimate_memory
from .temporal_probe import (ORDER_CONDITIONS, ConditionResult, ProbeReport, frame_order,
                             perturb_inputs, reorder_frames, run_temporal_probe,
                             scale_sampling_interval, write_probe_outputs)

__all__ = [
    'compare_latency', 'measure_latency', 'model_complexity', 'Finding', 'diagnose',
    'MemoryEstimate', 'estimate_memory', 'ORDER_CONDITIONS',
    'ConditionResult', 'ProbeReport', 'frame_order', 'perturb_inputs', 'reorder_frames',
    'run_temporal_probe', 'scale_sampling_interval', 'write_probe_outputs'
]
