"""hyperframes_mm: hyperframe video models for MMAction2.

Importing the package checks the environment and provides the one module the mmaction2 1.2.0
wheel lacks (:func:`hyperframes_mm.compat.prepare`, before anything imports
``mmaction.models``), then registers the plugin's transforms, datasets, models, runner, hooks
and file backend in mmaction2's registries: :mod:`hyperframes_mm.components` joins the import
locations of the registries they live in and is imported on their first use. It changes nothing
else in mmengine, mmcv or torch: engine behaviour is chosen by a config
(``configs/_base_/default_runtime.py``). Configs load the plugin with
``custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)``.
"""
import importlib

from . import compat
from .version import __version__

compat.prepare()

#: the module whose import registers every part (:mod:`hyperframes_mm.components`)
COMPONENTS = f'{__name__}.components'
#: the subpackages, imported on first access as attributes of the package
SUBPACKAGES = ('analysis', 'apis', 'datasets', 'deploy', 'engine', 'evaluation', 'models',
               'utils')


def register() -> None:
    """Register the parts in mmaction2's registries: lazily, through each registry's import
    locations, or now where a registry has already imported its own (a registry imports its
    locations once, on its first ``get``)."""
    from mmaction import registry
    for parts in (registry.MODELS, registry.DATASETS, registry.TRANSFORMS, registry.HOOKS,
                  registry.RUNNERS):
        if parts._imported:
            importlib.import_module(COMPONENTS)
        elif COMPONENTS not in parts._locations:
            parts._locations.append(COMPONENTS)


register()


def __getattr__(name: str):
    if name in SUBPACKAGES:
        return importlib.import_module(f'{__name__}.{name}')
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


__all__ = ['__version__', 'compat', 'register', *SUBPACKAGES]
