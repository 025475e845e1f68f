"""hyperframes_mm.utils.processes: a pool's results, and a worker that dies named, not waited
for (a multiprocessing.Pool whose worker was killed, out of memory say, hung for ever)."""
import os
import signal

import pytest

from hyperframes_mm.utils.processes import WorkerLost, map_unordered


def square_or_die(value: int) -> int:
    if value < 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return value * value


def test_every_task_gives_its_result():
    results = list(map_unordered(square_or_die, [1, 2, 3, 4], workers=2))
    assert sorted((task, result, lost) for task, result, lost in results) == [
        (1, 1, None), (2, 4, None), (3, 9, None), (4, 16, None)]


@pytest.mark.timeout(120)
def test_a_killed_worker_names_the_tasks_it_left_and_ends_the_map():
    results = {task: (result, lost) for task, result, lost in
               map_unordered(square_or_die, [1, -1, 3, 4, 5], workers=2)}
    assert sorted(results) == [-1, 1, 3, 4, 5]
    result, lost = results[-1]
    assert result is None and isinstance(lost, WorkerLost)
    assert str(lost).startswith('the worker process stopped before it finished (killed, or out '
                                'of memory): ')
    # the others give their results: the tasks the dead worker's pool failed run again
    assert {task: results[task] for task in (1, 3, 4, 5)} == {
        1: (1, None), 3: (9, None), 4: (16, None), 5: (25, None)}
