"""Reliability of training runs: crash-safe checkpoints, exact resume, CPU multi-process, the
frame cache built before a run."""
from .cache_hook import BuildFrameCacheHook
from .checkpoint import (CheckpointCorruptError, CheckpointNotFiniteError,
                         CheckpointRefusedError, atomic_write_bytes, check_finite,
                         verify_checkpoint_file)
from .distributed import main_process_first
from .hooks import EpochSeedHook, epoch_seed
from .sync_bn import CPUSyncBatchNorm

__all__ = [
    'BuildFrameCacheHook', 'CPUSyncBatchNorm', 'CheckpointCorruptError', 'CheckpointNotFiniteError',
    'CheckpointRefusedError', 'EpochSeedHook', 'atomic_write_bytes', 'check_finite', 'epoch_seed',
    'main_process_first', 'verify_checkpoint_file'
]
