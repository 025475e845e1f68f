"""Inflate any 2D backbone (mmaction2, mmpretrain, timm) by the name of its first convolution."""
import copy
from typing import Any, Dict, Optional, Tuple

import torch
from mmaction.registry import MODELS
from mmengine.model import BaseModule
from torch import nn

from ...utils import positive_int
from .hyperframe_backbone import (HyperframeBackboneMixin, check_hyperframe_args,
                                  timm_classifier_prefixes)
from .inflate import resize_conv_input
from .stem import HyperframeStem
from .temporal_shift import check_segments, move_under_shift, shift_blocks, shifted_convs


def build_2d_backbone(cfg: Dict) -> nn.Module:
    """Build a 2D backbone from a config: ``timm.<model name>`` or any registered type.

    ``timm.*`` models are made with ``timm.create_model(name, pretrained=False, **rest)`` and,
    unless ``num_classes`` is given, without a classifier (``num_classes=0``), so their forward
    returns pooled features. ``mmpretrain.*`` (and any other scope) resolves through mmaction2's
    registry as mmaction2's recognizers do.
    """
    cfg = copy.deepcopy(dict(cfg))
    backbone_type = cfg.pop('type', None)
    if not isinstance(backbone_type, str):
        raise TypeError(f'InflatedBackbone: backbone needs a type name, got {backbone_type!r}')
    if cfg.get('init_cfg') and 'Pretrained' in str(cfg['init_cfg']):
        raise ValueError('InflatedBackbone: give the 2D checkpoint as InflatedBackbone('
                         'pretrained=...) so that its first conv is inflated; the inner '
                         'backbone\'s init_cfg=Pretrained would skip that conv (shape mismatch)')
    if backbone_type.startswith('torchvision.'):
        # mmaction2's recognizers take torchvision.* in this slot; its registry here does not
        raise ValueError(f'InflatedBackbone: {backbone_type}: torchvision models are not '
                         'supported; use the timm model of that architecture (e.g. '
                         "type='timm.resnet18'), or HyperResNet, HyperMobileNetV2 or "
                         'HyperMobileNetV3, which load torchvision ResNet and MobileNet files')
    if backbone_type.startswith('timm.'):
        import timm
        if cfg.pop('pretrained', False):
            raise ValueError('InflatedBackbone: timm pretrained=True downloads weights; save them '
                             'to a file once and give it as InflatedBackbone(pretrained=PATH)')
        cfg.setdefault('num_classes', 0)
        return timm.create_model(backbone_type[len('timm.'):], pretrained=False, **cfg)
    if backbone_type.startswith('mmpretrain.'):
        import mmpretrain.models  # noqa: F401  (registers mmpretrain's models)
    return MODELS.build(dict(type=backbone_type, **cfg))


def _find_first_conv(model: nn.Module, first_conv: str, type_name: str) -> str:
    """The dotted path of the ``nn.Conv2d`` named by ``first_conv`` (a ConvModule's ``.conv``)."""
    try:
        module = model.get_submodule(first_conv)
    except AttributeError:
        convs = [name for name, m in model.named_modules() if isinstance(m, nn.Conv2d)][:3]
        raise ValueError(f'InflatedBackbone: {type_name} has no module {first_conv!r}; its first '
                         f'convolutions are {convs}') from None
    if not isinstance(module, nn.Conv2d) and isinstance(getattr(module, 'conv', None), nn.Conv2d):
        return f'{first_conv}.conv'
    if not isinstance(module, nn.Conv2d):
        raise TypeError(f'InflatedBackbone: {type_name}.{first_conv} is a '
                        f'{type(module).__name__}, not a Conv2d (mmpretrain ViT: '
                        '"patch_embed.projection", timm vit_*: "patch_embed.proj")')
    return first_conv


def _refuse_not_first(model: nn.Module, where: str, in_channels: int) -> None:
    """Refuse a named conv that does not read the 3-channel image, saying what does."""
    readers = [name for name, m in model.named_modules()
               if isinstance(m, nn.Conv2d) and m.in_channels == 3]
    if readers:
        raise ValueError(f'InflatedBackbone: {where} takes {in_channels} channels, so it is not '
                         f'the first conv: the convs reading 3 channels are {readers[:3]}')
    raise ValueError(f'InflatedBackbone: {where} takes {in_channels} channels and no conv of the '
                     'network reads 3: build the 2D backbone at 3 channels. A network whose '
                     'image reaches its first conv through another layer (TResNet\'s '
                     'SpaceToDepth) cannot be inflated by a first-conv rewrite')


def feature_map(out: Any) -> Any:
    """A 2D backbone's output as mmaction2's heads take it, as mmaction2's recognizers treat
    mmpretrain/timm backbones: a one-element tuple unwrapped, a ``[N, C]`` feature vector (ViT
    class token, timm's pooled features) as ``[N, C, 1, 1]``; anything else as it is."""
    if isinstance(out, (tuple, list)) and len(out) == 1:
        out = out[0]
    if isinstance(out, torch.Tensor) and out.dim() == 2:
        out = out[:, :, None, None]
    return out


@MODELS.register_module()
class InflatedBackbone(HyperframeBackboneMixin, BaseModule):
    """Any 2D backbone with its first convolution inflated to ``3 * num_frames`` inputs.

    The wrapped backbone is built at 3 channels, its first conv widened in place, and a 2D
    checkpoint of the wrapped backbone (its own key layout) loaded with that conv inflated. The
    worked example is a ViT, whose patch embedding is the first (and only) convolution::

        backbone=dict(type='InflatedBackbone',
                      backbone=dict(type='mmpretrain.VisionTransformer', arch='b',
                                    img_size=224, patch_size=16),
                      first_conv='patch_embed.projection', num_frames=5,
                      pretrained='vit-b16_2d.pth')

    or ``backbone=dict(type='timm.vit_base_patch16_224')`` with ``first_conv='patch_embed.proj'``.

    Output: what the wrapped backbone returns, made usable by mmaction2's 2D heads as mmaction2
    does for mmpretrain/timm backbones: a one-element tuple is unwrapped, and a ``[N, C]``
    feature vector (ViT class token, timm's pooled features) becomes ``[N, C, 1, 1]``.
    ``extra_bn`` and motion products are refused: a generic backbone has no known conv-norm
    stem to put them in (a ViT has no norm after its patch embedding).

    A hyperframe mixes time in its first conv only. With ``num_segments=S`` a sample is S
    hyperframes in time order (``HyperframeStack(segments=S)``) and mmaction2's
    ``TemporalShift`` sits where ``MobileNetV2TSM`` puts it, in every inverted residual block
    with a skip connection (:func:`~.temporal_shift.shift_blocks`: timm's EfficientNets,
    MobileNets, MNASNets), so those blocks also exchange features between the segments, as
    ``HyperMobileNetV2(num_segments=S)`` does for mmaction2's MobileNetV2; the head must be
    mmaction2's ``TSMHead(num_segments=S)``.

    Args:
        backbone (dict): config of the 2D backbone, built at 3 input channels.
        first_conv (str): dotted name of its first ``nn.Conv2d`` (or of a ConvModule holding it).
        num_frames (int): T, frames per hyperframe. Defaults to 5.
        inflate_init (str): how a 2D checkpoint's first conv is inflated: ``'replicate'``,
            ``'center'`` or ``'random'`` (see :func:`inflate_conv_weight`). Defaults to
            ``'replicate'``.
        pretrained (str, optional): a checkpoint of the wrapped 2D backbone (its own key
            layout, bare or under ``backbone.``; classifier keys are reported and ignored) or
            of this wrapper (``model.*`` keys), C or C*T channels, shifted or not (a shifted
            conv's keys move under the shift's ``net``). Defaults to None.
        num_segments (int): S, hyperframes a clip; above 1, the inverted residual blocks are
            shifted over S segments (see above); a network without such blocks is an error.
            Defaults to 1 (no shift).
        shift_div (int): ``1 / shift_div`` of the channels shifted each way. Defaults to 8.
        init_cfg (dict, optional): initialisation of the wrapper. Defaults to None.
        **stem: the :class:`~.stem.HyperframeStem`'s options, by name, declared and checked
            there: ``input_encoding``, ``diff_gain`` and ``frame_attention``, which run on the
            input before the wrapped backbone.
    """

    def __init__(self,
                 backbone: Dict[str, Any],
                 first_conv: str,
                 num_frames: int = 5,
                 inflate_init: str = 'replicate',
                 pretrained: Optional[str] = None,
                 num_segments: int = 1,
                 shift_div: int = 8,
                 init_cfg: Optional[Dict] = None,
                 **stem) -> None:
        name = type(self).__name__
        check_hyperframe_args(name, num_frames, inflate_init, pretrained, init_cfg)
        positive_int(num_segments, 'num_segments', name)
        positive_int(shift_div, 'shift_div', name)
        super().__init__(init_cfg=init_cfg)
        self.model = build_2d_backbone(backbone)
        type_name = backbone['type']
        conv_path = _find_first_conv(self.model, first_conv, type_name)
        conv = self.model.get_submodule(conv_path)
        if conv.in_channels != 3:
            _refuse_not_first(self.model, f'{type_name}.{conv_path}', conv.in_channels)
        self.first_conv_name = f'model.{conv_path}'
        resize_conv_input(conv, 3 * num_frames, f'{name}: {type_name}.{conv_path}')
        self.inflate_init, self.pretrained = inflate_init, pretrained
        self.hyperframe_stem = HyperframeStem(num_frames, name, **stem)
        # the stem has no conv-norm stem of a generic backbone to check (channels_per_frame)
        self.hyperframe_stem.check_first_conv(conv)
        self.num_segments = num_segments
        self.shifted = (shift_blocks(self.model, num_segments, shift_div, name, type_name)
                        if num_segments > 1 else [])

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """A checkpoint of the wrapped backbone gets the ``model.`` prefix; one of this wrapper
        (it has ``model.<first conv>``) keeps its keys. With shifted blocks, their convs' keys
        then move under the shift's ``net`` where they are not there yet (a 2D file, or a
        hyperframe checkpoint trained without shifts)."""
        if f'{self.first_conv_name}.weight' not in state_dict:
            state_dict = {f'model.{key}': value for key, value in state_dict.items()}
        return move_under_shift(state_dict, shifted_convs(self.shifted, 'model.'))

    def classifier_prefixes(self) -> Tuple[str, ...]:
        """A timm model's classifier head, which the wrapper builds without (``num_classes=0``);
        an mmpretrain file's head sits outside its ``backbone.`` prefix and is never read."""
        return timm_classifier_prefixes(self.model, 'model.')

    def forward(self, x: torch.Tensor) -> Any:
        """``[N, 3T, H, W]`` hyperframes -> the wrapped backbone's features (see class doc)."""
        check_segments(x, self.num_segments, type(self).__name__)
        return feature_map(self.model(self.hyperframe_stem(x)))
