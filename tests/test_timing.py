"""interleaved_timing: rounds, rotation, warm-up, and the autograd mode the calls run in."""
import pytest
import torch

from hyperframes_mm.utils.timing import interleaved_timing


def test_every_call_timed_each_round_in_a_rotating_order():
    order = []
    times = interleaved_timing({'a': lambda: order.append('a'), 'b': lambda: order.append('b')},
                               repeats=3, warmup=1, progress=False)
    assert order == ['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a']
    assert {name: len(values) for name, values in times.items()} == {'a': 3, 'b': 3}


def test_calls_run_in_inference_mode_unless_grad():
    modes = []
    record = {'call': lambda: modes.append(torch.is_inference_mode_enabled())}
    interleaved_timing(record, repeats=1, warmup=0, progress=False)
    interleaved_timing(record, repeats=1, warmup=0, progress=False, grad=True)
    assert modes == [True, False]
    weight = torch.ones(3, requires_grad=True)
    interleaved_timing({'step': lambda: (weight * 2).sum().backward()}, repeats=2, warmup=0,
                       progress=False, grad=True)
    assert torch.equal(weight.grad, torch.full((3, ), 4.0))


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match='need repeats >= 1 and warmup >= 0'):
        interleaved_timing({'a': lambda: None}, repeats=0)
