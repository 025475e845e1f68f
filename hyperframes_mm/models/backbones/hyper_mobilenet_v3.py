"""MobileNetV3 whose stem takes a hyperframe (3T channels); loads mmpretrain/torchvision weights.

Built on mmpretrain's ``MobileNetV3``: its stem ``layer0`` is a ConvModule (3 -> 16, 3x3,
stride 2, BN, HSwish), so only ``layer0.conv`` is widened and inflated; the inverted residual
blocks, frozen stages and ``norm_eval`` are mmpretrain's own.
"""
from collections import OrderedDict
from typing import Dict, Sequence, Tuple, Union

import torch
from mmaction.registry import MODELS
from mmengine.model import BaseModule
from mmpretrain.models.backbones.mobilenet_v3 import MobileNetV3

from .hyperframe_backbone import HyperframeArgs, HyperframeBackboneMixin
from .inflate import resize_conv_input


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
    mapping = _torchvision_to_mmpretrain_modules(arch_setting)
    converted = OrderedDict()
    for key, value in state_dict.items():
        if key.startswith('classifier.'):
            continue
        module, param = key.rsplit('.', 1)
        converted[f'{mapping[module]}.{param}' if module in mapping else key] = value
    return converted


@MODELS.register_module()
class HyperMobileNetV3(HyperframeBackboneMixin, MobileNetV3):
    """MobileNetV3 small/large over hyperframes: the stem conv takes ``3 * num_frames`` channels.

    Args:
        arch (str): ``'small'``, ``'large'`` (torchvision checkpoints exist for these two), or
            mmpretrain's ``'small_075'``, ``'small_050'``. Defaults to ``'small'``.
        **kwargs: :class:`~.hyperframe_backbone.HyperframeArgs` (``num_frames``,
            ``inflate_init``, ``pretrained`` in mmpretrain layout, ``layer0.conv.weight``, or
            torchvision's ``mobilenet_v3_{small,large}`` layout, ``features.0.0.weight``, and
            the :class:`~.stem.HyperframeStem`'s parts, which run around ``layer0``:
            ``extra_bn`` between its conv and norm), and mmpretrain ``MobileNetV3``'s own, with
            its defaults:
        conv_cfg (dict, optional): conv layer config. Defaults to None (Conv2d).
        norm_cfg (dict): norm layer config. Defaults to
            ``dict(type='BN', eps=0.001, momentum=0.01)`` (torchvision's values).
        out_indices (Sequence[int], optional): layers whose output is returned (0 = stem, the
            last = the final 1x1 conv); one index gives a tensor, several a tuple. Defaults to
            the last layer (12 for small, 16 for large).
        frozen_stages (int): layers to freeze; 0 freezes the stem (with ``extra_bn`` and frame
            attention), -1 nothing. Defaults to -1.
        norm_eval (bool): keep the pretrained batch norms in eval mode while training.
            Defaults to False.
        with_cp (bool): gradient checkpointing in the inverted residual blocks.
            Defaults to False.
        init_cfg (dict or list[dict], optional): initialisation from scratch (mmpretrain's).
    """

    first_conv_name = 'layer0.conv'
    stem_module_name = 'layer0'

    def __init__(self, arch: str = 'small', **kwargs) -> None:
        name = type(self).__name__
        args, mobilenet_args = HyperframeArgs.split(type(self), MobileNetV3, kwargs,
                                                    fixed=('arch', ))
        if arch not in self.arch_settings:
            raise ValueError(f'{name}: arch must be one of {sorted(self.arch_settings)}, '
                             f'got {arch!r}')
        super().__init__(arch=arch, **mobilenet_args)
        resize_conv_input(self.layer0.conv, 3 * args.num_frames)
        self._setup_hyperframe(args)

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Read mmpretrain and torchvision MobileNetV3 layouts."""
        return mobilenet_v3_state_dict_to_mmpretrain(state_dict, self.arch_settings[self.arch])

    def init_weights(self) -> None:
        """Initialise from scratch, then load and inflate ``pretrained`` when given."""
        BaseModule.init_weights(self)
        self._init_hyperframe_weights()

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, ...]]:
        """``[N, 3T, H, W]`` hyperframes -> the features of the ``out_indices`` layers."""
        outs = []
        for index, layer_name in enumerate(self.layers):
            x = self.stem_forward(x) if index == 0 else getattr(self, layer_name)(x)
            if index in self.out_indices:
                outs.append(x)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def train(self, mode: bool = True) -> 'HyperMobileNetV3':
        """Set train/eval mode, then apply frozen stages and ``norm_eval``."""
        super().train(mode)
        self.train_hyperframe_parts(mode, stem_frozen=self.frozen_stages >= 0)
        return self
