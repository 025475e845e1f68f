"""Hooks the engine tests load into training subprocesses (``custom_imports``).

They make real failures happen at exact points of a real run: a SIGKILL in the middle of an
epoch, and each rank's final weights written out so ranks can be compared.
"""
import os
import signal

import torch
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmaction.registry import HOOKS


@HOOKS.register_module()
class SigkillHook(Hook):
    """Kill the process with SIGKILL (no cleanup, no atexit) after one training iteration.

    Args:
        epoch (int): 1-based epoch of the iteration.
        iteration (int): 1-based iteration within that epoch.
    """

    priority = 'LOWEST'  # after the logger has recorded the iteration

    def __init__(self, epoch: int, iteration: int) -> None:
        self.epoch = epoch
        self.iteration = iteration

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.epoch + 1 == self.epoch and batch_idx + 1 == self.iteration:
            os.kill(os.getpid(), signal.SIGKILL)


@HOOKS.register_module()
class SaveRankWeightsHook(Hook):
    """Write this rank's final model state to ``<work_dir>/rank<R>_weights.pth``."""

    def after_train(self, runner) -> None:
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        torch.save(model.state_dict(), os.path.join(runner.work_dir,
                                                    f'rank{runner.rank}_weights.pth'))
