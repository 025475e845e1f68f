"""hyperframes_mm: hyperframe video models for MMAction2.

Importing the package first checks the environment and applies the patches listed in
:func:`hyperframes_mm.compat.patch_table` (before anything imports ``mmaction.models``; engine
patches can be turned off with ``HYPERFRAMES_MM_NO_PATCH``), then registers the plugin's
transforms, datasets and models in mmaction2's registries. Configs load it with
``custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)``.
"""
from . import compat
from .version import __version__

compat.apply()

from . import datasets, models  # noqa: E402,F401  (registration needs compat applied first)
from . import engine  # noqa: E402,F401

__all__ = ['__version__', 'compat', 'datasets', 'engine', 'models']
