"""interleaved_timing: rounds, rotation, warm-up, the untimed hook, the autograd mode the calls
run in, the steady heap it times on; Timings: medians, quartiles and ratios."""
import json
import os
import subprocess
import sys

import pytest
import torch

from hyperframes_mm.utils import timing
from hyperframes_mm.utils.timing import Timings, interleaved_timing


def test_every_call_timed_each_round_in_a_rotating_order():
    order = []
    times = interleaved_timing({'a': lambda: order.append('a'), 'b': lambda: order.append('b')},
                               repeats=3, warmup=1, progress=False)
    assert order == ['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a']
    assert {name: len(values) for name, values in times.items()} == {'a': 3, 'b': 3}


def test_three_candidates_interleave_after_the_hook():
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in 'abc'}
    times = interleaved_timing(calls, repeats=2, warmup=1, progress=False,
                               before=lambda name, index: order.append(f'{name}{index}'))
    assert order == ['a0', 'a', 'b0', 'b', 'c0', 'c',
                     'b1', 'b', 'c1', 'c', 'a1', 'a',
                     'c2', 'c', 'a2', 'a', 'b2', 'b']
    assert {name: len(values) for name, values in times.items()} == {'a': 2, 'b': 2, 'c': 2}


def test_times_are_what_the_clock_says_and_the_hook_is_not_timed(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(timing.time, 'perf_counter', lambda: clock[0])
    cost = {'a': [1.0, 3.0, 2.0], 'b': [4.0, 4.0, 8.0]}
    rounds = {'a': iter([9.0] + cost['a']), 'b': iter([9.0] + cost['b'])}

    def advance(name):
        clock[0] += next(rounds[name])

    def hook(name, index):
        clock[0] += 100.0

    times = interleaved_timing({name: (lambda name=name: advance(name)) for name in 'ab'},
                               repeats=3, warmup=1, progress=False, before=hook)
    assert times == cost
    assert times.median('a') == 2.0
    assert times.ratio('b', 'a') == 2.0
    assert times.paired_ratio('b', 'a') == 4.0  # per round 4, 4/3, 4


def test_timings_quartiles_and_paired_ratio():
    times = Timings(a=[1.0, 2.0, 3.0, 4.0, 5.0], b=[2.0, 2.0, 6.0, 8.0, 5.0], one=[0.5],
                    two=[1.0, 9.0])
    assert times.quartiles('a') == (2.0, 4.0)
    assert times.quartiles('one') == (0.5, 0.5)
    # within the two times, not extrapolated past them (-1.0 and 11.0)
    assert times.quartiles('two') == (3.0, 7.0)
    assert times.median('b') == 5.0
    assert times.ratio('b', 'a') == 5.0 / 3.0
    assert times.paired_ratio('b', 'a') == 2.0  # per round 2, 1, 2, 2, 1
    with pytest.raises(ValueError):
        times.paired_ratio('a', 'one')


def test_calls_run_in_inference_mode_unless_told_otherwise():
    modes = []
    record = {'call': lambda: modes.append(torch.is_inference_mode_enabled())}
    interleaved_timing(record, repeats=1, warmup=0, progress=False)
    interleaved_timing(record, repeats=1, warmup=0, progress=False, inference=False)
    assert modes == [True, False]
    weight = torch.ones(3, requires_grad=True)
    interleaved_timing({'step': lambda: (weight * 2).sum().backward()}, repeats=2, warmup=0,
                       progress=False, inference=False)
    assert torch.equal(weight.grad, torch.full((3, ), 4.0))


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match='need repeats >= 1 and warmup >= 0'):
        interleaved_timing({'a': lambda: None}, repeats=0)


def test_timing_steadies_the_heap_before_the_first_call(monkeypatch):
    events = []
    monkeypatch.setattr(timing, 'steady_heap', lambda: events.append('steady'))
    interleaved_timing({'a': lambda: events.append('a')}, repeats=1, warmup=1, progress=False)
    assert events == ['steady', 'a', 'a']


@pytest.mark.parametrize('error', [AttributeError, ValueError, OSError, None])
def test_steady_heap_is_a_no_op_without_glibc(monkeypatch, error):
    """No ``os.confstr`` (Windows), a name Python does not know (macOS) or one the C library
    refuses (musl): not glibc, and libc is never touched."""
    if error is None:
        monkeypatch.delattr(timing.os, 'confstr', raising=False)
    else:
        def refuse(name):
            raise error(name)

        monkeypatch.setattr(timing.os, 'confstr', refuse, raising=False)
    monkeypatch.setattr(timing.ctypes, 'CDLL', lambda *args: pytest.fail('libc was loaded'))
    assert timing.is_glibc() is False
    assert timing.steady_heap() is False


#: rounds of a call's allocations straight through libc (no Python object between the blocks, as
#: a model's activations): 100 blocks of 200 KiB written and freed, after one 256 KiB block freed
#: first (glibc's moving thresholds then serve 200 KiB from the heap and trim above 512 KiB);
#: prints the page faults of each round. Only the steady run imports the package (an import that
#: frees a large block would move glibc's thresholds for the other run)
HEAP_ROUNDS = """
import ctypes, json, resource, sys
took = None
if sys.argv[1] == 'steady':
    from hyperframes_mm.utils.timing import steady_heap
    took = steady_heap()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
first = libc.malloc(256 << 10)
libc.memset(first, 1, 256 << 10)
libc.free(first)
blocks, counts = [None] * 100, []
for _ in range(5):
    before = faults()
    for index in range(100):
        blocks[index] = libc.malloc(200 << 10)
        libc.memset(blocks[index], 1, 200 << 10)
    for block in blocks:
        libc.free(block)
    counts.append(faults() - before)
print(json.dumps(dict(took=took, faults=counts)))
"""


@pytest.mark.skipif(not timing.is_glibc(), reason='glibc only')
def test_a_steady_heap_reuses_the_pages_a_call_freed():
    # glibc's own behaviour, not the environment's: no preloaded allocator, no malloc tunables
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(('MALLOC_', 'GLIBC_TUNABLES', 'LD_PRELOAD'))}

    def rounds(mode):
        out = subprocess.run([sys.executable, '-c', HEAP_ROUNDS, mode], check=True, env=env,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    moving, steady = rounds('moving'), rounds('steady')
    # glibc's own thresholds: every round hands the freed blocks back and faults them in again,
    # as many times as the first (whatever the page size the kernel backs the heap with)
    first = moving['faults'][0]
    assert first > 0 and all(count >= first * 9 // 10 for count in moving['faults'][1:])
    # steady: the first round faults the blocks in, every later one reuses them (the second
    # may fault one page the interpreter itself touches)
    assert steady['took'] is True and steady['faults'][0] >= first * 9 // 10
    assert steady['faults'][1] <= 1 and steady['faults'][2:] == [0, 0, 0]
