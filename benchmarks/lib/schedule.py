"""Trainings side by side: tasks run on a thread pool, ``jobs`` at a time, the costliest first
(so that the last to start are short and the pool ends together), and a task that fails stops
no other. The row benchmarks (:meth:`.rows.RowBenchmark.train`) and the main job
(``benchmarks/main_job.py``, which redraws its progress display on every tick) both train
through :func:`run_tasks`."""
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple, Type


class Task(NamedTuple):
    """One job for :func:`run_tasks`: ``what`` it is (handed back to the callbacks), its
    ``cost`` (only compared with the other tasks') and the call that does it."""
    what: Any
    cost: float
    work: Callable[[], Any]


def costliest_first(items: Iterable) -> List:
    """``items`` (anything with a ``cost``) in the order :func:`run_tasks` starts them: the
    costliest first, equal costs in their given order."""
    return sorted(items, key=lambda item: -item.cost)


def run_tasks(tasks: Iterable[Task], jobs: int, failure: Type[Exception] = Exception,
              done: Optional[Callable[[Task, Any], None]] = None,
              failed: Optional[Callable[[Task, Exception], None]] = None,
              tick: Optional[Callable[[], None]] = None,
              interval: float = 1.0) -> List[Tuple[Task, Exception]]:
    """Run ``tasks``, ``jobs`` at a time, in :func:`costliest_first` order.

    A task starts only when a slot is free, so that an exception other than ``failure`` (a
    bug, Ctrl-C) starts no further task: it is raised once the running ones have ended.

    Args:
        tasks (Iterable[Task]): what to run.
        jobs (int): tasks at once (at least one).
        failure (type): the exception a task fails with; the other tasks go on. Defaults to
            Exception.
        done (callable, optional): ``done(task, result)`` as each task returns. Defaults to None.
        failed (callable, optional): ``failed(task, error)`` as each task fails. Defaults to
            None.
        tick (callable, optional): called every ``interval`` seconds while tasks run, and
            after the tasks that ended were handed to ``done`` and ``failed`` (so that what it
            shows includes them). Defaults to None.
        interval (float): seconds between ticks. Defaults to 1.

    Returns:
        list[tuple[Task, Exception]]: the tasks that failed, with their errors, in the order
        they failed.
    """
    queue = costliest_first(tasks)
    failures = []
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        running: Dict[Future, Task] = {}
        while queue or running:
            while queue and len(running) < max(1, jobs):
                task = queue.pop(0)
                running[pool.submit(task.work)] = task
            ended, _ = wait(running, timeout=interval if tick else None,
                            return_when=FIRST_COMPLETED)
            for future in [future for future in running if future in ended]:  # start order
                task = running.pop(future)
                try:
                    result = future.result()
                except failure as error:
                    failures.append((task, error))
                    if failed is not None:
                        failed(task, error)
                else:
                    if done is not None:
                        done(task, result)
            if tick is not None:
                tick()
    return failures
