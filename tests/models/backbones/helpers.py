"""Helpers shared by the backbone tests: BN statistics, frame clips, checkpoints."""
from pathlib import Path
from typing import Dict

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


@torch.no_grad()
def randomise_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every batch norm non-trivial statistics and affine weights, so that loading them
    (or not) changes the output."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            size = module.num_features
            module.running_mean.copy_(torch.randn(size, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(size, generator=generator) + 0.5)
            module.weight.copy_(torch.rand(size, generator=generator) + 0.5)
            module.bias.copy_(torch.randn(size, generator=generator) * 0.1)
    return model


def repeat_frames(frame: torch.Tensor, num_frames: int) -> torch.Tensor:
    """``[N, 3, H, W]`` -> a hyperframe of ``num_frames`` copies, ``[N, 3T, H, W]``."""
    return frame.repeat(1, num_frames, 1, 1)


def centre_frame(clip: torch.Tensor, num_frames: int) -> torch.Tensor:
    """The frame ``T // 2`` of ``[N, 3T, H, W]`` hyperframes."""
    centre = num_frames // 2
    return clip[:, 3 * centre:3 * centre + 3]


def save_checkpoint(path: Path, state_dict: Dict[str, torch.Tensor], wrap: str = '') -> str:
    """Save a state dict bare (``wrap=''``) or as a classifier/recognizer checkpoint whose
    backbone sits under ``backbone.`` next to a head (``wrap='mmpretrain'`` or ``'mmaction'``)."""
    if wrap:
        head = {'mmpretrain': 'head.fc', 'mmaction': 'cls_head.fc_cls'}[wrap]
        state_dict = {f'backbone.{key}': value for key, value in state_dict.items()}
        state_dict[f'{head}.weight'] = torch.zeros(4, 8)
        state_dict = {'state_dict': state_dict, 'meta': {'note': 'made by the tests'}}
    torch.save(state_dict, path)
    return str(path)
