"""Worker pools that are safe to start from any process, threads and all, and that say when a
worker dies."""
import concurrent.futures
import multiprocessing
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Optional, Sequence, Tuple


class WorkerLost(RuntimeError):
    """A worker process stopped (killed, out of memory) before it finished a task."""


def map_unordered(function: Callable, tasks: Iterable, workers: int, preload: Sequence[str] = (),
                  initializer: Optional[Callable[[], None]] = None
                  ) -> Iterator[Tuple[object, object, Optional[WorkerLost]]]:
    """``(task, function(task), None)`` for each task, as the workers finish them, or
    ``(task, None, WorkerLost)`` for the tasks a worker that died left unfinished.

    The workers do not inherit the caller's threads: a plain ``fork`` copies the caller's
    memory while its other threads (data-loader pins, streaming readers, onnxruntime or OpenMP
    pools, ...) may hold locks, and the children can deadlock on them. The ``forkserver`` start
    method forks workers from a clean server process instead; the server imports ``preload``
    once, so later pools start in milliseconds. ``spawn`` is the fallback where forkserver does
    not exist.

    The pool is ``concurrent.futures``': a ``multiprocessing.Pool`` whose worker is killed
    waits for its task for ever, so a build whose worker ran out of memory hung with no word.

    Args:
        function (callable): run on each task in a worker; picklable, as the tasks.
        tasks (Iterable): the tasks.
        workers (int): number of processes.
        preload (Sequence[str]): modules the workers need, imported once by the server.
        initializer (callable, optional): run in each worker at start.
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context('forkserver' if 'forkserver' in methods else 'spawn')
    if 'forkserver' in methods and preload:
        context.set_forkserver_preload(list(preload))
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context,
                                                  initializer=initializer)
    unfinished = []
    try:
        futures = {pool.submit(function, task): task for task in tasks}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except BrokenProcessPool:
                # a dead worker fails every task still pending, not only its own
                unfinished.append(futures[future])
                continue
            yield futures[future], result, None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    # each one again, alone: the task that kills its worker again is the one named
    for task in unfinished:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context,
                                                    initializer=initializer) as alone:
            try:
                result = alone.submit(function, task).result()
            except BrokenProcessPool as error:
                yield task, None, WorkerLost(
                    f'the worker process stopped before it finished (killed, or out of '
                    f'memory): {error}')
                continue
        yield task, result, None
