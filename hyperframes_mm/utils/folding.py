"""The affine form of a hyperframe model's input and the stem conv it folds into: what the ONNX
export folds (:mod:`hyperframes_mm.deploy.export`) and what int8-aware fine-tuning rounds as the
folded file stores it (:mod:`hyperframes_mm.engine.int8_aware`). Here, below both, so that the
engine need not import the deployment package, which imports the engine through the apis."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from mmcv.cnn import ConvModule
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


def input_affine(model: nn.Module) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
    """A single-stream hyperframe model's normalisation and input encoding as one affine map
    ``x -> A x + b`` of each pixel's ``C*T`` raw channel values (float64 ``A``, ``b``).

    At every pixel both are affine: the data preprocessor's channel order, mean and std
    (:meth:`HyperframeDataPreprocessor.affine`), then the stem's encoding (centre frame and
    gained differences, :meth:`HyperframeStem.encoding_map`).

    Returns:
        tuple | None: ``(A, b)``, or None where the input has no such form: several streams,
        mmaction2's own data preprocessor, a backbone without a hyperframe stem, or a stem
        whose frame attention or motion products read the normalised frames themselves.
    """
    preprocessor = getattr(model, 'data_preprocessor', None)
    stem = getattr(getattr(model, 'backbone', None), 'hyperframe_stem', None)
    if (getattr(model, 'streams', None) or not hasattr(preprocessor, 'affine') or stem is None
            or stem.frame_attention is not None or stem.motion_products is not None):
        return None
    matrix, offset = preprocessor.affine(stem.in_channels)
    encoding = stem.encoding_map()
    return encoding @ matrix, encoding @ offset


def foldable_stem(model: nn.Module) -> Optional[ConvModule]:
    """The stem :func:`fold_input_into_stem` folds the input into: a plain conv -> batch norm
    (-> activation) ``ConvModule`` around an ungrouped, zero-padded conv, reading an input
    :func:`input_affine` describes; None otherwise (``extra_bn`` sits between conv and norm;
    the timm stems of ``InflatedBackbone`` are not ``ConvModule`` s)."""
    if input_affine(model) is None or model.backbone.hyperframe_stem.extra_bn is not None:
        return None
    stem = getattr(model.backbone, 'conv_stem', None)
    if (not isinstance(stem, ConvModule) or tuple(stem.order) != ('conv', 'norm', 'act')
            or not stem.with_norm or not isinstance(stem.norm, _BatchNorm)
            or stem.with_explicit_padding or not isinstance(stem.conv, nn.Conv2d)
            or stem.conv.groups != 1 or stem.conv.padding_mode != 'zeros'
            or not isinstance(stem.conv.padding, tuple)):
        return None
    return stem


def padding_response(conv: nn.Conv2d, weight: torch.Tensor, offset: torch.Tensor,
                     input_size: Tuple[int, int]) -> torch.Tensor:
    """``[O, H', W']``: what the taps of ``conv`` (with ``weight``) that land on its zero padding
    would add if the padding held ``offset`` at every pixel; exactly zero at every output whose
    window lies inside the input.

    A per-pixel offset ``b`` of the conv's input reaches its output as ``sum(W) b`` inside and
    ``sum(W) b - padding_response`` where the window reaches the padding."""
    pad_h, pad_w = conv.padding
    canvas = F.pad(torch.zeros(1, 1, *input_size, dtype=weight.dtype, device=weight.device),
                   (pad_w, pad_w, pad_h, pad_h), value=1.0)
    return F.conv2d(canvas * offset.to(weight)[None, :, None, None], weight, None, conv.stride,
                    0, conv.dilation)[0]


def offset_response(conv: nn.Conv2d, weight: torch.Tensor, offset: torch.Tensor,
                    input_size: Tuple[int, int]) -> Tuple[torch.Tensor, torch.Tensor]:
    """How a per-pixel input offset ``b`` reaches the output of ``conv`` with ``weight`` on a
    zero-padded ``input_size`` input: ``([O], [O, H', W'])``, the value ``sum(W) b`` at every
    output whose window lies inside, and what the border outputs differ by
    (``-`` :func:`padding_response`)."""
    return (weight.sum((2, 3)) @ offset.to(weight),
            -padding_response(conv, weight, offset, input_size))
