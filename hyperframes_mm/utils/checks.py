"""Argument checks shared by the components, so that one rule gives one message."""
import numbers
from typing import Any, Optional


def is_int(value: Any) -> bool:
    """An integer that is not a bool: ``num_frames=True`` is a config mistake, never 1 frame.
    NumPy's integers count (``tuple(np.arange(4))`` as ``out_indices``): they index and count as
    ints do."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def int_at_least(value: Any, name: str, minimum: int, owner: Optional[str] = None) -> int:
    """``value`` when it is an int >= ``minimum`` (see :func:`is_int`), else a ``ValueError``
    that names ``owner`` and ``name``."""
    if is_int(value) and value >= minimum:
        return value
    where = f'{owner}: ' if owner else ''
    raise ValueError(f'{where}{name} must be an int >= {minimum}, got {value!r}')


def positive_int(value: Any, name: str, owner: Optional[str] = None,
                 optional: bool = False) -> Any:
    """``value`` when it is an int >= 1 (see :func:`is_int`; with ``optional``, or None),
    else a ``ValueError`` that names ``owner`` and ``name``."""
    if (optional and value is None) or (is_int(value) and value >= 1):
        return value
    where = f'{owner}: ' if owner else ''
    raise ValueError(f'{where}{name} must be a positive int{" or None" if optional else ""}, '
                     f'got {value!r}')


def flag(value: Any, name: str, owner: Optional[str] = None) -> bool:
    """``value`` when it is a bool (Python's or numpy's), else a ``ValueError`` that names
    ``owner`` and ``name``: a config's ``'False'`` is a true string, and turned a switch on."""
    import numpy as np
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    where = f'{owner}: ' if owner else ''
    raise ValueError(f'{where}{name} must be True or False, got {value!r}')


def finite_number(value: Any, name: str, owner: Optional[str] = None,
                  above: Optional[float] = None) -> float:
    """``value`` when it is a finite real number (not a bool; ``> above`` where given), else a
    ``ValueError`` that names ``owner`` and ``name``: an infinite or NaN setting passes every
    comparison a range check makes, and fails far from the config, or never."""
    import math
    from numbers import Real
    if isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and (
            above is None or value > above):
        return value
    where = f'{owner}: ' if owner else ''
    bound = f' > {above}' if above is not None else ''
    raise ValueError(f'{where}{name} must be a finite number{bound}, got {value!r}')


def int_argument(minimum: int):
    """An ``argparse`` ``type`` for an int >= ``minimum``: a command line's bad count is then
    argparse's usage error naming the option, not a traceback from deep in the work (or, for
    a count of 0, an empty result that fails later elsewhere)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r} is not an integer') from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f'must be an int >= {minimum}, got {value}')
        return value

    parse.__name__ = f'int >= {minimum}'
    return parse
