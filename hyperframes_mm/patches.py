"""How the plugin changes its dependencies at import: the record of one patch, the opt-out, the
loop that applies them.

The patches themselves are listed in one table, ``hyperframes_mm/patches.ini`` (what each
changes, why, how it checks that it is needed, and the function that applies it), read by
:func:`hyperframes_mm.compat.patch_table`; this module only knows how to read and apply such a
table. The table is a data file rather than code so that it reads as the declaration it is, one
entry per patch, and a reviewer sees every change the import makes in one place.

Engine patches (those that change how mmengine or torch behave, as opposed to providing a
module the mmaction2 wheel lacks or filtering one import's warning) can be turned off one by
one, before ``import hyperframes_mm``::

    HYPERFRAMES_MM_NO_PATCH=atomic_checkpoint_writes,cpu_distributed python tools/train.py ...

An unknown name, or the name of a patch that is not an engine patch, stops the import with an
error that lists the names that can be turned off: a misspelt opt-out must not leave the patch
on silently. It is read once, when the plugin is imported, so processes that import the plugin
themselves (``torchrun`` ranks, spawned dataloader workers) need it in their environment too;
they inherit the parent's.

Kept free of any import of torch, mmengine or mmaction2 (and of the rest of the plugin), so that
:mod:`hyperframes_mm.compat` can check the environment before anything imports them.
"""
import configparser
import logging
import os
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Union

logger = logging.getLogger(__name__)

#: Comma-separated names of engine patches not to apply.
OPT_OUT_VARIABLE = 'HYPERFRAMES_MM_NO_PATCH'


@dataclass(frozen=True)
class Patch:
    """One change ``import hyperframes_mm`` makes to a dependency.

    Attributes:
        name (str): the key in :func:`apply_patches`'s result and in the opt-out variable.
        target (str): what it changes, as a dotted name (``mmengine...LocalBackend.put``).
        why (str): the upstream behaviour it fixes.
        needed (str): how ``apply`` decides that this installation needs it.
        apply (callable): does it when needed; returns True when it changed something.
        engine (bool): it changes how mmengine (or torch under it) behaves, so
            :data:`OPT_OUT_VARIABLE` can turn it off.
    """
    name: str
    target: str
    why: str
    needed: str
    apply: Callable[[], bool]
    engine: bool


#: The keys every section of a patch table has; the section name is the patch's name.
TABLE_KEYS = ('apply', 'engine', 'target', 'why', 'needed')


def read_patch_table(path: Union[str, os.PathLike],
                     owners: Mapping[str, ModuleType]) -> List[Patch]:
    """The patches declared in the INI file ``path``, in its order.

    Each section is one patch (see ``hyperframes_mm/patches.ini`` for the keys). Values may
    span lines; their whitespace is folded into single spaces.

    Args:
        path: the table.
        owners (Mapping[str, module]): the modules ``apply = <owner>.<function>`` may name.

    Raises:
        ValueError: a section with a missing or unknown key, an ``engine`` that is not a
            boolean, or an ``apply`` that names no function of ``owners``; the message names
            the file and the patch.
    """
    parser = configparser.ConfigParser(interpolation=None)
    with open(path, encoding='utf-8') as file:
        parser.read_file(file)
    return [_patch(path, name, parser[name], owners) for name in parser.sections()]


def _patch(path, name: str, section: configparser.SectionProxy,
           owners: Mapping[str, ModuleType]) -> Patch:
    where = f'{path}: patch {name!r}'
    keys = set(section)
    if keys != set(TABLE_KEYS):
        missing, unknown = sorted(set(TABLE_KEYS) - keys), sorted(keys - set(TABLE_KEYS))
        raise ValueError(f'{where}: missing keys {missing}, unknown keys {unknown}; '
                         f'every patch has {", ".join(TABLE_KEYS)}')
    try:
        engine = section.getboolean('engine')
    except ValueError:
        raise ValueError(f'{where}: engine = {section["engine"]!r} is not yes or no') from None
    owner, _, function = section['apply'].partition('.')
    apply = getattr(owners.get(owner), function, None) if function else None
    if not callable(apply):
        raise ValueError(f'{where}: apply = {section["apply"]!r} names no function; it is '
                         f'<owner>.<function> with an owner among {", ".join(sorted(owners))}')
    text = {key: ' '.join(section[key].split()) for key in ('target', 'why', 'needed')}
    empty = [key for key, value in text.items() if not value]
    if empty:
        raise ValueError(f'{where}: {", ".join(empty)} must say something')
    return Patch(name=name, apply=apply, engine=engine, **text)


def opted_out(table: Sequence[Patch],
              environ: Optional[Mapping[str, str]] = None) -> FrozenSet[str]:
    """The names listed in :data:`OPT_OUT_VARIABLE`, checked against ``table``.

    Args:
        table (Sequence[Patch]): the patches that could be applied.
        environ (Mapping[str, str], optional): where to read the variable. Defaults to
            ``os.environ``.

    Raises:
        ValueError: a name that is not in ``table``, or that names a patch which is not an
            engine patch; the message lists the names that can be turned off.
    """
    value = (os.environ if environ is None else environ).get(OPT_OUT_VARIABLE, '')
    names = frozenset(name.strip() for name in value.split(',') if name.strip())
    engine = [patch.name for patch in table if patch.engine]
    fixed = {patch.name for patch in table if not patch.engine}
    problems = [f'{name!r} cannot be turned off (it changes no mmengine behaviour)'
                if name in fixed else f'{name!r} is not a patch'
                for name in sorted(names - set(engine))]
    if problems:
        raise ValueError(f'{OPT_OUT_VARIABLE}={value!r}: ' + '; '.join(problems) +
                         f'. Patches that can be turned off: {", ".join(engine)}.')
    return names


def apply_patches(table: Sequence[Patch],
                  environ: Optional[Mapping[str, str]] = None) -> Dict[str, bool]:
    """Apply every patch of ``table`` in order, except those opted out.

    Args:
        table (Sequence[Patch]): the patches, in the order they must be applied.
        environ (Mapping[str, str], optional): where to read :data:`OPT_OUT_VARIABLE`.
            Defaults to ``os.environ``.

    Returns:
        dict[str, bool]: patch name -> whether it changed something (False when not needed,
        already applied, or opted out).
    """
    skipped = opted_out(table, environ)
    applied = {}
    for patch in table:
        if patch.name in skipped:
            logger.debug('%s: not applied (%s): %s keeps the upstream behaviour', patch.name,
                         OPT_OUT_VARIABLE, patch.target)
            applied[patch.name] = False
            continue
        applied[patch.name] = bool(patch.apply())
        if applied[patch.name]:
            logger.debug('%s: patched %s (%s)', patch.name, patch.target, patch.why)
    return applied


def code_names(function: Callable) -> FrozenSet[str]:
    """The global, attribute and string-constant names the compiled ``function`` uses, nested
    functions and comprehensions included.

    For the patches whose need can only be read from upstream's implementation (whether a write
    renames into place cannot be observed without interrupting it): unlike
    ``inspect.getsource``, code objects exist when only ``.pyc`` files are installed, and they
    are compared name by name, so a comment or docstring that mentions a name does not count.
    """
    code = getattr(function, '__code__', None)
    if code is None:
        raise TypeError(f'{function!r} has no Python code object to inspect')
    return frozenset(_names(code))


def _names(code: CodeType):
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, str):
            yield constant
        elif isinstance(constant, CodeType):
            yield from _names(constant)
