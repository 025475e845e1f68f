"""A plugin that only plugs in: ``import hyperframes_mm`` registers its parts and changes nothing
of mmengine, mmcv or torch; its engine behaviour comes from a config entry, and a config
without those entries runs mmengine's stock runner and hooks."""
import json
import subprocess
import sys

import pytest
from mmengine.config import Config

from .conftest import REPO, TINY_CONFIG, run_tool

#: every mmengine/mmcv module and class attribute (by identity), torch's weights-only safe
#: globals and the warning filters, before and after ``import hyperframes_mm``, in a fresh
#: process (as ``../shared/checks/host_check.py`` probes) or with mmaction2's own modules imported
#: first (after the DRN placeholder, without which mmaction.models does not import). compat.py
#: is then loaded from its file, as a module of its own: ``from hyperframes_mm import compat``
#: would run the package's __init__, i.e. the import under test, before the snapshot.
PROBE = '''
import importlib.util, inspect, json, sys, warnings
import torch.serialization
# the modules host_check.py imports first: mmengine's own imports of torch.distributed add
# torch's DTensor safe globals, whoever imports mmengine first
import mmengine.dist.utils, mmengine.fileio.backends.local_backend, mmengine.hooks.checkpoint_hook
import mmengine.registry, mmengine.runner.checkpoint
if MMACTION_FIRST:
    spec = importlib.util.spec_from_file_location('probe_compat', 'hyperframes_mm/compat.py')
    compat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compat)
    compat.prepare()
    assert 'hyperframes_mm' not in sys.modules
    import mmaction.models, mmaction.datasets, mmaction.engine, mmaction.evaluation
def snapshot():
    snap = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split('.')[0] not in ('mmengine', 'mmcv'):
            continue
        for key, value in list(vars(mod).items()):
            if isinstance(value, mmengine.registry.Registry):
                continue
            snap[f'{name}.{key}'] = id(value)
            if inspect.isclass(value) and getattr(value, '__module__', '') == name:
                for class_key, class_value in list(vars(value).items()):
                    snap[f'{name}.{key}.{class_key}'] = id(class_value)
    return snap
before, safe, filters = snapshot(), set(map(repr, torch.serialization.get_safe_globals())), \\
    list(warnings.filters)
import hyperframes_mm
after = snapshot()
print(json.dumps(dict(
    changed=sorted(key for key in before if before[key] != after.get(key)),
    safe_added=sorted(set(map(repr, torch.serialization.get_safe_globals())) - safe),
    filters_added=len(warnings.filters) - len(filters),
    models_imported='mmaction.models' in sys.modules)))
'''


@pytest.mark.parametrize('mmaction_first', [False, True], ids=['fresh', 'mmaction-first'])
def test_import_changes_nothing_in_mmengine_mmcv_or_torch(mmaction_first):
    probe = f'MMACTION_FIRST = {mmaction_first}\n' + PROBE
    result = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True,
                            cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == dict(
        changed=[], safe_added=[], filters_added=0, models_imported=mmaction_first)


#: after ``import hyperframes_mm`` alone, each registry finds the plugin's part on its first use
#: (importing the plugin's modules then), and a registry that had imported its own modules
#: before the plugin was imported has the parts at once
REGISTERED = '''
import sys
if FIRST_USE_BEFORE:
    import hyperframes_mm.compat
    from mmaction.registry import MODELS
    MODELS.get('Recognizer2D')
    assert MODELS._imported
import hyperframes_mm
from mmaction import registry
assert ('hyperframes_mm.components' in sys.modules) == FIRST_USE_BEFORE
for parts, name in ((registry.MODELS, 'HyperMobileNetV2'),
                    (registry.DATASETS, 'FrameLabelVideoDataset'),
                    (registry.TRANSFORMS, 'HyperframeStack'),
                    (registry.HOOKS, 'SafeCheckpointHook'), (registry.RUNNERS, 'HyperframeRunner')):
    assert parts.get(name) is not None, name
print('ok')
'''


@pytest.mark.parametrize('first_use_before', [False, True], ids=['lazy', 'registry-used-first'])
def test_every_registry_finds_the_parts(first_use_before):
    script = f'FIRST_USE_BEFORE = {first_use_before}\n' + REGISTERED
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            cwd=REPO)
    assert result.returncode == 0 and result.stdout.strip() == 'ok', result.stderr[-2000:]


def _stock_config(tmp_path, runner_type=None):
    """The tiny config as a user's own config that only imports the plugin: mmengine's
    ``CheckpointHook`` and, unless ``runner_type``, mmengine's ``Runner``."""
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.pop('runner_type')
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1, max_keep_ckpts=1)
    if runner_type:
        cfg.runner_type = runner_type
    path = tmp_path / f'stock_{runner_type or "runner"}.py'
    cfg.dump(str(path))
    return path


def test_a_config_that_only_imports_the_plugin_runs_stock_mmengine(tiny_dataset, tmp_path,
                                                                   monkeypatch):
    """mmaction2's own tools train and save with mmengine's stock runner; its stock resume then
    meets torch's weights-only default as stock mmengine 0.10.7 does (the plugin allows nothing
    process-wide), and the config's one line ``runner_type='HyperframeRunner'`` resumes it."""
    from hyperframes_mm.utils import upstream_tool_path
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))  # the dumped config's data root
    stock = _stock_config(tmp_path)
    work_dir = tmp_path / 'run'
    run_tool([upstream_tool_path('train'), stock, '--work-dir', work_dir, '--cfg-options',
              'train_cfg.max_epochs=1'], tiny_dataset)
    assert (work_dir / 'epoch_1.pth').is_file()
    assert 'HyperframeRunner' not in (work_dir / 'stock_runner.py').read_text()
    resumed = run_tool([upstream_tool_path('train'), stock, '--work-dir', work_dir, '--resume'],
                       tiny_dataset, check=False)
    assert resumed.returncode != 0 and 'HistoryBuffer' in resumed.stderr
    plugged = _stock_config(tmp_path, runner_type='HyperframeRunner')
    run_tool([upstream_tool_path('train'), plugged, '--work-dir', work_dir, '--resume'],
             tiny_dataset)
    assert (work_dir / 'epoch_2.pth').is_file()


def _truncated(path):
    path.write_bytes(path.read_bytes()[:4096])


def _not_finite(path):
    import torch
    from hyperframes_mm.engine import load_verified
    checkpoint = load_verified(str(path))
    name = next(key for key, value in checkpoint['state_dict'].items()
                if value.is_floating_point())
    checkpoint['state_dict'][name].view(-1)[0] = float('nan')
    torch.save({'state_dict': checkpoint['state_dict']}, path)


def _payload(path):
    from .test_compat import _write_malicious_checkpoint
    _write_malicious_checkpoint(path, path.with_name('pwned.txt'))


@pytest.mark.parametrize('damage, message', [
    (_truncated, 'CheckpointCorruptError: .*bad.pth: the file is truncated'),
    (_not_finite, r'CheckpointNotFiniteError: .*bad.pth: 1 tensor\(s\) hold NaN'),
    (_payload, 'CheckpointRefusedError: .*bad.pth: refused by torch weights-only loading'),
])
def test_mmaction2_test_tool_refuses_bad_checkpoints_by_name(tiny_work_dir, tiny_dataset,
                                                            tmp_path, damage, message):
    import re
    import shutil
    from hyperframes_mm.utils import upstream_tool_path
    bad = tmp_path / 'bad.pth'
    shutil.copy(tiny_work_dir / 'epoch_1.pth', bad)
    damage(bad)
    result = run_tool([upstream_tool_path('test'), TINY_CONFIG, bad, '--work-dir', tmp_path],
                      tiny_dataset, check=False)
    assert result.returncode != 0
    assert re.search(message, result.stderr), result.stderr[-2000:]
    assert not (tmp_path / 'pwned.txt').exists()
