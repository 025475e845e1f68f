"""Reliability of training runs: crash-safe checkpoints, exact resume, CPU multi-process, the
frame cache built before a run."""
from .cache_hook import BuildFrameCacheHook
from .checkpoint import (CheckpointCorruptError, CheckpointRefusedError, atomic_write_bytes,
                         verify_checkpoint_file)
from .distributed import main_process_first
from .hooks import EpochSeedHook, epoch_seed
from .sync_bn import CPUSyncBatchNorm

__all__ = [
    'BuildFrameCacheHook', 'CPUSyncBatchNorm', 'CheckpointCorruptError', 'CheckpointRefusedError',
    'EpochSeedHook', 'atomic_write_bytes', 'epoch_seed', 'main_process_first',
    'verify_checkpoint_file'
]
