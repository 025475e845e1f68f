"""mmaction2's ``TemporalShift`` put where ``MobileNetV2TSM`` puts it, in any network built of
timm's inverted residual blocks, and the key move that lets the unshifted 2D file load into it:
written once for the TSM baseline (``TemporalShiftBackbone``), the shifted hyperframes of any
inflated network (``InflatedBackbone(num_segments=S)``) and MobileNetV2's own
(``HyperMobileNetV2``)."""
from typing import Dict, List, Sequence

import torch
from mmaction.models.backbones.resnet_tsm import TemporalShift
from torch import nn


#: the conv of a shifted block that the shift wraps: its keys move under the shift's ``net``
SHIFTED_CONV = 'conv_pw'


def shiftable_blocks(model: nn.Module) -> List[str]:
    """The inverted residual blocks ``MobileNetV2TSM`` would shift, by their structure: an
    expansion conv (``conv_pw``), a projection (``conv_pwl``) and a skip connection in use
    (timm's ``InvertedResidual``: EfficientNet, MobileNetV2/V3, MNASNet...). MobileNetV2TSM
    shifts the expansion conv's input of exactly those blocks: on the residual branch only, so the
    identity path keeps each frame's own features, and not in blocks without a skip, whose
    output would then mix frames with no unshifted path."""
    return [name for name, block in model.named_modules()
            if getattr(block, 'has_skip', False) and hasattr(block, 'conv_pwl')
            and isinstance(getattr(block, SHIFTED_CONV, None), nn.Conv2d)]


def check_segments(x: torch.Tensor, num_segments: int, owner: str) -> None:
    """Refuse a batch that is not whole samples of ``num_segments`` hyperframes: the shift
    reshapes it to ``[-1, num_segments, ...]`` and fails with a bare view error, or, for a
    size that divides, pairs hyperframes of different samples.

    Raises:
        ValueError: naming the backbone, ``num_segments`` and the batch's hyperframes.
    """
    if num_segments > 1 and x.shape[0] % num_segments:
        raise ValueError(
            f'{owner}(num_segments={num_segments}) got {x.shape[0]} hyperframes, no multiple of '
            f'{num_segments}: a sample brings {num_segments} hyperframes a clip, in time order '
            '(the sampler\'s clips and the backbone\'s num_segments go together: '
            'config_parts.shifted_hyperframes sets both)')


def shift_blocks(model: nn.Module, num_segments: int, shift_div: int, owner: str,
                 type_name: str) -> List[str]:
    """Wrap the expansion conv (:data:`SHIFTED_CONV`) of every :func:`shiftable_blocks` block of
    ``model`` in place in ``TemporalShift`` over ``num_segments`` segments; returns those
    blocks. A network with no such block is an error naming it: a shift asked for and silently
    absent would train a model without time past its stem."""
    blocks = shiftable_blocks(model)
    if not blocks:
        raise ValueError(f'{owner}: {type_name} has no inverted residual block with a skip '
                         'connection in timm\'s layout (conv_pw, conv_pwl, has_skip) to shift')
    for path in blocks:
        block = model.get_submodule(path)
        setattr(block, SHIFTED_CONV, TemporalShift(getattr(block, SHIFTED_CONV),
                                                   num_segments=num_segments,
                                                   shift_div=shift_div))
    return blocks


def shifted_convs(blocks: Sequence[str], prefix: str = '') -> List[str]:
    """The paths of the convs :func:`shift_blocks` wrapped in ``blocks``, under ``prefix``."""
    return [f'{prefix}{block}.{SHIFTED_CONV}' for block in blocks]


def move_under_shift(state_dict: Dict[str, torch.Tensor],
                     shifted: Sequence[str]) -> Dict[str, torch.Tensor]:
    """An unshifted network's keys in the shifted one's layout: the parameters of each wrapped
    conv in ``shifted`` (dotted module paths) move under the shift's ``net``, as
    ``MobileNetV2TSM.load_original_weights`` moves them; a key already there stays."""
    prefixes = tuple(f'{path}.' for path in shifted)
    moved = {}
    for key, value in state_dict.items():
        prefix = next((prefix for prefix in prefixes if key.startswith(prefix)), None)
        if prefix is not None and not key.startswith(f'{prefix}net.'):
            key = f'{prefix}net.{key[len(prefix):]}'
        moved[key] = value
    return moved
