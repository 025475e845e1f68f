"""A training list whose last batch holds one sample (or a batch size of 1), checked before
the first epoch.

A batch norm in training mode standardises each channel over the batch and the feature map; a
batch of one sample whose last stage is 1x1 (a ResNet at 32x32 input) gives it one value a
channel, and torch raises at the last step of the first epoch, with nothing saved and nothing
naming the list or the batch size. mmengine's loader keeps that last batch unless
``drop_last=True``, so a config carried to a list of ``16 * k + 1`` samples failed after a whole
epoch. Whether a model fails on one sample depends on its input size and layers, so the hook
tries one: only where the last batch holds one sample, one forward pass in training mode with
gradients off, ahead of every other hook's ``before_train`` (int8-aware fine-tuning attaches its
rounding there), with the model's buffers (the norms' running statistics), each module's mode
and the random generators put back after it, so that the run trains as it would have.

Under distributed training every rank decides alike: a synchronised batch norm all-reduces in
the probe's forward pass, so a probe run on one rank only would wait forever for the others.
Ranks whose epochs hold different numbers of steps (mmengine's sampler with
``round_up=False`` on a list the world size does not divide) are refused for the same reason:
the extra step's gradient all-reduce would never be met.
"""
import math
import random
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple

import numpy as np
import torch
from mmaction.registry import HOOKS
from mmengine.dist import all_gather_object, get_world_size
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmengine.runner import EpochBasedTrainLoop

#: what torch's batch norms (and the plugin's CPU-synchronised one) say of a batch of one
#: value a channel
ONE_VALUE = 'more than 1 value per channel'


def epoch_share(dataloader) -> Optional[Tuple[int, int, bool]]:
    """``(samples, batch size, drop_last)`` of this process's share of a training epoch; None
    for a loader without a batch sampler, a batch size or a finite sampler."""
    batch_sampler = getattr(dataloader, 'batch_sampler', None)
    size = getattr(dataloader, 'batch_size', None)
    if batch_sampler is None or not size:
        return None
    try:
        samples = len(dataloader.sampler)
    except TypeError:  # an infinite sampler has no last batch
        return None
    return samples, size, bool(getattr(batch_sampler, 'drop_last', False))


def steps(share: Tuple[int, int, bool]) -> int:
    """The training steps an epoch of that share takes."""
    samples, size, drop_last = share
    return samples // size if drop_last else math.ceil(samples / size)


def holds_one(share: Tuple[int, int, bool]) -> bool:
    """Whether an epoch of that share has a batch of one sample: its last, or every batch."""
    samples, size, drop_last = share
    return size == 1 or (not drop_last and samples % size == 1)


@HOOKS.register_module()
class LastBatchHook(Hook):
    """Before training, refuse a training list whose last batch of one sample the model
    cannot train on (registered by :class:`~hyperframes_mm.engine.runner.HyperframeRunner`)."""

    priority = 'HIGHEST'

    def before_train(self, runner) -> None:
        if not isinstance(runner.train_loop, EpochBasedTrainLoop):
            return
        share = epoch_share(runner.train_dataloader)
        world = get_world_size()
        shares: List = all_gather_object(share) if world > 1 else [share]
        if None in shares:
            return
        if len({steps(each) for each in shares}) > 1:
            ranks = ', '.join(f'rank {rank}: {each[0]} samples, {steps(each)} steps'
                              for rank, each in enumerate(shares))
            raise ValueError(
                f'the ranks would run different numbers of training steps an epoch ({ranks}): '
                'the extra step\'s gradient all-reduce would wait forever for the ranks that '
                'have none. Set train_dataloader.sampler.round_up=True (mmengine\'s default: '
                'every rank gets as many samples), or a list the world size divides.')
        empty = next((rank for rank, each in enumerate(shares) if steps(each) == 0), None)
        if empty is not None:
            samples, size, _ = shares[empty]
            where = f' on rank {empty}' if world > 1 else ''
            # mmengine's loop runs such an epoch without a word, validates the untrained model
            # and saves it as each epoch's checkpoint, exit 0
            if not samples:
                raise ValueError(f'the training list gives no sample an epoch (per '
                                 f'process){where}: every epoch would train no step and save '
                                 'the untrained model. Give the training list samples.')
            raise ValueError(
                f'the training list gives {samples} samples an epoch (per process){where}, '
                f'fewer than one batch of {size}, and drop_last=True drops them: every epoch '
                f'would train no step and save the untrained model. Set a batch size of at most '
                f'{samples}, or drop_last=False.')
        single = [rank for rank, each in enumerate(shares) if holds_one(each)]
        if not single:
            return
        # every rank tries the sample, where only one rank's last batch holds one: a
        # synchronised norm's all-reduce in the forward pass is then met on every rank. The
        # sample is read first and every rank hears whether all read theirs, so a rank whose
        # read fails does not leave the others waiting in that all-reduce; a forward pass that
        # fails otherwise on one rank (out of memory, say) is heard the same way after it, so
        # the others do not wait in the gather of the results (inside a synchronised norm they
        # still can: its all-reduce comes before any word)
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        with kept_state(model):
            try:
                batch, unread = one_sample(runner.train_dataloader), None
            except Exception as error:
                batch, unread = None, error
            reads = all_gather_object(repr(unread) if unread else None) \
                if world > 1 else [None]
            if unread is not None:
                raise unread
            failed = next((rank for rank, read in enumerate(reads) if read), None)
            if failed is not None:
                raise RuntimeError(f'the one-sample check before training could not read its '
                                   f'sample on rank {failed} ({reads[failed]})')
            try:
                error, crashed = one_sample_error(model, batch), None
            except Exception as failure:  # not the norm's want of values: out of memory, say
                error, crashed = None, failure
        gathered = all_gather_object((error, repr(crashed) if crashed else None)) \
            if world > 1 else [(error, None)]
        if crashed is not None:
            raise crashed
        failed = next((rank for rank, (_, text) in enumerate(gathered) if text), None)
        if failed is not None:
            raise RuntimeError(f'the one-sample check before training failed on rank {failed} '
                               f'({gathered[failed][1]})')
        errors = [each for each, _ in gathered]
        rank = next((rank for rank in single if errors[rank] is not None), None)
        if rank is None:
            return
        samples, size, _ = shares[rank]
        where = f' on rank {rank}' if world > 1 else ''
        if size == 1:
            raise ValueError(
                f'train_dataloader.batch_size is 1{where}, and the model cannot train on one '
                f'sample: its batch norm says "{errors[rank]}". It would fail at the first '
                'step. Set a batch size of 2 or more.')
        # with no full batch, drop_last=True would leave an epoch of no step
        fix = ('Train on more samples: no batch size gives this list two a batch.'
               if samples == 1 else
               'Set train_dataloader.drop_last=True (one sample an epoch is skipped, another '
               'each epoch when shuffled), or a batch size that leaves no single sample.')
        raise ValueError(
            f'the training list gives {samples} samples an epoch (per process){where}, '
            f'{samples // size} batches of {size} and a last batch of 1 sample, and the '
            f'model cannot train on one sample: its batch norm says "{errors[rank]}". It '
            f'would fail at the last step of the first epoch, with nothing saved. {fix}')


@contextmanager
def kept_state(model) -> Iterator[None]:
    """Put back the model's buffers (the norms' running statistics), each module's mode and the
    random generators on leaving, whatever ran inside."""
    generators = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
                  torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
    saved = [buffer.clone() for buffer in model.buffers()]
    modes = [(module, module.training) for module in model.modules()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in zip(model.buffers(), saved):
                buffer.copy_(value)
        for module, training in modes:
            module.training = training
        random.setstate(generators[0])
        np.random.set_state(generators[1])
        torch.set_rng_state(generators[2])
        if generators[3] is not None:
            torch.cuda.set_rng_state_all(generators[3])


def one_sample(dataloader):
    """A batch of the loader's first sample, as the loader collates it."""
    return dataloader.collate_fn([dataloader.dataset[0]])


def one_sample_error(model, batch) -> Optional[str]:
    """torch's message where ``batch`` fails in training mode for a batch norm's want of
    values; None where it trains (call inside :func:`kept_state`)."""
    try:
        model.train()
        with torch.no_grad():
            model(**model.data_preprocessor(batch, True), mode='loss')
    except ValueError as error:
        if ONE_VALUE not in str(error).lower():
            raise
        return str(error)
    return None
