"""hyperframes_mm: hyperframe video models for MMAction2.

Importing the package checks the environment and provides the one module the mmaction2 1.2.0
wheel lacks (:func:`hyperframes_mm.compat.prepare`, before anything imports
``mmaction.models``), then registers the plugin's transforms, datasets, models, runner, hooks
and file backend in the registries. It changes nothing else in mmengine, mmcv or torch: engine
behaviour is chosen by a config (``configs/_base_/default_runtime.py``). Configs load the plugin
with ``custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)``.
"""
from . import compat
from .version import __version__

compat.prepare()

from . import datasets, models  # noqa: E402,F401  (registration needs the DRN module first)
from . import engine  # noqa: E402,F401

__all__ = ['__version__', 'compat', 'datasets', 'engine', 'models']
