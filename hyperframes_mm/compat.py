"""What the plugin needs of its environment, checked and provided at ``import hyperframes_mm``,
before anything imports ``mmaction.models``; nothing of mmengine, mmcv or torch is changed.

:func:`prepare` runs at import:

1. :func:`check_environment` refuses a Python/torch/mmcv/mmengine combination that cannot work,
   with a message that says what to install, before mmaction2's own import-time asserts fire.
2. :func:`quiet_mmcv_lite_import`: with ``mmcv-lite`` (no compiled ops), the first import of
   ``mmcv.cnn.bricks.transformer`` (mmpretrain's backbones import it) warns that
   ``MultiScaleDeformableAttention`` is missing, on every process that imports the plugin.
   Recognition never uses that op, so the plugin imports the module once with exactly that
   warning filtered inside ``warnings.catch_warnings`` (no filter outlives the import); with
   full ``mmcv`` the warning means a broken build and still shows.
3. :func:`warn_mixed_opencv`: mmaction2 requires ``opencv-contrib-python`` while the mmengine
   and mmcv-lite wheels require ``opencv-python``, so a plain ``pip install`` of the stack
   installs both, and each overwrites the other's ``cv2`` files. The plugin says how to keep one.
4. :func:`add_drn_placeholder`, the one addition to the host: the ``mmaction2==1.2.0`` wheel on
   PyPI lacks ``mmaction/models/localizers/drn/`` (the folder has no ``__init__.py`` upstream, so
   the wheel builder skipped it) and ``import mmaction.models`` raises ``ModuleNotFoundError``.
   The plugin puts the missing module in ``sys.modules``, with a ``DRN`` that raises a clear
   error when built. An ``__init__.py`` in that folder upstream (a wheel built after it) makes
   the placeholder unnecessary, and it is then not installed.

Engine behaviour (checked checkpoint loads, atomic saves, resume after a kill, CPU multi-process
training) is not installed at import: configs choose it (``hyperframes_mm.engine``,
docs/reliability.md).

This module imports nothing outside the standard library at module level, so that the
environment is checked before torch, mmcv, mmengine or mmaction2 is imported.
"""
import importlib
import importlib.util
import re
import sys
import types
import warnings
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional


#: Inclusive minimum / exclusive maximum that mmaction2 1.2.0 accepts for mmcv.
MMCV_RANGE = ('2.0.0rc4', '2.2.0')
MMENGINE_RANGE = ('0.7.1', '1.0.0')
MIN_TORCH = '1.13'

_DRN_MODULE = 'mmaction.models.localizers.drn'


def _version(version: str):
    """A comparable version (``2.0.0rc4`` < ``2.0.0``); packaging comes with mmengine/mmcv."""
    from packaging.version import Version
    return Version(version)


def _installed(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_environment() -> None:
    """Refuse, with an actionable message, a stack that mmaction2 1.2.0 cannot run on.

    Raises:
        ImportError: naming the package, the version found and the command that fixes it.
    """
    problems: List[str] = []
    if sys.version_info < (3, 9):
        problems.append(f'Python {sys.version.split()[0]} is too old: use Python 3.9-3.12 '
                        '(3.11 is the tested one).')
    torch_version = _installed('torch')
    if torch_version is None:
        problems.append('torch is not installed: pip install torch==2.14.1 torchvision==0.29.1')
    elif _version(torch_version.split('+')[0]) < _version(MIN_TORCH):
        problems.append(f'torch {torch_version} is too old: pip install torch==2.14.1 '
                        'torchvision==0.29.1')
    mmcv_full, mmcv_lite = _installed('mmcv'), _installed('mmcv-lite')
    if mmcv_full and mmcv_lite:
        problems.append(f'both mmcv {mmcv_full} and mmcv-lite {mmcv_lite} are installed; they '
                        'overwrite each other\'s files. Keep one: pip uninstall -y mmcv mmcv-lite '
                        '&& pip install mmcv-lite==2.1.0 (CPU) or mim install mmcv==2.1.0 (GPU ops).')
    mmcv_version = mmcv_full or mmcv_lite
    low, high = map(_version, MMCV_RANGE)
    if mmcv_version is None:
        problems.append('mmcv is not installed: pip install mmcv-lite==2.1.0 (CPU, pure Python) '
                        'or mim install mmcv==2.1.0 (compiled CUDA ops).')
    elif not low <= _version(mmcv_version) < high:
        name = 'mmcv' if mmcv_full else 'mmcv-lite'
        problems.append(f'{name} {mmcv_version} is installed but mmaction2 1.2.0 needs '
                        f'mmcv>={MMCV_RANGE[0]},<{MMCV_RANGE[1]}: pip install mmcv-lite==2.1.0 '
                        '(CPU) or mim install mmcv==2.1.0 (GPU ops).')
    mmengine_version = _installed('mmengine')
    low, high = map(_version, MMENGINE_RANGE)
    if mmengine_version is None:
        problems.append('mmengine is not installed: pip install mmengine==0.10.7')
    elif not low <= _version(mmengine_version) < high:
        problems.append(f'mmengine {mmengine_version} is outside mmaction2 1.2.0\'s range '
                        f'>={MMENGINE_RANGE[0]},<{MMENGINE_RANGE[1]}: pip install mmengine==0.10.7')
    if _installed('mmaction2') is None:
        problems.append('mmaction2 is not installed: pip install mmaction2==1.2.0')
    if importlib.util.find_spec('importlib_metadata') is None:
        problems.append('importlib_metadata is missing (mmaction2 imports it without declaring '
                        'it): pip install importlib_metadata')
    if problems:
        raise ImportError('hyperframes_mm cannot run on this environment:\n  - ' +
                          '\n  - '.join(problems) +
                          '\nThe tested set is pinned in requirements/lock-cpu.txt.')


class UnavailableDRN:
    """Stands in for mmaction2's DRN localizer, which the PyPI wheel does not ship."""

    def __init__(self, *args, **kwargs) -> None:
        raise RuntimeError(
            'DRN is unavailable: the mmaction2 1.2.0 wheel on PyPI ships without '
            'mmaction/models/localizers/drn/ (the folder lacks an __init__.py upstream, so it was '
            'left out of the wheel). Install mmaction2 from a source checkout '
            '(pip install -e <mmaction2 repo>) to use DRN; every other mmaction2 model works.')


#: The start of mmcv-lite's import-time warning (``mmcv/cnn/bricks/transformer.py``).
MMCV_LITE_DEFORM_ATTN_WARNING = 'Fail to import ``MultiScaleDeformableAttention``'


def quiet_mmcv_lite_import() -> bool:
    """Import ``mmcv.cnn.bricks.transformer`` without mmcv-lite's missing-op warning.

    The warning tells mmcv-lite users that deformable attention (a detection/transformer op
    with compiled kernels) is unavailable; no recognizer of mmaction2 or of this plugin uses
    it. Only that message is filtered, only during this first import, and only when mmcv-lite
    is the installed mmcv: with full mmcv the op should import, and the warning reports a real
    problem (a build that does not match torch or CUDA).

    Returns:
        bool: True when the module was imported here with the warning filtered.
    """
    if _installed('mmcv') or not _installed('mmcv-lite'):
        return False
    if 'mmcv.cnn.bricks.transformer' in sys.modules:
        return False
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message=re.escape(MMCV_LITE_DEFORM_ATTN_WARNING),
                                category=UserWarning)
        importlib.import_module('mmcv.cnn.bricks.transformer')
    return True


#: PyPI distributions that install the module ``cv2`` (into one folder, over each other).
OPENCV_DISTRIBUTIONS = ('opencv-python', 'opencv-contrib-python', 'opencv-python-headless',
                        'opencv-contrib-python-headless')


def warn_mixed_opencv() -> List[str]:
    """Warn when more than one OpenCV distribution is installed.

    Returns:
        list[str]: the installed OpenCV distributions, as ``'name version'``.
    """
    found = [f'{name} {_installed(name)}' for name in OPENCV_DISTRIBUTIONS if _installed(name)]
    if len(found) > 1:
        names = ' '.join(entry.split()[0] for entry in found)
        warnings.warn(
            f'{len(found)} OpenCV distributions are installed ({", ".join(found)}): each writes '
            'the module cv2 into the same folder, so cv2 is a mix of their files. Keep one '
            f'(uninstalling any of them deletes the shared files): pip uninstall -y {names} && '
            'pip install --no-deps opencv-contrib-python (the one mmaction2 requires; '
            'requirements/lock-cpu.txt pins it)', UserWarning)
    return found


def add_drn_placeholder() -> bool:
    """Provide ``mmaction.models.localizers.drn`` where the installed wheel lacks it.

    Returns:
        bool: True when the placeholder was installed, False when nothing was needed.
    """
    if _DRN_MODULE in sys.modules:
        return False
    spec = importlib.util.find_spec('mmaction')
    if spec is None or not spec.submodule_search_locations:
        return False
    # Read from the installed files, not tried: the behaviour (import mmaction.models fails)
    # can only be observed by an import that stops half-way, leaving part of mmaction2's
    # registries filled; nor does the version tell, since a source install of 1.2.0 has DRN.
    localizers = Path(list(spec.submodule_search_locations)[0], 'models', 'localizers')
    init_text = localizers.joinpath('__init__.py')
    if not init_text.is_file() or 'drn' not in init_text.read_text():
        return False
    if localizers.joinpath('drn', 'drn.py').is_file():
        return False

    from mmaction.registry import MODELS
    package = types.ModuleType(_DRN_MODULE)
    package.__path__ = []
    package.__doc__ = 'Placeholder installed by hyperframes_mm.compat: DRN is not in the wheel.'
    module = types.ModuleType(f'{_DRN_MODULE}.drn')
    module.DRN = UnavailableDRN
    package.drn = module
    package.DRN = UnavailableDRN
    sys.modules[_DRN_MODULE] = package
    sys.modules[f'{_DRN_MODULE}.drn'] = module
    MODELS.register_module(name='DRN', module=UnavailableDRN, force=False)
    return True


def prepare() -> Dict[str, object]:
    """Check the environment, import mmcv-lite's transformer bricks quietly, report a mixed
    OpenCV, and provide the DRN module the mmaction2 wheel lacks (in this order: the quiet
    import must come before anything imports those bricks, the placeholder before anything
    imports ``mmaction.models``).

    Returns:
        dict: what was done, for logs and tests: ``quiet_mmcv_lite_import`` and
        ``drn_placeholder`` (bool: done now), ``opencv`` (the OpenCV distributions found).
    """
    check_environment()
    return dict(quiet_mmcv_lite_import=quiet_mmcv_lite_import(), opencv=warn_mixed_opencv(),
                drn_placeholder=add_drn_placeholder())
