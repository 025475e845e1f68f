"""Reliability of training runs: crash-safe checkpoints, exact resume, CPU multi-process."""
from .checkpoint import CheckpointCorruptError, atomic_write_bytes, verify_checkpoint_file
from .hooks import EpochSeedHook, epoch_seed

__all__ = [
    'CheckpointCorruptError', 'EpochSeedHook', 'atomic_write_bytes', 'epoch_seed',
    'verify_checkpoint_file'
]
