"""Side-by-side latency: time several calls in interleaved rounds so load changes on a shared
machine hit every row alike. The one timing loop of the project: ``compare_latency`` and the
micro-benchmarks (``benchmarks/bench_*.py``) all time through :func:`interleaved_timing`."""
import contextlib
import ctypes
import os
import statistics
import time
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

import torch


class Timings(Dict[Hashable, List[float]]):
    """Seconds of each timed round per name, in round order: entry ``i`` of every name was
    timed in round ``i``, so two names' entries pair up (:meth:`paired_ratio`)."""

    def median(self, name: Hashable) -> float:
        """Median seconds of ``name``."""
        return statistics.median(self[name])

    def quartiles(self, name: Hashable) -> Tuple[float, float]:
        """First and third quartile of ``name`` (its one sample twice when it has one),
        within the times measured: the default 'exclusive' method extrapolates beyond them on
        a few rounds (a negative first quartile of two calls)."""
        values = self[name]
        if len(values) == 1:
            return values[0], values[0]
        first, _, third = statistics.quantiles(values, n=4, method='inclusive')
        return first, third

    def ratio(self, numerator: Hashable, denominator: Hashable) -> float:
        """Ratio of the two names' medians."""
        return self.median(numerator) / self.median(denominator)

    def paired_ratio(self, numerator: Hashable, denominator: Hashable) -> float:
        """Median over rounds of the two names' ratio within a round: each pair ran back to
        back, so a load change between rounds cancels out."""
        return statistics.median(
            a / b for a, b in zip(self[numerator], self[denominator], strict=True))


#: glibc's ``mallopt`` parameters, and the largest mmap threshold it takes (its
#: ``DEFAULT_MMAP_THRESHOLD_MAX``: 32 MiB on 64-bit builds, 512 KiB on 32-bit ones)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_MAX = (32 << 20) if ctypes.sizeof(ctypes.c_void_p) == 8 else (512 << 10)


def is_glibc() -> bool:
    """Whether this process's C library is glibc (whose ``mallopt`` :func:`steady_heap` sets)."""
    try:
        return bool(os.confstr('CS_GNU_LIBC_VERSION'))
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), no such name, or musl
        return False


def steady_heap() -> bool:
    """Make glibc's malloc keep the memory a call frees for the next call, for the rest of the
    process. True where it took effect; False where it was not applied (the C library is not
    glibc, or glibc refused a setting).

    glibc hands a freed heap top larger than its trim threshold back to the kernel, and serves
    blocks above its mmap threshold from fresh mappings; both thresholds move with what the
    process freed before. So one model can fault all its activations in from the kernel on
    every call in one process and on none in another, and its latency then depends on the
    process's past rather than on the model (a page fault for every page of activations, on
    every call). With the mmap threshold fixed at glibc's ceiling and trimming off, every call
    reuses the pages of the one before for every block below that ceiling (a larger block is
    still mapped afresh on every call, as before, in every process alike). It cannot be undone
    (glibc has no way back to its moving thresholds) and the process keeps the memory it peaked
    at, which is why only timing calls it (:func:`interleaved_timing`), never the plugin's
    import.
    """
    if not is_glibc():
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1))


def interleaved_timing(calls: Dict[Hashable, Callable[[], Any]], repeats: int, warmup: int = 3,
                       progress: bool = True,
                       synchronize: Callable[[], None] = lambda: None,
                       inference: bool = True,
                       before: Optional[Callable[[Hashable, int], None]] = None) -> Timings:
    """Seconds per call of every entry: each round calls each entry once, in an order rotated by
    one every round; the first ``warmup`` rounds are not kept. The process's heap is made
    steady first (:func:`steady_heap`), so a call's time does not depend on what the process
    allocated before it; that lasts for the rest of the process.

    Args:
        calls (dict): name -> a no-argument call to time.
        repeats (int): timed rounds.
        warmup (int): untimed rounds first. Defaults to 3.
        progress (bool): show a progress bar. Defaults to True.
        synchronize (callable): run before each clock read (``torch.cuda.synchronize`` on GPU).
        inference (bool): run the calls under ``torch.inference_mode`` (models); False leaves
            the autograd mode to the calls (training steps, or calls that must run as they do
            elsewhere). Defaults to True.
        before (callable, optional): ``before(name, round_index)``, run untimed before each
            call (round 0 is the first warm-up round): what a call needs set first, such as
            its thread count or the clip of the round. Defaults to None.

    Returns:
        Timings: the ``repeats`` timings of each entry.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f'interleaved_timing: need repeats >= 1 and warmup >= 0, got {repeats}, '
                         f'{warmup}')
    from tqdm import tqdm
    steady_heap()
    names = list(calls)
    times = Timings({name: [] for name in names})
    rounds = warmup + repeats
    mode = torch.inference_mode() if inference else contextlib.nullcontext()
    with mode, tqdm(total=rounds * len(names), desc='timing', unit='call',
                    disable=not progress) as bar:
        for round_index in range(rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                if before is not None:
                    before(name, round_index)
                synchronize()
                start = time.perf_counter()
                calls[name]()
                synchronize()
                if round_index >= warmup:
                    times[name].append(time.perf_counter() - start)
                bar.update()
    return times
