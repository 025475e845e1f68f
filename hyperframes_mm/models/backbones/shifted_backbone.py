"""mmaction2's temporal shift (TSM) inside a 2D backbone mmaction2 does not ship, where
``MobileNetV2TSM`` puts it: the TSM baseline for the networks ``InflatedBackbone`` inflates."""
from typing import Any, Dict, Optional

import torch
from mmaction.registry import MODELS
from mmengine.logging import print_log
from mmengine.model import BaseModule

from ...utils import positive_int
from .hyperframe_backbone import read_state_dict, strip_prefixes
from .inflated_backbone import build_2d_backbone, feature_map
from .temporal_shift import check_segments, move_under_shift, shift_blocks, shifted_convs


@MODELS.register_module()
class TemporalShiftBackbone(BaseModule):
    """A 2D backbone (``timm.<name>``, ``mmpretrain.<name>`` or any registered type) with
    mmaction2's ``TemporalShift`` in front of the expansion conv of every inverted residual block
    with a skip connection (:func:`~.temporal_shift.shift_blocks`): ``MobileNetV2TSM`` for
    networks mmaction2 does not ship, fed ``[N * num_segments, 3, H, W]`` segments as mmaction2's
    TSM recognizers feed theirs.

    The 2D file is loaded in ``init_weights`` (strict, through the plugin's verified loading):
    its keys are the wrapped backbone's, each shifted conv's moved under the shift's ``net``
    (as ``MobileNetV2TSM.load_original_weights`` does), so the unshifted network loads as it is.
    A checkpoint of this module itself (``model.``-prefixed keys) loads as is.

    Args:
        backbone (dict): the 2D backbone's config (``InflatedBackbone``'s ``backbone``).
        num_segments (int): frames a sample (TSM's segments).
        shift_div (int): ``1 / shift_div`` of the channels is shifted each way.
        pretrained (str, optional): a checkpoint of the 2D backbone.
    """

    def __init__(self,
                 backbone: Dict[str, Any],
                 num_segments: int = 8,
                 shift_div: int = 8,
                 pretrained: Optional[str] = None,
                 init_cfg: Optional[Dict] = None) -> None:
        name = type(self).__name__
        positive_int(num_segments, 'num_segments', name)
        positive_int(shift_div, 'shift_div', name)
        if pretrained is not None and (not isinstance(pretrained, str) or not pretrained.strip()):
            # '' read as no file: the 2D network trained from random weights, exit 0
            raise ValueError(f'{name}: pretrained must name a checkpoint file or be None, got '
                             f'{pretrained!r}')
        super().__init__(init_cfg=init_cfg)
        self.model = build_2d_backbone(backbone)
        self.shifted = shift_blocks(self.model, num_segments, shift_div, name, backbone['type'])
        self.num_segments, self.pretrained = num_segments, pretrained

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """A 2D checkpoint's keys in this module's layout: ``model.`` in front, each shifted
        conv's parameters under ``conv_pw.net``; this module's own checkpoint as it is."""
        if not any(key.startswith('model.') for key in state_dict):
            state_dict = {f'model.{key}': value for key, value in state_dict.items()}
        return move_under_shift(state_dict, shifted_convs(self.shifted, 'model.'))

    def init_weights(self) -> None:
        super().init_weights()
        if not self.pretrained:
            return
        state_dict = self.convert_checkpoint(strip_prefixes(read_state_dict(self.pretrained)))
        # the 2D file's classifier (timm names it in pretrained_cfg): the recognizer's head
        # replaces it, and timm backbones are built without one (build_2d_backbone)
        head = (getattr(self.model, 'pretrained_cfg', None) or {}).get('classifier')
        if head:
            state_dict = {key: value for key, value in state_dict.items()
                          if not key.startswith(f'model.{head}.')}
        own = self.state_dict()
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        resized = [key for key in own if key in state_dict
                   and tuple(state_dict[key].shape) != tuple(own[key].shape)]
        if missing or unexpected or resized:
            raise ValueError(f'{type(self).__name__}: {self.pretrained} is not a checkpoint of '
                             f'this backbone: {len(missing)} missing keys (e.g. {missing[:3]}), '
                             f'{len(unexpected)} unexpected (e.g. {unexpected[:3]}), '
                             f'{len(resized)} of another shape (e.g. {resized[:3]})')
        self.load_state_dict(state_dict, strict=True)
        print_log(f'{type(self).__name__}: loaded {self.pretrained}; {len(self.shifted)} '
                  f'blocks shifted over {self.num_segments} segments', logger='current')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[N * num_segments, 3, H, W]`` -> the backbone's features, a pooled ``[N, C]`` vector
        as ``[N, C, 1, 1]`` (what mmaction2's TSM head pools and averages over segments)."""
        check_segments(x, self.num_segments, type(self).__name__)
        return feature_map(self.model(x))
