"""A training list whose last batch holds one sample, checked before the first epoch.

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
"""
import random
from typing import Optional, Tuple

import numpy as np
import torch
from mmaction.registry import HOOKS
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmengine.runner import EpochBasedTrainLoop

#: torch's batch norm message for a batch of one value a channel
ONE_VALUE = 'Expected more than 1 value per channel when training'


def single_sample_batch(dataloader) -> Optional[Tuple[int, int]]:
    """``(samples, batch size)`` of a loader whose last batch of each epoch holds one sample
    (per process: the sampler's share), else None."""
    batch_sampler = getattr(dataloader, 'batch_sampler', None)
    size = getattr(dataloader, 'batch_size', None)
    if batch_sampler is None or getattr(batch_sampler, 'drop_last', False) or not size or \
            size < 2:
        return None
    try:
        samples = len(dataloader.sampler)
    except TypeError:  # an infinite sampler has no last batch
        return None
    return (samples, size) if samples % size == 1 else None


@HOOKS.register_module()
class LastBatchHook(Hook):
    """Before training, refuse a training list whose last batch of one sample the model
    cannot train on (registered by :class:`~hyperframes_mm.engine.runner.HyperframeRunner`)."""

    priority = 'HIGHEST'

    def before_train(self, runner) -> None:
        if not isinstance(runner.train_loop, EpochBasedTrainLoop):
            return
        found = single_sample_batch(runner.train_dataloader)
        if found is None:
            return
        samples, size = found
        error = self._one_sample_error(runner)
        if error is not None:
            raise ValueError(
                f'the training list gives {samples} samples an epoch (per process), '
                f'{samples // size} batches of {size} and a last batch of 1 sample, and the '
                f'model cannot train on one sample: its batch norm says "{error}". It would '
                'fail at the last step of the first epoch, with nothing saved. Set '
                'train_dataloader.drop_last=True (one sample an '
                'epoch is skipped, another each epoch when shuffled), or a batch size that '
                'leaves no single sample.')

    @staticmethod
    def _one_sample_error(runner) -> Optional[str]:
        """torch's message where a batch of the first training sample fails in training mode
        for a batch norm's want of values; None where it trains."""
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        dataloader = runner.train_dataloader
        generators = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
                      torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
        saved = [buffer.clone() for buffer in model.buffers()]
        modes = [(module, module.training) for module in model.modules()]
        try:
            batch = dataloader.collate_fn([dataloader.dataset[0]])
            model.train()
            with torch.no_grad():
                model(**model.data_preprocessor(batch, True), mode='loss')
        except ValueError as error:
            if ONE_VALUE not in str(error):
                raise
            return str(error)
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
        return None
