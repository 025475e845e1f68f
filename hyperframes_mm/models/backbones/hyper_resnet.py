"""ResNet whose conv1 takes a hyperframe (3T channels) and loads an ordinary 2D checkpoint."""
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmaction.models.backbones.resnet import ResNet
from mmaction.registry import MODELS
from mmaction.utils import ConfigType

from ...utils import is_int
from .hyperframe_backbone import (HyperframeBackboneMixin, check_hyperframe_args,
                                  check_stage_args)
from .stem import HyperframeStem

#: Keys of classifier heads a torchvision checkpoint keeps next to the backbone.
_HEAD_PREFIXES = ('fc.', )


def _resnet_key_to_mmaction(key: str) -> str:
    """One key of a torchvision/mmpretrain ResNet in mmaction2's layout (unchanged if already)."""
    parts = key.split('.')
    if parts[0] == 'conv1' and len(parts) == 2:
        return f'conv1.conv.{parts[1]}'
    if parts[0] in ('bn1', 'norm1'):
        return '.'.join(['conv1', 'bn'] + parts[1:])
    if not parts[0].startswith('layer') or len(parts) < 4:
        return key
    head, module, rest = parts[:2], parts[2], parts[3:]
    if module.startswith('conv') and len(rest) == 1:  # layerX.Y.convN.weight
        return '.'.join(head + [module, 'conv'] + rest)
    for norm in ('bn', 'norm'):  # layerX.Y.bnN.* / layerX.Y.normN.*
        if module.startswith(norm) and module[len(norm):].isdigit():
            return '.'.join(head + ['conv' + module[len(norm):], 'bn'] + rest)
    if module == 'downsample' and rest[0] in ('0', '1'):  # downsample.0 conv, downsample.1 norm
        return '.'.join(head + [module, 'conv' if rest[0] == '0' else 'bn'] + rest[1:])
    return key


def resnet_state_dict_to_mmaction(state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Rename a ResNet state dict from torchvision or mmpretrain layout to mmaction2's.

    mmaction2 wraps each conv and its norm in a ``ConvModule`` (``conv1.conv``, ``conv1.bn``,
    ``downsample.conv``); torchvision and mmpretrain keep them as siblings (``conv1``, ``bn1`` or
    ``norm1``, ``downsample.0``/``downsample.1``). Keys already in mmaction2 layout (and the
    hyperframe parts ``extra_bn.*``, ``frame_attention.*``) pass unchanged; torchvision's
    classifier ``fc.*`` is dropped. Strip ``module.``/``backbone.`` prefixes first.
    """
    return OrderedDict((_resnet_key_to_mmaction(key), value) for key, value in state_dict.items()
                       if not key.startswith(_HEAD_PREFIXES))


def _check_resnet_args(owner: str, depth: int, num_stages: int, strides: Sequence[int],
                       dilations: Sequence[int], style: str) -> None:
    """Refuse what mmaction2's ``ResNet`` refuses with a bare assertion or a ``KeyError``,
    naming the parameter: the depth, the stage count and the per-stage settings that must
    match it."""
    if not (is_int(depth) and depth in ResNet.arch_settings):
        raise ValueError(f'{owner}: invalid depth {depth!r}: depth must be one of '
                         f'{sorted(ResNet.arch_settings)}')
    if not (is_int(num_stages) and 1 <= num_stages <= 4):
        raise ValueError(f'{owner}: num_stages must be an int in 1..4, got {num_stages!r}')
    for setting, values in (('strides', strides), ('dilations', dilations)):
        if not (isinstance(values, (list, tuple)) and len(values) == num_stages
                and all(is_int(value) and value >= 1 for value in values)):
            raise ValueError(f'{owner}: {setting} must be a list or tuple of {num_stages} '
                             f'positive ints, one a stage (num_stages={num_stages}), got '
                             f'{values!r}')
    if style not in ('pytorch', 'caffe'):
        raise ValueError(f"{owner}: style must be 'pytorch' or 'caffe', got {style!r}")


@MODELS.register_module()
class HyperResNet(HyperframeBackboneMixin, ResNet):
    """ResNet-18/34/50/101/152 over hyperframes: conv1 takes ``3 * num_frames`` channels.

    Everything after conv1 is mmaction2's ``ResNet`` (frozen stages, ``norm_eval``,
    ``partial_bn``, ``with_cp``, ``out_indices``), so a 2D checkpoint loads into it key for key;
    only conv1's kernel is inflated from 3 to 3T input channels by :func:`inflate_conv_weight`.
    Unlike mmaction2's ``ResNet``, a checkpoint whose conv1 does not fit is an error, never a
    silently random conv1, and a stage argument that does not fit the network (``depth``,
    ``num_stages``, ``out_indices``, ``frozen_stages``, ``strides``, ``dilations``, ``style``)
    is a ``ValueError`` naming it at build, never an assertion inside mmaction2 or a model
    that returns fewer outputs than asked (:func:`~.hyperframe_backbone.check_stage_args`).
    Without ``pretrained`` every layer (conv1 included) is initialised from scratch by
    ``init_cfg``; ``inflate_init`` only says how a 2D conv1 is inflated.

    Args:
        depth (int): 18, 34, 50, 101 or 152.
        num_frames (int): T, frames per hyperframe. Defaults to 5.
        inflate_init (str): how a 2D checkpoint's conv1 is inflated: ``'replicate'``,
            ``'center'`` or ``'random'`` (see :func:`inflate_conv_weight`). Defaults to
            ``'replicate'``.
        pretrained (str, optional): a 2D (3-channel conv1) or hyperframe (3T) checkpoint in
            mmaction2, torchvision or mmpretrain ResNet layout, bare or under
            ``state_dict``/``model``, with or without ``backbone.``/``module.`` prefixes.
            Defaults to None.
        num_stages (int): ResNet stages, 1 to 4. Defaults to 4.
        out_indices (Sequence[int]): stages whose output is returned, distinct and in
            increasing order, each in ``0..num_stages - 1``; one index gives a tensor, several
            a tuple. Defaults to ``(3, )``.
        strides (Sequence[int]): stride of the first block of each stage, one a stage.
            Defaults to ``(1, 2, 2, 2)``.
        dilations (Sequence[int]): dilation of each stage, one a stage.
            Defaults to ``(1, 1, 1, 1)``.
        style (str): ``'pytorch'`` (stride on the 3x3 conv) or ``'caffe'``.
            Defaults to ``'pytorch'``.
        frozen_stages (int): stages to freeze; 0 freezes the stem (conv1 and the hyperframe
            stem's parts), k in ``1..num_stages`` also ``layer1`` .. ``layerk``, -1 nothing.
            Defaults to -1.
        conv_cfg (dict): conv layer config. Defaults to ``dict(type='Conv')``, mmaction2's
            ``ResNet`` default. ``dict(type='PadAwareConv2d')`` computes the same function
            without the kernel taps that only read zero padding: it pays at inputs so small that
            layer4's maps are 1x1 (the 32x32 synthetic configs turn it on) and is nothing but
            overhead at ImageNet sizes (see :mod:`.pad_aware_conv`).
        norm_cfg (dict): norm layer config. Defaults to ``dict(type='BN2d', requires_grad=True)``.
        act_cfg (dict): activation config. Defaults to ``dict(type='ReLU', inplace=True)``.
        norm_eval (bool): keep the pretrained batch norms in eval mode while training
            (``extra_bn`` keeps training: it is there to track what they cannot).
            Defaults to False.
        partial_bn (bool): freeze every batch norm but the stem's (conv1's and ``extra_bn``).
            Defaults to False.
        with_cp (bool): gradient checkpointing in the residual blocks. Defaults to False.
        init_cfg (dict or list[dict], optional): initialisation from scratch.
            Defaults to Kaiming for convs, 1 for batch norms (mmaction2's ``ResNet``'s).
        **stem: the :class:`~.stem.HyperframeStem`'s options, by name (``input_encoding``,
            ``diff_gain``, ``frame_attention``, ``extra_bn``, ``motion_products``), declared
            and checked there; the stem runs around conv1, ``extra_bn`` between conv1 and its
            norm.
    """

    first_conv_name = 'conv1.conv'
    stem_module_name = 'conv1'

    def __init__(self,
                 depth: int,
                 num_frames: int = 5,
                 inflate_init: str = 'replicate',
                 pretrained: Optional[str] = None,
                 num_stages: int = 4,
                 out_indices: Sequence[int] = (3, ),
                 strides: Sequence[int] = (1, 2, 2, 2),
                 dilations: Sequence[int] = (1, 1, 1, 1),
                 style: str = 'pytorch',
                 frozen_stages: int = -1,
                 conv_cfg: ConfigType = dict(type='Conv'),
                 norm_cfg: ConfigType = dict(type='BN2d', requires_grad=True),
                 act_cfg: ConfigType = dict(type='ReLU', inplace=True),
                 norm_eval: bool = False,
                 partial_bn: bool = False,
                 with_cp: bool = False,
                 init_cfg: Optional[Union[Dict, List[Dict]]] = [
                     dict(type='Kaiming', layer='Conv2d'),
                     dict(type='Constant', layer='BatchNorm2d', val=1.)
                 ],
                 **stem) -> None:
        name = type(self).__name__
        check_hyperframe_args(name, num_frames, inflate_init, pretrained, init_cfg)
        _check_resnet_args(name, depth, num_stages, strides, dilations, style)
        check_stage_args(name, out_indices, num_stages - 1, frozen_stages, num_stages,
                         f'num_stages={num_stages}')
        super().__init__(
            depth, pretrained=pretrained, torchvision_pretrain=False, in_channels=3 * num_frames,
            num_stages=num_stages, out_indices=out_indices, strides=strides, dilations=dilations,
            style=style, frozen_stages=frozen_stages, conv_cfg=conv_cfg, norm_cfg=norm_cfg,
            act_cfg=act_cfg, norm_eval=norm_eval, partial_bn=partial_bn, with_cp=with_cp,
            init_cfg=init_cfg)
        self.inflate_init = inflate_init
        self.hyperframe_stem = HyperframeStem(num_frames, name, self.conv1, **stem)

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Read mmaction2, torchvision and mmpretrain ResNet layouts."""
        return resnet_state_dict_to_mmaction(state_dict)

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, ...]]:
        """``[N, 3T, H, W]`` hyperframes -> the features of the ``out_indices`` stages."""
        x = self.maxpool(self.hyperframe_stem(x, self.conv1))
        outs = []
        for index, layer_name in enumerate(self.res_layers):
            x = getattr(self, layer_name)(x)
            if index in self.out_indices:
                outs.append(x)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def reinflate(self, num_frames: int) -> None:
        """Re-inflate conv1 to ``num_frames`` frames (see the mixin); keep ``in_channels`` true."""
        super().reinflate(num_frames)
        self.in_channels = 3 * num_frames
