"""benchmarks.lib.schedule: tasks start the costliest first, ``jobs`` at a time; a failing task
is reported and stops no other, any other exception starts no further task; the tick runs while
tasks are waited for. RowBenchmark.train trains through it and names every failure."""
import threading
from argparse import Namespace
from pathlib import Path

import pytest

from benchmarks.lib.rows import Row, RowBenchmark
from benchmarks.lib.schedule import Task, costliest_first, run_tasks


def _recording(started, name, result=None, error=None):
    def work():
        started.append(name)
        if error is not None:
            raise error
        return result
    return work


def test_one_job_starts_the_costliest_first_equal_costs_in_their_order():
    started = []
    tasks = [Task(name, cost, _recording(started, name, result=name.upper()))
             for name, cost in (('a', 1.0), ('b', 3.0), ('c', 2.0), ('d', 3.0))]
    assert [task.what for task in costliest_first(tasks)] == ['b', 'd', 'c', 'a']
    done = []
    assert run_tasks(tasks, 1, done=lambda task, result: done.append((task.what, result))) == []
    assert started == ['b', 'd', 'c', 'a']
    assert done == [('b', 'B'), ('d', 'D'), ('c', 'C'), ('a', 'A')]


def test_a_failing_task_is_reported_and_the_others_go_on():
    started, done, failed = [], [], []
    broken = RuntimeError('b broke')
    tasks = [Task('a', 3.0, _recording(started, 'a', result=1)),
             Task('b', 2.0, _recording(started, 'b', error=broken)),
             Task('c', 1.0, _recording(started, 'c', result=3))]
    failures = run_tasks(tasks, 1, RuntimeError,
                         done=lambda task, result: done.append((task.what, result)),
                         failed=lambda task, error: failed.append((task.what, error)))
    assert started == ['a', 'b', 'c']
    assert done == [('a', 1), ('c', 3)]
    assert failed == [('b', broken)]
    assert failures == [(tasks[1], broken)]


def test_another_exception_starts_no_further_task():
    started = []
    tasks = [Task('a', 2.0, _recording(started, 'a', error=ValueError('a bug'))),
             Task('b', 1.0, _recording(started, 'b'))]
    with pytest.raises(ValueError, match='a bug'):
        run_tasks(tasks, 1, RuntimeError)
    assert started == ['a']


def test_jobs_tasks_run_at_once_and_no_more():
    lock, running, most = threading.Lock(), [0], [0]
    pair = threading.Barrier(2, timeout=10)  # broken unless two tasks wait at it together

    def work():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        pair.wait()
        with lock:
            running[0] -= 1

    assert run_tasks([Task(index, 1.0, work) for index in range(4)], 2) == []
    assert most[0] == 2


def test_the_tick_runs_while_waiting_and_after_the_end_is_handed_over():
    ticks, done = [], []
    release = threading.Event()

    def tick():
        ticks.append(list(done))
        if len(ticks) == 3:
            release.set()

    def work():
        # only ticks while the task is waited for let it end
        if not release.wait(timeout=10):
            raise TimeoutError('no tick while the task ran')
        return 'ended'

    run_tasks([Task('a', 1.0, work)], 1, done=lambda task, result: done.append(result),
              tick=tick, interval=0.01)
    assert ticks[:3] == [[], [], []]
    assert ticks[-1] == ['ended']


def test_row_benchmark_trains_costliest_first_by_seed_and_names_every_failure(tmp_path,
                                                                             monkeypatch):
    from hyperframes_mm.datasets import frame_cache
    monkeypatch.setattr(frame_cache, 'read_video_list', lambda path: [])
    monkeypatch.setattr(frame_cache, 'build_frame_cache', lambda *args, **kwargs: 'no videos')
    bench = RowBenchmark('bench', ('train.txt', 'test.txt'), (64, 64), 'the docs')
    small, large = Row('small', Path('s.py'), ''), Row('large', Path('l.py'), '', cost=2.0)
    started = []

    def train_run(row, seed, args):
        started.append((row.name, seed))
        if seed == 1:
            raise RuntimeError(f'{row.name} seed {seed}: tools/train.py failed')
        return {}

    monkeypatch.setattr(bench, 'train_run', train_run)
    # the rows name no config files: no weight file to check before the runs
    monkeypatch.setattr(bench, 'missing_weights', lambda jobs, args: [])
    jobs = [(small, 1), (small, 0), (large, 1), (large, 0)]
    with pytest.raises(SystemExit) as exit_info:
        bench.train(jobs, Namespace(data=str(tmp_path), jobs=1))
    assert started == [('large', 0), ('large', 1), ('small', 0), ('small', 1)]
    assert str(exit_info.value) == ('2 runs failed:\nlarge seed 1: tools/train.py failed\n'
                                    'small seed 1: tools/train.py failed')
