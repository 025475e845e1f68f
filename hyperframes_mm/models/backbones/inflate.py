"""Inflate a 2D network's first convolution from C to C*T input channels, and re-inflate T -> T'.

One set of functions serves every backbone (ResNet conv1, MobileNetV3 stem, ViT patch embedding):
all of them are a conv kernel of shape ``[out, C, *kernel]`` with C = 3. The channel order of an
inflated kernel is frame-major, matching :class:`HyperframeStack`: input channels
``C*t .. C*t + C-1`` are frame ``t``.

The property every mode but ``'random'`` keeps is the *temporal sum* of the kernel,
``sum_t W[:, C*t:C*(t+1)]``: a hyperframe of T identical frames ``x`` gives
``conv(x, sum_t W_t)``, so a kernel whose temporal sum is the 2D kernel gives the 2D output.
"""
import logging
import sys
from typing import Optional

import torch
from mmengine.logging import print_log
from torch import nn

from ...utils import positive_int

INFLATE_MODES = ('replicate', 'center', 'random')


def _compute_dtype(weight: torch.Tensor) -> torch.dtype:
    """float16/bfloat16 kernels are computed in float32 (and cast back); float64 stays float64."""
    return torch.float64 if weight.dtype == torch.float64 else torch.float32


def _check_kernel(weight: torch.Tensor, channels_per_frame: int) -> int:
    """Return the number of frames a ``[out, C*T, *k]`` kernel holds; raise if it holds none."""
    if not weight.is_floating_point():
        # W / T in an integer type truncates every value: an int8 kernel would inflate to zeros
        raise TypeError(f'a conv kernel of {weight.dtype} cannot be inflated: give the float '
                        'weights (an int8 model is converted to float first, as '
                        'tools/model_converters/mobilenet_v2_to_mmaction.py does)')
    if weight.dim() < 3:
        raise ValueError(f'expected a conv kernel [out, in, *kernel], got shape '
                         f'{tuple(weight.shape)}')
    if channels_per_frame < 1 or weight.shape[1] % channels_per_frame:
        raise ValueError(f'a kernel with {weight.shape[1]} input channels is not a whole number of '
                         f'frames of {channels_per_frame} channels (shape {tuple(weight.shape)})')
    return weight.shape[1] // channels_per_frame


def _check_num_frames(num_frames: int) -> None:
    positive_int(num_frames, 'num_frames')


def temporal_resample_matrix(src_frames: int, dst_frames: int) -> torch.Tensor:
    """The ``[dst_frames, src_frames]`` matrix that re-inflates a kernel from T to T' frames.

    The T per-frame kernels are read as a piecewise-constant function of time on ``[0, 1)``
    (frame ``t`` covers ``[t/T, (t+1)/T)`` and holds mass ``W_t``); frame ``j`` of the result
    receives the mass of that function over ``[j/T', (j+1)/T')``. This is area (box)
    interpolation: every column sums to 1, so the temporal sum ``sum_t W_t`` is kept exactly and
    a clip of identical frames gives the same output at T and T'. A constant (``replicate``)
    kernel stays constant; a centre-frame kernel stays on the centre when T' divides evenly.

    Args:
        src_frames (int): T.
        dst_frames (int): T'.

    Returns:
        Tensor: float64 matrix ``M`` with ``W'_j = sum_t M[j, t] W_t``.
    """
    _check_num_frames(src_frames)
    _check_num_frames(dst_frames)
    # In units of 1 / (T * T') source frame t spans [t*T', (t+1)*T') and target frame j spans
    # [j*T, (j+1)*T); the overlap is an integer, and mass moves as overlap / T' (exact rationals).
    src = torch.arange(src_frames, dtype=torch.float64)
    dst = torch.arange(dst_frames, dtype=torch.float64)
    start = torch.maximum(dst[:, None] * src_frames, src[None, :] * dst_frames)
    end = torch.minimum((dst[:, None] + 1) * src_frames, (src[None, :] + 1) * dst_frames)
    return (end - start).clamp(min=0) / dst_frames


def reinflate_conv_weight(weight: torch.Tensor,
                          num_frames: int,
                          channels_per_frame: int = 3) -> torch.Tensor:
    """Resample an inflated kernel ``[out, C*T, *k]`` to ``[out, C*T', *k]`` over time.

    Uses :func:`temporal_resample_matrix` (area interpolation), which keeps the kernel's temporal
    sum, so a model trained at T=5 gives on T' identical frames exactly what it gave on 5.

    Args:
        weight (Tensor): the inflated kernel; float16/bfloat16 are computed in float32 and cast
            back.
        num_frames (int): T', the new number of frames.
        channels_per_frame (int): C. Defaults to 3.

    Returns:
        Tensor: the re-inflated kernel, same dtype and device as ``weight``.
    """
    _check_num_frames(num_frames)
    src_frames = _check_kernel(weight, channels_per_frame)
    if src_frames == num_frames:
        return weight.detach().clone()
    dtype = _compute_dtype(weight)
    matrix = temporal_resample_matrix(src_frames, num_frames).to(weight.device, dtype)
    out_channels, kernel = weight.shape[0], tuple(weight.shape[2:])
    frames = weight.detach().to(dtype).reshape(out_channels, src_frames, -1)
    resampled = torch.einsum('jt,otx->ojx', matrix, frames)
    result = resampled.reshape((out_channels, num_frames * channels_per_frame) + kernel)
    print_log(f're-inflated a {tuple(weight.shape)} kernel from T={src_frames} to T={num_frames} '
              f'frames -> {tuple(result.shape)} (area interpolation, temporal sum kept)',
              logger='current', level=logging.INFO)
    return result.to(weight.dtype)


def inflate_conv_weight(weight: torch.Tensor,
                        num_frames: int,
                        mode: str = 'replicate',
                        channels_per_frame: int = 3,
                        generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Turn a kernel ``[out, C, *k]`` (2D) or ``[out, C*T0, *k]`` into ``[out, C*T, *k]``.

    Args:
        weight (Tensor): the kernel; float16/bfloat16 are computed in float32 and cast back.
        num_frames (int): T, the number of frames stacked on the channel axis.
        mode (str): how a single-frame (2D) kernel is spread over the T frames.
            ``'replicate'`` tiles it and divides by T, so T identical frames give exactly the 2D
            output; ``'center'`` puts it on the centre frame (index ``T // 2``, the later of the
            two middle frames for even T) and zeros elsewhere, so the model starts as the 2D
            model on that frame; ``'random'`` returns a fresh Kaiming-normal kernel (fan-out,
            ReLU gain, as mmaction2 initialises convs) and ignores the values of ``weight``.
            An already inflated kernel (T0 > 1 frames) carries its own temporal profile: for
            ``'replicate'`` and ``'center'`` it is resampled to T by
            :func:`reinflate_conv_weight`. Defaults to ``'replicate'``.
        channels_per_frame (int): C. Defaults to 3.
        generator (torch.Generator, optional): randomness for ``'random'``.

    Returns:
        Tensor: the inflated kernel, same dtype and device as ``weight``.
    """
    if mode not in INFLATE_MODES:
        raise ValueError(f'inflate mode must be one of {INFLATE_MODES}, got {mode!r}')
    _check_num_frames(num_frames)
    src_frames = _check_kernel(weight, channels_per_frame)
    if src_frames > 1 and mode != 'random':
        return reinflate_conv_weight(weight, num_frames, channels_per_frame)
    dtype = _compute_dtype(weight)
    source = weight.detach().to(dtype)
    shape = (source.shape[0], channels_per_frame * num_frames) + tuple(source.shape[2:])
    if mode == 'replicate':
        inflated = source.repeat(1, num_frames, *([1] * (source.dim() - 2))) / num_frames
    elif mode == 'center':
        inflated = source.new_zeros(shape)
        centre = num_frames // 2
        inflated[:, centre * channels_per_frame:(centre + 1) * channels_per_frame] = source
    else:
        inflated = source.new_empty(shape)
        nn.init.kaiming_normal_(inflated, mode='fan_out', nonlinearity='relu',
                                generator=generator)
    print_log(f'inflated a {tuple(weight.shape)} kernel to {tuple(inflated.shape)} over T='
              f'{num_frames} frames (mode={mode})', logger='current', level=logging.INFO)
    return inflated.to(weight.dtype)


#: Convs that standardise their kernel over its fan-in in every forward (timm's NFNets and BiT
#: ResNetV2s, mmcv's ConvWS), by module and class name: a module of them is in ``sys.modules``
#: wherever such a conv was built, and neither library has to be installed.
WEIGHT_STANDARDISED_CONVS = (
    ('timm.layers.std_conv', ('StdConv2d', 'StdConv2dSame', 'ScaledStdConv2d',
                              'ScaledStdConv2dSame')),
    ('mmcv.cnn.bricks.conv_ws', ('ConvWS2d', 'ConvAWS2d')),
)


def _is_weight_standardised(conv: nn.Module) -> bool:
    return any(isinstance(conv, getattr(sys.modules[module], cls))
               for module, classes in WEIGHT_STANDARDISED_CONVS if module in sys.modules
               for cls in classes)


def _check_plain_conv(conv: nn.Module, name: str = 'conv') -> None:
    if not isinstance(conv, nn.Conv2d):
        raise TypeError(f'expected an nn.Conv2d to inflate, got {type(conv).__name__}')
    if conv.groups != 1:
        raise ValueError(f'cannot inflate a grouped conv (groups={conv.groups}): its input '
                         'channels are not one kernel per frame')
    if _is_weight_standardised(conv):
        # standardised over all C*T inputs, the T per-frame parts of a kernel are rescaled
        # together, so their temporal sum is no longer the 2D kernel
        raise TypeError(f'{name} is a {type(conv).__name__}, which standardises its kernel over '
                        'its input channels in every forward: inflated to C*T channels, T '
                        'identical frames would no longer give the 2D output. A network with a '
                        'weight-standardised first conv (NFNet, BiT ResNetV2) cannot be '
                        'inflated: pick one whose first conv is a plain Conv2d')


def resize_conv_input(conv: nn.Conv2d, in_channels: int, name: str = 'conv') -> nn.Conv2d:
    """Give ``conv`` (in place) ``in_channels`` inputs, freshly initialised as torch does.

    The module keeps its class, stride, padding, bias and hooks; only its kernel (and bias,
    re-initialised with it) change. Used when a backbone is built, before weights are loaded.
    ``name`` (the network and layer) heads the errors.
    """
    _check_plain_conv(conv, name)
    weight = conv.weight
    conv.weight = nn.Parameter(
        weight.new_empty((weight.shape[0], in_channels) + tuple(weight.shape[2:])),
        requires_grad=weight.requires_grad)
    conv.in_channels = in_channels
    conv.reset_parameters()
    return conv


def set_conv_weight(conv: nn.Conv2d, weight: torch.Tensor) -> nn.Conv2d:
    """Replace ``conv``'s kernel (in place) by ``weight``, whose input channels may differ.

    The new kernel becomes a new parameter (same ``requires_grad``): an optimizer built before
    the call keeps the old one, so re-inflate for inference or before building the optimizer.
    """
    _check_plain_conv(conv)
    if weight.shape[0] != conv.out_channels or tuple(weight.shape[2:]) != conv.kernel_size:
        raise ValueError(f'kernel of shape {tuple(weight.shape)} does not fit a conv with '
                         f'{conv.out_channels} outputs and kernel {conv.kernel_size}')
    conv.weight = nn.Parameter(weight.to(conv.weight), requires_grad=conv.weight.requires_grad)
    conv.in_channels = weight.shape[1]
    return conv
