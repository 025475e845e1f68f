"""MobileNetV3 whose stem takes a hyperframe (3T channels); loads mmpretrain/torchvision weights.

Built on mmpretrain's ``MobileNetV3``: its stem ``layer0`` is a ConvModule (3 -> 16, 3x3,
stride 2, BN, HSwish), so only ``layer0.conv`` is widened and inflated; the inverted residual
blocks, frozen stages and ``norm_eval`` are mmpretrain's own.
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmaction.registry import MODELS
from mmpretrain.models.backbones.mobilenet_v3 import MobileNetV3

from .hyperframe_backbone import (HyperframeBackboneMixin, check_hyperframe_args,
                                  check_stage_args)
from .inflate import resize_conv_input
from .mobilenet_v2_converters import rename_torchvision_modules
from .stem import HyperframeStem


def _torchvision_to_mmpretrain_modules(arch_setting: Sequence[Sequence]) -> Dict[str, str]:
    """Module names of torchvision's ``mobilenet_v3_*`` -> mmpretrain's, for one arch table.

    torchvision keeps the network as ``features.{i}``; block ``i`` is a list of [expand conv if
    the block widens, depthwise conv, squeeze-excitation if any, projection conv], each conv a
    (conv, norm, act) sequence. mmpretrain names the same layers ``layer{i}.expand_conv``,
    ``.depthwise_conv``, ``.se.conv1/conv2``, ``.linear_conv``, each a ConvModule (conv, bn).
    The two implementations compute the same function (same SE width rounding, hard-sigmoid,
    padding, residuals; checked by the tests against torchvision's own forward).
    """
    mapping = {'features.0.0': 'layer0.conv', 'features.0.1': 'layer0.bn'}
    in_channels = 16
    for index, (_, mid_channels, out_channels, with_se, _, _) in enumerate(arch_setting, 1):
        block, layer = f'features.{index}.block', f'layer{index}'
        parts = (['expand_conv'] if mid_channels != in_channels else []) + ['depthwise_conv']
        parts += ['se'] if with_se else []
        parts += ['linear_conv']
        for position, part in enumerate(parts):
            if part == 'se':
                mapping[f'{block}.{position}.fc1'] = f'{layer}.se.conv1.conv'
                mapping[f'{block}.{position}.fc2'] = f'{layer}.se.conv2.conv'
            else:
                mapping[f'{block}.{position}.0'] = f'{layer}.{part}.conv'
                mapping[f'{block}.{position}.1'] = f'{layer}.{part}.bn'
        in_channels = out_channels
    last = len(arch_setting) + 1
    mapping[f'features.{last}.0'] = f'layer{last}.conv'
    mapping[f'features.{last}.1'] = f'layer{last}.bn'
    return mapping


def mobilenet_v3_state_dict_to_mmpretrain(
        state_dict: Dict[str, torch.Tensor],
        arch_setting: Sequence[Sequence]) -> Dict[str, torch.Tensor]:
    """Rename a torchvision ``mobilenet_v3_small/large`` state dict to mmpretrain's layout.

    A state dict without torchvision's ``features.`` keys is returned unchanged (mmpretrain or
    this plugin's layout); torchvision's ``classifier.*`` is dropped. Keys the table does not
    know are kept, so that loading reports them.

    Args:
        state_dict (dict): the checkpoint's weights, prefixes stripped.
        arch_setting (list): mmpretrain's ``MobileNetV3.arch_settings[arch]``.
    """
    if not any(key.startswith('features.') for key in state_dict):
        return state_dict
    return rename_torchvision_modules(state_dict, _torchvision_to_mmpretrain_modules(arch_setting))


@MODELS.register_module()
class HyperMobileNetV3(HyperframeBackboneMixin, MobileNetV3):
    """MobileNetV3 small/large over hyperframes: the stem conv takes ``3 * num_frames`` channels.

    Args:
        arch (str): ``'small'``, ``'large'`` (torchvision checkpoints exist for these two), or
            mmpretrain's ``'small_075'``, ``'small_050'``. Defaults to ``'small'``.
        num_frames (int): T, frames per hyperframe. Defaults to 5.
        inflate_init (str): how a 2D checkpoint's stem conv is inflated: ``'replicate'``,
            ``'center'`` or ``'random'`` (see :func:`inflate_conv_weight`). Defaults to
            ``'replicate'``.
        pretrained (str, optional): a 2D (3-channel stem conv) or hyperframe (3T) checkpoint
            in mmpretrain layout (``layer0.conv.weight``) or torchvision's
            ``mobilenet_v3_{small,large}`` layout (``features.0.0.weight``), bare or under
            ``state_dict``/``model``, with or without ``backbone.``/``module.`` prefixes.
            Defaults to None.
        conv_cfg (dict, optional): conv layer config. Defaults to None (Conv2d).
        norm_cfg (dict): norm layer config. Defaults to
            ``dict(type='BN', eps=0.001, momentum=0.01)`` (torchvision's values).
        out_indices (Sequence[int], optional): layers whose output is returned (0 = stem, the
            last = the final 1x1 conv); one index gives a tensor, several a tuple. Defaults to
            the last layer (12 for small, 16 for large). Distinct, in increasing order, each
            a layer of ``arch``; anything else is a ``ValueError`` at build (see
            :func:`~.hyperframe_backbone.check_stage_args`).
        frozen_stages (int): layers to freeze; 0 freezes the stem (with the hyperframe stem's
            parts), k also ``layer1`` .. ``layerk`` (up to the last layer), -1 nothing.
            Defaults to -1.
        norm_eval (bool): keep the pretrained batch norms in eval mode while training
            (``extra_bn`` keeps training). Defaults to False.
        with_cp (bool): gradient checkpointing in the inverted residual blocks.
            Defaults to False.
        init_cfg (dict or list[dict], optional): initialisation from scratch.
            Defaults to mmpretrain ``MobileNetV3``'s.
        **stem: the :class:`~.stem.HyperframeStem`'s options, by name (``input_encoding``,
            ``diff_gain``, ``frame_attention``, ``extra_bn``, ``motion_products``), declared
            and checked there; the stem runs around ``layer0``, ``extra_bn`` between its conv
            and norm.
    """

    first_conv_name = 'layer0.conv'
    stem_module_name = 'layer0'

    def __init__(self,
                 arch: str = 'small',
                 num_frames: int = 5,
                 inflate_init: str = 'replicate',
                 pretrained: Optional[str] = None,
                 conv_cfg: Optional[Dict] = None,
                 norm_cfg: Dict = dict(type='BN', eps=0.001, momentum=0.01),
                 out_indices: Optional[Sequence[int]] = None,
                 frozen_stages: int = -1,
                 norm_eval: bool = False,
                 with_cp: bool = False,
                 init_cfg: Optional[Union[Dict, List[Dict]]] = [
                     dict(type='Kaiming', layer=['Conv2d'], nonlinearity='leaky_relu'),
                     dict(type='Normal', layer=['Linear'], std=0.01),
                     dict(type='Constant', layer=['BatchNorm2d'], val=1)
                 ],
                 **stem) -> None:
        name = type(self).__name__
        check_hyperframe_args(name, num_frames, inflate_init, pretrained, init_cfg)
        if arch not in self.arch_settings:
            raise ValueError(f'{name}: arch must be one of {sorted(self.arch_settings)}, '
                             f'got {arch!r}')
        # layer0 (the stem), a layer for each block of the arch table, then the final 1x1 conv
        last = len(self.arch_settings[arch]) + 1
        out_indices = (last, ) if out_indices is None else out_indices
        check_stage_args(name, out_indices, last, frozen_stages, last,
                         f"arch={arch!r}: layer0..{last}")
        super().__init__(arch=arch, conv_cfg=conv_cfg, norm_cfg=norm_cfg,
                         out_indices=out_indices, frozen_stages=frozen_stages,
                         norm_eval=norm_eval, with_cp=with_cp, init_cfg=init_cfg)
        resize_conv_input(self.layer0.conv, 3 * num_frames)
        self.inflate_init, self.pretrained = inflate_init, pretrained
        self.hyperframe_stem = HyperframeStem(num_frames, name, self.layer0, **stem)

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Read mmpretrain and torchvision MobileNetV3 layouts."""
        return mobilenet_v3_state_dict_to_mmpretrain(state_dict, self.arch_settings[self.arch])

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, ...]]:
        """``[N, 3T, H, W]`` hyperframes -> the features of the ``out_indices`` layers."""
        outs = []
        for index, layer_name in enumerate(self.layers):
            x = self.hyperframe_stem(x, self.layer0) if index == 0 else \
                getattr(self, layer_name)(x)
            if index in self.out_indices:
                outs.append(x)
        return outs[0] if len(outs) == 1 else tuple(outs)
