"""Crash-safe checkpoint writes, damaged checkpoints refused by name, resume after a kill: the
parts a config names (AtomicLocalBackend, SafeCheckpointHook, HyperframeRunner's loads)."""
import multiprocessing
import os
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


def test_sigkill_during_save_never_leaves_a_partial_file(tmp_path):
    """Kill a process that keeps rewriting a 64 MiB file while a temporary is being written."""
    size = 64 << 20
    target = tmp_path / 'epoch_1.pth'
    target.write_bytes(bytes([0]) * size)
    # A forked child shares this process's imports without importing them again.
    writer = multiprocessing.get_context('fork').Process(target=_rewrite_forever,
                                                         args=(size, str(target)))
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob('.epoch_1.pth.*.tmp')):
            assert writer.is_alive() and time.monotonic() < deadline, 'writer never wrote'
            time.sleep(0.001)
        writer.kill()
    finally:
        writer.join()
    assert writer.exitcode == -signal.SIGKILL
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
