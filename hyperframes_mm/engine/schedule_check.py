"""Whether a config's parameter schedulers fit its training loop.

A config's schedulers are written for its own length: ``begin``, ``end`` and a cosine's
``T_max`` are numbers, often computed from the file's ``max_epochs`` when it was read. Shortening
the training the mmengine way (``--cfg-options train_cfg.max_epochs=8``) changes none of them, so
a 50-epoch warm-up + cosine schedule stops at its peak learning rate, and one shorter than its
warm-up never leaves it; mmengine says nothing. :func:`schedule_overruns` names each such
scheduler and the options that fit it; the runner warns with them before training, and
``tools/doctor.py`` reports them.
"""
from typing import Iterator, List, Tuple

from mmengine.optim.scheduler.param_scheduler import INF


#: schedulers whose value does not depend on where they end: a later end than the training's
#: cuts nothing short
_ENDLESS = ('Step', 'Exponential')


def _schedulers(value, key: str = 'param_scheduler') -> Iterator[Tuple[str, dict]]:
    """``(--cfg-options key, scheduler)`` of every scheduler given as a dict: one, a list, or
    a list per optimizer (a dict of them, as an ``OptimWrapperDict`` takes)."""
    if isinstance(value, dict) and 'type' in value:
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _schedulers(item, f'{key}.{name}')
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield f'{key}.{index}', item


def schedule_overruns(cfg) -> List[Tuple[str, str]]:
    """``(message, fix)`` for every scheduler of ``cfg.param_scheduler`` that does not fit
    ``cfg.train_cfg``: one that begins at or after the training's last epoch (it never runs),
    one that ends after it, or a cosine whose ``T_max`` reaches past it (the training stops
    inside it, at the value it has reached then). The fix gives the ``--cfg-options`` that end
    it with the training: ``end`` the loop's length and ``T_max`` what remains of it after
    ``begin`` (a warm-up of 5 then a cosine, in 8 epochs: ``T_max=3``).

    Units are the loop's: schedulers by epoch (``convert_to_iter_based`` ones too, whose
    numbers are epochs) against ``train_cfg.max_epochs``, schedulers by iteration against an
    iteration-based loop's ``max_iters``; the other pairings depend on the data's length and
    are not checked. A scheduler without ``end`` ends with the training (mmengine's default).
    A step schedule is read by its steps: a ``MultiStep`` milestone past the training is named
    (its end changes nothing), and a ``Step`` or ``Exponential`` one's end cuts nothing short.
    """
    train_cfg = cfg.get('train_cfg') or {}
    by_epoch = train_cfg.get('max_epochs') is not None
    length = train_cfg.get('max_epochs' if by_epoch else 'max_iters')
    if not isinstance(length, int):
        return []
    unit, limit = (('epoch', 'train_cfg.max_epochs') if by_epoch else
                   ('iteration', 'train_cfg.max_iters'))
    found = []
    for key, scheduler in _schedulers(cfg.get('param_scheduler')):
        if scheduler.get('by_epoch', True) != by_epoch:
            continue
        if scheduler.get('type') is None:
            continue  # mmengine refuses to build it, naming what is missing
        # a pure-Python config names the class itself
        kind = getattr(scheduler['type'], '__name__', str(scheduler['type']))
        begin = scheduler.get('begin', 0)
        end = scheduler.get('end')
        end = length if end is None or end >= INF else end
        where = f'{key} ({kind})'
        if begin >= length:
            found.append((
                f'{where} begins at {unit} {begin}, at or after {limit}={length}: it never '
                'runs, and the training ends at the value the schedulers before it leave',
                f'begin it before {unit} {length} ({key}.begin and the end of the scheduler '
                f'before it), remove it, or train for more than {begin} {unit}s ({limit})'))
            continue
        late, options = [], []
        if kind.startswith('MultiStep'):
            # its value changes only at its milestones: one past the training never happens,
            # and the end, whatever it is, changes nothing
            never = [step for step in scheduler.get('milestones', ()) if step >= length]
            if never:
                found.append((
                    f'{where} steps at {unit}s {never}, at or after {limit}={length}: the '
                    'training ends before them, at the value the earlier steps leave',
                    f'move them before {unit} {length} ({key}.milestones), or train longer'))
            continue
        if end > length and not kind.startswith(_ENDLESS):
            late.append(f'ends at {unit} {end}')
            options.append(f'{key}.end={length}')
        t_max = scheduler.get('T_max') if 'CosineAnnealing' in kind else None
        if t_max is not None and begin + t_max > length:
            late.append(f'anneals over T_max={t_max} {unit}s, to {unit} {begin + t_max}')
            options.append(f'{key}.T_max={length - begin}')
        if late:
            found.append((
                f'{where} {" and ".join(late)}, after {limit}={length}: the training stops '
                'inside it, at the value it has reached then (a warm-up\'s peak, a cosine not '
                'yet annealed)',
                f'end it with the training: --cfg-options {" ".join(options)}'))
    return found
