"""Inflate a 2D network's first convolution from 3 to 3T input channels.

One function serves every backbone (ResNet conv1, MobileNetV3 stem, ViT patch embedding): all of
them are a conv weight of shape ``[out, 3, *kernel]``. Channel order of the inflated weight is
frame-major, matching :class:`HyperframeStack`: input channels ``3t .. 3t+2`` are frame ``t``.
"""
import logging
from typing import Optional

import torch

logger = logging.getLogger(__name__)

INFLATE_MODES = ('replicate', 'center', 'random')


def inflate_conv_weight(weight: torch.Tensor,
                        num_frames: int,
                        mode: str = 'replicate',
                        channels_per_frame: int = 3,
                        generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Turn a 2D kernel ``[out, C, *k]`` into a hyperframe kernel ``[out, C*T, *k]``.

    Args:
        weight (Tensor): the 2D kernel; float16/bfloat16 are computed in float32 and cast back.
        num_frames (int): T, the number of frames stacked on the channel axis.
        mode (str): ``'replicate'`` tiles the kernel over the T frames and divides by T, so a clip
            of T identical frames gives exactly the 2D output; ``'center'`` puts the kernel on the
            centre frame (index ``T // 2``) and zeros elsewhere, so the model starts as the 2D
            model on the centre frame; ``'random'`` returns a fresh Kaiming-normal kernel (the
            2D weights are ignored). Defaults to ``'replicate'``.
        channels_per_frame (int): C of the 2D kernel. Defaults to 3.
        generator (torch.Generator, optional): randomness for ``'random'``.

    Returns:
        Tensor: the inflated kernel, same dtype and device as ``weight``.
    """
    if mode not in INFLATE_MODES:
        raise ValueError(f'inflate mode must be one of {INFLATE_MODES}, got {mode!r}')
    if num_frames < 1:
        raise ValueError(f'num_frames must be >= 1, got {num_frames}')
    if weight.dim() < 3 or weight.shape[1] != channels_per_frame:
        raise ValueError(f'expected a 2D kernel [out, {channels_per_frame}, ...] to inflate, got '
                         f'shape {tuple(weight.shape)}')
    dtype = weight.dtype
    source = weight.detach().float()
    if mode == 'replicate':
        inflated = source.repeat(1, num_frames, *([1] * (source.dim() - 2))) / num_frames
    elif mode == 'center':
        inflated = source.new_zeros((source.shape[0], channels_per_frame * num_frames) +
                                    tuple(source.shape[2:]))
        centre = num_frames // 2
        inflated[:, centre * channels_per_frame:(centre + 1) * channels_per_frame] = source
    else:
        inflated = source.new_empty((source.shape[0], channels_per_frame * num_frames) +
                                    tuple(source.shape[2:]))
        torch.nn.init.kaiming_normal_(inflated, mode='fan_out', nonlinearity='relu',
                                      generator=generator)
    logger.info('inflated a %s kernel to %s over T=%d frames (mode=%s)', tuple(weight.shape),
                tuple(inflated.shape), num_frames, mode)
    return inflated.to(dtype)
