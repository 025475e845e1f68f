"""Multi-process training without a GPU, and a rank-0-first helper for one-off preparation.

mmengine 0.10.7's ``pytorch`` launcher (``torchrun``, ``tools/dist_train.sh``) cannot start on
a machine without CUDA: ``_init_dist_pytorch`` calls ``torch.cuda.set_device`` unconditionally,
configs ask for the GPU-only ``nccl`` backend, and ``Runner.wrap_model`` builds DDP with
``device_ids=[LOCAL_RANK]``, which DDP rejects for a CPU module. The functions here are what
:class:`~hyperframes_mm.engine.runner.HyperframeRunner` does instead, only when no accelerator
is present: :func:`init_cpu_process_group` starts the process group without ``set_device``, with
``gloo`` for ``nccl``, and :func:`wrap_cpu_model` wraps the model with ``device_ids=None``; on a
GPU machine the runner calls mmengine's code unchanged. torch's ``SyncBatchNorm`` refuses CPU
tensors (and DDP refuses CPU models containing it), so on CPU its layers, or every batch norm
with ``sync_bn='torch'``, become :class:`~hyperframes_mm.engine.sync_bn.CPUSyncBatchNorm` before
the model is wrapped.
"""
import atexit
import copy
import datetime
import os
import time
from contextlib import contextmanager
from typing import Iterator, Optional

from .sync_bn import convert_cpu_sync_batchnorm, count_cpu_sync_batchnorm


def accelerator_available() -> bool:
    """Whether mmengine puts models on an accelerator (CUDA, NPU, MLU, MUSA, MPS)."""
    from mmengine.device import get_device
    return get_device() != 'cpu'


def init_cpu_process_group(backend: str = 'gloo', **kwargs) -> None:
    """Start the default process group of a ``torchrun`` process on a machine without GPUs.

    mmengine's ``_init_dist_pytorch`` minus ``torch.cuda.set_device``: ``env://`` reads
    ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``, which torchrun sets.

    Args:
        backend (str): the config's ``env_cfg.dist_cfg.backend``; ``nccl`` needs CUDA, so it
            becomes ``gloo``, torch's CPU backend for the same collectives.
        **kwargs: the rest of ``dist_cfg``, for ``init_process_group``; ``timeout`` in
            seconds, as mmengine's ``init_dist`` reads it (torch takes a ``timedelta``).
    """
    from mmengine.logging import print_log
    from torch import distributed as torch_dist
    timeout = kwargs.get('timeout')
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f'env_cfg.dist_cfg.timeout: {timeout!r} is not a number of seconds '
                            '(e.g. dist_cfg=dict(backend=\'gloo\', timeout=7200))')
        if timeout <= 0:
            raise ValueError(f'env_cfg.dist_cfg.timeout: {timeout!r} seconds; it must be > 0')
        kwargs['timeout'] = datetime.timedelta(seconds=timeout)
    if backend == 'nccl':
        print_log('no GPU: the process group uses the gloo backend instead of nccl',
                  logger='current')
        backend = 'gloo'
    torch_dist.init_process_group(backend=backend, **kwargs)
    # A process that ends with its gloo group alive tears the group down during interpreter
    # finalisation, where a worker thread still holding tensors aborts the process
    # ("terminate called without an active exception", SIGABRT) after a finished run: the
    # group goes while the interpreter is whole. gloo's teardown is local to the process, so
    # it waits for no other rank.
    atexit.register(_destroy_process_group)


def _destroy_process_group() -> None:
    from torch import distributed as torch_dist
    if torch_dist.is_available() and torch_dist.is_initialized():
        torch_dist.destroy_process_group()


def cpu_model_wrapper_cfg(model_wrapper_cfg: Optional[dict],
                          find_unused_parameters: bool = False) -> dict:
    """The ``model_wrapper_cfg`` that wraps a CPU model in DDP: ``device_ids=None``.

    Args:
        model_wrapper_cfg (dict, optional): the config's ``model_wrapper_cfg``; None means the
            runner's default ``MMDistributedDataParallel(broadcast_buffers=False)``.
            A wrapper type that is not a ``DistributedDataParallel`` gets no ``device_ids``.
        find_unused_parameters (bool): the config's ``find_unused_parameters``, used when
            ``model_wrapper_cfg`` is None, as the runner does. Defaults to False.

    Returns:
        dict: a new config; an explicit ``device_ids`` in ``model_wrapper_cfg`` is kept.
    """
    if model_wrapper_cfg is None:
        return dict(type='MMDistributedDataParallel', device_ids=None, broadcast_buffers=False,
                    find_unused_parameters=find_unused_parameters)
    from mmengine.registry import MODEL_WRAPPERS
    from torch.nn.parallel import DistributedDataParallel
    cfg = copy.deepcopy(dict(model_wrapper_cfg))
    cfg.setdefault('type', 'MMDistributedDataParallel')
    wrapper = MODEL_WRAPPERS.get(cfg['type'])
    if isinstance(wrapper, type) and issubclass(wrapper, DistributedDataParallel):
        cfg.setdefault('device_ids', None)
    return cfg


def converts_every_batchnorm(sync_bn: Optional[str]) -> bool:
    """Whether the config's ``sync_bn`` asks for every batch norm to be synchronised on CPU.

    Args:
        sync_bn (str, optional): the config's top-level ``sync_bn``: None (only layers built
            as ``SyncBN`` synchronise) or ``'torch'`` (every batch norm does).

    Raises:
        ValueError: for ``'mmcv'``, whose SyncBN is a compiled CUDA op.
    """
    if sync_bn not in (None, 'torch'):
        raise ValueError(f"sync_bn={sync_bn!r} needs mmcv's compiled CUDA ops; without a GPU use "
                         "sync_bn='torch' or norm_cfg=dict(type='SyncBN').")
    return sync_bn == 'torch'


def wrap_cpu_model(runner, model_wrapper_cfg: Optional[dict], model):
    """The distributed branch of mmengine's ``Runner.wrap_model`` for a CPU model: its SyncBN
    conversion and its DDP defaults both only work on GPUs.

    Args:
        runner (Runner): the runner (its config's ``sync_bn`` and ``find_unused_parameters``,
            its logger).
        model_wrapper_cfg (dict, optional): the config's ``model_wrapper_cfg``.
        model (nn.Module): the model, not yet wrapped.
    """
    from mmengine.registry import MODEL_WRAPPERS
    model = convert_cpu_sync_batchnorm(
        model.to('cpu'), include_batchnorm=converts_every_batchnorm(runner.cfg.get('sync_bn')))
    converted = count_cpu_sync_batchnorm(model)
    if converted:
        runner.logger.info(f'no GPU: {converted} SyncBN layers synchronise over '
                           f'{_process_group_backend()} (CPUSyncBatchNorm)')
    cfg = cpu_model_wrapper_cfg(model_wrapper_cfg,
                                runner.cfg.get('find_unused_parameters', False))
    return MODEL_WRAPPERS.build(cfg, default_args=dict(module=model))


def _process_group_backend() -> str:
    """The default process group's backend (``gloo`` on CPU)."""
    from torch import distributed as torch_dist
    return str(torch_dist.get_backend())


def _is_leader(local: bool) -> bool:
    from mmengine.dist import get_rank
    if local:
        # torchrun and mmengine's slurm launcher both export LOCAL_RANK.
        return int(os.environ.get('LOCAL_RANK', get_rank())) == 0
    return get_rank() == 0


@contextmanager
def main_process_first(local: bool = False, what: str = 'preparation',
                       ahead: Optional[str] = None) -> Iterator[None]:
    """Run the block on rank 0 first; the other ranks run it once rank 0 has finished.

    For one-off work that every rank needs but only one should do: writing a dataset,
    building a frame cache, downloading. Rank 0 does it; the others then run the same block
    and find the result in place (the work must notice that it is already done). If rank 0
    fails, the other ranks raise instead of waiting for ever. Outside a process group (plain
    ``python``, one process) the block just runs.

    Args:
        local (bool): let local rank 0 of every node go first, for node-local storage. Defaults
            to False (global rank 0, for a shared file system).
        what (str): what the block does, for the error message. Defaults to 'preparation'.
        ahead (str, optional): how to do the block's work before the run, for the message of
            a wait that outlasts the process group's timeout. Defaults to None.

    Raises:
        RuntimeError: on the waiting ranks, naming the ranks whose block failed.
        TimeoutError: on the waiting ranks, when the block outlasts the process group's
            timeout (the collective they wait in is bounded by it), naming ``what``, the
            timeout and the ways out (:func:`_waited_too_long`).

    Example:
        >>> with main_process_first(what='frame cache'):
        ...     build_frame_cache(videos, cache_dir)  # skips clips already cached
    """
    from mmengine.dist import all_gather_object, get_rank, get_world_size, is_distributed
    if not is_distributed() or get_world_size() == 1:
        yield
        return
    if _is_leader(local):
        try:
            yield
        except BaseException as error:
            all_gather_object(f'{type(error).__name__}: {error}')
            raise
        try:
            all_gather_object(None)
        except RuntimeError as error:
            # gloo says "Connection closed by peer ... a remote worker crashing": this rank's
            # log, the one read first, named neither the block nor the waiting ranks' timeout
            timeout = _group_timeout()
            limit = f'{timeout:g} s' if timeout is not None else 'its timeout'
            raise RuntimeError(
                f'rank {get_rank()} finished {what}, and the ranks waiting for it were gone: '
                'their logs say why; a wait longer than the process group allows '
                f'({limit}, env_cfg.dist_cfg.timeout) ends them so') from error
        return
    started = time.monotonic()
    try:
        gathered = all_gather_object(None)
    except RuntimeError as error:  # torch's DistBackendError and gloo's errors are these
        timed_out = _waited_too_long(error, what, ahead, time.monotonic() - started)
        if timed_out is None:
            raise
        raise timed_out from error
    failures = [(rank, message) for rank, message in enumerate(gathered)
                if message is not None]
    if failures:
        raise RuntimeError(f'rank {get_rank()} did not run {what}: it failed on ' + '; '.join(
            f'rank {rank} ({message})' for rank, message in failures))
    yield


def _group_timeout() -> Optional[float]:
    """The default process group's timeout in seconds (``env_cfg.dist_cfg.timeout``, or
    torch's default), or None where this torch does not tell it."""
    from torch.distributed import distributed_c10d
    try:
        group = distributed_c10d._get_default_group()
        return group._get_backend(group._device_types[0]).options._timeout.total_seconds()
    except (AttributeError, IndexError, RuntimeError, ValueError):
        return None


def _waited_too_long(error: RuntimeError, what: str, ahead: Optional[str],
                     waited: float) -> Optional[TimeoutError]:
    """The error a waiting rank of :func:`main_process_first` raises when its collective gave
    up (``error``, after ``waited`` seconds) because rank 0's block outlasted the process
    group's timeout, or None for any other failure: gloo says only "Timed out waiting 400ms
    for send operation", which names neither the work rank 0 was doing nor the setting."""
    from mmengine.dist import get_rank
    timeout = _group_timeout()
    if not ((timeout is not None and waited >= timeout) or 'timed out' in str(error).lower()):
        return None
    limit = f'{timeout:g} s' if timeout is not None else 'its timeout'
    before = f'Do the work before the run ({ahead})' if ahead else 'Do the work before the run'
    return TimeoutError(
        f'rank {get_rank()} waited for rank 0 to finish {what} longer than the process group '
        f'allows, {limit} (env_cfg.dist_cfg.timeout), and stopped. {before}, or raise '
        f'env_cfg.dist_cfg.timeout (seconds) above the time {what} takes: --cfg-options '
        'env_cfg.dist_cfg.timeout=7200')
