"""Reliability of training runs, chosen by the config: a runner with checked checkpoint loads,
a resume that survives a kill and CPU multi-process training (``runner_type``), atomic
checkpoint files (``backend_args``), a checkpoint hook that saves before it prunes, exact resume
of the data order, the frame cache built before a run, labels and sampled frames checked
against the model, int8-aware fine-tuning."""
from .cache_hook import BuildFrameCacheHook, MissingVideosHook
from .checkpoint import (AtomicLocalBackend, CheckpointCorruptError, CheckpointMismatchError,
                         CheckpointNotFiniteError, CheckpointRefusedError, atomic_write_bytes,
                         check_finite, load_verified, mmengine_checkpoint_globals,
                         verify_checkpoint_file)
from .class_count import ClassCountError, ClassCountHook
from .distributed import main_process_first
from .hooks import EpochSeedHook, SafeCheckpointHook, epoch_seed
from .int8_aware import Int8AwareHook, Int8Rounding
from .last_batch_hook import LastBatchHook
from .num_frames_hook import NumFramesHook
from .runner import HyperframeRunner
from .segments_hook import SegmentsHook, check_stacked_segments
from .sync_bn import CPUSyncBatchNorm

__all__ = [
    'AtomicLocalBackend', 'BuildFrameCacheHook', 'CPUSyncBatchNorm', 'CheckpointCorruptError',
    'CheckpointMismatchError', 'ClassCountError', 'ClassCountHook',
    'CheckpointNotFiniteError', 'CheckpointRefusedError', 'EpochSeedHook', 'HyperframeRunner',
    'Int8AwareHook', 'Int8Rounding', 'LastBatchHook', 'MissingVideosHook', 'NumFramesHook',
    'SafeCheckpointHook', 'SegmentsHook', 'atomic_write_bytes', 'check_finite',
    'check_stacked_segments', 'epoch_seed', 'load_verified', 'main_process_first',
    'mmengine_checkpoint_globals', 'verify_checkpoint_file'
]
