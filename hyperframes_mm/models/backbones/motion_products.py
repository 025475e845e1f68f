"""Motion products: give the first layer the sign of motion, which frame differences lack.

A frame difference says *where* something changed, not *which way* it moved: an object moving
right and one moving left leave the same pair of blobs, with signs set by its colour against
the background. The direction is in the product of the temporal difference with the spatial
gradient: under brightness constancy ``I_t = -(v_x I_x + v_y I_y)``, so ``I_t * I_x`` and
``I_t * I_y`` (the right-hand side Lucas-Kanade solves for the flow) are negative along the
direction of motion, whatever the colours. A first convolution is linear in its input, so it
cannot form these products; the layers after it can only approximate them from ReLUs, slowly
and at the resolution left after the stem. On the synthetic benchmark most of a hyperframe
model's errors are exactly such sign errors (left vs right, approach vs recede).

:class:`MotionProducts` computes, for each pair of consecutive frames, the two products summed
over colour channels, and maps these ``2 (T - 1)`` maps with a small convolution (3x3, the stem
conv's stride) to the stem conv's output channels, where they are added to it. Its kernel starts
at zero and identical frames give zero products, so a model built with it computes exactly what
it computes without it until it is trained, and T identical frames still give the 2D output.
Cost: one small conv at the stem's stride and a few element-wise passes at full resolution;
the model-zoo tables and ``benchmarks/`` give its FLOPs and latency beside the models without.
"""
import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from torch import nn

from .inflate import reinflate_conv_weight, set_conv_weight


def motion_product_maps(frames: torch.Tensor) -> torch.Tensor:
    """``[N, T, C, H, W]`` frames -> ``[N, 2(T-1), H, W]`` products ``I_t I_x``, ``I_t I_y``.

    For consecutive frames ``a``, ``b``: ``I_t = b - a`` and the spatial gradient is the
    central difference (edges replicated) of their mean ``(a + b) / 2``; each product is summed
    over the colour channels. Channel ``2j`` is the x product of pair ``j``, ``2j + 1`` its
    y product.
    """
    num, frame_count, channels, height, width = frames.shape
    temporal = frames[:, 1:] - frames[:, :-1]
    mean = (0.5 * (frames[:, 1:] + frames[:, :-1])).flatten(0, 1)
    padded = F.pad(mean, (1, 1, 1, 1), mode='replicate')
    grad_x = 0.5 * (padded[..., 1:-1, 2:] - padded[..., 1:-1, :-2])
    grad_y = 0.5 * (padded[..., 2:, 1:-1] - padded[..., :-2, 1:-1])
    pairs = frame_count - 1
    grad_x = grad_x.reshape(num, pairs, channels, height, width)
    grad_y = grad_y.reshape(num, pairs, channels, height, width)
    products = torch.stack([(temporal * grad_x).sum(2), (temporal * grad_y).sum(2)], dim=2)
    return products.reshape(num, 2 * pairs, height, width)


class MotionProducts(BaseModule):
    """Add a learnt map of the motion products (:func:`motion_product_maps`) to the stem conv.

    Reads the hyperframe's frames (before any input encoding), forms the products and convolves
    them with a zero-initialised 3x3 kernel at the stem conv's stride. Its output has the stem
    conv's output shape. The number of frame pairs is the kernel's input channels / 2.

    Args:
        num_frames (int): T (at least 2).
        stem_conv (nn.Conv2d): the backbone's first conv; its output channels and stride are
            copied, and its padding must keep ``'same'`` geometry (odd kernel, padding
            ``(k - 1) // 2 * dilation``) so that both outputs have the same size.
        channels_per_frame (int): C. Defaults to 3.
    """

    def __init__(self, num_frames: int, stem_conv: nn.Conv2d, channels_per_frame: int = 3) -> None:
        super().__init__()
        check_pairs(num_frames)
        kernel, padding, dilation = stem_conv.kernel_size, stem_conv.padding, stem_conv.dilation
        if isinstance(padding, str) or any(
                k % 2 == 0 or p != (k - 1) // 2 * d for k, p, d in zip(kernel, padding, dilation)):
            raise ValueError(f'motion_products needs a stem conv with "same" padding, got '
                             f'kernel {kernel}, padding {padding}, dilation {dilation}')
        self.channels_per_frame = channels_per_frame
        self.conv = nn.Conv2d(2 * (num_frames - 1), stem_conv.out_channels, 3,
                              stride=stem_conv.stride, padding=1, bias=False)
        self._zero_kernel()

    def _zero_kernel(self) -> None:
        nn.init.zeros_(self.conv.weight)

    def init_weights(self) -> None:
        """Restore the zero start, whatever a parent's ``init_cfg`` did to the conv."""
        super().init_weights()
        self._zero_kernel()

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """Hyperframe frames ``[N, C*T, H, W]`` (frame-major, not encoded) -> ``[N, out, h, w]``."""
        num, _, height, width = frames.shape
        clip = frames.reshape(num, -1, self.channels_per_frame, height, width)
        return self.conv(motion_product_maps(clip))

    def reinflate(self, num_frames: int) -> None:
        """Follow the backbone to ``num_frames`` (T' >= 2): the kernel is resampled over the
        frame pairs like the first conv over frames (area interpolation, temporal sum kept)."""
        check_pairs(num_frames, 'cannot re-inflate to')
        set_conv_weight(self.conv, reinflate_conv_weight(self.conv.weight, num_frames - 1,
                                                         channels_per_frame=2))


def check_pairs(num_frames: int, what: str = 'got') -> None:
    if num_frames < 2:
        raise ValueError(f'motion_products needs at least 2 frames, {what} num_frames='
                         f'{num_frames}')
