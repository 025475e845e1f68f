"""ResNet whose conv1 takes a hyperframe (3T channels) and loads an ordinary 2D checkpoint."""
from collections import OrderedDict
from typing import Dict, Optional

import torch
from mmaction.models.backbones.resnet import ResNet
from mmaction.registry import MODELS
from mmengine.logging import MMLogger
from mmengine.runner.checkpoint import _load_checkpoint

from .inflate import INFLATE_MODES, inflate_conv_weight

CONV1_KEY = 'conv1.conv.weight'


def _strip_prefixes(state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Keep the backbone of a wrapped state dict: DDP's ``module.``, a recognizer's ``backbone.``."""
    for prefix in ('module.', 'backbone.'):
        if any(key.startswith(prefix) for key in state_dict):
            state_dict = OrderedDict((key[len(prefix):], value)
                                     for key, value in state_dict.items()
                                     if key.startswith(prefix))
    return state_dict


def resnet_state_dict_to_mmaction(state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Rename a ResNet state dict from torchvision or mmpretrain layout to mmaction2's.

    mmaction2 wraps each conv and its norm in a ``ConvModule`` (``conv1.conv``, ``conv1.bn``,
    ``downsample.conv``); torchvision and mmpretrain keep them as siblings (``conv1``, ``bn1`` or
    ``norm1``, ``downsample.0``/``downsample.1``). Keys already in mmaction2 layout pass unchanged;
    classifier heads (``fc.``, ``head.``) are dropped.
    """
    state_dict = _strip_prefixes(state_dict)
    converted = OrderedDict()
    for key, value in state_dict.items():
        if key.startswith(('fc.', 'head.', 'cls_head.', 'data_preprocessor.')):
            continue
        if key.startswith('conv1.') and not key.startswith('conv1.conv.'):
            key = 'conv1.conv.' + key[len('conv1.'):]
        elif key.startswith(('bn1.', 'norm1.')):
            key = 'conv1.bn.' + key.split('.', 1)[1]
        elif key.startswith('layer'):
            parts = key.split('.')
            # layerX.Y.<module>.<param>
            module, rest = parts[2], parts[3:]
            if module.startswith('conv') and rest[0] not in ('conv', 'bn'):
                parts = parts[:3] + ['conv'] + rest
            elif module.startswith(('bn', 'norm')):
                parts = parts[:2] + ['conv' + module[-1], 'bn'] + rest
            elif module == 'downsample' and rest[0] in ('0', '1'):
                parts = parts[:3] + ['conv' if rest[0] == '0' else 'bn'] + rest[1:]
            key = '.'.join(parts)
        converted[key] = value
    return converted


@MODELS.register_module()
class HyperResNet(ResNet):
    """ResNet-18/34/50/101 over hyperframes: conv1 takes ``3 * num_frames`` channels.

    Everything after conv1 is mmaction2's ``ResNet`` unchanged (frozen stages, ``norm_eval``,
    ``with_cp``, ``out_indices``), so a 2D checkpoint loads into it key for key; only conv1's kernel
    is inflated from 3 to 3T input channels by :func:`inflate_conv_weight`. Unlike mmaction2's
    ``ResNet``, a checkpoint whose conv1 does not fit is an error, never a silently random conv1.

    Args:
        depth (int): 18, 34, 50 or 101.
        num_frames (int): T, frames per hyperframe. Defaults to 5.
        inflate_init (str): how conv1 is inflated from the 2D checkpoint, one of
            ``'replicate'``, ``'center'``, ``'random'``. Defaults to ``'replicate'``.
        pretrained (str, optional): path of a 2D (3-channel conv1) or already inflated (3T)
            checkpoint in mmaction2, torchvision or mmpretrain key layout. Defaults to None.
        **kwargs: the rest of mmaction2's ``ResNet`` arguments.
    """

    def __init__(self,
                 depth: int,
                 num_frames: int = 5,
                 inflate_init: str = 'replicate',
                 pretrained: Optional[str] = None,
                 **kwargs) -> None:
        if not isinstance(num_frames, int) or num_frames < 1:
            raise ValueError(f'HyperResNet: num_frames must be a positive int, got {num_frames!r}')
        if inflate_init not in INFLATE_MODES:
            raise ValueError(f'HyperResNet: inflate_init must be one of {INFLATE_MODES}, '
                             f'got {inflate_init!r}')
        if 'in_channels' in kwargs:
            raise ValueError('HyperResNet: in_channels is 3 * num_frames; set num_frames instead')
        self.num_frames = num_frames
        self.inflate_init = inflate_init
        super().__init__(depth=depth, pretrained=pretrained, torchvision_pretrain=False,
                         in_channels=3 * num_frames, **kwargs)

    def init_weights(self) -> None:
        """Initialise from scratch, then load and inflate ``pretrained`` when given."""
        logger = MMLogger.get_current_instance()
        super(ResNet, self).init_weights()
        if self.pretrained is None:
            return
        checkpoint = _load_checkpoint(self.pretrained, map_location='cpu')
        state_dict = checkpoint.get('state_dict', checkpoint)
        state_dict = resnet_state_dict_to_mmaction(state_dict)
        if CONV1_KEY not in state_dict:
            raise KeyError(f'{self.pretrained}: no ResNet conv1 weight found (looked for '
                           f'{CONV1_KEY!r} after mapping torchvision/mmpretrain names)')
        weight = state_dict[CONV1_KEY]
        in_channels = weight.shape[1]
        if in_channels == 3:
            state_dict[CONV1_KEY] = inflate_conv_weight(weight, self.num_frames,
                                                        self.inflate_init)
        elif in_channels != 3 * self.num_frames:
            raise ValueError(
                f'{self.pretrained}: conv1 has {in_channels} input channels; HyperResNet with '
                f'num_frames={self.num_frames} can load a 2D checkpoint (3 channels) or a '
                f'hyperframe one with {3 * self.num_frames} channels')
        missing, unexpected = self.load_state_dict(state_dict, strict=False)
        logger.info(f'HyperResNet: loaded {self.pretrained} (conv1 {in_channels} -> '
                    f'{3 * self.num_frames} channels, inflate_init={self.inflate_init}); '
                    f'missing keys: {missing or "none"}; unexpected keys: {unexpected or "none"}')
