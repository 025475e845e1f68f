"""MobileNetV2 whose conv1 takes a hyperframe (3T channels), on mmaction2's own ``MobileNetV2``.

Built on mmaction2's ``MobileNetV2`` rather than mmpretrain's or torchvision's so that the
hyperframe model and mmaction2's TSN / TSM-MobileNetV2 (``MobileNetV2TSM``, which loads its 2D
file strictly) read one ImageNet file: ``conv1.conv.weight``, ``conv1.bn.*``, ``layer1..7.*``,
``conv2.*`` (mmpretrain's ``MobileNetV2`` uses the same names). mmaction2's ``MobileNetV2``
builds conv1 at 3 channels whatever it is asked (it has no ``in_channels``), so conv1 is widened
after the 2D layers are built; its stem ``conv1`` is a conv-norm-act ``ConvModule``, so
``extra_bn`` and motion products sit in it as in ResNet's.

A hyperframe mixes time in conv1 only. With ``num_segments=S`` a sample is S hyperframes in time
order (``HyperframeStack(segments=S)``) and mmaction2's ``TemporalShift`` sits where
``MobileNetV2TSM`` puts it, so every residual block also exchanges features between the
segments: time mixed deeper than conv1, at S passes a clip.
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmaction.models.backbones.mobilenet_v2 import InvertedResidual, MobileNetV2
from mmaction.models.backbones.resnet_tsm import TemporalShift
from mmaction.registry import MODELS

from ...utils import positive_int
from ...utils.checks import finite_number
from .hyperframe_backbone import (HyperframeBackboneMixin, check_hyperframe_args,
                                  check_stage_args)
from .inflate import resize_conv_input
from .mobilenet_v2_converters import mobilenet_v2_state_dict_to_mmaction
from .stem import HyperframeStem
from .temporal_shift import check_segments, move_under_shift


@MODELS.register_module()
class HyperMobileNetV2(HyperframeBackboneMixin, MobileNetV2):
    """MobileNetV2 over hyperframes: conv1 takes ``3 * num_frames`` channels.

    Everything after conv1 is mmaction2's ``MobileNetV2`` (frozen stages, ``norm_eval``,
    ``with_cp``, ``out_indices``), so a 2D checkpoint loads into it key for key; only conv1's
    kernel is inflated from 3 to 3T input channels by :func:`inflate_conv_weight`. A checkpoint
    that does not fit (a missing layer, a wrong shape) is an error naming the file, and an
    ``out_indices`` or ``frozen_stages`` that does not fit the layers is a ``ValueError`` naming
    it at build (see :func:`~.hyperframe_backbone.check_stage_args`).

    Args:
        num_frames (int): T, frames per hyperframe. Defaults to 5.
        inflate_init (str): how a 2D checkpoint's conv1 is inflated: ``'replicate'``,
            ``'center'`` or ``'random'`` (see :func:`inflate_conv_weight`). Defaults to
            ``'replicate'``.
        pretrained (str, optional): a 2D (3-channel conv1) or hyperframe (3T) checkpoint in
            mmaction2's (= mmpretrain's) ``MobileNetV2`` layout, the file
            ``MobileNetV2TSM(pretrained=...)`` loads, or a float torchvision ``mobilenet_v2``
            state dict; bare or under ``state_dict``/``model``, with or without
            ``backbone.``/``module.`` prefixes. Defaults to None.
        widen_factor (float): width multiplier of every layer. Defaults to 1.
        out_indices (Sequence[int]): layers whose output is returned (0-6 = ``layer1..7``,
            7 = ``conv2``, 1280 channels at width 1), distinct and in increasing order; one
            index gives a tensor, several a tuple. Defaults to ``(7, )``.
        frozen_stages (int): stages to freeze; 0 freezes the stem (conv1 and the hyperframe
            stem's parts), 1-8 also ``layer1`` .. ``conv2``, -1 nothing. Defaults to -1.
        conv_cfg (dict): conv layer config. Defaults to ``dict(type='Conv')``.
        norm_cfg (dict): norm layer config. Defaults to ``dict(type='BN2d', requires_grad=True)``.
        act_cfg (dict): activation config. Defaults to ``dict(type='ReLU6', inplace=True)``.
        norm_eval (bool): keep the pretrained batch norms in eval mode while training
            (``extra_bn`` keeps training: it is there to track what they cannot).
            Defaults to False.
        partial_bn (bool): freeze every batch norm but the stem's (conv1's and ``extra_bn``),
            as mmaction2's ``ResNet(partial_bn=True)`` does for TSN; mmaction2's
            ``MobileNetV2`` has no such option. Defaults to False.
        with_cp (bool): gradient checkpointing in the inverted residual blocks.
            Defaults to False.
        num_segments (int): S, hyperframes a clip; above 1, the expansion conv of every
            inverted residual block with a skip connection is wrapped in mmaction2's
            ``TemporalShift`` over S segments, as ``MobileNetV2TSM`` wraps it (the same 2D file
            loads: those convs' keys move under ``.net``), and the head must be mmaction2's
            ``TSMHead(num_segments=S)``. Defaults to 1 (no shift).
        shift_div (int): ``1 / shift_div`` of the channels shifted each way. Defaults to 8.
        init_cfg (dict or list[dict], optional): initialisation from scratch.
            Defaults to Kaiming for convs, 1 for norms (mmaction2's ``MobileNetV2``'s).
        **stem: the stem's options by name, as :class:`HyperResNet`'s (declared and checked
            in :class:`~.stem.HyperframeStem`); here too ``extra_bn`` sits between conv1's
            conv and its norm.
    """

    first_conv_name = 'conv1.conv'
    stem_module_name = 'conv1'

    def __init__(self,
                 num_frames: int = 5,
                 inflate_init: str = 'replicate',
                 pretrained: Optional[str] = None,
                 widen_factor: float = 1.,
                 out_indices: Sequence[int] = (7, ),
                 frozen_stages: int = -1,
                 conv_cfg: Dict = dict(type='Conv'),
                 norm_cfg: Dict = dict(type='BN2d', requires_grad=True),
                 act_cfg: Dict = dict(type='ReLU6', inplace=True),
                 norm_eval: bool = False,
                 partial_bn: bool = False,
                 with_cp: bool = False,
                 num_segments: int = 1,
                 shift_div: int = 8,
                 init_cfg: Optional[Union[Dict, List[Dict]]] = [
                     dict(type='Kaiming', layer='Conv2d'),
                     dict(type='Constant', layer=['GroupNorm', '_BatchNorm'], val=1.)
                 ],
                 **stem) -> None:
        name = type(self).__name__
        check_hyperframe_args(name, num_frames, inflate_init, pretrained, init_cfg)
        positive_int(num_segments, 'num_segments', name)
        positive_int(shift_div, 'shift_div', name)
        # mmaction2's MobileNetV2 builds a network of minimum-width layers from 0 or a negative
        finite_number(widen_factor, 'widen_factor', name, above=0)
        # layer1..7 of the arch table, then conv2: each an output, each frozen after the stem
        num_layers = len(self.arch_settings) + 1
        check_stage_args(name, out_indices, num_layers - 1, frozen_stages, num_layers,
                         'layer1..7, then conv2')
        # pretrained is not handed on: mmaction2's MobileNetV2 would turn it into
        # init_cfg=Pretrained, which cannot load a 3-channel conv1 into the widened one
        super().__init__(pretrained=None, widen_factor=widen_factor, out_indices=out_indices,
                         frozen_stages=frozen_stages, conv_cfg=conv_cfg, norm_cfg=norm_cfg,
                         act_cfg=act_cfg, norm_eval=norm_eval, with_cp=with_cp,
                         init_cfg=init_cfg)
        resize_conv_input(self.conv1.conv, 3 * num_frames)
        self.partial_bn = partial_bn
        self.inflate_init, self.pretrained = inflate_init, pretrained
        self.hyperframe_stem = HyperframeStem(num_frames, name, self.conv1, **stem)
        self.num_segments = num_segments
        self.shifted: List[str] = []
        if num_segments > 1:
            # MobileNetV2TSM.make_temporal_shift's rule: blocks with an expansion conv and a
            # skip connection, shifted on the residual branch only
            for path, block in list(self.named_modules()):
                if isinstance(block, InvertedResidual) and len(block.conv) == 3 \
                        and block.use_res_connect:
                    block.conv[0] = TemporalShift(block.conv[0], num_segments=num_segments,
                                                  shift_div=shift_div)
                    self.shifted.append(f'{path}.conv.0')

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Read mmaction2's (= mmpretrain's) and torchvision's MobileNetV2 layouts; with
        shifted blocks, a 2D file's shifted convs move under ``.net`` (a checkpoint of the
        shifted model has them there already)."""
        return move_under_shift(mobilenet_v2_state_dict_to_mmaction(state_dict), self.shifted)

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, ...]]:
        """``[N, 3T, H, W]`` hyperframes -> the features of the ``out_indices`` layers."""
        check_segments(x, self.num_segments, type(self).__name__)
        x = self.hyperframe_stem(x, self.conv1)
        outs = []
        for index, layer_name in enumerate(self.layers):
            x = getattr(self, layer_name)(x)
            if index in self.out_indices:
                outs.append(x)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def train(self, mode: bool = True) -> 'HyperMobileNetV2':
        """Set train/eval mode (frozen stages, ``norm_eval``, the stem's parts), then partial
        BN, which mmaction2's ``MobileNetV2`` lacks."""
        super().train(mode)
        if mode and self.partial_bn:
            self._partial_bn()
        return self
