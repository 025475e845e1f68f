"""A ``Conv2d`` that skips the kernel taps which only ever read zero padding.

A ResNet trained on small inputs (32x32 on the CPU, the synthetic benchmark) reaches its last
stage with 1x1 feature maps: there a 3x3 conv with padding 1 multiplies eight of its nine taps by
padding for every output, yet the convolution kernels still compute them; skipping those taps
shortens a CPU training step at such sizes (``benchmarks/bench_train_step.py`` times both). At
ImageNet sizes nothing is skipped, so it is opt-in (``conv_cfg``), not a default.
:class:`PadAwareConv2d` computes the same outputs from the taps that can touch the input only
(the output is mathematically identical; dead taps get the zero gradient they would get anyway),
and is a plain ``nn.Conv2d`` otherwise: same parameters, same state dict, same module type for
``isinstance``. Registered as ``'PadAwareConv2d'`` in mmengine's root registry, where mmcv's
own conv layers are, so ``conv_cfg=dict(type='PadAwareConv2d')`` builds it from any scope.
"""
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmengine.registry import MODELS


def live_taps(size: int, kernel: int, stride: int, padding: int,
              dilation: int) -> Optional[Tuple[int, int, int, int]]:
    """The kernel taps of one spatial axis that read the input for some output position.

    Returns ``(first, last, pad_before, pad_after)``: the first and last live tap and the
    padding (negative: cropping) that makes a convolution with taps ``first..last`` and no
    padding give the same outputs, or None when neither end of the kernel has a tap to skip
    (a dead tap between live ones is computed) or no tap reads the input at all.
    """
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    if out < 1 or padding == 0:  # without padding every tap reads the input at output 0
        return None
    live = [tap for tap in range(kernel) if _reads_input(tap * dilation - padding, size, out,
                                                          stride)]
    if not live or (live[0] == 0 and live[-1] == kernel - 1):
        return None
    first, last = live[0], live[-1]
    pad_before = padding - first * dilation
    span = (out - 1) * stride + (last - first) * dilation + 1
    return first, last, pad_before, span - size - pad_before


def _reads_input(offset: int, size: int, out: int, stride: int) -> bool:
    """Whether some output ``o < out`` reads ``o * stride + offset`` inside ``[0, size)``."""
    low = max(0, -offset)  # the multiples of stride in [low, high] are the outputs' positions
    high = min((out - 1) * stride, size - 1 - offset)
    return high >= low and (high // stride) * stride >= low


@MODELS.register_module()
class PadAwareConv2d(nn.Conv2d):
    """``nn.Conv2d`` that does not compute the taps that only ever see zero padding.

    Takes ``nn.Conv2d``'s arguments. Applies to zero padding (``padding_mode='zeros'``) and
    integer padding; anything else, and a model being traced or exported (whose graph must not
    depend on the traced input's size), runs ``nn.Conv2d.forward`` unchanged.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.padding_mode != 'zeros' or isinstance(self.padding, str) or x.dim() != 4
                or torch.jit.is_tracing() or torch.jit.is_scripting()
                or torch.onnx.is_in_onnx_export()):
            return super().forward(x)
        axes = [live_taps(x.shape[2 + axis], self.kernel_size[axis], self.stride[axis],
                          self.padding[axis], self.dilation[axis]) for axis in (0, 1)]
        if axes[0] is None and axes[1] is None:
            return super().forward(x)
        weight = self.weight
        pads = []
        for axis, taps in enumerate(axes):
            if taps is None:  # every tap of this axis is live: keep its padding
                taps = (0, self.kernel_size[axis] - 1, self.padding[axis], self.padding[axis])
            first, last, pad_before, pad_after = taps
            weight = weight.narrow(2 + axis, first, last - first + 1)
            pads.append((pad_before, pad_after))
        # F.pad lists the last axis first; negative amounts crop rows no live tap reads
        amounts = (pads[1][0], pads[1][1], pads[0][0], pads[0][1])
        if any(amounts):
            x = F.pad(x, amounts)
        return F.conv2d(x, weight, self.bias, self.stride, 0, self.dilation, self.groups)
