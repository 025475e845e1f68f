"""Synchronised batch norm for multi-process training on the CPU (gloo).

torch's ``nn.SyncBatchNorm`` cannot run on the CPU: its statistics kernels
(``batch_norm_gather_stats_with_counts``) exist for CUDA only, its forward raises
"SyncBatchNorm expected input tensor to be on GPU", and DDP refuses to wrap a CPU module that
contains one ("SyncBatchNorm layers only work with GPU modules"). :class:`CPUSyncBatchNorm`
computes the same statistics over all ranks with two differentiable all-reduces, so the
gradient reaches every rank as with torch's layer. It is a ``_BatchNorm`` (``norm_eval`` and
``requires_grad`` handling in backbones see it as batch norm) but not an ``nn.SyncBatchNorm``.
:func:`convert_cpu_sync_batchnorm` swaps it in before DDP wraps a CPU model.
"""
from typing import Optional

import torch
from torch import nn
from torch.distributed import ProcessGroup, ReduceOp
from torch.nn.modules.batchnorm import _BatchNorm


class _AllReduceSum(torch.autograd.Function):
    """Sum a tensor over the ranks of a group; the gradient is summed over them too.

    Each rank's input contributes to every rank's output, so the gradient of the input is the
    sum of the output gradients of all ranks. (``torch.distributed.nn.functional.all_reduce``
    does the same but is deprecated.)
    """

    @staticmethod
    def forward(ctx, tensor: torch.Tensor, group: ProcessGroup) -> torch.Tensor:
        ctx.group = group
        tensor = tensor.clone()
        torch.distributed.all_reduce(tensor, op=ReduceOp.SUM, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        grad = grad_output.clone()
        torch.distributed.all_reduce(grad, op=ReduceOp.SUM, group=ctx.group)
        return grad, None


def all_reduce_sum(tensor: torch.Tensor, group: ProcessGroup) -> torch.Tensor:
    """Differentiable sum of ``tensor`` over the ranks of ``group``."""
    return _AllReduceSum.apply(tensor, group)


class CPUSyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics cover every rank's batch, over any backend.

    Same parameters, buffers and state dict keys as ``nn.BatchNorm2d`` / ``nn.SyncBatchNorm``.
    In training mode inside a process group it normalises with the mean and biased variance
    of the samples of all ranks together and updates ``running_var`` with the unbiased one,
    exactly as ``nn.BatchNorm`` would over the concatenated batch; in eval mode or outside a
    process group it is plain batch norm.

    Args:
        num_features (int): channels C of an (N, C, ...) input.
        eps (float): added to the variance. Defaults to 1e-5.
        momentum (float, optional): running-stats factor; None for a cumulative average.
            Defaults to 0.1.
        affine (bool): learn a per-channel scale and shift. Defaults to True.
        track_running_stats (bool): keep running mean and variance. Defaults to True.
        process_group (ProcessGroup, optional): ranks to synchronise; None for all.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Optional[ProcessGroup] = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_group = process_group

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f'expected at least 2D input (got {input.dim()}D input)')

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """Normalise ``input`` (N, C, ...) with statistics over every rank's batch."""
        if not (self.training and torch.distributed.is_available()
                and torch.distributed.is_initialized()):
            return super().forward(input)
        self._check_input_dim(input)
        group = self.process_group or torch.distributed.group.WORLD
        reduce_dims = [0] + list(range(2, input.dim()))
        shape = [1, -1] + [1] * (input.dim() - 2)
        count = input.new_tensor([input.numel() // input.size(1)])
        # Differentiable all-reduces: their backward sums the gradients of every rank's loss
        # with respect to the shared statistics, as torch's CUDA SyncBatchNorm does.
        sums = all_reduce_sum(torch.cat([input.sum(reduce_dims), count]), group)
        total = sums[-1]
        if total <= 1:
            raise ValueError(f'expected more than 1 value per channel over all ranks when '
                             f'training, got input size {tuple(input.size())}')
        mean = sums[:-1] / total
        centred = input - mean.view(shape)
        # Centred squares (not E[x^2] - E[x]^2) keep float32 precise when the mean is large.
        var = all_reduce_sum((centred * centred).sum(reduce_dims), group) / total
        output = centred * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            output = output * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats:
            self._update_running_stats(mean.detach(), var.detach() * total / (total - 1))
        return output

    @torch.no_grad()
    def _update_running_stats(self, mean: torch.Tensor, unbiased_var: torch.Tensor) -> None:
        self.num_batches_tracked.add_(1)
        if self.momentum is None:  # cumulative moving average, as nn.BatchNorm
            factor = 1.0 / self.num_batches_tracked.item()
        else:
            factor = self.momentum
        self.running_mean.mul_(1 - factor).add_(mean, alpha=factor)
        self.running_var.mul_(1 - factor).add_(unbiased_var, alpha=factor)


def convert_cpu_sync_batchnorm(module: nn.Module, include_batchnorm: bool = False,
                               process_group: Optional[ProcessGroup] = None) -> nn.Module:
    """Replace ``nn.SyncBatchNorm`` layers (and, optionally, every batch norm) in ``module``.

    Call it before the model is wrapped in DDP. The new layers take over the old ones'
    parameter objects (so ``requires_grad`` and optimizer references carry over), buffers
    and train/eval mode, as ``nn.SyncBatchNorm.convert_sync_batchnorm`` does.

    Args:
        module (nn.Module): the model or a layer.
        include_batchnorm (bool): convert plain ``BatchNorm1d/2d/3d`` too, as mmengine's
            ``sync_bn='torch'`` asks. Defaults to False (only ``nn.SyncBatchNorm``, which
            cannot run on the CPU).
        process_group (ProcessGroup, optional): ranks to synchronise; None for all.

    Returns:
        nn.Module: ``module`` itself with converted children, or the new layer when
        ``module`` is a batch norm layer.
    """
    converts = isinstance(module, nn.SyncBatchNorm) or (
        include_batchnorm and isinstance(module, _BatchNorm)
        and not isinstance(module, CPUSyncBatchNorm))
    output = module
    if converts:
        output = CPUSyncBatchNorm(module.num_features, module.eps, module.momentum,
                                  module.affine, module.track_running_stats, process_group)
        if module.affine:
            output.weight = module.weight
            output.bias = module.bias
        if module.track_running_stats:
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
        output.train(module.training)
        if hasattr(module, 'qconfig'):
            output.qconfig = module.qconfig
    for name, child in module.named_children():
        output.add_module(name, convert_cpu_sync_batchnorm(child, include_batchnorm,
                                                           process_group))
    return output


def count_cpu_sync_batchnorm(module: nn.Module) -> int:
    """How many :class:`CPUSyncBatchNorm` layers ``module`` contains."""
    return sum(isinstance(layer, CPUSyncBatchNorm) for layer in module.modules())
