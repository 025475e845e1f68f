"""What ``import hyperframes_mm`` checks and provides (the environment, the DRN module the
mmaction2 wheel lacks), and the weights-only allow-list of mmengine checkpoints."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from hyperframes_mm import compat
from hyperframes_mm.engine import CheckpointRefusedError
from hyperframes_mm.engine import checkpoint as engine_checkpoint

from .conftest import REPO


def test_mmaction_models_importable_after_plugin():
    result = subprocess.run([sys.executable, '-c', 'import hyperframes_mm, mmaction.models; '
                             'from mmaction.models import Recognizer2D; print("ok")'],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith('ok')


def test_building_drn_says_why_it_is_missing():
    import mmaction.models  # noqa: F401
    from mmaction.registry import MODELS
    with pytest.raises(Exception, match='DRN is unavailable.*wheel'):
        MODELS.build(dict(type='DRN'))


def test_prepare_is_a_noop_when_run_again():
    assert compat.add_drn_placeholder() is False
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # a machine with two OpenCVs is warned again
        done = compat.prepare()
    assert done['drn_placeholder'] is False and done['quiet_mmcv_lite_import'] is False


@pytest.mark.parametrize('dist,version,advice', [
    ('mmcv-lite', '2.2.0', 'mmcv-lite==2.1.0'),
    ('mmengine', '1.1.0', 'mmengine==0.10.7'),
    ('torch', '1.8.0', 'torch==2.14.1'),
])
def test_incompatible_stack_is_refused_with_advice(monkeypatch, dist, version, advice):
    real = compat._installed
    monkeypatch.setattr(compat, '_installed',
                        lambda name: version if name == dist else real(name))
    with pytest.raises(ImportError, match=advice.replace('.', r'\.')):
        compat.check_environment()


def test_both_mmcv_packages_installed_is_refused(monkeypatch):
    monkeypatch.setattr(compat, '_installed',
                        lambda name: {'mmcv': '2.1.0', 'mmcv-lite': '2.1.0'}.get(
                            name, '2.14.1' if name == 'torch' else '0.10.7'))
    with pytest.raises(ImportError, match='both mmcv 2.1.0 and mmcv-lite'):
        compat.check_environment()


def test_import_prints_nothing():
    """No upstream warning (mmcv-lite's missing deformable attention op) on a plain import,
    even with every warning shown."""
    env = {key: value for key, value in os.environ.items() if key != 'PYTHONWARNINGS'}
    quiet = subprocess.run([sys.executable, '-c', 'import hyperframes_mm'], capture_output=True,
                           text=True, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == '' and quiet.stderr == ''
    loud = subprocess.run([sys.executable, '-W', 'always::UserWarning', '-c',
                           'import hyperframes_mm'], capture_output=True, text=True, env=env)
    assert compat.MMCV_LITE_DEFORM_ATTN_WARNING not in loud.stderr


def test_mmcv_lite_warning_is_kept_with_full_mmcv(monkeypatch):
    """With compiled mmcv the op should import: its warning then reports a broken build."""
    monkeypatch.setattr(compat, '_installed', lambda name: '2.1.0' if name == 'mmcv' else None)
    assert compat.quiet_mmcv_lite_import() is False


def test_two_opencv_distributions_are_reported(monkeypatch):
    versions = {'opencv-python': '5.0.0.93', 'opencv-contrib-python': '5.1.0.95'}
    monkeypatch.setattr(compat, '_installed', versions.get)
    with pytest.warns(UserWarning, match='2 OpenCV distributions are installed .*pip uninstall '
                      '-y opencv-python opencv-contrib-python'):
        assert len(compat.warn_mixed_opencv()) == 2
    monkeypatch.setattr(compat, '_installed', {'opencv-contrib-python': '5.1.0.95'}.get)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert compat.warn_mixed_opencv() == ['opencv-contrib-python 5.1.0.95']


def test_allow_list_covers_a_real_mmengine_checkpoint(tiny_work_dir):
    """Re-derive what a real mmengine run writes; every global must be allow-listed."""
    checkpoint = next(tiny_work_dir.glob('epoch_*.pth'))
    # A fresh interpreter without the plugin: this one already allows the list under test.
    probe = subprocess.run(
        [sys.executable, '-c', 'import json, sys, torch; print(json.dumps(torch.serialization.'
         'get_unsafe_globals_in_checkpoint(sys.argv[1])))', str(checkpoint)],
        capture_output=True, text=True, check=True)
    needed = set(json.loads(probe.stdout))
    allowed = {entry[1] if isinstance(entry, tuple) else f'{entry.__module__}.{entry.__qualname__}'
               for entry in engine_checkpoint.mmengine_checkpoint_globals()}
    assert needed, 'an mmengine checkpoint should hold HistoryBuffer and numpy values'
    assert needed <= allowed, f'not allow-listed: {needed - allowed}'
    # torch's default (weights-only) refuses it outside the plugin's load, which allows the list
    # for that load only
    with pytest.raises(Exception, match='HistoryBuffer'):
        torch.load(checkpoint, map_location='cpu')
    loaded = engine_checkpoint.load_verified(str(checkpoint))
    assert 'message_hub' in loaded and 'state_dict' in loaded


class _Payload:
    """Pickles as a call that writes a file: what a malicious checkpoint would carry."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, 'pwned'))


def _write_malicious_checkpoint(path: Path, marker: Path) -> None:
    torch.save({'state_dict': {}, 'meta': {'payload': _Payload(marker)}}, path)
    assert not marker.exists()


def test_code_carrying_checkpoint_is_refused_and_does_not_run(tmp_path):
    checkpoint, marker = tmp_path / 'evil.pth', tmp_path / 'pwned.txt'
    _write_malicious_checkpoint(checkpoint, marker)
    with pytest.raises(CheckpointRefusedError, match='evil.pth.*weights-only'):
        engine_checkpoint.load_verified(str(checkpoint), map_location='cpu')
    with pytest.raises(Exception):
        torch.load(checkpoint)
    assert not marker.exists()


class _SystemCall:
    def __reduce__(self):
        import os
        return (os.system, ('true', ))


def test_a_refused_blocked_global_is_named_without_the_advice_to_turn_protection_off(tmp_path):
    """os.system pickles as posix.system, a global of a blocked module: torch names it on a
    line after its advice to load with weights_only=False, which the refusal does not repeat."""
    checkpoint = tmp_path / 'system.pth'
    torch.save({'state_dict': {}, 'meta': {'payload': _SystemCall()}}, checkpoint)
    with pytest.raises(CheckpointRefusedError) as refused:
        engine_checkpoint.load_verified(str(checkpoint), map_location='cpu')
    assert 'posix.system' in str(refused.value) or 'nt.system' in str(refused.value)
    assert 'weights_only` set to `False`' not in str(refused.value)


def test_getattr_allow_list_entry_is_restricted():
    from mmengine.logging.history_buffer import HistoryBuffer
    assert engine_checkpoint._history_buffer_statistic(HistoryBuffer, 'mean') is HistoryBuffer.mean
    with pytest.raises(TypeError, match='refused'):
        engine_checkpoint._history_buffer_statistic(HistoryBuffer, '__init__')
    with pytest.raises(TypeError, match='refused'):
        engine_checkpoint._history_buffer_statistic(Path, 'write_text')
