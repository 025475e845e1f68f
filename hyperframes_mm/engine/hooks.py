"""Hooks that make training reproducible across a kill and ``--resume``, and checkpoints that a
kill cannot break."""
import logging
import os
import os.path as osp
import random
from functools import partial
from typing import Optional

import numpy as np
import torch
from mmengine.dataset.utils import worker_init_fn as mmengine_worker_init_fn
from mmengine.hooks import CheckpointHook, Hook
from mmengine.logging import print_log

from mmaction.registry import HOOKS


def epoch_seed(seed: int, epoch: int, rank: int = 0) -> int:
    """The seed of one rank's training epoch: a hash of (run seed, epoch, rank).

    Hashed with numpy's ``SeedSequence`` rather than added, so that nearby seeds, epochs and
    ranks give unrelated streams (``seed + epoch`` would make run 0's epoch 1 run 1's epoch 0).

    Args:
        seed (int): the run's seed (``randomness.seed`` / ``--seed``), >= 0.
        epoch (int): the 0-based epoch about to start.
        rank (int): the process's global rank. Defaults to 0.

    Returns:
        int: a seed in [0, 2**32).
    """
    return int(np.random.SeedSequence([seed, epoch, rank]).generate_state(1)[0])


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global generator and torch (CPU and every GPU)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@HOOKS.register_module()
class EpochSeedHook(Hook):
    """Reseed every random generator at the start of each training epoch.

    mmengine's resume restores weights, optimizer, schedulers and the sampler's shuffle (a
    function of seed and epoch), but not the random generators that augmentation, frame
    sampling and dropout draw from: a resumed run continues from freshly seeded generators
    and diverges from the uninterrupted one. With this hook the generators at the start of
    epoch ``e`` are a function of (seed, e, rank) only, so a run resumed from the checkpoint
    of epoch ``e - 1`` replays epoch ``e`` exactly; validation between epochs no longer shifts
    the training stream either.

    Dataloader workers (``num_workers > 0``) are seeded by mmengine's ``worker_init_fn`` from
    the run seed, the same every epoch; the hook gives them the epoch's seed instead, so they
    too draw the same numbers after a resume (and new ones each epoch). Persistent workers keep
    their generators across epochs and cannot be reseeded: the hook warns about them.

    Enable it with ``default_hooks = dict(epoch_seed=dict(type='EpochSeedHook'))`` (or
    ``--cfg-options default_hooks.epoch_seed.type=EpochSeedHook``).
    """

    priority = 'VERY_HIGH'

    def before_train(self, runner) -> None:
        loader = runner.train_loop.dataloader
        if loader.num_workers > 0 and loader.persistent_workers:
            print_log('EpochSeedHook cannot reseed persistent dataloader workers: their random '
                      'draws after a resume will differ from an uninterrupted run. Set '
                      'persistent_workers=False for exact resumes.', logger='current',
                      level=logging.WARNING)

    def before_train_epoch(self, runner) -> None:
        seed = epoch_seed(runner.seed, runner.epoch, runner.rank)
        seed_everything(seed)
        loader = runner.train_loop.dataloader
        init_fn = loader.worker_init_fn
        if isinstance(init_fn, partial) and init_fn.func is mmengine_worker_init_fn:
            # Only mmengine's default is replaced: a user's own worker_init_fn is left alone.
            loader.worker_init_fn = partial(mmengine_worker_init_fn,
                                            **dict(init_fn.keywords, seed=seed))


@HOOKS.register_module()
class SafeCheckpointHook(CheckpointHook):
    """mmengine's ``CheckpointHook`` in an order that a kill cannot break: save the new
    checkpoint, point ``last_checkpoint`` at it, then delete the oldest one.

    The stock hook deletes the oldest checkpoint (beyond ``max_keep_ckpts``) *before* it writes
    the new one and writes ``last_checkpoint`` with a bare ``open(..., 'w')``: a kill in between
    leaves ``last_checkpoint`` naming a deleted file, or empty. Here ``last_checkpoint`` is
    replaced atomically once the checkpoint is complete, and the checkpoint itself is written
    through whatever ``backend_args`` names (``dict(backend='atomic_local')`` for atomic files:
    :class:`~hyperframes_mm.engine.checkpoint.AtomicLocalBackend`). Every argument is
    ``CheckpointHook``'s.
    """

    def before_train(self, runner) -> None:
        super().before_train(runner)
        from mmengine.fileio import LocalBackend

        from ..utils.paths import remove_orphan_temps
        if not isinstance(self.file_backend, LocalBackend):
            return
        # a save killed before its rename leaves a hidden file as large as a checkpoint, which
        # no later save replaces (the next one is another process's)
        removed = [path for folder in sorted({self.out_dir, runner.work_dir})
                   if osp.isdir(folder) for path in remove_orphan_temps(folder)]
        if removed:
            runner.logger.warning(f'removed {len(removed)} temporary file(s) that a killed save '
                                  f'left: {", ".join(map(str, removed))}')

    def _save_checkpoint_with_step(self, runner, step, meta, this_rank: bool = False):
        """mmengine's save from rank 0, or with ``this_rank`` from this rank whatever it is
        (a rank whose validation failed while rank 0 waits in the gather,
        :class:`~hyperframes_mm.engine.runner.HyperframeRunner`): through the save
        ``Runner.save_checkpoint`` wraps in ``master_only``, to a name of this rank's renamed
        into place, since rank 0 may be saving the same step (a local ``out_dir`` only)."""
        from mmengine.dist import is_main_process
        from mmengine.runner import Runner
        from ..utils.paths import host_temp_name
        from .checkpoint import write_text_atomically
        ckpt_filename = self.filename_tmpl.format(step)
        self.last_ckpt = self.file_backend.join_path(self.out_dir, ckpt_filename)
        runner.message_hub.update_info('last_ckpt', self.last_ckpt)
        # the kept steps are counted before the save, so that the checkpoint records itself
        # among them (as the stock hook's do: a run resumed from it prunes it in its turn);
        # the file they push out goes only after the new one is complete
        oldest = self._keep(runner, step)
        options = dict(save_optimizer=self.save_optimizer,
                       save_param_scheduler=self.save_param_scheduler, meta=meta,
                       by_epoch=self.by_epoch, backend_args=self.backend_args, **self.args)
        if this_rank:
            partial = str(host_temp_name(self.last_ckpt))
            try:
                Runner.save_checkpoint.__wrapped__(runner, self.out_dir, osp.basename(partial),
                                                   self.file_client_args, **options)
                os.replace(partial, self.last_ckpt)
            finally:
                if osp.exists(partial):
                    os.remove(partial)
        else:
            runner.save_checkpoint(self.out_dir, ckpt_filename, self.file_client_args,
                                   **options)
        if this_rank or is_main_process():
            write_text_atomically(self.last_ckpt, osp.join(runner.work_dir, 'last_checkpoint'))
            if oldest is not None:
                self._remove(oldest)

    def _keep(self, runner, step) -> Optional[int]:
        """Count ``step`` among the newest ``max_keep_ckpts`` checkpoints (the stock hook's
        bookkeeping); returns the step it pushes out, None when none."""
        if self.max_keep_ckpts <= 0 or (self.keep_ckpt_ids and self.keep_ckpt_ids[-1] == step):
            return None
        # keep_ckpt_ids is a deque bounded at max_keep_ckpts: take the oldest out before the
        # append would drop it unseen
        oldest = (self.keep_ckpt_ids.popleft()
                  if len(self.keep_ckpt_ids) == self.max_keep_ckpts else None)
        self.keep_ckpt_ids.append(step)
        runner.message_hub.update_info('keep_ckpt_ids', list(self.keep_ckpt_ids))
        return oldest

    def _remove(self, step) -> None:
        path = self.file_backend.join_path(self.out_dir, self.filename_tmpl.format(step))
        if self.file_backend.isfile(path):
            self.file_backend.remove(path)
        elif self.file_backend.isdir(path):  # DeepSpeed saves a checkpoint as a directory
            self.file_backend.rmtree(path)
