"""Hooks that make training reproducible across a kill and ``--resume``."""
import logging
import random
from functools import partial

import numpy as np
import torch
from mmengine.dataset.utils import worker_init_fn as mmengine_worker_init_fn
from mmengine.hooks import Hook
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
