"""Reliability of training runs: crash-safe checkpoints, exact resume, CPU multi-process."""
from .checkpoint import CheckpointCorruptError, atomic_write_bytes, verify_checkpoint_file

__all__ = ['CheckpointCorruptError', 'atomic_write_bytes', 'verify_checkpoint_file']
