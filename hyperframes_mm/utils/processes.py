"""Worker pools that are safe to start from any process, threads and all."""
import multiprocessing
import multiprocessing.pool
from typing import Callable, Optional, Sequence


def worker_pool(workers: int, preload: Sequence[str] = (),
                initializer: Optional[Callable[[], None]] = None) -> multiprocessing.pool.Pool:
    """A process pool whose workers do not inherit the caller's threads.

    A plain ``fork`` copies the caller's memory while its other threads (data-loader pins,
    streaming readers, onnxruntime or OpenMP pools, ...) may hold locks, and the children can
    deadlock on them. The ``forkserver`` start method forks workers from a clean server process
    instead; the server imports ``preload`` once, so later pools start in milliseconds.
    ``spawn`` is the fallback where forkserver does not exist.

    Args:
        workers (int): number of processes.
        preload (Sequence[str]): modules the workers need, imported once by the server.
        initializer (callable, optional): run in each worker at start.
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context('forkserver' if 'forkserver' in methods else 'spawn')
    if 'forkserver' in methods and preload:
        context.set_forkserver_preload(list(preload))
    return context.Pool(workers, initializer=initializer)
