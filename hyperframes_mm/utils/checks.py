"""Argument checks shared by the components, so that one rule gives one message."""
from typing import Any, Optional


def positive_int(value: Any, name: str, owner: Optional[str] = None,
                 optional: bool = False) -> Any:
    """``value`` when it is an int >= 1 (or, with ``optional``, None), else a ``ValueError``
    that names ``owner`` and ``name``. A bool is not an int here: ``num_frames=True`` is a
    config mistake, never 1 frame."""
    if optional and value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    where = f'{owner}: ' if owner else ''
    raise ValueError(f'{where}{name} must be a positive int{" or None" if optional else ""}, '
                     f'got {value!r}')
