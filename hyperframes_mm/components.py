"""Importing this module registers every part of the plugin: its transforms and datasets, models,
runner, hooks and the ``atomic_local`` file backend.

``import hyperframes_mm`` does not import it: it adds this module to the import locations of the
mmaction2 registries the parts live in, and mmengine imports it, right after mmaction2's own
modules, the first time a config builds anything from one of them (``Registry.get`` imports a
registry's locations). So importing the plugin imports nothing of ``mmaction.models`` or
``mmaction.datasets``, whose imports (torchvision's, scipy's) change torch's weights-only safe
globals and the warning filters; building a model imports them as it would without the plugin.
Import this module to have every part registered at once (e.g. to list them).
"""
from . import datasets, engine, models  # noqa: F401
