"""Hooks and a model the engine tests load into training subprocesses (``custom_imports``).

They make real failures happen at exact points of a real run: a SIGKILL in the middle of an
epoch, and each rank's final weights written out so ranks can be compared; a float64
recognizer makes runs that should compute the same function comparable beyond rounding.
"""
import os
import signal

import torch
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmaction.models.recognizers import Recognizer2D
from mmaction.registry import HOOKS, MODELS


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


@MODELS.register_module()
class Float64Recognizer2D(Recognizer2D):
    """``Recognizer2D`` with float64 parameters, buffers and inputs (``model.type=...``).

    For comparing two runs that compute the same function in a different order (two processes
    against one): in float32, a pre-activation within rounding of zero can land on different
    sides of a ReLU in the two runs, which routes a whole gradient element one way in one run and
    the other way in the other, and training amplifies that. In float64 such a coincidence is
    practically impossible, so runs agree to rounding and any larger difference is a real one.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.double()

    def forward(self, inputs: torch.Tensor, data_samples=None, mode: str = 'tensor'):
        # The data preprocessor normalises in float32.
        return super().forward(inputs.double(), data_samples, mode)


@MODELS.register_module()
class FailsOnOneSampleOnRankOne(Recognizer2D):
    """``Recognizer2D`` whose training forward pass of a single sample fails on rank 1 alone,
    as running out of memory there would."""

    def forward(self, inputs: torch.Tensor, data_samples=None, mode: str = 'tensor'):
        from mmengine.dist import get_rank
        if mode == 'loss' and self.training and inputs.shape[0] == 1 and get_rank() == 1:
            raise RuntimeError('rank 1 ran out of memory')
        return super().forward(inputs, data_samples, mode)
