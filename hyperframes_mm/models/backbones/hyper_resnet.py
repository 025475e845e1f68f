"""ResNet whose conv1 takes a hyperframe (3T channels) and loads an ordinary 2D checkpoint."""
from collections import OrderedDict
from typing import Dict, Tuple, Union

import torch
from mmaction.models.backbones.resnet import ResNet
from mmaction.registry import MODELS
from mmengine.logging import MMLogger
from mmengine.model import BaseModule
from torch import nn

from .hyperframe_backbone import HyperframeArgs, HyperframeBackboneMixin

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


@MODELS.register_module()
class HyperResNet(HyperframeBackboneMixin, ResNet):
    """ResNet-18/34/50/101/152 over hyperframes: conv1 takes ``3 * num_frames`` channels.

    Everything after conv1 is mmaction2's ``ResNet`` (frozen stages, ``norm_eval``,
    ``partial_bn``, ``with_cp``, ``out_indices``), so a 2D checkpoint loads into it key for key;
    only conv1's kernel is inflated from 3 to 3T input channels by :func:`inflate_conv_weight`.
    Unlike mmaction2's ``ResNet``, a checkpoint whose conv1 does not fit is an error, never a
    silently random conv1. Without ``pretrained`` every layer (conv1 included) is initialised
    from scratch by ``init_cfg``; ``inflate_init`` only says how a 2D conv1 is inflated.

    Args:
        depth (int): 18, 34, 50, 101 or 152.
        **kwargs: :class:`~.hyperframe_backbone.HyperframeArgs` (``num_frames``,
            ``inflate_init``, ``pretrained`` in mmaction2, torchvision or mmpretrain key
            layout, and the :class:`~.stem.HyperframeStem`'s parts, which run around conv1:
            ``extra_bn`` between conv1 and its norm), and mmaction2 ``ResNet``'s own, with its
            defaults:
        num_stages (int): ResNet stages. Defaults to 4.
        out_indices (Sequence[int]): stages whose output is returned; one index gives a tensor,
            several a tuple. Defaults to ``(3, )``.
        strides (Sequence[int]): stride of the first block of each stage.
            Defaults to ``(1, 2, 2, 2)``.
        dilations (Sequence[int]): dilation of each stage. Defaults to ``(1, 1, 1, 1)``.
        style (str): ``'pytorch'`` (stride on the 3x3 conv) or ``'caffe'``.
            Defaults to ``'pytorch'``.
        frozen_stages (int): stages to freeze; 0 freezes the stem (conv1, ``extra_bn``, frame
            attention), -1 nothing. Defaults to -1.
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
        partial_bn (bool): freeze every batch norm but the stem's. Defaults to False.
        with_cp (bool): gradient checkpointing in the residual blocks. Defaults to False.
        init_cfg (dict or list[dict], optional): initialisation from scratch.
            Defaults to Kaiming for convs, 1 for batch norms.
    """

    first_conv_name = 'conv1.conv'
    stem_module_name = 'conv1'

    def __init__(self, depth: int, **kwargs) -> None:
        args, resnet_args = HyperframeArgs.split(
            type(self), ResNet, kwargs, fixed=('depth', 'torchvision_pretrain', 'in_channels'))
        super().__init__(depth, pretrained=args.pretrained, torchvision_pretrain=False,
                         in_channels=3 * args.num_frames, **resnet_args)
        self._setup_hyperframe(args)

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Read mmaction2, torchvision and mmpretrain ResNet layouts."""
        return resnet_state_dict_to_mmaction(state_dict)

    def init_weights(self) -> None:
        """Initialise from scratch, then load and inflate ``pretrained`` when given."""
        BaseModule.init_weights(self)
        self._init_hyperframe_weights()

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, ...]]:
        """``[N, 3T, H, W]`` hyperframes -> the features of the ``out_indices`` stages."""
        x = self.maxpool(self.stem_forward(x))
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

    def _partial_bn(self) -> None:
        """Freeze every batch norm but the stem's (conv1's norm and ``extra_bn``)."""
        MMLogger.get_current_instance().info('Freezing BatchNorm2D except the stem\'s.')
        stem_norms = {id(self.conv1.bn), id(self.extra_bn)}
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d) and id(module) not in stem_norms:
                module.eval()
                module.weight.requires_grad = False
                module.bias.requires_grad = False

    def train(self, mode: bool = True) -> 'HyperResNet':
        """Set train/eval mode, then apply frozen stages, ``norm_eval`` and ``partial_bn``."""
        super().train(mode)
        self.train_hyperframe_parts(mode, stem_frozen=self.frozen_stages >= 0)
        return self
