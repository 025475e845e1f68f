"""MobileNetV2 ImageNet weights in mmaction2's layout, from torchvision float or int8 models.

mmaction2's ``MobileNetV2`` (and ``MobileNetV2TSM``, which loads its file strictly) keeps every
conv with its batch norm in a ``ConvModule``: ``conv1.conv`` / ``conv1.bn``,
``layer{1..7}.{block}.conv.{j}.conv`` / ``.bn``, ``conv2.conv`` / ``conv2.bn``; mmpretrain's
``MobileNetV2`` uses the same names. torchvision names the same layers ``features.{i}...``
(:func:`torchvision_module_map`), and its int8 models (``QuantizableMobileNetV2`` saved as
TorchScript, the ONNX model zoo's ``mobilenetv2-12-int8``) fold each batch norm into its conv.

A folded conv has a bias and no norm; mmaction2's convs have a norm and no bias. The bias goes to
a batch norm that is the identity in eval mode (weight 1, running mean 0, running variance
``1 - eps``, so that ``var + eps`` is exactly 1) and whose bias is the folded bias: the
converted network computes the dequantised model's function, up to float rounding. Such a norm
is right in eval mode only: :func:`calibrate_norms` gives it statistics measured on training
frames, so that training mode computes that function too.
"""
import re
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, NamedTuple, Sequence, Tuple

import torch
from mmaction.models.backbones.mobilenet_v2 import MobileNetV2
from mmcv.cnn import ConvModule

#: The classifier's Linear in torchvision's layout (``classifier.0`` is its dropout).
CLASSIFIER = 'classifier.1'

#: How TorchScript names a quantised layer's packed weights: ``<module>._packed_params`` (conv),
#: ``<module>._packed_params._packed_params`` (linear), or, after ``optimize_for_mobile``
#: hoisted them to the top module, ``_jit_pass_hoist_conv_packed_params.<module>._packed_params.N``.
PACKED_NAME = re.compile(r'^(?:_jit_pass_hoist_conv_packed_params\.)?(?P<module>.+?)'
                          r'\._packed_params(?:\._packed_params|\.\d+)?$')


class FoldedConv(NamedTuple):
    """One torchvision conv whose batch norm was folded into it, and where it goes."""
    torchvision_conv: str
    torchvision_norm: str
    mmaction: str


def folded_convs() -> List[FoldedConv]:
    """Every conv of MobileNetV2 in forward order, in both layouts.

    torchvision's block ``features.i`` is ``conv = [expand (conv, bn, act) if expand_ratio > 1,
    depthwise (conv, bn, act), projection conv, projection bn]``; mmaction2 puts block ``b`` of
    stage ``L`` at ``layerL.b``, its ConvModules at ``conv.0``, ``conv.1`` (``conv.2``).
    A conv's norm in torchvision's layout is its next sibling (``features.0.0`` ->
    ``features.0.1``, ``features.1.conv.1`` -> ``features.1.conv.2``). The stages are
    mmaction2's ``MobileNetV2.arch_settings`` (torchvision's ``inverted_residual_setting``);
    the width multiplier changes channels, not layers.
    """
    def folded(conv: str, mmaction: str) -> FoldedConv:
        parent, index = conv.rsplit('.', 1)
        return FoldedConv(conv, f'{parent}.{int(index) + 1}', mmaction)

    convs = [folded('features.0.0', 'conv1')]
    index = 1
    for stage, (expand_ratio, _, num_blocks, _) in enumerate(MobileNetV2.arch_settings, 1):
        for block in range(num_blocks):
            source, target = f'features.{index}.conv', f'layer{stage}.{block}.conv'
            parts = [f'{source}.0.0'] + ([f'{source}.1.0'] if expand_ratio != 1 else [])
            parts.append(f'{source}.{len(parts)}')
            convs += [folded(conv, f'{target}.{j}') for j, conv in enumerate(parts)]
            index += 1
    convs.append(folded(f'features.{index}.0', 'conv2'))
    return convs


def torchvision_module_map() -> Dict[str, str]:
    """Module names of torchvision's float ``mobilenet_v2`` -> mmaction2's ``MobileNetV2``."""
    mapping = {}
    for conv in folded_convs():
        mapping[conv.torchvision_conv] = f'{conv.mmaction}.conv'
        mapping[conv.torchvision_norm] = f'{conv.mmaction}.bn'
    return mapping


def mobilenet_v2_state_dict_to_mmaction(
        state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Rename a torchvision float ``mobilenet_v2`` state dict to mmaction2's layout.

    A state dict without torchvision's ``features.`` keys is returned unchanged (mmaction2's or
    mmpretrain's layout, which are the same); torchvision's ``classifier.*`` is dropped. Keys the
    table does not know are kept, so that loading reports them. Strip ``module.``/``backbone.``
    prefixes first.
    """
    if not any(key.startswith('features.') for key in state_dict):
        return state_dict
    return rename_torchvision_modules(state_dict, torchvision_module_map())


def rename_torchvision_modules(state_dict: Dict[str, torch.Tensor],
                               mapping: Dict[str, str]) -> Dict[str, torch.Tensor]:
    """Rename the modules of a torchvision classifier's state dict by ``mapping`` (module name
    -> module name) and drop its ``classifier.*``; keys of unmapped modules pass unchanged."""
    converted = OrderedDict()
    for key, value in state_dict.items():
        if key.startswith('classifier.'):
            continue
        module, param = key.rsplit('.', 1)
        converted[f'{mapping[module]}.{param}' if module in mapping else key] = value
    return converted


def identity_norm(bias: torch.Tensor, eps: float) -> Dict[str, torch.Tensor]:
    """A batch norm's state that, in eval mode, adds ``bias`` and changes nothing else.

    ``running_var = 1 - eps`` makes ``sqrt(running_var + eps)`` exactly 1 in float32 (as long as
    the norm is built with this ``eps``), so the folded conv's output is not rescaled.
    """
    bias = bias.detach().float()
    return OrderedDict(weight=torch.ones_like(bias), bias=bias.clone(),
                       running_mean=torch.zeros_like(bias),
                       running_var=torch.full_like(bias, 1.0 - eps),
                       num_batches_tracked=torch.tensor(0))


def _unpack(packed: torch.ScriptObject) -> Tuple[torch.Tensor, torch.Tensor]:
    """Float (weight, bias) of one quantised conv's or linear's packed parameters."""
    if packed._type().qualified_name().endswith('LinearPackedParamsBase'):
        weight, bias = torch.ops.quantized.linear_unpack(packed)
    else:
        weight, bias = packed.unpack()
    weight = weight.dequantize() if weight.is_quantized else weight
    bias = torch.zeros(weight.shape[0]) if bias is None else bias
    return weight.float(), bias.float()


def read_torchscript(path: str) -> Dict[str, Tuple[torch.Tensor, torch.Tensor]]:
    """The dequantised (weight, bias) of every quantised conv and linear of a TorchScript file,
    by torchvision module name.

    Works for ``torch.jit.script`` / ``torch.jit.trace`` of a quantised model (packed weights
    on their modules) and for ``optimize_for_mobile`` output (packed weights hoisted to the top
    module, the original module name kept in the attribute's name).
    """
    module = torch.jit.load(path, map_location='cpu')
    layers = OrderedDict()
    attributes = torch._C._jit_debug_module_iterators(module._c)['named_attributes_r']
    for name, value in attributes:
        if not isinstance(value, torch.ScriptObject) or isinstance(value, torch.ScriptModule):
            continue
        if not value._type().qualified_name().endswith(('Conv2dPackedParamsBase',
                                                        'LinearPackedParamsBase')):
            continue
        match = PACKED_NAME.match(name)
        if match is None:
            raise ValueError(f'{path}: cannot tell which layer the packed weights {name!r} '
                             'belong to')
        layers[match['module']] = _unpack(value)
    return layers


def _onnx_array(initializers: Dict, name: str, path: str):
    """An initializer as a numpy array (a computed input cannot be a weight)."""
    from onnx import numpy_helper
    if name not in initializers:
        raise ValueError(f'{path}: {name!r} is computed by the graph, not a stored weight; '
                         'only int8 models with QLinearConv weights are supported')
    return numpy_helper.to_array(initializers[name]).astype('float64')


def _dequantise(initializers: Dict, names: Sequence[str], path: str,
                axis: int = 0) -> torch.Tensor:
    """``(q - zero_point) * scale`` of an ONNX (value, scale, zero point) triple; per-channel
    scales run along ``axis`` (0 for QLinearConv's output channels, the last for
    QLinearMatMul's output columns)."""
    value, scale, zero_point = (_onnx_array(initializers, name, path) for name in names)
    shape = [1] * value.ndim
    if scale.ndim:
        shape[axis] = -1
    return torch.from_numpy((value - zero_point.reshape(shape)) * scale.reshape(shape)).float()


def read_onnx(path: str) -> Dict[str, Tuple[torch.Tensor, torch.Tensor]]:
    """The dequantised (weight, bias) of an int8 ONNX MobileNetV2 (QOperator format, as the ONNX
    model zoo's ``mobilenetv2-12-int8``), by torchvision module name.

    ONNX keeps no module names: the ``QLinearConv`` nodes are taken in graph order (the order
    of :func:`folded_convs`), and the classifier is the ``QLinearMatMul`` and the
    ``QLinearAdd`` of its bias. A ``QLinearConv`` bias is int32 with scale
    ``input_scale * weight_scale`` (the ONNX operator's definition).
    """
    import onnx
    try:
        graph = onnx.load(path).graph
    except Exception as error:  # protobuf's DecodeError and onnx's own: not an ONNX file
        raise ValueError(f'{path}: not an ONNX model: {error}') from error
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    convs = [node for node in graph.node if node.op_type == 'QLinearConv']
    matmuls = [node for node in graph.node if node.op_type == 'QLinearMatMul']
    expected = folded_convs()
    if len(convs) != len(expected) or len(matmuls) != 1:
        raise ValueError(f'{path}: a MobileNetV2 has {len(expected)} QLinearConv nodes and one '
                         f'QLinearMatMul (the classifier); this graph has {len(convs)} and '
                         f'{len(matmuls)}')
    layers = OrderedDict()
    for conv, node in zip(expected, convs):
        weight = _dequantise(initializers, node.input[3:6], path)
        bias = (torch.zeros(weight.shape[0]) if len(node.input) < 9 else torch.from_numpy(
            _onnx_array(initializers, node.input[8], path) *
            _onnx_array(initializers, node.input[1], path) *
            _onnx_array(initializers, node.input[4], path)).float())
        layers[conv.torchvision_conv] = weight, bias
    matmul = matmuls[0]
    # MatMul's weight is [in, out]; a Linear's is [out, in].
    weight = _dequantise(initializers, matmul.input[3:6], path, axis=-1).t().contiguous()
    adds = [node for node in graph.node
            if node.op_type == 'QLinearAdd' and matmul.output[0] in node.input]
    bias = (_dequantise(initializers, adds[0].input[3:6], path).reshape(-1)
            if adds else torch.zeros(weight.shape[0]))
    layers[CLASSIFIER] = weight, bias
    return layers


def folded_to_torchvision(layers: Dict[str, Tuple[torch.Tensor, torch.Tensor]], eps: float,
                          path: str) -> Dict[str, torch.Tensor]:
    """Folded (weight, bias) per torchvision module -> a float torchvision ``mobilenet_v2`` state
    dict whose batch norms are :func:`identity_norm`; a layer set that is not MobileNetV2's is a
    ``ValueError`` naming the file and the layers."""
    convs = folded_convs()
    expected = [conv.torchvision_conv for conv in convs] + [CLASSIFIER]
    missing = [name for name in expected if name not in layers]
    unexpected = [name for name in layers if name not in expected]
    if missing or unexpected:
        raise ValueError(f'{path}: the layers are not torchvision MobileNetV2\'s: missing '
                         f'{missing[:5]}{" ..." if len(missing) > 5 else ""} '
                         f'({len(missing)}), unexpected '
                         f'{unexpected[:5]}{" ..." if len(unexpected) > 5 else ""} '
                         f'({len(unexpected)})')
    state_dict = OrderedDict()
    for conv in convs:
        weight, bias = layers[conv.torchvision_conv]
        state_dict[f'{conv.torchvision_conv}.weight'] = weight
        for name, value in identity_norm(bias, eps).items():
            state_dict[f'{conv.torchvision_norm}.{name}'] = value
    state_dict[f'{CLASSIFIER}.weight'], state_dict[f'{CLASSIFIER}.bias'] = layers[CLASSIFIER]
    return state_dict


def read_torchvision_float(path: str) -> Dict[str, torch.Tensor]:
    """A float torchvision ``mobilenet_v2`` state dict from a ``torch.save`` file (weights-only
    load), bare or under ``state_dict``/``model``."""
    from .hyperframe_backbone import read_state_dict
    checkpoint = read_state_dict(path)
    if 'features.0.0.weight' not in checkpoint:
        raise ValueError(f'{path}: not a torchvision mobilenet_v2 state dict (no '
                         '"features.0.0.weight")')
    return checkpoint


def source_format(path: str) -> str:
    """``'torchscript'``, ``'onnx'`` or ``'state_dict'`` (a ``torch.save`` file), from the
    file's first bytes: TorchScript and ``torch.save`` are both zip archives, told apart by the
    archive's ``code/`` folder; ONNX is a protobuf."""
    import zipfile
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f'{path}: no such file')
    if zipfile.is_zipfile(file):
        with zipfile.ZipFile(file) as archive:
            names = archive.namelist()
        return 'torchscript' if any('/code/' in name for name in names) else 'state_dict'
    if file.suffix == '.onnx':
        if file.stat().st_size == 0:
            raise ValueError(f'{path}: the file is empty (0 bytes), not an ONNX model')
        return 'onnx'
    # a .pth cut short or empty is not a zip archive any more: the checkpoint checks say which
    from ...engine.checkpoint import verify_checkpoint_file
    try:
        verify_checkpoint_file(str(path))
    except RuntimeError as error:
        raise ValueError(str(error)) from error
    raise ValueError(f'{path}: neither a TorchScript/torch.save zip archive nor an .onnx file')


def convert_mobilenet_v2(path: str, widen_factor: float = 1.0
                         ) -> Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]:
    """Read a MobileNetV2 (torchvision float state dict, int8 TorchScript or int8 ONNX) and
    return ``(backbone, classifier)``: the backbone in mmaction2's layout, checked by loading it
    strictly into mmaction2's ``MobileNetV2(widen_factor)``, and the ImageNet classifier
    (``weight`` [1000, 1280], ``bias``) for sanity checks.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file that is not such a model, or whose layers are not MobileNetV2's.
        RuntimeError: layers of MobileNetV2 with other shapes (another ``widen_factor``).
    """
    model = MobileNetV2(widen_factor=widen_factor)
    eps = model.conv1.bn.eps
    kind = source_format(path)
    if kind == 'state_dict':
        state_dict = read_torchvision_float(path)
    else:
        try:
            layers = read_torchscript(path) if kind == 'torchscript' else read_onnx(path)
        except (RuntimeError, ValueError) as error:
            if str(error).startswith(path):
                raise
            raise ValueError(f'{path}: cannot read it as a quantised {kind} model: '
                             f'{error}') from error
        state_dict = folded_to_torchvision(layers, eps, path)
    classifier = OrderedDict(
        (key[len(CLASSIFIER) + 1:], value) for key, value in state_dict.items()
        if key.startswith(f'{CLASSIFIER}.'))
    backbone = mobilenet_v2_state_dict_to_mmaction(state_dict)
    try:
        model.load_state_dict(backbone, strict=True)
    except RuntimeError as error:
        raise RuntimeError(f'{path}: does not load into mmaction2 MobileNetV2(widen_factor='
                           f'{widen_factor}): {error}') from error
    return backbone, classifier


def conv_norm_pairs(model: torch.nn.Module) -> List[Tuple[str, torch.nn.Module, torch.nn.Module]]:
    """``(name, conv, norm)`` of every ConvModule with a norm, in registration order (for
    mmaction2's ``MobileNetV2``, the forward order of :func:`folded_convs`)."""
    return [(name, module.conv, module.norm) for name, module in model.named_modules()
            if isinstance(module, ConvModule) and module.with_norm]


@torch.no_grad()
def calibrate_norms(model: torch.nn.Module, frames: torch.Tensor,
                    batch_size: int = 32) -> Dict[str, torch.Tensor]:
    """Give the batch norms of a converted ``MobileNetV2`` the statistics of ``frames``, so that
    in training mode, on batches like them, it computes what it computes in eval mode (the source
    network); eval mode is unchanged up to float rounding. Returns the model's state dict.

    A converted norm (:func:`identity_norm`, or a float source's own) is right in eval mode
    only. In training mode a norm standardises each channel by the batch's statistics: the first
    training step computes another network, and the scale the folded conv carries is divided
    out. Each norm computes ``a * z + c`` in eval mode (``z``: its conv's output, ``a = weight /
    sqrt(running_var + eps)``, ``c = bias - running_mean * a``; an identity norm has ``a = 1``,
    ``c`` = the folded bias). With ``m``, ``v`` the mean and variance of ``z`` over the frames,
    the norm becomes ``running_mean = m``, ``running_var = v``, ``weight = a * sqrt(v + eps)``,
    ``bias = a * m + c``: eval mode gives ``(z - m) / sqrt(v + eps) * a * sqrt(v + eps) + a * m +
    c = a * z + c`` as before, and training mode on a batch of mean ``m`` and variance ``v`` gives
    the same. Because eval mode does not change, one eval-mode pass measures every layer's ``z``
    as a layer-by-layer pass through the already calibrated layers would.

    Args:
        model (nn.Module): an mmaction2 ``MobileNetV2`` holding the converted weights.
        frames (Tensor): ``[N, 3, H, W]`` calibration frames, normalised as the network's
            training data is (ImageNet mean and std).
        batch_size (int): frames per forward pass; does not change the result beyond float
            rounding. Defaults to 32.

    Raises:
        ValueError: ``frames`` is not a non-empty ``[N, 3, H, W]`` batch, or ``batch_size`` < 1.
    """
    if frames.ndim != 4 or frames.shape[1] != 3 or len(frames) == 0:
        raise ValueError(f'frames: calibration needs a non-empty [N, 3, H, W] batch, got shape '
                         f'{tuple(frames.shape)}')
    if batch_size < 1:
        raise ValueError(f'batch_size must be >= 1, got {batch_size}')
    pairs = conv_norm_pairs(model)
    # per norm: [sum of z, sum of z^2] per channel, in float64 (millions of pixels per channel)
    moments = {name: torch.zeros(2, norm.num_features, dtype=torch.float64)
               for name, _, norm in pairs}
    pixels = {name: 0 for name, _, _ in pairs}

    def recorder(name: str):
        def hook(_, __, output: torch.Tensor) -> None:
            z = output.double().transpose(0, 1).reshape(output.shape[1], -1)
            moments[name] += torch.stack([z.sum(1), (z * z).sum(1)])
            pixels[name] += z.shape[1]
        return hook

    handles = [conv.register_forward_hook(recorder(name)) for name, conv, _ in pairs]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(frames), batch_size):
            model(frames[start:start + batch_size])
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    for name, _, norm in pairs:
        mean = moments[name][0] / pixels[name]
        var = (moments[name][1] / pixels[name] - mean * mean).clamp(min=0)
        scale = norm.weight.double() / torch.sqrt(norm.running_var.double() + norm.eps)
        shift = norm.bias.double() - norm.running_mean.double() * scale
        norm.running_mean.copy_(mean)
        norm.running_var.copy_(var)
        norm.weight.copy_(scale * torch.sqrt(var + norm.eps))
        norm.bias.copy_(scale * mean + shift)
    return model.state_dict()
