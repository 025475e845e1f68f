"""The upstream fixes applied at ``import hyperframes_mm``, and the table that lists them."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from hyperframes_mm import compat, patches
from hyperframes_mm.engine import CheckpointRefusedError

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


def test_patches_are_noops_when_applied_again():
    assert compat.patch_missing_drn() is False
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # a machine with two OpenCVs is warned again
        applied = compat.apply()
    assert list(applied) == [patch.name for patch in compat.patch_table()]
    assert {name for name, done in applied.items() if done} <= {'mixed_opencv_warned'}


def test_patch_table_says_what_why_and_how_for_every_patch():
    table = compat.patch_table()
    assert len({patch.name for patch in table}) == len(table)
    assert all(patch.target and patch.why and patch.needed for patch in table)
    assert {patch.name for patch in table if not patch.engine} == {
        'quiet_mmcv_lite_import', 'mixed_opencv_warned', 'drn_placeholder'}
    # One loader wrapper: nothing else replaces mmengine's local checkpoint scheme.
    assert sum("_schemes['']" in patch.target for patch in table) == 1


def test_every_engine_patch_is_documented_with_the_opt_out():
    text = (REPO / 'docs/reliability.md').read_text()
    assert patches.OPT_OUT_VARIABLE in text
    missing = [patch.name for patch in compat.patch_table()
               if patch.engine and f'`{patch.name}`' not in text]
    assert not missing, f'docs/reliability.md does not name the engine patches {missing}'


def test_patch_table_names_what_compat_patches():
    by_name = {patch.name: patch for patch in compat.patch_table()}
    assert compat._DRN_MODULE in by_name['drn_placeholder'].target
    assert by_name['drn_placeholder'].apply is compat.patch_missing_drn
    # Continuation lines are folded into one sentence.
    assert by_name['drn_placeholder'].needed == (
        "mmaction's models/localizers/__init__.py names drn and models/localizers/drn/drn.py "
        'is missing')


TABLE = """
[first]
apply = module.one
engine = yes
target = a
why = because
  of this
needed = always

[second]
apply = module.two
engine = no
target = b
why = c
needed = d
"""


def _read(tmp_path, text):
    path = tmp_path / 'table.ini'
    path.write_text(text)
    owners = {'module': type('Owner', (), {'one': staticmethod(lambda: True),
                                            'two': staticmethod(lambda: False)})}
    return patches.read_patch_table(path, owners)


def test_patch_table_file_is_read_in_order(tmp_path):
    first, second = _read(tmp_path, TABLE)
    assert (first.name, first.engine, first.why, first.apply()) == (
        'first', True, 'because of this', True)
    assert (second.name, second.engine, second.target, second.apply()) == (
        'second', False, 'b', False)


@pytest.mark.parametrize('edit,message', [
    (('needed = d\n', ''), r"patch 'second': missing keys \['needed'\], unknown keys \[\]"),
    (('target = b', 'taget = b'), r"missing keys \['target'\], unknown keys \['taget'\]"),
    (('engine = no', 'engine = maybe'), "patch 'second': engine = 'maybe' is not yes or no"),
    (('module.two', 'module.three'), "apply = 'module.three' names no function.*among module"),
    (('module.two', 'other.two'), "apply = 'other.two' names no function"),
    (('why = c', 'why ='), "patch 'second': why must say something"),
])
def test_bad_patch_table_is_refused_with_file_and_patch(tmp_path, edit, message):
    with pytest.raises(ValueError, match=f'table.ini: .*{message}'):
        _read(tmp_path, TABLE.replace(*edit))


def _fake_table(calls):
    return [
        patches.Patch('engine_a', 'a', 'why a', 'needed a', lambda: calls.append('a') or True,
                      engine=True),
        patches.Patch('engine_b', 'b', 'why b', 'needed b', lambda: calls.append('b') or True,
                      engine=True),
        patches.Patch('placeholder', 'c', 'why c', 'needed c', lambda: calls.append('c') or False,
                      engine=False),
    ]


def test_opted_out_patches_are_not_applied():
    calls = []
    applied = patches.apply_patches(_fake_table(calls),
                                    {patches.OPT_OUT_VARIABLE: ' engine_b , ,engine_a'})
    assert applied == {'engine_a': False, 'engine_b': False, 'placeholder': False}
    assert calls == ['c']
    calls.clear()
    assert patches.apply_patches(_fake_table(calls), {}) == {
        'engine_a': True, 'engine_b': True, 'placeholder': False}
    assert calls == ['a', 'b', 'c']


@pytest.mark.parametrize('value,message', [
    ('engine_a,atomic_writes', "'atomic_writes' is not a patch"),
    ('placeholder', "'placeholder' cannot be turned off"),
])
def test_unknown_or_fixed_opt_out_is_refused(value, message):
    calls = []
    with pytest.raises(ValueError, match=f'HYPERFRAMES_MM_NO_PATCH=.*{message}.*Patches that can '
                       'be turned off: engine_a, engine_b'):
        patches.apply_patches(_fake_table(calls), {patches.OPT_OUT_VARIABLE: value})
    assert calls == []


def test_opt_out_keeps_mmengine_unpatched():
    """End to end: the named patches leave mmengine as it is, the others still apply."""
    probe = ('import hyperframes_mm\n'
             'from mmengine.fileio.backends.local_backend import LocalBackend\n'
             'from mmengine.dist import utils\n'
             'from mmengine.hooks import checkpoint_hook\n'
             'print(hasattr(LocalBackend.put, "__wrapped__"), '
             'hasattr(utils._init_dist_pytorch, "__wrapped__"), "open" in vars(checkpoint_hook))')
    env = dict(os.environ, HYPERFRAMES_MM_NO_PATCH='atomic_checkpoint_writes,cpu_distributed')
    result = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ['False', 'False', 'True']


def test_weights_only_probe_sees_the_allow_list():
    """After the import torch loads what mmengine writes, so the allow-list is not needed again."""
    assert compat._refuses_mmengine_objects() is False


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
               for entry in compat.mmengine_checkpoint_globals()}
    assert needed, 'an mmengine checkpoint should hold HistoryBuffer and numpy values'
    assert needed <= allowed, f'not allow-listed: {needed - allowed}'
    loaded = torch.load(checkpoint, map_location='cpu')  # weights_only is torch's default
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
    from mmengine.runner.checkpoint import _load_checkpoint
    checkpoint, marker = tmp_path / 'evil.pth', tmp_path / 'pwned.txt'
    _write_malicious_checkpoint(checkpoint, marker)
    with pytest.raises(CheckpointRefusedError, match='evil.pth.*weights-only'):
        _load_checkpoint(str(checkpoint), map_location='cpu')
    with pytest.raises(Exception):
        torch.load(checkpoint)
    assert not marker.exists()


def test_getattr_allow_list_entry_is_restricted():
    from mmengine.logging.history_buffer import HistoryBuffer
    assert compat._history_buffer_statistic(HistoryBuffer, 'mean') is HistoryBuffer.mean
    with pytest.raises(TypeError, match='refused'):
        compat._history_buffer_statistic(HistoryBuffer, '__init__')
    with pytest.raises(TypeError, match='refused'):
        compat._history_buffer_statistic(Path, 'write_text')
