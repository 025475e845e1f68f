"""Crash-safe checkpoints: atomic writes, a resume that survives a kill, damaged files refused.

mmengine 0.10.7 leaves three ways for a kill (SIGKILL, OOM killer, a pre-empted node) to break
``--resume``, and loads checkpoints without checking them. The plugin changes none of mmengine's
functions for this; it offers registered parts that a config names
(``configs/_base_/default_runtime.py`` names them all, docs/reliability.md says how to add them
to any config):

* :class:`AtomicLocalBackend` (file backend ``'atomic_local'``, chosen with
  ``backend_args=dict(backend='atomic_local')`` in the checkpoint hook): mmengine's
  ``LocalBackend.put`` opens the final path with ``'wb'``, so a kill mid-write leaves a
  truncated ``epoch_N.pth`` under its final name; this backend writes a temporary file in the
  same directory, fsyncs it and ``os.replace``-s it over the target.
* :class:`~hyperframes_mm.engine.hooks.SafeCheckpointHook`: ``CheckpointHook`` deletes the
  oldest checkpoint *before* writing the new one and writes ``last_checkpoint`` with a bare
  ``open(..., 'w')``; the safe hook saves first, points ``last_checkpoint`` at it atomically,
  then prunes.
* :class:`~hyperframes_mm.engine.runner.HyperframeRunner` (``runner_type``) loads every
  checkpoint through :func:`load_verified` and resumes from :func:`newest_intact_checkpoint`
  when ``last_checkpoint`` names a missing or damaged file.

:func:`load_verified` checks a file before ``torch.load`` reads it, and names the file when it
is refused: torch reads a zip checkpoint without checking the CRC-32 each record carries, so a
flipped byte in a tensor loads silently, and a truncated file fails with "failed finding central
directory"; both raise :class:`CheckpointCorruptError` naming the file. So does a file that is
not a checkpoint at all (text, ONNX, a TorchScript archive, zeros left by a power loss), which
torch would misread as a legacy pickle and fail on with a bare ``KeyError``. mmengine calls
``torch.load`` without ``weights_only``, which torch >= 2.6 reads as weights-only and then
refuses the objects mmengine itself writes (the message hub's ``HistoryBuffer`` and its numpy
values): the load runs inside ``torch.serialization.safe_globals`` with exactly those
(:func:`mmengine_checkpoint_globals`), for that load only, so torch's protection stays on for
everything else. A file that weights-only loading still refuses (a code payload, say) raises
:class:`CheckpointRefusedError` naming the file and the refused object; one whose tensors hold
NaN or Inf (a diverged run's) raises :class:`CheckpointNotFiniteError`. CRC-32 catches
corruption (disk, copy, kill), not a deliberate forger who recomputes it; what protects against
a malicious file is torch's weights-only loading.
"""
import ast
import builtins
import codecs
import glob
import inspect
import io
import logging
import mmap
import os
import os.path as osp
import pickle
import pickletools
import re
import zipfile
from typing import Dict, List, Optional, Sequence, Tuple, Union

from mmengine.fileio import LocalBackend, register_backend
from torch import nn

from ..utils.paths import atomic_write_bytes, write_text_atomically

logger = logging.getLogger(__name__)

#: Zip local-file-header signature: every checkpoint torch >= 1.6 writes starts with it.
ZIP_MAGIC = b'PK\x03\x04'
#: Checkpoint names CheckpointHook writes (``filename_tmpl`` defaults), best-first by step.
CHECKPOINT_PATTERN = re.compile(r'^(epoch|iter)_(\d+)\.pth$')


class CheckpointRefusedError(RuntimeError):
    """A checkpoint file the loader refused: damaged, or holding objects that weights-only
    loading does not allow (it may carry a code payload). Catch this one type for any refusal."""


class CheckpointCorruptError(CheckpointRefusedError):
    """A checkpoint file that is damaged (empty, zero-filled, truncated, bytes changed after
    writing) or is not a checkpoint at all (text, ONNX, a TorchScript archive, another zip)."""


class CheckpointNotFiniteError(CheckpointRefusedError):
    """A checkpoint file whose tensors hold NaN or Inf: the run that wrote it had diverged, so
    its weights would train or predict garbage without any error of their own."""


class CheckpointMismatchError(CheckpointRefusedError):
    """A checkpoint that is not the model's: it lacks some of the model's weights, holds others,
    or holds them in other shapes. Loaded anyway, the model would predict with the missing ones
    at their initial values."""


#: keys named per kind (missing, unexpected) in a :class:`CheckpointMismatchError`
_KEYS_SHOWN = 5


def timm_pretrained_nodes(model_cfg) -> List[Tuple[str, dict]]:
    """``(where, config)`` of every ``timm.*`` backbone in a model config that loads pretrained
    weights: timm reads ``pretrained_cfg_overlay.file`` inside the backbone's constructor (it
    downloads where no file is named), before any of mmengine's init or load checks, and a
    missing file stopped the build with a ``FileNotFoundError`` naming none."""
    found = []

    def visit(node, where):
        if isinstance(node, dict):
            kind = node.get('type')
            if isinstance(kind, str) and kind.startswith('timm.') and node.get('pretrained'):
                found.append((where, node))
            for key, value in node.items():
                visit(value, f'{where}.{key}')
        elif isinstance(node, (list, tuple)):
            for index, value in enumerate(node):
                visit(value, f'{where}[{index}]')

    visit(model_cfg, 'model')
    return found


def first_names(names: Sequence[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names``, and how many there are where some are cut: an error
    names a few keys or records, not the hundreds of another network."""
    cut = f', ... ({len(names)} in all)' if len(names) > shown else ''
    return ', '.join(names[:shown]) + cut


def check_pretrained_inits(model) -> None:
    """Refuse a module initialised through mmengine's ``Pretrained`` ``init_cfg`` (what
    mmaction2's ``MobileNetV2(pretrained=...)`` sets; a module with an ``init_weights`` of its
    own reads its file itself) when the file lacks some of its weights, or holds some in other
    shapes. ``PretrainedInit`` loads non-strictly and says so only in a log
    warning among hundreds of lines: a baseline given another network's file (a raw torchvision
    one, say) trained from its initial values with exit 0, while the plugin's backbones, which
    load strictly, refused or converted the same file.

    Called before mmengine's initialisation reads any file, it also loads every local file a
    ``Pretrained`` ``init_cfg`` names through :func:`load_verified`, those of modules that read
    their file themselves included: ``PretrainedInit`` and mmaction2's ``MobileNetV2TSM`` load
    it unchecked, so a NaN file trained the TSM baseline to NaN with exit 0, and a text or
    truncated file failed with a bare ``KeyError`` or torch's zip error naming no file. A URL or
    an mmengine scheme (``open-mmlab://``) is left to its loader. Which weights the file holds
    and in which shapes does not depend on the values the modules start with.

    Raises:
        CheckpointRefusedError: naming a file that is damaged, holds a code payload, or NaN.
        CheckpointMismatchError: naming the module, the file and the first missing weights.
    """
    from mmengine.model import BaseModule
    for name, module in model.named_modules():
        inits = getattr(module, 'init_cfg', None)
        inits = inits if isinstance(inits, list) else [inits]
        for init in inits:
            if not (isinstance(init, dict) and init.get('type') == 'Pretrained'
                    and isinstance(init.get('checkpoint'), str)
                    and not re.match(r'^[A-Za-z][A-Za-z0-9+.-]*://', init['checkpoint'])):
                continue
            loaded = load_verified(init['checkpoint'], 'cpu')
            if getattr(type(module), 'init_weights', None) is not BaseModule.init_weights:
                # a module with its own init_weights reads its file its own way
                # (MobileNetV2TSM renames the 2D keys under its shifts): verified only
                continue
            weights = loaded.get('state_dict', loaded) if isinstance(loaded, dict) else {}
            prefix = init.get('prefix')
            if prefix:
                prefix = prefix if prefix.endswith('.') else f'{prefix}.'
                weights = {key[len(prefix):]: value for key, value in weights.items()
                           if key.startswith(prefix)}
            else:  # what load_checkpoint's revise_keys strips by default
                weights = {re.sub(r'^module\.', '', key): value for key, value in weights.items()}
            own = module.state_dict()
            missing = [key for key in own if key not in weights]
            resized = [key for key in own if key in weights and hasattr(weights[key], 'shape')
                       and tuple(weights[key].shape) != tuple(own[key].shape)]
            if missing or resized:
                shown = [f'{len(missing)} of its {len(own)} weights are missing'
                         + (f' ({first_names(missing, _KEYS_SHOWN)})' if missing else ''),
                         f'{len(resized)} have other shapes'
                         + (f' ({first_names(resized, _KEYS_SHOWN)})' if resized else '')]
                raise CheckpointMismatchError(
                    f'{name or "the model"} ({type(module).__name__}, init_cfg Pretrained): in '
                    f'{init["checkpoint"]} {shown[0]} and {shown[1]}; loaded anyway '
                    '(non-strictly), they would train from their initial values: give the file '
                    'of this network')


def mismatch_error(filename: str, error: RuntimeError) -> CheckpointMismatchError:
    """The error of a strict load of ``filename`` that failed with mmengine's ``error``, naming
    the file, with its lists of missing and unexpected keys cut to their first few and counted
    (a checkpoint of another network misses every key, hundreds of them)."""
    lines, sizes = [], 0
    for line in str(error).splitlines():
        head, colon, keys = line.partition(': ')
        names = keys.split(', ')
        if colon and head.startswith(('missing keys', 'unexpected key')) and \
                len(names) > _KEYS_SHOWN:
            line = f'{head}: {first_names(names, _KEYS_SHOWN)}'
        if line.startswith('size mismatch'):  # one line per tensor
            sizes += 1
            if sizes > _KEYS_SHOWN:
                continue
        lines.append(line)
    if sizes > _KEYS_SHOWN:
        lines.append(f'... ({sizes} size mismatches in all)')
    return CheckpointMismatchError(f'{filename} does not fit the model of the config: '
                                   + '\n'.join(lines).strip())


def _is_special_file(path: str) -> bool:
    """A device, FIFO or socket (``/dev/null``): renaming over it would replace the node."""
    return osp.exists(path) and not osp.isfile(path)


@register_backend('atomic_local')
class AtomicLocalBackend(LocalBackend):
    """mmengine's local file backend whose ``put`` writes regular files atomically
    (:func:`atomic_write_bytes`), so a checkpoint path holds the old file or the whole new one.
    Special files (``/dev/null``) are written as the stock backend writes them.

    Select it where a file is written, e.g.
    ``default_hooks.checkpoint.backend_args=dict(backend='atomic_local')``.
    """

    def put(self, obj: bytes, filepath) -> None:
        filepath = os.fspath(filepath)
        if _is_special_file(filepath):
            super().put(obj, filepath)
            return
        atomic_write_bytes(obj, filepath)


#: Bytes read from the start of a file to tell what it is.
_HEAD_BYTES = 512
#: gzip's signature: a compressed checkpoint (``.pth.gz`` renamed) is a common mistake.
GZIP_MAGIC = b'\x1f\x8b'


def verify_checkpoint_file(path: Union[str, os.PathLike]) -> None:
    """Refuse a damaged checkpoint, or a file that is not one, before ``torch.load`` reads it.

    A checkpoint is what ``torch.save`` writes: a zip archive with a ``<folder>/data.pkl``
    record, or (``_use_new_zipfile_serialization=False``, torch < 1.6) pickles that start with
    torch's magic number. torch reads anything else as a legacy pickle and fails with errors
    that name neither the file nor the problem (``KeyError: 101`` for a text file), so anything
    else is refused here with what the file looks like. Zip checkpoints are checked in full: the
    central directory must be present (it is written last, so a truncated file has none) and
    every record must match the CRC-32 torch stored for it. Legacy files have their pickles
    walked without running them, so a file cut short inside them is reported as truncated
    rather than as a refused object; their raw tensor bytes, which carry no checksum, are left
    to torch.

    Args:
        path (str | os.PathLike): the checkpoint file.

    Raises:
        CheckpointCorruptError: naming the file and what is wrong with it.
    """
    path = os.fspath(path)
    with builtins.open(path, 'rb') as stream:
        head = stream.read(_HEAD_BYTES)
    if not head:
        raise CheckpointCorruptError(
            f'{path}: the file is empty (0 bytes); it was never written completely. Delete it '
            'and resume from an earlier checkpoint.')
    if head.startswith(ZIP_MAGIC):
        _verify_zip(path)
    elif _starts_with_legacy_magic(head):
        _verify_legacy_pickles(path)
    else:
        raise CheckpointCorruptError(f'{path}: not a PyTorch checkpoint: the file '
                                     f'{_looks_like(head)}.')


def _verify_zip(path: str) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
            _check_torch_archive(path, [record.filename for record in records])
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


def _check_torch_archive(path: str, names: List[str]) -> None:
    """Refuse a zip that ``torch.load`` would not read as a checkpoint: torch takes the folder
    of the first record as the archive's, reads ``<folder>/data.pkl``, and hands an archive
    with ``<folder>/constants.pkl`` (TorchScript) to ``torch.jit.load``, which weights-only
    loading refuses with advice to turn the protection off."""
    folder = names[0].split('/', 1)[0] if names else ''
    if f'{folder}/constants.pkl' in names:
        raise CheckpointCorruptError(
            f'{path}: a TorchScript archive (torch.jit.save), not a checkpoint: it holds a '
            'compiled program, not a state dict of weights. Load it with '
            'torch.jit.load, or save the weights with torch.save(model.state_dict(), ...).')
    if f'{folder}/data.pkl' not in names:
        shown = first_names(names)
        raise CheckpointCorruptError(
            f'{path}: a zip archive but not a PyTorch checkpoint: torch.save writes a '
            f'"<folder>/data.pkl" record, this archive holds {shown or "no records"}.')


def _starts_with_legacy_magic(head: bytes) -> bool:
    """Whether ``head`` starts with the pickle of ``torch.serialization.MAGIC_NUMBER`` that
    every legacy-format file begins with (any pickle protocol torch.save accepts). The opcodes
    are only parsed, never run."""
    import torch
    values = []
    try:
        for opcode, argument, _ in pickletools.genops(io.BytesIO(head)):
            if opcode.name not in ('PROTO', 'FRAME', 'STOP'):
                values.append(argument)
    except ValueError:  # not a pickle, or one longer than ``head``
        return False
    return values == [torch.serialization.MAGIC_NUMBER]


#: The pickles a legacy file starts with: magic number, protocol version, system information,
#: the saved object, the keys of its storages (the raw storages follow).
_LEGACY_PICKLES = 5


def _verify_legacy_pickles(path: str) -> None:
    """Walk the pickles of a legacy-format file without running them. torch's weights-only
    unpickler reads a cut-off GLOBAL as a call to a global it refuses, so a truncated file
    would be reported as one that could run code."""
    with builtins.open(path, 'rb') as stream, \
            mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
        # the map bounds every read by the file's size: a damaged length field cannot make
        # pickletools allocate its value in bytes
        try:
            for _ in range(_LEGACY_PICKLES):
                for _ in pickletools.genops(data):
                    pass
        except ValueError as error:
            raise CheckpointCorruptError(
                f'{path}: the file is truncated or damaged ({error}); it was cut short while '
                'being written or copied. Delete it and use an earlier checkpoint.') from error


def _looks_like(head: bytes) -> str:
    """What a file that is not a checkpoint looks like, from its first bytes, for the error."""
    if not head.strip(b'\x00'):
        return ('starts with zero bytes only: its space was allocated but the data never '
                'written (a power loss or a crash while saving). Use another copy of it (a '
                'training run resumes from an earlier checkpoint)')
    if head.startswith(GZIP_MAGIC):
        return 'is gzip-compressed: decompress it (gunzip) and load what it holds'
    if _is_onnx(head):
        return ('is an ONNX model (torch.onnx.export): run it with onnxruntime, or load the '
                'checkpoint it was exported from')
    text = _as_text(head)
    if text is not None:
        first = text.strip().splitlines()[0] if text.strip() else text
        return (f'is text, starting {first[:60]!r} (an error page saved by a failed download, '
                'or a file of another kind)')
    return (f'starts with bytes {head[:16].hex(" ")}, where torch.save writes a zip archive '
            "holding \"<folder>/data.pkl\" (or, before torch 1.6, the pickle of torch's magic "
            'number)')


def _is_onnx(head: bytes) -> bool:
    """An ONNX ``ModelProto`` starts with field 1 (``ir_version``, a small varint), followed by
    a length-delimited field (producer name, graph, opset imports) or a varint one."""
    return len(head) > 2 and head[0] == 0x08 and 0 < head[1] < 0x80 and head[2] & 0x07 in (0, 2)


def _as_text(head: bytes) -> Optional[str]:
    """``head`` as UTF-8 text when it is printable text (its last character may be cut)."""
    try:
        text = codecs.getincrementaldecoder('utf-8')().decode(head)
    except UnicodeDecodeError:
        return None
    return text if all(char.isprintable() or char in '\t\r\n' for char in text) else None


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
    # a global of a blocked module (os.system: posix.system) is named on a line of its own,
    # after torch's advice to load with weights_only=False, which is not repeated here
    for line in lines:
        if 'GLOBAL' in line:
            return line
    return lines[0] if lines else repr(error)


def load_verified(filename: str, map_location='cpu'):
    """Load a checkpoint as mmengine's ``_load_checkpoint`` does (local paths, URLs and
    mmengine's schemes), after checking a local file, allowing the globals of mmengine
    checkpoints for this load only, and refusing non-finite tensors.

    Args:
        filename (str): the checkpoint.
        map_location (str | callable): as ``torch.load``'s. Defaults to ``'cpu'``.

    Returns:
        dict: the loaded checkpoint.

    Raises:
        CheckpointRefusedError: the file is damaged or not a checkpoint, or torch could not
            read a local file (:class:`CheckpointCorruptError`), holds objects weights-only
            loading refuses, or holds NaN or Inf (:class:`CheckpointNotFiniteError`); the
            message names the file.
    """
    import torch
    from mmengine.runner.checkpoint import _load_checkpoint
    path = osp.expanduser(os.fspath(filename))
    local = osp.isfile(path)
    if local:
        verify_checkpoint_file(path)
    elif osp.isdir(path):
        # mmengine says a folder "can not be found"
        raise CheckpointRefusedError(f'{filename}: a directory, not a checkpoint file (a work dir '
                                     'holds epoch_N.pth files: name one of them)')
    elif osp.islink(path):
        raise CheckpointRefusedError(f'{filename}: a symbolic link that leads to no file (its '
                                     f'target {os.readlink(path)!r} is missing, or a loop)')
    try:
        with torch.serialization.safe_globals(mmengine_checkpoint_globals()):
            checkpoint = _load_checkpoint(filename, map_location=map_location)
    except pickle.UnpicklingError as error:
        raise CheckpointRefusedError(
            f'{filename}: refused by torch weights-only loading. The file holds Python objects '
            'that are not plain tensors or the values mmengine writes, so loading it could run '
            'code. Re-save it from a trusted session with torch.save(model.state_dict()). '
            f'torch said: {_unpickler_reason(error)}') from error
    except (KeyError, EOFError, RuntimeError) as error:
        # a remote file's loader (an unknown open-mmlab:// name, say) fails in its own terms
        if not local:
            raise
        if isinstance(error, RuntimeError) and not _reads_as_damaged(error):
            # not the file's fault (a map_location without its device, memory, a newer
            # torch's format): torch's own error, with the file it was loading
            error.add_note(f'while loading {filename}')
            raise
        raise _unreadable(filename, error) from error
    check_finite(checkpoint, filename)
    return checkpoint


#: what torch's RuntimeErrors say of a file cut short or damaged (its legacy reader, and its
#: zip reader on a damaged archive without CRC-32s); its other RuntimeErrors are not the file's
DAMAGED_FILE_MESSAGES = ('unexpected EOF', 'might be corrupted', 'PytorchStreamReader failed')


def _reads_as_damaged(error: RuntimeError) -> bool:
    return any(message in str(error) for message in DAMAGED_FILE_MESSAGES)


def _unreadable(filename: str, error: Exception) -> CheckpointCorruptError:
    """The error for a file that passed :func:`verify_checkpoint_file` and that torch still
    could not read (a legacy file whose tensor bytes were cut, a CRC-less damaged zip): torch's
    errors (a bare ``EOFError`` or ``KeyError: 5``) name neither the file nor the problem."""
    detail = f'{type(error).__name__}: {error}' if str(error) else type(error).__name__
    return CheckpointCorruptError(
        f'{filename}: torch could not read the file ({detail}). A file cut short or damaged '
        'after the checks above fails so: delete it and use an earlier checkpoint, or save it '
        'again.')


def _history_buffer_statistic(owner, name: str):
    """The only ``getattr`` a weights-only load may call: a HistoryBuffer statistics method.

    ``HistoryBuffer.__getstate__`` stores its ``_statistics_methods`` dict ({'min':
    HistoryBuffer.min, ...}); pickle writes each method as ``getattr(HistoryBuffer, 'min')``.
    Allow-listing the real ``builtins.getattr`` would let a crafted file walk attributes of
    anything it can reach; this resolves registered statistics methods and refuses the rest.
    The result is only stored, never called by the unpickler.
    """
    from mmengine.logging.history_buffer import HistoryBuffer
    # The four built-ins are put in the table by the first HistoryBuffer() of a process, which
    # may not have happened yet when a checkpoint is loaded.
    methods = {'min', 'max', 'current', 'mean'} | set(HistoryBuffer._statistics_methods)
    if owner is not HistoryBuffer or not isinstance(name, str) or name not in methods:
        raise TypeError(f'weights-only load refused getattr({owner!r}, {name!r}): only '
                        f'HistoryBuffer statistics methods {sorted(methods)} may be looked up')
    return getattr(HistoryBuffer, name)


def mmengine_checkpoint_globals() -> List:
    """The globals a checkpoint written by an mmengine runner contains, each with why it is safe.

    Derived with ``torch.serialization.get_unsafe_globals_in_checkpoint`` from checkpoints that
    mmengine 0.10.7 runs write under numpy 2 (``tests/engine/test_checkpoint.py`` re-derives it
    from a fresh run and fails if an entry is missing): the message hub's ``HistoryBuffer``
    objects, the numpy arrays and scalars inside them, and the statistics methods they keep a
    table of.
    """
    import numpy
    from mmengine.logging.history_buffer import HistoryBuffer
    core = getattr(numpy, '_core', None) or numpy.core
    multiarray = core.multiarray
    module_name = multiarray.__name__
    return [
        # Plain container of two numpy arrays (logged values and counts), rebuilt by __new__ +
        # __setstate__ (a dict update); no side effects.
        HistoryBuffer,
        # numpy arrays: ndarray.__setstate__ copies raw bytes into a buffer of the given dtype;
        # object arrays would need pickled Python objects, which the unpickler still refuses.
        numpy.ndarray,
        numpy.dtype,
        # _reconstruct makes an empty array of a class that must itself be allow-listed; scalar
        # builds one numpy scalar from a dtype and raw bytes.
        (multiarray._reconstruct, f'{module_name}._reconstruct'),
        (multiarray.scalar, f'{module_name}.scalar'),
        # Pickle protocol 2 names HistoryBuffer.min & co. as builtins.getattr(HistoryBuffer, ..).
        (_history_buffer_statistic, 'builtins.getattr'),
    ] + _numpy_dtype_classes()


def _numpy_dtype_classes() -> List[type]:
    """numpy 2 dtype instances are of per-type classes (``numpy.dtypes.Float64DType``) that the
    unpickler must be allowed to ``BUILD``; their state is a (byte order, sizes, flags) tuple."""
    import numpy
    dtypes = getattr(numpy, 'dtypes', None)
    if dtypes is None:
        return []
    return [value for value in vars(dtypes).values()
            if isinstance(value, type) and issubclass(value, numpy.dtype)]


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


#: the backbones whose config keys ``input_encoding`` / ``diff_gain`` are their hyperframe
#: stem's (their absence then means the stem's defaults)
HYPERFRAME_BACKBONES = ('HyperResNet', 'HyperMobileNetV2', 'HyperMobileNetV3', 'InflatedBackbone')


def _keyword(call, name: str):
    """The value node of keyword ``name`` of a ``dict(...)`` call node, or None."""
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            if keyword.arg == name:
                return keyword.value
    return None


def trained_input_basis(checkpoint) -> Optional[Dict[str, object]]:
    """The ``input_encoding`` and ``diff_gain`` the hyperframe backbone of a checkpoint was
    trained with, as its config gives them (a key it leaves out is absent: the stem's default),
    read from the config mmengine keeps in ``meta['cfg']``, parsed as Python syntax and never
    run (a checkpoint's text is not code to execute); None when the checkpoint has no such
    config or its ``model.backbone`` is not a hyperframe backbone's."""
    meta = checkpoint.get('meta') if isinstance(checkpoint, dict) else None
    text = meta.get('cfg') if isinstance(meta, dict) else None
    if not isinstance(text, str):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and
                                                target.id == 'model' for target in node.targets):
            backbone = _keyword(node.value, 'backbone')
            try:
                if ast.literal_eval(_keyword(backbone, 'type')) not in HYPERFRAME_BACKBONES:
                    return None
                return {name: ast.literal_eval(value) for name in ('input_encoding', 'diff_gain')
                        if (value := _keyword(backbone, name)) is not None}
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def check_input_basis(model: nn.Module, checkpoint, filename: str) -> None:
    """Refuse a hyperframe checkpoint trained on another input encoding than ``model``'s: no
    weight's shape records it, so it loads, strictly too, and its first conv then reads inputs
    in a basis it was not trained on. A 2D checkpoint, one without its config, or a model with
    no single encoding are not checked. The model's hyperframe stems are found by what they
    hold (``input_encoding``, ``diff_gain``), and a key the config leaves out is the stem's
    default (its ``__init__``'s).

    Raises:
        ValueError: naming ``filename``, the encoding it was trained with and the model's.
    """
    trained = trained_input_basis(checkpoint)
    stems = [module for module in model.modules()
             if hasattr(module, 'input_encoding') and hasattr(module, 'diff_gain')]
    bases = {(stem.input_encoding, stem.diff_gain) for stem in stems}
    if trained is None or len(bases) != 1:
        return
    (encoding, gain), = bases
    defaults = inspect.signature(type(stems[0]).__init__).parameters
    trained_encoding = str(trained.get('input_encoding', defaults['input_encoding'].default))
    trained_gain = float(trained.get('diff_gain', defaults['diff_gain'].default))
    if trained_encoding != encoding or (encoding != 'frames' and trained_gain != gain):
        raise ValueError(
            f'{filename}: trained with input_encoding={trained_encoding!r}, '
            f'diff_gain={trained_gain:g} (the config it keeps), and the model has '
            f'input_encoding={encoding!r}, diff_gain={gain:g}: its first conv would read inputs '
            'in another basis than it learnt. Build the backbone with the checkpoint\'s '
            'input_encoding and diff_gain.')
