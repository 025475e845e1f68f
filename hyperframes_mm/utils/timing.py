"""Side-by-side latency: time several calls in interleaved rounds so load changes on a shared
machine hit every row alike."""
import contextlib
import time
from typing import Any, Callable, Dict, List

import torch


def interleaved_timing(calls: Dict[str, Callable[[], Any]], repeats: int, warmup: int = 3,
                       progress: bool = True,
                       synchronize: Callable[[], None] = lambda: None,
                       grad: bool = False) -> Dict[str, List[float]]:
    """Seconds per call of every entry: each round calls each entry once, in an order rotated by
    one every round; the first ``warmup`` rounds are not kept.

    Args:
        calls (dict[str, callable]): name -> a no-argument call to time.
        repeats (int): timed rounds.
        warmup (int): untimed rounds first. Defaults to 3.
        progress (bool): show a progress bar. Defaults to True.
        synchronize (callable): run before each clock read (``torch.cuda.synchronize`` on GPU).
        grad (bool): run the calls with autograd on (training steps); by default they run
            under ``torch.inference_mode``. Defaults to False.

    Returns:
        dict[str, list[float]]: the ``repeats`` timings of each entry.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f'interleaved_timing: need repeats >= 1 and warmup >= 0, got {repeats}, '
                         f'{warmup}')
    from tqdm import tqdm
    names = list(calls)
    times: Dict[str, List[float]] = {name: [] for name in names}
    rounds = warmup + repeats
    mode = contextlib.nullcontext() if grad else torch.inference_mode()
    with mode, tqdm(total=rounds * len(names), desc='timing', unit='call',
                                      disable=not progress) as bar:
        for round_index in range(rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                synchronize()
                start = time.perf_counter()
                calls[name]()
                synchronize()
                if round_index >= warmup:
                    times[name].append(time.perf_counter() - start)
                bar.update()
    return times
