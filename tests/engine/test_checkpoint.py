"""Crash-safe checkpoint writes, damaged checkpoints refused by name, resume after a kill: the
parts a config names (AtomicLocalBackend, SafeCheckpointHook, HyperframeRunner's loads)."""
import copy
import gzip
import io
import multiprocessing
import os
import pickle
import pickletools
import random
import re
import signal
import stat
import time
import zipfile
from pathlib import Path

import pytest
import torch
from mmengine.fileio import get_file_backend

from hyperframes_mm.engine import checkpoint
from hyperframes_mm.engine.checkpoint import AtomicLocalBackend
from hyperframes_mm.engine.runner import latest_intact_checkpoint


def test_backend_is_chosen_by_backend_args_only(tmp_path):
    """Registered under its own name: the stock local backend is what it was."""
    chosen = get_file_backend(str(tmp_path), backend_args=dict(backend='atomic_local'))
    assert isinstance(chosen, AtomicLocalBackend)
    assert type(get_file_backend(str(tmp_path))).__name__ == 'LocalBackend'


def test_atomic_write_replaces_content_with_the_umask_mode(tmp_path):
    target = tmp_path / 'sub' / 'epoch_1.pth'
    checkpoint.atomic_write_bytes(b'old', target)
    checkpoint.atomic_write_bytes(b'new content', target)
    assert target.read_bytes() == b'new content'
    assert os.listdir(target.parent) == ['epoch_1.pth']
    plain = tmp_path / 'plain'
    plain.write_bytes(b'')
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / 'epoch_1.pth'
    target.write_bytes(b'complete')
    with pytest.raises(TypeError):
        checkpoint.atomic_write_bytes('not bytes', target)
    assert target.read_bytes() == b'complete'
    assert os.listdir(tmp_path) == ['epoch_1.pth']


def test_atomic_backend_put_is_atomic_and_leaves_devices_alone(tmp_path):
    backend = AtomicLocalBackend()
    backend.put(b'abc', tmp_path / 'x.pth')
    assert (tmp_path / 'x.pth').read_bytes() == b'abc'
    backend.put(b'discarded', os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def _rewrite_forever(size: int, target: str) -> None:
    backend = AtomicLocalBackend()
    for i in range(1, 1000):
        backend.put(bytes([i % 256]) * size, target)


def killed_mid_save(target: Path, size: int) -> int:
    """Kill a process that keeps rewriting ``target`` with ``size`` bytes while a temporary is
    being written; its process number."""
    # A forked child shares this process's imports without importing them again.
    writer = multiprocessing.get_context('fork').Process(target=_rewrite_forever,
                                                         args=(size, str(target)))
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while not list(target.parent.glob(f'.{target.name}.*.tmp')):
            assert writer.is_alive() and time.monotonic() < deadline, 'writer never wrote'
            time.sleep(0.001)
        writer.kill()
    finally:
        writer.join()
    assert writer.exitcode == -signal.SIGKILL
    return writer.pid


def test_sigkill_during_save_never_leaves_a_partial_file(tmp_path):
    """Kill a process that keeps rewriting a 64 MiB file while a temporary is being written."""
    size = 64 << 20
    target = tmp_path / 'epoch_1.pth'
    target.write_bytes(bytes([0]) * size)
    killed_mid_save(target, size)
    data = target.read_bytes()
    assert len(data) == size and data.count(data[:1]) == size  # one whole payload


def test_last_checkpoint_is_written_atomically(tmp_path):
    target = tmp_path / 'last_checkpoint'
    checkpoint.write_text_atomically(str(tmp_path / 'epoch_1.pth'), target)
    assert target.read_text() == str(tmp_path / 'epoch_1.pth')
    checkpoint.write_text_atomically(str(tmp_path / 'epoch_2.pth'), target)
    assert target.read_text() == str(tmp_path / 'epoch_2.pth')
    assert sorted(os.listdir(tmp_path)) == ['last_checkpoint']


def _small_checkpoint(path: Path) -> Path:
    torch.save({'state_dict': {'w': torch.arange(4096, dtype=torch.float32)}, 'meta': {}}, path)
    return path


def _flip_byte_in_record(path: Path, record_suffix: str) -> str:
    with zipfile.ZipFile(path) as archive:
        record = next(info for info in archive.infolist()
                      if info.filename.endswith(record_suffix))
        name = record.filename
    data = bytearray(path.read_bytes())
    # The record's bytes start after its 30-byte local header, name and extra field.
    name_length = int.from_bytes(data[record.header_offset + 26:record.header_offset + 28],
                                 'little')
    extra_length = int.from_bytes(data[record.header_offset + 28:record.header_offset + 30],
                                  'little')
    start = record.header_offset + 30 + name_length + extra_length
    data[start + record.file_size // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return name


def test_intact_checkpoint_passes(tmp_path):
    path = _small_checkpoint(tmp_path / 'ok.pth')
    checkpoint.verify_checkpoint_file(path)
    loaded = checkpoint.load_verified(str(path), map_location='cpu')
    assert torch.equal(loaded['state_dict']['w'], torch.arange(4096, dtype=torch.float32))


def test_changed_tensor_bytes_are_refused_by_name(tmp_path):
    path = _small_checkpoint(tmp_path / 'flipped.pth')
    record = _flip_byte_in_record(path, 'data/0')
    # torch itself does not notice: the changed weights would load silently.
    assert not torch.equal(torch.load(path)['state_dict']['w'],
                           torch.arange(4096, dtype=torch.float32))
    with pytest.raises(checkpoint.CheckpointCorruptError,
                       match=rf'flipped\.pth: record {record!r} does not match its CRC-32'):
        checkpoint.load_verified(str(path), map_location='cpu')


def test_changed_pickle_bytes_are_refused_by_name(tmp_path):
    path = _small_checkpoint(tmp_path / 'pickle.pth')
    _flip_byte_in_record(path, 'data.pkl')
    with pytest.raises(checkpoint.CheckpointCorruptError, match=r'pickle\.pth: record'):
        checkpoint.load_verified(str(path), map_location='cpu')


@pytest.mark.parametrize('keep', [0.5, 0.99])
def test_truncated_checkpoint_is_refused_by_name(tmp_path, keep):
    path = _small_checkpoint(tmp_path / 'cut.pth')
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(checkpoint.CheckpointCorruptError, match=r'cut\.pth: the file is truncated'):
        checkpoint.load_verified(str(path), map_location='cpu')
    # The same error is a CheckpointRefusedError, the one type callers catch for any refusal.
    with pytest.raises(checkpoint.CheckpointRefusedError):
        checkpoint.verify_checkpoint_file(path)


def test_empty_checkpoint_is_refused_by_name(tmp_path):
    path = tmp_path / 'empty.pth'
    path.write_bytes(b'')
    with pytest.raises(checkpoint.CheckpointCorruptError, match=r'empty\.pth: the file is empty'):
        checkpoint.load_verified(str(path), map_location='cpu')


def test_legacy_and_crc_less_checkpoints_are_left_to_torch(tmp_path):
    legacy = tmp_path / 'legacy.pth'
    torch.save({'w': torch.ones(3)}, legacy, _use_new_zipfile_serialization=False)
    checkpoint.verify_checkpoint_file(legacy)
    torch.serialization.set_crc32_options(False)
    try:
        crc_less = _small_checkpoint(tmp_path / 'nocrc.pth')
    finally:
        torch.serialization.set_crc32_options(True)
    checkpoint.verify_checkpoint_file(crc_less)
    assert torch.equal(checkpoint.load_verified(str(crc_less))['state_dict']['w'],
                       torch.arange(4096, dtype=torch.float32))


def _onnx_model() -> bytes:
    onnx = pytest.importorskip('onnx')  # an optional dependency (requirements/optional.txt)
    from onnx import helper
    graph = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'relu',
                              [helper.make_tensor_value_info('x', onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info('y', onnx.TensorProto.FLOAT, [1])])
    return helper.make_model(graph, producer_name='pytorch').SerializeToString()


def _gzipped_checkpoint() -> bytes:
    buffer = io.BytesIO()
    torch.save({'w': torch.ones(3)}, buffer)
    return gzip.compress(buffer.getvalue())


RANDOM_BYTES = bytes(random.Random(0).randrange(256) for _ in range(4096))


@pytest.mark.parametrize('make, looks_like', [
    (lambda: b'hello\n', "is text, starting 'hello' \\(an error page saved by a failed download"),
    (lambda: b'<!DOCTYPE html>\n<html>404</html>', "is text, starting '<!DOCTYPE html>'"),
    (lambda: bytes(4096), r'starts with zero bytes only: its space was allocated but the data '
                          r'never written \(a power loss or a crash while saving\)'),
    (_gzipped_checkpoint, 'is gzip-compressed: decompress it'),
    (_onnx_model, r'is an ONNX model \(torch\.onnx\.export\)'),
    (lambda: RANDOM_BYTES, f'starts with bytes {RANDOM_BYTES[:16].hex(" ")}, where torch.save '
                           'writes a zip archive'),
], ids=['text', 'html', 'zeros', 'gzip', 'onnx', 'random'])
def test_a_file_that_is_not_a_checkpoint_is_refused_by_name_and_kind(tmp_path, make, looks_like):
    path = tmp_path / 'model.pth'
    content = make()
    path.write_bytes(content)
    with pytest.raises(checkpoint.CheckpointCorruptError,
                       match=rf'^{re.escape(str(path))}: not a PyTorch checkpoint: the file '
                             f'{looks_like}'):
        checkpoint.load_verified(str(path))
    assert path.read_bytes() == content  # refused, not deleted


def _torchscript_archive(path):
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))


def _other_zip(path):
    with zipfile.ZipFile(path, 'w') as archive:
        for name in ('data.pkl', 'weights/w.npy', 'README', 'LICENSE'):
            archive.writestr(name, b'x')


@pytest.mark.parametrize('make, message', [
    # no advice to drop weights-only loading, as torch gives
    (_torchscript_archive,
     'a TorchScript archive (torch.jit.save), not a checkpoint: it holds a compiled program, not '
     'a state dict of weights. Load it with torch.jit.load, or save the weights with '
     'torch.save(model.state_dict(), ...).'),
    (_other_zip,
     'a zip archive but not a PyTorch checkpoint: torch.save writes a "<folder>/data.pkl" '
     'record, this archive holds data.pkl, weights/w.npy, README, ... (4 in all).'),
], ids=['torchscript', 'zip'])
def test_an_archive_that_is_not_a_checkpoint_is_refused_by_name(tmp_path, make, message):
    path = tmp_path / 'model.pth'
    make(path)
    with pytest.raises(checkpoint.CheckpointCorruptError) as refused:
        checkpoint.load_verified(str(path))
    assert str(refused.value) == f'{path}: {message}'


def test_a_folder_or_a_dangling_link_is_named_as_such(tmp_path):
    """mmengine said each 'can not be found', of a path that is there."""
    folder = tmp_path / 'work_dir'
    folder.mkdir()
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        checkpoint.load_verified(str(folder))
    assert str(refused.value) == (f'{folder}: a directory, not a checkpoint file (a work dir '
                                  'holds epoch_N.pth files: name one of them)')
    loop = tmp_path / 'loop.pth'
    loop.symlink_to(loop)
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        checkpoint.load_verified(str(loop))
    assert str(refused.value) == (f'{loop}: a symbolic link that leads to no file (its target '
                                  f'{str(loop)!r} is missing, or a loop)')
    with pytest.raises(FileNotFoundError):  # a path that is not there stays mmengine's error
        checkpoint.load_verified(str(tmp_path / 'gone.pth'))


def test_init_recognizer_says_the_file_is_not_a_checkpoint_not_that_it_does_not_fit(tmp_path):
    from hyperframes_mm.apis import init_recognizer
    from ..conftest import TINY_CONFIG
    path = tmp_path / 'bundle.pth'
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('weights.bin', b'x')
    with pytest.raises(checkpoint.CheckpointCorruptError,
                       match=f'^{re.escape(str(path))}: a zip archive but not a PyTorch '
                             'checkpoint'):
        init_recognizer(str(TINY_CONFIG), str(path), device='cpu')


def test_pretrained_backbone_names_a_file_that_is_not_a_checkpoint(tmp_path):
    from mmaction.registry import MODELS
    path = tmp_path / 'resnet18.pth'
    path.write_text('<html>moved</html>')
    model = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=2, pretrained=str(path)))
    with pytest.raises(checkpoint.CheckpointCorruptError,
                       match=f'^{re.escape(str(path))}: not a PyTorch checkpoint: the file is '
                             'text'):
        model.init_weights()


def _legacy_checkpoint(path: Path) -> bytes:
    torch.save({'w': torch.arange(64, dtype=torch.float32)}, path,
               _use_new_zipfile_serialization=False)
    return path.read_bytes()


def _end_of_legacy_pickles(data: bytes) -> int:
    """Where a legacy file's raw storages start: after its five pickles."""
    stream = io.BytesIO(data)
    for _ in range(5):
        for _ in pickletools.genops(stream):
            pass
    return stream.tell()


def test_legacy_checkpoint_cut_inside_its_pickles_is_reported_as_truncated(tmp_path):
    path = tmp_path / 'legacy.pth'
    data = _legacy_checkpoint(path)
    # cut inside the name of the GLOBAL torch's tensors are rebuilt with
    path.write_bytes(data[:data.index(b'_rebuild_tensor') + 5])
    # torch's weights-only unpickler reads the cut name as a global it refuses
    with pytest.raises(pickle.UnpicklingError,
                       match='Unsupported global: GLOBAL torch._utils._reb '):
        torch.load(path)
    with pytest.raises(checkpoint.CheckpointCorruptError) as refused:
        checkpoint.load_verified(str(path))
    assert str(refused.value) == (
        f'{path}: the file is truncated or damaged (no newline found when trying to read '
        'stringnl); it was cut short while being written or copied. Delete it and use an '
        'earlier checkpoint.')


@pytest.mark.parametrize('cut', [0, 4, 100])
def test_legacy_checkpoint_cut_inside_its_tensors_is_named(tmp_path, cut):
    path = tmp_path / 'legacy.pth'
    data = _legacy_checkpoint(path)
    path.write_bytes(data[:_end_of_legacy_pickles(data) + cut])
    checkpoint.verify_checkpoint_file(path)  # the raw storages carry no checksum
    with pytest.raises(checkpoint.CheckpointCorruptError,
                       match=rf'^{re.escape(str(path))}: torch could not read the file '
                             r'\(RuntimeError: unexpected EOF, expected \d+ more bytes\. The file '
                             r'might be corrupted\.\)\. A file cut short or damaged after '
                             r'the checks above fails so'):
        checkpoint.load_verified(str(path))


def test_torch_key_error_on_a_well_formed_legacy_file_is_named(tmp_path):
    """Pickles that parse but read a memo slot never written: torch's bare ``KeyError: 5``."""
    magic = torch.serialization.MAGIC_NUMBER
    path = tmp_path / 'memo.pth'
    path.write_bytes(pickle.dumps(magic, protocol=2) + pickle.dumps(1001, protocol=2)
                     + pickle.dumps({'little_endian': True}, protocol=2)
                     + b'\x80\x02h\x05.' + pickle.dumps([], protocol=2))
    with pytest.raises(checkpoint.CheckpointCorruptError) as refused:
        checkpoint.load_verified(str(path))
    assert str(refused.value) == (
        f'{path}: torch could not read the file (KeyError: 5). A file cut short or damaged '
        'after the checks above fails so: delete it and use an earlier checkpoint, or save it '
        'again.')


def test_resume_skips_a_zero_filled_checkpoint(tmp_path):
    """A power loss can leave a checkpoint's blocks allocated and zero: same size, no data."""
    first = _small_checkpoint(tmp_path / 'epoch_1.pth')
    second = tmp_path / 'epoch_2.pth'
    second.write_bytes(bytes(first.stat().st_size))
    os.utime(first, (1, 1))
    (tmp_path / 'last_checkpoint').write_text(str(second))
    warnings = []
    assert latest_intact_checkpoint(str(tmp_path), warn=warnings.append) == str(first)
    assert warnings == [
        f'last_checkpoint in {tmp_path} names a damaged file ({second}: not a PyTorch '
        'checkpoint: the file starts with zero bytes only: its space was allocated but the data '
        'never written (a power loss or a crash while saving). Use another copy of it (a '
        'training run resumes from an earlier checkpoint).) (a run killed while saving); '
        'resuming from the newest intact '
        f'checkpoint {first} instead.']
    assert checkpoint.newest_intact_checkpoint(tmp_path) == str(first)


def test_resume_falls_back_to_newest_intact_checkpoint(tmp_path):
    def find(work_dir):
        return latest_intact_checkpoint(work_dir, warn=lambda message: None)
    assert find(str(tmp_path)) is None  # nothing saved yet: train from scratch
    first = _small_checkpoint(tmp_path / 'epoch_1.pth')
    second = _small_checkpoint(tmp_path / 'epoch_2.pth')
    os.utime(first, (1, 1))
    (tmp_path / 'last_checkpoint').write_text(str(first))
    assert find(str(tmp_path)) == str(first)  # an existing file named: used as upstream does
    (tmp_path / 'last_checkpoint').write_text(str(tmp_path / 'epoch_3.pth'))
    assert find(str(tmp_path)) == str(second)
    (tmp_path / 'last_checkpoint').write_text('')
    assert find(str(tmp_path)) == str(second)
    second.write_bytes(second.read_bytes()[:100])
    assert find(str(tmp_path)) == str(first)
    (tmp_path / 'last_checkpoint').unlink()
    assert find(str(tmp_path)) == str(first)
    (tmp_path / 'last_checkpoint').write_text(str(tmp_path))  # a folder: IsADirectoryError
    warnings = []
    assert latest_intact_checkpoint(str(tmp_path), warn=warnings.append) == str(first)
    assert warnings == [f"last_checkpoint in {tmp_path} names '{tmp_path}', which is a "
                        'directory, not a checkpoint; resuming '
                        f'from the newest intact checkpoint {first} instead.']
    for saved in tmp_path.glob('*.pth'):
        saved.unlink()
    with pytest.raises(checkpoint.CheckpointRefusedError,
                       match=f"^--resume: last_checkpoint in {tmp_path} names '{tmp_path}', "
                       'which is a directory, not a checkpoint, and the work dir holds no other '
                       'checkpoint'):
        find(str(tmp_path))


def test_resume_in_a_copied_work_dir_reads_the_copy(tmp_path):
    """last_checkpoint holds the absolute path of the work dir it was written in."""
    original, copy = tmp_path / 'run', tmp_path / 'copy'
    original.mkdir()
    copy.mkdir()
    for folder, epochs in ((original, 3), (copy, 2)):
        for epoch in range(1, epochs + 1):
            _small_checkpoint(folder / f'epoch_{epoch}.pth')
    # the copy was taken at epoch 2; the original trained on to epoch 3 since
    (copy / 'last_checkpoint').write_text(str(original / 'epoch_2.pth'))
    (original / 'last_checkpoint').write_text(str(original / 'epoch_3.pth'))
    warnings = []
    assert latest_intact_checkpoint(str(copy), warn=warnings.append) == str(copy / 'epoch_2.pth')
    assert warnings == [
        f'last_checkpoint in {copy} names {original / "epoch_2.pth"}, outside this work dir (it '
        f'was copied or moved from there); resuming from this work dir\'s '
        f'{copy / "epoch_2.pth"} instead.']
    # the original, moved away: the copy's file, with the same word
    (original / 'epoch_2.pth').unlink()
    warnings.clear()
    assert latest_intact_checkpoint(str(copy), warn=warnings.append) == str(copy / 'epoch_2.pth')
    assert len(warnings) == 1 and 'outside this work dir' in warnings[0]
    # checkpoints saved to another folder (CheckpointHook's out_dir): the name is followed
    logs = tmp_path / 'logs'
    logs.mkdir()
    (logs / 'last_checkpoint').write_text(str(copy / 'epoch_1.pth'))
    assert latest_intact_checkpoint(str(logs), warn=warnings.append) == str(copy / 'epoch_1.pth')
    # a relative work dir naming its own files is not a copy
    warnings.clear()
    (copy / 'last_checkpoint').write_text(str(copy / 'epoch_2.pth'))
    relative = os.path.relpath(copy)
    assert latest_intact_checkpoint(relative, warn=warnings.append) == str(copy / 'epoch_2.pth')
    assert warnings == []


def test_resume_refuses_a_work_dir_whose_checkpoints_are_all_damaged(tmp_path):
    """Training again from scratch would write its epochs over them."""
    first = _small_checkpoint(tmp_path / 'epoch_1.pth')
    second = _small_checkpoint(tmp_path / 'epoch_2.pth')
    first.write_bytes(first.read_bytes()[:500])
    second.write_bytes(b'')
    (tmp_path / 'last_checkpoint').write_text(str(second))
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        latest_intact_checkpoint(str(tmp_path), warn=lambda message: None)
    assert str(refused.value).startswith(
        f'--resume: {tmp_path} holds checkpoints of an earlier run, none of them intact '
        f'(last_checkpoint names a damaged file ({second}: ')
    assert str(refused.value).endswith(
        'damaged: epoch_1.pth, epoch_2.pth), so there is nothing to resume from. Move them '
        'aside, or repair them, before training again in this work dir.')
    (tmp_path / 'last_checkpoint').unlink()
    with pytest.raises(checkpoint.CheckpointRefusedError,
                       match=r'none of them intact \(last_checkpoint is missing or empty; '
                             r'damaged: epoch_1\.pth, epoch_2\.pth\)'):
        latest_intact_checkpoint(str(tmp_path), warn=lambda message: None)
    # only last_checkpoint is left, naming a file that is gone: nothing to move aside
    first.unlink()
    second.unlink()
    (tmp_path / 'last_checkpoint').write_text(str(second))
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        latest_intact_checkpoint(str(tmp_path), warn=lambda message: None)
    assert str(refused.value) == (
        f"--resume: last_checkpoint in {tmp_path} names '{second}', which does not exist, and "
        'the work dir holds no other checkpoint, so there is nothing to resume from. Restore '
        f'that file, or delete {tmp_path / "last_checkpoint"} to train from the start.')


# ------------------------------------------------------------------- diverged (NaN/Inf) weights
@pytest.mark.parametrize('bad', [float('nan'), float('inf'), float('-inf')])
def test_checkpoint_with_non_finite_weights_is_refused_by_name(tmp_path, bad):
    weights = torch.zeros(2, 3)
    weights[1, 2] = bad
    path = tmp_path / 'diverged.pth'
    torch.save({'state_dict': {'backbone.conv1.weight': weights,
                               'backbone.bn.num_batches_tracked': torch.tensor(3)},
                'optimizer': {'state': {0: {'exp_avg': torch.ones(2)}}}}, path)
    with pytest.raises(checkpoint.CheckpointNotFiniteError,
                       match=r'diverged\.pth: 1 tensor\(s\) hold NaN or Inf '
                             r'\(state_dict\.backbone\.conv1\.weight\)'):
        checkpoint.load_verified(str(path), map_location='cpu')
    # the one type callers catch for any refusal
    with pytest.raises(checkpoint.CheckpointRefusedError):
        checkpoint.load_verified(str(path), map_location='cpu')


def test_non_finite_search_covers_nested_state_and_lists_keys():
    state = {'state_dict': {'a': torch.ones(2), 'b': torch.tensor([1.0, float('nan')])},
             'optimizer': {'state': {0: {'exp_avg': torch.tensor([float('inf')])}},
                           'param_groups': [{'lr': 0.1}]},
             'ints': torch.arange(3), 'history': [torch.tensor(float('nan')), 1.5]}
    assert checkpoint.non_finite_tensors(state) == [
        'state_dict.b', 'optimizer.state.0.exp_avg', 'history.0']
    assert checkpoint.non_finite_tensors({'w': torch.ones(3, dtype=torch.float16)}) == []
    many = {f'w{i}': torch.tensor([float('nan')]) for i in range(7)}
    with pytest.raises(checkpoint.CheckpointNotFiniteError,
                       match=r'm\.pth: 7 tensor\(s\) .*\(w0, w1, w2, w3, w4 and 2 more\)'):
        checkpoint.check_finite(many, 'm.pth')


def test_pretrained_backbone_refuses_non_finite_checkpoint(tmp_path):
    from mmaction.registry import MODELS
    backbone = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=1))
    state = backbone.state_dict()
    state['layer1.0.conv1.conv.weight'][0, 0, 0, 0] = float('nan')
    path = tmp_path / 'resnet18_nan.pth'
    torch.save(state, path)
    model = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=2, pretrained=str(path)))
    with pytest.raises(checkpoint.CheckpointNotFiniteError,
                       match=r'resnet18_nan\.pth: 1 tensor\(s\) .*\(layer1\.0\.conv1\.conv\.weight\)'):
        model.init_weights()


def test_evaluation_refuses_a_checkpoint_that_is_not_the_models(tmp_path, tiny_dataset,
                                                                monkeypatch):
    """tools/test.py's load is strict: a file missing the head (or of another network) is
    refused by name rather than scored with the missing weights at their initial values;
    loading it to fine-tune (load_from, then train) stays mmengine's non-strict load."""
    from mmengine.config import Config
    from mmengine.registry import RUNNERS
    from ..conftest import TINY_CONFIG
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.work_dir = str(tmp_path / 'work')
    runner = RUNNERS.build(cfg)
    headless = {key: value for key, value in runner.model.state_dict().items()
                if not key.startswith('cls_head.')}
    path = tmp_path / 'headless.pth'
    torch.save(dict(state_dict=headless), path)
    runner.load_checkpoint(str(path))  # fine-tuning: the head stays as initialised
    runner = RUNNERS.build(cfg)
    runner._load_from = str(path)
    with pytest.raises(checkpoint.CheckpointMismatchError,
                       match=r'headless\.pth does not fit the model of the config: .*\n+'
                             r'missing keys in source state_dict: cls_head\.fc_cls\.weight, '
                             r'cls_head\.fc_cls\.bias$'):
        runner.test()
    assert not runner._evaluating  # a later train() loads non-strictly again


def test_mismatch_error_shortens_key_lists_and_counts_them():
    missing = ', '.join(f'm{i}' for i in range(12))
    sizes = [f'size mismatch for s{i}: copying a param with shape torch.Size([1, 2]) from '
             'checkpoint, the shape in current model is torch.Size([3])' for i in range(7)]
    error = RuntimeError('\n'.join(['The model and loaded state dict do not match exactly',
                                    '', *sizes, 'unexpected key in source state_dict: u0, u1',
                                    f'missing keys in source state_dict: {missing}']))
    message = str(checkpoint.mismatch_error('net.pth', error))
    assert message.splitlines() == [
        'net.pth does not fit the model of the config: The model and loaded state dict do not '
        'match exactly', '', *sizes[:5], 'unexpected key in source state_dict: u0, u1',
        'missing keys in source state_dict: m0, m1, m2, m3, m4, ... (12 in all)',
        '... (7 size mismatches in all)']


# ------------------------------------------------------------- resume / load_from: the right file
@pytest.fixture
def tiny_runner(tmp_path, tiny_dataset, monkeypatch):
    """A factory of HyperframeRunners of the tiny config (SGD with momentum), not yet trained,
    with top-level settings replaced by ``options``."""
    from mmengine.config import Config
    from mmengine.registry import RUNNERS
    from ..conftest import TINY_CONFIG
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))

    def build(name='work', **options):
        cfg = Config.fromfile(str(TINY_CONFIG))  # a Config keeps its file's name, the copy's
        for key, value in dict(options, work_dir=str(tmp_path / name),
                               experiment_name=name).items():
            cfg[key] = value
        return RUNNERS.build(cfg)
    return build


def test_only_a_training_writes_the_work_dirs_config_copy(tiny_runner, tmp_path):
    """mmengine wrote the copy while building the runner: tools/test.py in a work dir, or a
    run that its checkpoint then refused, replaced the config its checkpoints were trained
    with, the one troubleshooting.md sends the user back to."""
    from ..conftest import TINY_CONFIG
    trained = tiny_runner('source')
    weights, other = tmp_path / 'epoch_1.pth', tmp_path / 'other.pth'
    torch.save(_training_state(trained), weights)
    state = _training_state(trained)
    state['state_dict']['cls_head.fc_cls.weight'] = torch.zeros(5, 512)
    torch.save(state, other)
    kept_copy = tmp_path / 'work' / TINY_CONFIG.name
    kept_copy.parent.mkdir()
    kept_copy.write_text('# the config the checkpoints of this work dir were trained with\n')
    kept = kept_copy.read_text()
    refused = tiny_runner(load_from=str(other))
    with pytest.raises(checkpoint.CheckpointMismatchError):
        refused.test()
    assert kept_copy.read_text() == kept
    tested = tiny_runner(load_from=str(weights))
    tested.test()
    assert kept_copy.read_text() == kept
    assert (Path(tested.log_dir) / TINY_CONFIG.name).read_text() == tested.cfg.pretty_text
    resumed = tiny_runner(load_from=str(other), resume=True)
    with pytest.raises(checkpoint.CheckpointMismatchError):
        resumed.load_or_resume()
    assert kept_copy.read_text() == kept
    training = tiny_runner(load_from=str(weights))
    training.load_or_resume()
    assert kept_copy.read_text() == training.cfg.pretty_text


def test_a_timm_backbones_pretrained_file_is_checked_before_timm_reads_it(tmp_path,
                                                                            monkeypatch):
    """timm loads pretrained_cfg_overlay.file while it builds the backbone: a missing file
    stopped tools/train.py with a FileNotFoundError naming no file, and tools/test.py too,
    whose checkpoint holds every weight that file would give."""
    from mmengine.config import Config
    from mmengine.registry import RUNNERS
    from ..conftest import REPO
    missing = tmp_path / 'efficientnet_lite0_timm.pth'
    monkeypatch.setenv('HF_IMAGENET_EFFICIENTNET_LITE0', str(missing))
    cfg = Config.fromfile(str(REPO / 'configs/hyperframes/utd_mhad_imagenet/'
                              'tsn_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_'
                              'utd-mhad-depth.py'))
    cfg.work_dir = str(tmp_path / 'work')
    with pytest.raises(FileNotFoundError) as refused:
        RUNNERS.build(copy.deepcopy(cfg))
    assert str(refused.value).startswith(
        f'model.backbone (timm.tf_efficientnet_lite0): its pretrained file {missing} '
        '(pretrained_cfg_overlay.file) does not exist, and timm reads it while building the '
        'backbone.')
    missing.write_text('not weights')
    with pytest.raises(checkpoint.CheckpointCorruptError, match=f'^{missing}: not a PyTorch'):
        RUNNERS.build(copy.deepcopy(cfg))
    missing.unlink()
    # timm reads safetensors too, which are no torch archive: not refused as damaged
    import safetensors.torch
    from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
        build_timm_efficientnet_lite)
    other_format = tmp_path / 'efficientnet_lite0.safetensors'
    safetensors.torch.save_file(build_timm_efficientnet_lite().state_dict(), str(other_format))
    read = copy.deepcopy(cfg)
    read.model.backbone.pretrained_cfg_overlay.file = str(other_format)
    assert type(RUNNERS.build(read).model.backbone).__name__ == 'EfficientNet'
    tested = copy.deepcopy(cfg)
    tested.load_from = str(tmp_path / 'epoch_30.pth')  # tools/test.py's checkpoint
    runner = RUNNERS.build(tested)
    assert type(runner.model.backbone).__name__ == 'EfficientNet'
    # --resume with no checkpoint in the work dir trains from the file: still refused; with
    # one, the resumed weights replace the file's
    resumed = copy.deepcopy(cfg)
    resumed.resume = True
    with pytest.raises(FileNotFoundError, match='its pretrained file'):
        RUNNERS.build(copy.deepcopy(resumed))
    # every checkpoint there damaged: refused by name, not sent to train from scratch over them
    (tmp_path / 'work' / 'epoch_2.pth').write_bytes(b'not a checkpoint')
    with pytest.raises(checkpoint.CheckpointRefusedError, match='epoch_2.pth'):
        RUNNERS.build(copy.deepcopy(resumed))
    torch.save(dict(state_dict={}), tmp_path / 'work' / 'epoch_3.pth')
    assert type(RUNNERS.build(resumed).model.backbone).__name__ == 'EfficientNet'


def _training_state(runner, optimizer=None) -> dict:
    """What CheckpointHook saves after epoch 1 of 4 iterations, for ``runner``'s model."""
    if optimizer is None:
        optimizer = runner.build_optim_wrapper(runner.optim_wrapper).optimizer
    return dict(meta=dict(epoch=1, iter=4), message_hub=runner.message_hub.state_dict(),
                state_dict=runner.model.state_dict(), optimizer=optimizer.state_dict())


def test_resume_restores_a_training_checkpoint_of_the_model(tiny_runner, tmp_path):
    source = tiny_runner('source')
    path = tmp_path / 'epoch_1.pth'
    torch.save(_training_state(source), path)
    runner = tiny_runner()
    runner.resume(str(path))
    assert (runner.epoch, runner.iter) == (1, 4)
    assert torch.equal(runner.model.cls_head.fc_cls.weight, source.model.cls_head.fc_cls.weight)
    assert not runner._resuming


def test_resume_at_the_end_of_training_says_it_trains_nothing(tiny_runner, tmp_path,
                                                              monkeypatch):
    """mmengine's loop returned at once, exit 0, with no epoch, checkpoint or word."""
    source = tiny_runner('source')
    path = tmp_path / 'epoch_1.pth'
    torch.save(_training_state(source), path)
    runner = tiny_runner()
    warned = []
    monkeypatch.setattr(runner.logger, 'warning', warned.append)
    runner.resume(str(path))
    assert runner.train_loop.max_epochs == 2
    assert not [line for line in warned if 'trains nothing' in line]
    state = _training_state(source)
    state['meta'].update(epoch=2, iter=8)
    torch.save(state, path)
    runner = tiny_runner('again')
    monkeypatch.setattr(runner.logger, 'warning', warned.append)
    runner.resume(str(path))
    assert [line for line in warned if 'trains nothing' in line] == [
        f'{path} was saved at epoch 2, and train_cfg.max_epochs is 2: this run trains '
        'nothing. Raise it (and the schedulers\' end) to train on.']


@pytest.mark.parametrize('drop, missing', [('bare', 'meta'), ('epoch', 'meta.epoch'),
                                           ('message_hub', 'message_hub')])
def test_resume_names_a_file_that_is_not_a_training_checkpoint(tiny_runner, tmp_path, drop,
                                                               missing):
    runner = tiny_runner()
    state = _training_state(runner)
    if drop == 'bare':
        state = state['state_dict']
    elif drop == 'epoch':
        state['meta'] = {}
    else:
        del state[drop]
    path = tmp_path / 'weights.pth'
    torch.save(state, path)
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        runner.resume(str(path))
    assert str(refused.value) == (
        f'{path}: not a training checkpoint: it has no {missing!r}, which a checkpoint saved by '
        'a training run (CheckpointHook) holds beside the weights, so training cannot resume '
        f"from it. To start a run from these weights, set load_from='{path}' without --resume.")
    assert runner.epoch == 0 and not runner._resuming


def test_resume_refuses_the_checkpoint_of_another_model(tiny_runner, tmp_path):
    """A head of 5 classes where the config has 4: mmengine's non-strict load would resume
    with the head at its initial values."""
    runner = tiny_runner()
    state = _training_state(runner)
    state['state_dict']['cls_head.fc_cls.weight'] = torch.zeros(5, 512)
    state['state_dict']['cls_head.fc_cls.bias'] = torch.zeros(5)
    state['state_dict']['cls_head.extra'] = torch.zeros(1)
    del state['state_dict']['backbone.conv1.conv.weight']
    path = tmp_path / 'other.pth'
    torch.save(state, path)
    with pytest.raises(checkpoint.CheckpointMismatchError) as refused:
        runner.resume(str(path))
    lines = str(refused.value).splitlines()
    assert lines[0] == (f'{path} does not fit the model of the config: The model and loaded '
                        'state dict do not match exactly')
    assert lines[2:] == [
        'size mismatch for cls_head.fc_cls.weight: copying a param with shape '
        'torch.Size([5, 512]) from checkpoint, the shape in current model is '
        'torch.Size([4, 512]).',
        'size mismatch for cls_head.fc_cls.bias: copying a param with shape torch.Size([5]) '
        'from checkpoint, the shape in current model is torch.Size([4]).',
        'unexpected key in source state_dict: cls_head.extra', '',
        'missing keys in source state_dict: backbone.conv1.conv.weight']
    assert runner.epoch == 0


def test_resume_names_the_file_whose_optimizer_state_does_not_load(tiny_runner, tmp_path):
    runner = tiny_runner()
    state = _training_state(runner)
    state['optimizer']['param_groups'][0]['params'].pop()  # one parameter fewer
    path = tmp_path / 'epoch_1.pth'
    torch.save(state, path)
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group") as raised:
        runner.resume(str(path))
    assert raised.value.__notes__ == [f'while resuming from {path}']


def test_resume_refuses_the_optimizer_state_of_another_optimizer(tiny_runner, tmp_path):
    """AdamW's groups loaded into the config's SGD: without the check, the first SGD step
    fails with a bare ``KeyError: 'momentum'``."""
    runner = tiny_runner()
    adamw = torch.optim.AdamW(runner.model.parameters())
    path = tmp_path / 'epoch_1.pth'
    torch.save(_training_state(runner, adamw), path)
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        runner.resume(str(path))
    assert str(refused.value) == (
        f"{path}: its optimizer state is not of the config's SGD: its parameter groups lack "
        "['dampening', 'momentum']. Resume from a checkpoint saved with this config, or start "
        'from its weights with load_from.')


def test_resume_names_the_optimizer_whose_state_fails_to_load(tiny_runner, tmp_path):
    """SGD's momentum buffers loaded into the config's AdamW: AdamW's own loading failed with a
    bare ``KeyError: 'step'`` (a note named the file, not the cause)."""
    runner = tiny_runner(optim_wrapper=dict(optimizer=dict(type='AdamW', lr=1e-3)))
    sgd = torch.optim.SGD(runner.model.parameters(), lr=0.1, momentum=0.9)
    for parameter in runner.model.parameters():
        parameter.grad = torch.ones_like(parameter)
    sgd.step()  # per-parameter momentum buffers, no 'step'
    path = tmp_path / 'epoch_1.pth'
    torch.save(_training_state(runner, sgd), path)
    with pytest.raises(checkpoint.CheckpointRefusedError) as refused:
        runner.resume(str(path))
    assert str(refused.value) == (
        f"{path}: its optimizer state is not of the config's AdamW: its parameter groups lack "
        "['betas', 'eps']. Resume from a checkpoint saved with this config, or start from its "
        'weights with load_from.')
    assert isinstance(refused.value.__cause__, KeyError)


def test_load_from_refuses_a_checkpoint_that_shares_no_key_with_the_model(tiny_runner,
                                                                           tmp_path):
    runner = tiny_runner()
    weights = runner.model.state_dict()
    # DDP's prefix is revised away as mmengine revises it
    wrapped = tmp_path / 'wrapped.pth'
    torch.save({f'module.{key}': torch.ones_like(value) for key, value in weights.items()},
               wrapped)
    runner.load_checkpoint(str(wrapped))
    assert bool((runner.model.cls_head.fc_cls.bias == 1).all())
    other = tmp_path / 'other_network.pth'
    torch.save({'features.0.weight': torch.zeros(1), 'classifier.weight': torch.zeros(1)}, other)
    with pytest.raises(checkpoint.CheckpointMismatchError) as refused:
        runner.load_checkpoint(str(other))
    assert str(refused.value) == (
        f'{other}: no weight of the checkpoint is one of the model of the config, so loading it '
        'would change nothing. It holds features.0.weight, classifier.weight; the model has '
        f'{", ".join(list(weights)[:3])}, ... ({len(weights)} in all).')


def test_load_from_refuses_network_weights_of_another_shape(tiny_runner, tmp_path):
    """A conv1 of another T (or a 2D network's) would stay at its random initial values,
    named only by a printed line; a head of another class count is fine-tuning's, and loads."""
    runner = tiny_runner()
    weights = runner.model.state_dict()
    conv1 = weights['backbone.conv1.conv.weight']
    other_t = {key: value.clone() for key, value in weights.items()}
    other_t['backbone.conv1.conv.weight'] = torch.zeros(conv1.shape[0], 9, *conv1.shape[2:])
    path = tmp_path / 'other_t.pth'
    torch.save({'state_dict': other_t}, path)
    with pytest.raises(checkpoint.CheckpointMismatchError) as refused:
        runner.load_checkpoint(str(path))
    assert str(refused.value) == (
        f'{path}: weights of another shape than the model of the config: '
        f'backbone.conv1.conv.weight {(conv1.shape[0], 9, *conv1.shape[2:])} (the model: '
        f'{tuple(conv1.shape)}); loading it would leave them at their initial values. A 2D '
        'network, or a hyperframe network of another T, starts a model as its backbone\'s '
        '`pretrained` (its first conv is inflated), not as load_from.')
    other_head = {key: value.clone() for key, value in weights.items()}
    other_head['cls_head.fc_cls.weight'] = torch.zeros(7, weights['cls_head.fc_cls.weight'].shape[1])
    other_head['cls_head.fc_cls.bias'] = torch.zeros(7)
    other_head['backbone.conv1.conv.weight'] = torch.ones_like(conv1)
    torch.save({'state_dict': other_head}, path)
    runner.load_checkpoint(str(path))
    assert bool((runner.model.backbone.conv1.conv.weight == 1).all())


def test_load_from_refuses_a_checkpoint_lacking_network_weights(tiny_runner, tmp_path):
    """A ResNet-18's file loaded into a ResNet-34 left the blocks it lacks at their random
    initial values, named only by a printed line; a file without the head (a backbone trained
    elsewhere), or without the batch-norm counters older files lack, loads."""
    runner = tiny_runner()
    weights = runner.model.state_dict()
    deeper = [key for key in weights if key.startswith('backbone.layer1.1.')]
    assert len(deeper) > 3
    path = tmp_path / 'shallower.pth'
    torch.save({'state_dict': {key: value for key, value in weights.items()
                               if key not in deeper}}, path)
    lacked = len([key for key in deeper if 'num_batches' not in key])
    with pytest.raises(checkpoint.CheckpointMismatchError) as refused:
        runner.load_checkpoint(str(path))
    assert str(refused.value) == (
        f'{path}: lacks {lacked} weight(s) of the model of the config: '
        f'{", ".join(deeper[:3])}, ... ({lacked} in all); loading it would '
        'leave them at their initial values (a checkpoint of another network, or of another '
        'depth). Load a checkpoint of this model; a file that starts only part of it is its '
        'modules\' `pretrained` or init_cfg, not load_from.')
    torch.save({'state_dict': {key: torch.ones_like(value) for key, value in weights.items()
                               if not key.startswith('cls_head.')
                               and not key.endswith('num_batches_tracked')}}, path)
    runner.load_checkpoint(str(path))
    assert bool((runner.model.backbone.conv1.conv.weight == 1).all())
    # a part fine-tuning adds (a stem part, a neck) may be missing from the file
    from hyperframes_mm.engine.runner import _new_in_fine_tuning
    assert _new_in_fine_tuning('backbone.hyperframe_stem.extra_bn.weight')
    assert _new_in_fine_tuning('neck.conv.weight')
    assert not _new_in_fine_tuning('backbone.layer1.0.conv1.conv.weight')


def test_a_good_file_torch_cannot_place_is_not_called_damaged(tmp_path):
    """A RuntimeError that is not the file's (a device without memory, a map_location without
    its device) stays torch's own, the file named in a note: calling a good checkpoint damaged
    would tell the user to delete it."""
    path = tmp_path / 'good.pth'
    torch.save({'state_dict': {'w': torch.ones(2)}}, path)

    def out_of_memory(storage, location):
        raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 MiB')

    with pytest.raises(RuntimeError, match='^CUDA out of memory') as raised:
        checkpoint.load_verified(str(path), map_location=out_of_memory)
    assert not isinstance(raised.value, checkpoint.CheckpointRefusedError)
    assert raised.value.__notes__ == [f'while loading {path}']


def test_a_checkpoint_of_another_input_encoding_is_refused(tiny_runner, tmp_path):
    """No weight's shape records the encoding: the file loads strictly, and its first conv
    reads inputs in a basis it was not trained on. Its config says which."""
    from hyperframes_mm.models.backbones.stem import HyperframeStem
    runner = tiny_runner()
    stem, = [m for m in runner.model.modules() if isinstance(m, HyperframeStem)]
    state = _training_state(runner)
    text = runner.cfg.pretty_text
    assert f'diff_gain={stem.diff_gain}' in text and stem.input_encoding == 'diff'
    state['meta']['cfg'] = text.replace(f'diff_gain={stem.diff_gain}', 'diff_gain=8.0')
    path = tmp_path / 'epoch_1.pth'
    torch.save(state, path)
    for load in (runner.load_checkpoint, runner.resume):
        with pytest.raises(ValueError) as refused:
            load(str(path))
        assert str(refused.value) == (
            f"{path}: trained with input_encoding='diff', diff_gain=8 (the config it keeps), and "
            f"the model has input_encoding='diff', diff_gain={stem.diff_gain:g}: its first conv "
            'would read inputs in another basis than it learnt. Build the backbone with the '
            "checkpoint's input_encoding and diff_gain.")
    # its own config loads
    state['meta']['cfg'] = text
    torch.save(state, path)
    runner.load_checkpoint(str(path))


def test_the_trained_input_basis_is_read_from_the_config_text_without_running_it(tmp_path):
    from hyperframes_mm.engine.checkpoint import trained_input_basis

    def basis(text):
        return trained_input_basis(dict(meta=dict(cfg=text)))
    assert basis("model = dict(backbone=dict(type='HyperResNet', input_encoding='diff', "
                 "diff_gain=2.0), cls_head=dict(num_classes=3))") == dict(input_encoding='diff',
                                                                          diff_gain=2.0)
    # absent keys are absent (the stem's defaults), for a hyperframe backbone only
    assert basis("model = dict(backbone=dict(type='HyperMobileNetV2'))") == {}
    assert basis("model = dict(backbone=dict(type='MobileNetV2TSM'))") is None
    assert basis("x = 1") is None and trained_input_basis({'state_dict': {}}) is None
    marker = tmp_path / 'ran'
    assert basis(f"open({str(marker)!r}, 'w')\nmodel = dict(backbone=dict(type='HyperResNet', "
                 "input_encoding=open('x').read()))") is None
    assert not marker.exists()


def test_a_validation_that_fails_saves_the_epochs_trained_before_it(tmp_path, tiny_dataset,
                                                                    monkeypatch):
    """A validation video damaged after the list was checked fails the first validation; the
    epoch before it, which the checkpoint interval (5) would not have saved yet, is kept and
    named in last_checkpoint, so --resume continues from it."""
    import shutil

    from mmengine.config import Config
    from mmengine.registry import RUNNERS

    from hyperframes_mm.datasets.video_io import BadVideoError

    from ..conftest import TINY_CONFIG
    data = tmp_path / 'data'
    shutil.copytree(tiny_dataset, data)
    first_val = (data / 'val.txt').read_text().split()[0]
    video = data / first_val
    video.write_bytes(video.read_bytes()[:video.stat().st_size // 2])
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(data))
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.default_hooks.checkpoint = dict(cfg.default_hooks.get('checkpoint', {}), interval=5)
    runner = RUNNERS.build(dict(cfg, work_dir=str(tmp_path / 'work'), experiment_name='val'))
    with pytest.raises(BadVideoError, match=re.escape(str(video))):
        runner.train()
    saved = tmp_path / 'work' / 'epoch_1.pth'
    assert saved.is_file()
    assert (tmp_path / 'work' / 'last_checkpoint').read_text() == str(saved)
    state = checkpoint.load_verified(str(saved))
    assert (state['meta']['epoch'], state['meta']['iter']) == (1, runner.iter)
    assert 'optimizer' in state
    # an earlier run's epoch_1.pth in the work dir held the save back: --resume then continued
    # that run's weights, and this run's epoch was lost without a word
    again = RUNNERS.build(dict(cfg, work_dir=str(tmp_path / 'work'), experiment_name='again'))
    (tmp_path / 'work' / 'last_checkpoint').unlink()
    with pytest.raises(BadVideoError, match=re.escape(str(video))):
        again.train()
    state = checkpoint.load_verified(str(saved))
    assert state['meta']['experiment_name'] == again.experiment_name
    assert (tmp_path / 'work' / 'last_checkpoint').read_text() == str(saved)


def test_a_training_that_does_not_resume_names_the_earlier_checkpoints_it_writes_among(
        tiny_runner, tmp_path, monkeypatch):
    """A second run into a work dir replaced epoch_1.pth and left the first run's epoch_2..4
    beside it, last_checkpoint pointing at the new run, without a word."""
    runner = tiny_runner()
    work = Path(runner.work_dir)
    for name in ('epoch_10.pth', 'epoch_2.pth', 'iter_3.pth', 'best.pth'):
        (work / name).write_bytes(b'x')
    warnings = []
    # the runner's logger is mmengine's current one, which later tests log through: patched
    # for this test only
    monkeypatch.setattr(runner.logger, 'warning', warnings.append)
    runner.load_or_resume()
    assert warnings == [
        f'{work} holds checkpoints of an earlier run (epoch_2.pth, iter_3.pth, epoch_10.pth); '
        'this run does not resume, so it writes over those of the epochs it trains and leaves '
        'the others beside its own: use another --work-dir, or --resume to continue that run']
    quiet = tiny_runner('fresh')
    monkeypatch.setattr(quiet.logger, 'warning', warnings.append)
    quiet.load_or_resume()
    assert len(warnings) == 1


def test_a_pretrained_init_cfg_file_that_lacks_weights_is_refused(tmp_path):
    """mmaction2's MobileNetV2(pretrained=...) loads through PretrainedInit, non-strictly: given
    another network's file (a raw torchvision one) the TSN baseline trained from its initial
    values with exit 0, a warning among hundreds of log lines."""
    from mmaction.registry import MODELS
    from mmengine.model import BaseModule
    from mmengine.registry import init_default_scope

    from hyperframes_mm.engine.checkpoint import CheckpointMismatchError, check_pretrained_inits
    init_default_scope('mmaction')
    backbone = MODELS.build(dict(type='MobileNetV2', widen_factor=0.25))
    own = tmp_path / 'own.pth'
    torch.save(dict(state_dict=backbone.state_dict()), own)
    other = tmp_path / 'other.pth'
    weights = {f'features.{key}': value for key, value in backbone.state_dict().items()}
    torch.save(weights, other)

    def wrapped(path, **init):
        model = torch.nn.Sequential()
        model.add_module('backbone', MODELS.build(dict(type='MobileNetV2', widen_factor=0.25,
                                                       pretrained=str(path))))
        model.backbone.init_cfg = dict(model.backbone.init_cfg, **init)
        return model
    check_pretrained_inits(wrapped(own))
    count = len(backbone.state_dict())
    keys = list(backbone.state_dict())
    with pytest.raises(CheckpointMismatchError) as info:
        check_pretrained_inits(wrapped(other))
    assert str(info.value) == (
        f'backbone (MobileNetV2, init_cfg Pretrained): in {other} {count} of its {count} '
        f'weights are missing ({", ".join(keys[:5])}, ... ({count} in all)) and 0 have other '
        'shapes; loaded anyway (non-strictly), they would train from their initial values: '
        'give the file of this network')
    # a prefix selects the module's part of a larger file
    check_pretrained_inits(wrapped(other, prefix='features'))

    class OwnLoading(BaseModule):  # reads its file itself (MobileNetV2TSM's way)
        def init_weights(self):
            pass
    model = OwnLoading(init_cfg=dict(type='Pretrained', checkpoint=str(other)))
    model.weight = torch.nn.Parameter(torch.zeros(1))
    check_pretrained_inits(model)


def test_pretrained_init_cfg_files_are_verified_before_mmengine_reads_them(tmp_path,
                                                                           tiny_runner):
    """mmaction2's MobileNetV2TSM reads its init_cfg file itself, unchecked: a NaN file trained
    the TSM baseline to NaN with exit 0, a text file failed with a bare KeyError."""
    from mmaction.registry import MODELS
    from mmengine.registry import init_default_scope

    from hyperframes_mm.engine.checkpoint import (CheckpointCorruptError,
                                                  CheckpointNotFiniteError,
                                                  check_pretrained_inits)
    init_default_scope('mmaction')
    good = MODELS.build(dict(type='MobileNetV2', widen_factor=0.25)).state_dict()
    nan = tmp_path / 'nan.pth'
    torch.save(dict(good, **{'conv1.conv.weight': good['conv1.conv.weight'] * float('nan')}), nan)
    text = tmp_path / 'weights.pth'
    text.write_text('not a checkpoint\n')

    def tsm(path):
        return MODELS.build(dict(type='MobileNetV2TSM', widen_factor=0.25, num_segments=2,
                                 pretrained=str(path)))
    with pytest.raises(CheckpointNotFiniteError, match=str(nan)):
        check_pretrained_inits(tsm(nan))
    with pytest.raises(CheckpointCorruptError, match=str(text)):
        check_pretrained_inits(tsm(text))
    # a URL is its loader's to read (no network here: nothing is fetched)
    check_pretrained_inits(tsm('https://example.invalid/mobilenet_v2.pth'))
    # the runner verifies them before mmengine's initialisation reads any
    runner = tiny_runner()
    runner.model.backbone.init_cfg = dict(type='Pretrained', checkpoint=str(text))
    with pytest.raises(CheckpointCorruptError, match=str(text)):
        runner._init_model_weights()


def test_an_override_of_a_value_the_file_computed_from_is_named(tmp_path):
    """--cfg-options num_frames=3 trained at the file's T=5 with exit 0, its saved config
    showing both values; runner-level values (work_dir, load_from) take effect and are not
    named."""
    from mmengine.config import Config

    from hyperframes_mm.engine.runner import top_level_overrides

    from ..conftest import TINY_CONFIG
    cfg = Config.fromfile(str(TINY_CONFIG))
    assert top_level_overrides(cfg) == []
    cfg.merge_from_dict({'num_frames': 3, 'work_dir': str(tmp_path), 'load_from': 'x.pth'})
    assert top_level_overrides(cfg) == [
        f'num_frames = 3 differs from the 5 of {TINY_CONFIG}: the config\'s other settings were '
        'computed from num_frames when the file was read, so this override changes that value '
        'alone']
    assert top_level_overrides(Config(dict(num_frames=3))) == []  # made in code: no file
    # changed with the setting that uses it (as a benchmark's edit does): nothing left behind
    cfg.merge_from_dict({'model.backbone.num_frames': 3})
    assert top_level_overrides(cfg) == []
    # values with no setting of their name inside: a count, a folder, a type
    for key, value in (('test_clips', 5), ('data_root', '/elsewhere'),
                       ('dataset_type', 'VideoDataset')):
        cfg = Config.fromfile(str(TINY_CONFIG))
        before = cfg[key]
        cfg.merge_from_dict({key: value})
        assert top_level_overrides(cfg) == [
            f'{key} = {value!r} differs from the {before!r} of {TINY_CONFIG}: the config\'s '
            f'other settings were computed from {key} when the file was read, so this override '
            'changes that value alone']
    # a value the runner reads itself takes effect; another top-level value changed at the
    # same time is no setting that followed it
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.merge_from_dict({'find_unused_parameters': True, 'test_clips': 5, 'val_clips': 5})
    assert sorted(line.split(' = ')[0] for line in top_level_overrides(cfg)) == [
        'test_clips', 'val_clips']
    # ... and each changed with what it made: the clips of the test pipeline, the lists' paths
    cfg = Config.fromfile(str(TINY_CONFIG))
    clips = next(index for index, step in enumerate(cfg.test_pipeline) if 'num_clips' in step)
    cfg.merge_from_dict({'test_clips': 5, f'test_pipeline.{clips}.num_clips': 5})
    assert top_level_overrides(cfg) == []
    cfg = Config.fromfile(str(TINY_CONFIG))
    root = cfg.data_root
    cfg.merge_from_dict({'data_root': '/elsewhere', 'train_dataloader.dataset.ann_file':
                         cfg.train_dataloader.dataset.ann_file.replace(root, '/elsewhere')})
    assert top_level_overrides(cfg) == []
