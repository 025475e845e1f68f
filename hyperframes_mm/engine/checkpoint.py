"""Crash-safe checkpoints: atomic writes, a resume that survives a kill, damaged files refused.

mmengine 0.10.7 leaves three ways for a kill (SIGKILL, OOM killer, a pre-empted node) to break
``--resume``, each fixed here at ``import hyperframes_mm`` and each a no-op where not needed:

* :func:`make_checkpoint_writes_atomic`: ``save_checkpoint`` serialises to memory and hands the
  bytes to ``LocalBackend.put``, which opens the final path with ``'wb'``; a kill mid-write
  leaves a truncated ``epoch_N.pth`` under its final name. ``put`` now writes a temporary file
  in the same directory, fsyncs it and ``os.replace``-s it over the target, so the path holds
  the old file or the whole new one.
* :func:`make_last_checkpoint_atomic`: ``CheckpointHook`` writes ``last_checkpoint`` with a bare
  ``open(..., 'w')``; a kill between truncation and write leaves it empty. The hook's module
  gets an ``open`` that writes ``'w'`` files the same atomic way.
* :func:`resume_from_newest_intact`: ``CheckpointHook`` deletes the oldest checkpoint (beyond
  ``max_keep_ckpts``) *before* writing the new one, so a kill in between leaves
  ``last_checkpoint`` naming a deleted file. ``find_latest_checkpoint`` now falls back to the
  newest intact checkpoint in the work dir, and says so in the log.

:func:`verify_checkpoints_on_load` makes mmengine's local loader check a file before
``torch.load`` reads it, and name the file when torch refuses it: torch reads a zip checkpoint
without checking the CRC-32 each record carries, so a flipped byte in a tensor loads silently,
and a truncated file fails with "failed finding central directory"; both now raise
:class:`CheckpointCorruptError` naming the file. A file that weights-only loading refuses (it
holds Python objects beyond tensors and what mmengine writes, possibly a code payload) raises
:class:`CheckpointRefusedError` naming the file and the refused object; one whose tensors hold
NaN or Inf (a diverged run's) raises :class:`CheckpointNotFiniteError`. CRC-32 catches
corruption (disk, copy, kill), not a deliberate forger who recomputes it; what protects against
a malicious file is torch's weights-only loading, kept on by :mod:`hyperframes_mm.compat`.

The four functions that install these fixes are entries of
:func:`hyperframes_mm.compat.patch_table`, which applies them, says how each checks that it is
needed, and lets each be turned off.
"""
import builtins
import glob
import io
import logging
import os
import os.path as osp
import pickle
import re
import secrets
import zipfile
from typing import Callable, List, Optional, Union

from ..patches import code_names

logger = logging.getLogger(__name__)

#: Zip local-file-header signature: every checkpoint torch >= 1.6 writes starts with it.
ZIP_MAGIC = b'PK\x03\x04'
#: Checkpoint names CheckpointHook writes (``filename_tmpl`` defaults), best-first by step.
CHECKPOINT_PATTERN = re.compile(r'^(epoch|iter)_(\d+)\.pth$')


class CheckpointRefusedError(RuntimeError):
    """A checkpoint file the loader refused: damaged, or holding objects that weights-only
    loading does not allow (it may carry a code payload). Catch this one type for any refusal."""


class CheckpointCorruptError(CheckpointRefusedError):
    """A checkpoint file that is damaged: empty, truncated, or bytes changed after writing."""


class CheckpointNotFiniteError(CheckpointRefusedError):
    """A checkpoint file whose tensors hold NaN or Inf: the run that wrote it had diverged, so
    its weights would train or predict garbage without any error of their own."""


def atomic_write_bytes(data: bytes, path: Union[str, os.PathLike]) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds its old content or all of ``data``.

    The bytes go to a temporary file in the same directory (``os.replace`` is atomic only
    within one file system), which is fsynced, renamed over ``path``, and the directory entry
    fsynced, so neither a kill nor a power loss leaves a partial file under the final name.
    A kill before the rename leaves the hidden ``.NAME.PID.RANDOM.tmp`` file, which is safe to
    delete.

    Args:
        data (bytes): the complete new content.
        path (str | os.PathLike): the file to write; its directory is created if missing.
    """
    path = os.fspath(path)
    directory = osp.dirname(osp.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = osp.join(directory,
                         f'.{osp.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp')
    # os.open with 0o666 lets the umask decide the mode, as the plain open() it replaces did.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if osp.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Persist a rename: on POSIX the directory entry lives in the directory's own inode."""
    if os.name != 'posix':
        return
    handle = os.open(directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _is_special_file(path: str) -> bool:
    """A device, FIFO or socket (``/dev/null``): renaming over it would replace the node."""
    return osp.exists(path) and not osp.isfile(path)


def _atomic_put(put: Callable) -> Callable:
    """``LocalBackend.put`` that writes regular files atomically and special files as before."""

    def put_atomic(self, obj: bytes, filepath) -> None:
        filepath = os.fspath(filepath)
        if _is_special_file(filepath):
            return put(self, obj, filepath)
        atomic_write_bytes(obj, filepath)

    put_atomic.__wrapped__ = put
    put_atomic.__doc__ = put.__doc__
    return put_atomic


def make_checkpoint_writes_atomic() -> bool:
    """Make mmengine's local file backend, and so ``save_checkpoint``, write atomically.

    Returns:
        bool: True when ``LocalBackend.put`` was replaced, False when it already writes
        atomically (already patched, or a future mmengine that renames into place).
    """
    from mmengine.fileio.backends.local_backend import LocalBackend
    put = LocalBackend.put
    # Atomicity is only observable by killing a write half-way; the compiled put tells whether
    # it renames a finished file into place (os.replace / os.rename).
    if hasattr(put, '__wrapped__') or {'replace', 'rename'} & code_names(put):
        return False
    LocalBackend.put = _atomic_put(put)
    return True


class _AtomicTextFile(io.StringIO):
    """A text file opened for writing whose content replaces the target only on success."""

    def __init__(self, path: str, encoding: Optional[str]) -> None:
        super().__init__()
        self.path = path
        self.encoding_name = encoding or 'utf-8'

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if exc_type is None:
            atomic_write_bytes(self.getvalue().encode(self.encoding_name), self.path)
        super().__exit__(exc_type, exc_value, traceback)


def _open_text_atomically(file, mode: str = 'r', *args, **kwargs):
    """``open`` for mmengine's checkpoint hook: ``'w'`` is atomic, every other mode is builtin.

    Only the ``with open(...) as f: f.write(...)`` form is used there, so the content is
    committed when the ``with`` block ends without an exception.
    """
    if mode == 'w' and not _is_special_file(os.fspath(file)):
        return _AtomicTextFile(os.fspath(file), kwargs.get('encoding'))
    return builtins.open(file, mode, *args, **kwargs)


def make_last_checkpoint_atomic() -> bool:
    """Make ``CheckpointHook`` write ``last_checkpoint`` atomically.

    Returns:
        bool: True when the hook's module got the atomic ``open``, False when this mmengine
        does not write ``last_checkpoint`` with the module's ``open``, or when the fix is
        already in place.
    """
    from mmengine.hooks import checkpoint_hook
    if vars(checkpoint_hook).get('open') is _open_text_atomically:
        return False
    # The fix shadows the module's open, so it is needed exactly when the method that writes
    # last_checkpoint looks up open; no write can be observed without running a training step.
    if 'open' not in code_names(checkpoint_hook.CheckpointHook._save_checkpoint_with_step):
        return False
    # A module global shadows the builtin for this module only: the hook's one open() call.
    checkpoint_hook.open = _open_text_atomically
    return True


def verify_checkpoint_file(path: Union[str, os.PathLike]) -> None:
    """Refuse a damaged checkpoint before ``torch.load`` reads it.

    Zip checkpoints (what torch >= 1.6 writes) are checked in full: the central directory must
    be present (it is written last, so a truncated file has none) and every record must match
    the CRC-32 torch stored for it. Files in torch's legacy format are left to torch.

    Args:
        path (str | os.PathLike): the checkpoint file.

    Raises:
        CheckpointCorruptError: naming the file and what is wrong with it.
    """
    path = os.fspath(path)
    with builtins.open(path, 'rb') as stream:
        head = stream.read(len(ZIP_MAGIC))
    if not head:
        raise CheckpointCorruptError(
            f'{path}: the file is empty (0 bytes); it was never written completely. Delete it '
            'and resume from an earlier checkpoint.')
    if head != ZIP_MAGIC:
        return
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
            if not _has_crc(records):
                logger.debug('%s was written without CRC-32s; not verified', path)
                return
            damaged = archive.testzip()
    except zipfile.BadZipFile as error:
        raise CheckpointCorruptError(
            f'{path}: the file is truncated or damaged ({error}); it was cut short while being '
            'written or copied. Delete it and resume from an earlier checkpoint.') from error
    if damaged is not None:
        raise CheckpointCorruptError(
            f'{path}: record {damaged!r} does not match its CRC-32: the file was changed or '
            'damaged after it was written. Delete it and resume from an earlier checkpoint.')


def non_finite_tensors(checkpoint, prefix: str = '') -> List[str]:
    """The dotted keys of every floating-point tensor in ``checkpoint`` (nested dicts, lists and
    tuples: state dict, optimizer state, EMA weights) that holds a NaN or an Inf."""
    import torch
    if isinstance(checkpoint, torch.Tensor):
        if checkpoint.is_floating_point() or checkpoint.is_complex():
            return [] if bool(torch.isfinite(checkpoint).all()) else [prefix or '<tensor>']
        return []
    if isinstance(checkpoint, dict):
        items = ((str(key), value) for key, value in checkpoint.items())
    elif isinstance(checkpoint, (list, tuple)):
        items = ((str(index), value) for index, value in enumerate(checkpoint))
    else:
        return []
    found = []
    for key, value in items:
        found += non_finite_tensors(value, f'{prefix}.{key}' if prefix else key)
    return found


def check_finite(checkpoint, path: Union[str, os.PathLike]) -> None:
    """Refuse a loaded checkpoint whose tensors hold NaN or Inf, naming the file and the keys.

    A diverged run keeps saving checkpoints: without this check its NaN weights load silently
    into ``pretrained=``, ``load_from``, ``--resume`` or ``tools/test.py``, and the symptom
    (loss ``nan``, chance accuracy) shows up far from its cause.

    Raises:
        CheckpointNotFiniteError: naming ``path`` and up to five of the tensors.
    """
    bad = non_finite_tensors(checkpoint)
    if bad:
        shown = ', '.join(bad[:5]) + (f' and {len(bad) - 5} more' if len(bad) > 5 else '')
        raise CheckpointNotFiniteError(
            f'{os.fspath(path)}: {len(bad)} tensor(s) hold NaN or Inf ({shown}); the run that '
            'saved it had diverged. Resume or test from an earlier checkpoint, and lower the '
            'learning rate or add gradient clipping (optim_wrapper.clip_grad) before retraining.')


def _has_crc(records: List[zipfile.ZipInfo]) -> bool:
    """False when every non-empty record has CRC 0: torch skipped CRCs when writing
    (``torch.serialization.set_crc32_options(False)``), so there is nothing to compare."""
    return any(record.CRC != 0 for record in records if record.file_size > 0) or \
        not any(record.file_size > 0 for record in records)


def _unpickler_reason(error: Exception) -> str:
    """The one line of torch's long weights-only message that says what was refused."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if 'WeightsUnpickler error' in line:
            reason = line.split('WeightsUnpickler error:', 1)[1].strip()
            return reason or (lines[index + 1] if index + 1 < len(lines) else line)
    return lines[0] if lines else repr(error)


def _verified_loader(load_from_local: Callable) -> Callable:
    """Wrap mmengine's local checkpoint loader: damaged files, files that weights-only loading
    refuses and checkpoints holding NaN or Inf raise a :class:`CheckpointRefusedError` that
    names the file."""

    def load_from_local_verified(filename, map_location):
        path = osp.expanduser(filename)
        if osp.isfile(path):
            verify_checkpoint_file(path)
        try:
            checkpoint = load_from_local(filename, map_location)
        except pickle.UnpicklingError as error:
            raise CheckpointRefusedError(
                f'{filename}: refused by torch weights-only loading. The file holds Python objects '
                'that are not plain tensors or the values mmengine writes, so loading it could run '
                'code. Re-save it from a trusted session with torch.save(model.state_dict()). '
                f'torch said: {_unpickler_reason(error)}') from error
        check_finite(checkpoint, filename)
        return checkpoint

    load_from_local_verified.__wrapped__ = load_from_local
    load_from_local_verified.verifies_integrity = True
    return load_from_local_verified


def verify_checkpoints_on_load() -> bool:
    """Check, and name when refused, every local checkpoint mmengine loads (resume,
    ``load_from``, test, pretrained).

    Returns:
        bool: True when the check was installed, False when it already was.
    """
    from mmengine.runner.checkpoint import CheckpointLoader
    loader = CheckpointLoader._schemes.get('')
    if loader is None or getattr(loader, 'verifies_integrity', False):
        return False
    CheckpointLoader._schemes[''] = _verified_loader(loader)
    return True


def newest_intact_checkpoint(work_dir: Union[str, os.PathLike]) -> Optional[str]:
    """The most recently written ``epoch_N.pth`` / ``iter_N.pth`` in ``work_dir`` that passes
    :func:`verify_checkpoint_file`, or None.

    Args:
        work_dir (str | os.PathLike): a training work dir.
    """
    candidates = [path for path in glob.glob(osp.join(os.fspath(work_dir), '*.pth'))
                  if CHECKPOINT_PATTERN.match(osp.basename(path))]
    candidates.sort(key=lambda path: (osp.getmtime(path), _step(path)), reverse=True)
    for path in candidates:
        try:
            verify_checkpoint_file(path)
        except CheckpointCorruptError as error:
            logger.warning('skipping damaged checkpoint: %s', error)
            continue
        return path
    return None


def _step(path: str) -> int:
    return int(CHECKPOINT_PATTERN.match(osp.basename(path)).group(2))


def _find_latest_with_fallback(find_latest_checkpoint: Callable) -> Callable:
    """``find_latest_checkpoint`` that falls back to the newest intact checkpoint on disk."""

    def find_latest_checkpoint_or_newest_intact(path: str) -> Optional[str]:
        named = find_latest_checkpoint(path)
        if named and osp.isfile(osp.expanduser(named)):
            return named
        fallback = newest_intact_checkpoint(path)
        if fallback is not None:
            from mmengine.logging import print_log
            problem = (f'names {named!r}, which does not exist' if named else
                       'is missing or empty')
            print_log(f'last_checkpoint in {path} {problem} (a run killed while saving); '
                      f'resuming from the newest intact checkpoint {fallback} instead.',
                      logger='current', level=logging.WARNING)
            return fallback
        return named

    find_latest_checkpoint_or_newest_intact.__wrapped__ = find_latest_checkpoint
    find_latest_checkpoint_or_newest_intact.__doc__ = find_latest_checkpoint.__doc__
    return find_latest_checkpoint_or_newest_intact


def resume_from_newest_intact() -> bool:
    """Make ``--resume`` (auto) survive a ``last_checkpoint`` that names a missing file.

    The runner calls ``find_latest_checkpoint`` through the name it imported into
    ``mmengine.runner.runner``; the checkpoint module and the package export are replaced too,
    so every caller gets the same function.

    Returns:
        bool: True when the fallback was installed, False when it already was.
    """
    import mmengine.runner
    from mmengine.runner import checkpoint, runner
    current = runner.find_latest_checkpoint
    if hasattr(current, '__wrapped__'):
        return False
    patched = _find_latest_with_fallback(current)
    for module in (runner, checkpoint, mmengine.runner):
        if getattr(module, 'find_latest_checkpoint', None) is current:
            module.find_latest_checkpoint = patched
    return True
