"""ONNX export of hyperframe recognizers, pixels in and class scores out, with a parity check.

The exported graph is the whole test-time model: the data preprocessor's normalisation (mean
and std tiled over the T frames), the backbone(s), the head and its clip averaging. So ONNX
takes what the test pipeline gives the model, before normalisation. For a single-stream
hyperframe model the normalisation and the stem's input encoding are folded: into the stem's
first conv where its input size is known (:func:`fold_input_into_stem`: raw pixels go straight
into that conv), else into one 1x1 convolution (:func:`fold_input_projection`); the same
function either way, with fewer passes over the input.

* input ``imgs`` (single-stream) or one input per stream (``imgs_fast``, ``imgs_slow``):
  ``[B, K, 3T, H, W]`` raw RGB pixels in 0..255, frame-major channels (channels 3t..3t+2 are
  frame t) as ``HyperframeStack`` stacks them; float32, or uint8 with ``input_dtype='uint8'``;
  B is dynamic, K, T, H and W are fixed at export;
* output ``scores``: ``[B, num_classes]``, exactly the ``pred_score`` of mmaction2's test step
  (for ``TSNHead(average_clips='prob')``: softmax of the clip-averaged logits).
"""
import copy
import logging
import warnings
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from mmengine.logging import print_log
from torch import nn

from ..apis.inference import stream_keys
from ..apis.onnx_recognizer import onnx_session
from ..utils.folding import foldable_stem, input_affine, offset_response
from ..utils.paths import written_beside

INPUT_DTYPES = ('float32', 'uint8')
#: the name of ``ExportWrapper.input_projection``: its graph nodes are named
#: ``/input_projection/...``, which is how the int8 quantiser finds them
INPUT_PROJECTION = 'input_projection'

Inputs = Union[torch.Tensor, Dict[str, torch.Tensor]]


class ExportWrapper(nn.Module):
    """A recognizer as one function of pixel tensors: normalise, classify, average clips.

    Args:
        model (nn.Module): an mmaction2 recognizer (``Recognizer2D``, ``FastSlowRecognizer``)
            whose data preprocessor is ``HyperframeDataPreprocessor``, or one of mmaction2's
            own models with its ``ActionDataPreprocessor``: 2D (TSN, TSM:
            ``format_shape='NCHW'``, K is then the segments) or 3D (I3D, X3D:
            ``'NCTHW'``, inputs ``[B, K, 3, T, H, W]``), so that baselines are measured alike.
        fold_input (bool): fold normalisation and input encoding where the model allows
            (``model`` itself is left as it is): into the stem's first conv when
            ``input_size`` is given and :func:`fold_input_into_stem` can, else into one 1x1
            convolution where :func:`fold_input_projection` can. Defaults to True.
        input_size (tuple[int, int], optional): the ``(H, W)`` the wrapper will be called
            with, which the stem fold is exact for (an export fixes it). Defaults to None.
    """

    def __init__(self, model: nn.Module, fold_input: bool = True,
                 input_size: Optional[Tuple[int, int]] = None) -> None:
        super().__init__()
        preprocessor = getattr(model, 'data_preprocessor', None)
        if not (hasattr(preprocessor, '_normalise') or _is_action_preprocessor(preprocessor)):
            raise TypeError(f'ExportWrapper: the model\'s data preprocessor is '
                            f'{type(preprocessor).__name__}; export needs '
                            'HyperframeDataPreprocessor (its normalisation goes into the graph) '
                            'or mmaction2\'s ActionDataPreprocessor with format_shape '
                            f'in {ACTION_FORMATS}')
        self.keys = stream_keys(model)
        self.input_projection = None
        in_stem = (fold_input_into_stem(model, input_size)
                   if fold_input and input_size is not None else None)
        self.input_in_stem = in_stem is not None
        if in_stem is not None:
            self.model = in_stem
        else:
            folded = fold_input_projection(model) if fold_input else None
            self.model, self.input_projection = folded or (model, None)

    def _normalise(self, pixels: torch.Tensor) -> torch.Tensor:
        if self.input_in_stem:
            return pixels.float()
        if self.input_projection is not None:
            return self.input_projection(pixels.float().flatten(0, -4)).view(pixels.shape)
        preprocessor = self.model.data_preprocessor
        if hasattr(preprocessor, '_normalise'):
            return preprocessor._normalise(pixels)
        # mmaction2's ActionDataPreprocessor on [B, K, 3, H, W] or [B, K, 3, T, H, W], as its
        # forward does it: the channel axis is the third
        if preprocessor.to_rgb:
            pixels = pixels[:, :, [2, 1, 0]]
        if preprocessor._enable_normalize:
            return (pixels - preprocessor.mean) / preprocessor.std
        return pixels.float()

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        normalise = self._normalise
        batch = inputs[0].shape[0]
        if len(self.keys) > 1:
            feats = {key: normalise(value) for key, value in zip(self.keys, inputs)}
        else:
            feats = normalise(inputs[0])
        scores, _ = self.model.extract_feat(feats, stage='head')
        return self.model.cls_head.average_clip(scores, num_segs=scores.shape[0] // batch)


def fold_input_projection(model: nn.Module) -> Optional[Tuple[nn.Module, nn.Conv2d]]:
    """A single-stream hyperframe model's normalisation and input encoding
    (:func:`input_affine`) as one 1x1 conv.

    As written they are a chain of passes over the full-resolution input (gather, subtract,
    divide, slices, subtract, multiply, concatenate) whose memory traffic, not arithmetic, is
    their cost, and which an int8 graph keeps in float; one 1x1 convolution computes the same
    values in one pass. :func:`fold_input_into_stem` goes further where the stem allows.

    Returns:
        tuple | None: a copy of ``model`` whose stem reads its input as given (the encoding
        moved into the projection), and the projection; None where :func:`input_affine` is.
    """
    affine = input_affine(model)
    if affine is None:
        return None
    channels = affine[0].shape[0]
    projection = nn.Conv2d(channels, channels, 1)
    with torch.no_grad():
        projection.weight.copy_(affine[0][:, :, None, None])
        projection.bias.copy_(affine[1])
    folded = copy.deepcopy(model)
    folded.backbone.hyperframe_stem.input_encoding = 'frames'
    return folded, projection.to(next(model.parameters()).device)


class FoldedStemConv(nn.Module):
    """A hyperframe stem's first conv and its eval-mode norm with the normalisation and the
    input encoding folded in (:func:`fold_input_into_stem`): raw pixels in, the norm's output
    out.

    The original conv pads the *normalised, encoded* input with zeros; padding the raw pixels
    with zeros instead would feed the border taps the encoding of a black pixel. ``border``
    puts back what those taps miss: it is zero inside, non-zero only on the output rows and
    columns whose window reaches the padding, and exact for one input size.
    """

    def __init__(self, conv: nn.Conv2d, weight: torch.Tensor, bias: torch.Tensor,
                 border: torch.Tensor) -> None:
        super().__init__()
        self.stride, self.padding, self.dilation = conv.stride, conv.padding, conv.dilation
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False)
        self.register_buffer('border', border)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)
        if out.shape[-2:] != self.border.shape[-2:]:
            raise ValueError(f'FoldedStemConv: folded for a {tuple(self.border.shape[-2:])} '
                             f'output, got input {tuple(x.shape[-2:])}')
        return out + self.border


def fold_input_into_stem(model: nn.Module, input_size: Tuple[int, int]
                         ) -> Optional[nn.Module]:
    """A copy of a single-stream hyperframe model whose stem's first conv reads raw pixels: the
    normalisation and the input encoding (:func:`input_affine`) and the conv's eval-mode batch
    norm folded into one conv with bias (:class:`FoldedStemConv`).

    Against the 1x1 projection this removes a float pass over the full-resolution input, and
    in an int8 graph it changes what is rounded: the conv's input is the raw 0..255 pixels,
    which uint8 holds exactly, where the encoded input put the centre frame and the amplified
    differences under one per-tensor scale set by the differences' range.

    Args:
        model (nn.Module): the recognizer (not modified).
        input_size (tuple[int, int]): the ``(H, W)`` the copy will be fed (the border
            correction is exact for it).

    Returns:
        nn.Module | None: the copy, or None where :func:`foldable_stem` finds no stem to fold
        into.
    """
    if foldable_stem(model) is None:
        return None
    matrix, offset = input_affine(model)
    model = copy.deepcopy(model)
    model.backbone.hyperframe_stem.input_encoding = 'frames'
    stem = model.backbone.conv_stem
    conv, norm = stem.conv, stem.norm
    with torch.no_grad():
        # in float64: the folded kernel sums products the unfolded graph never forms
        weight = conv.weight.double()
        scale = norm.weight.double() / (norm.running_var.double() + norm.eps).sqrt()
        shift = norm.bias.double() - norm.running_mean.double() * scale
        if conv.bias is not None:
            shift = shift + conv.bias.double() * scale
        folded_weight = torch.einsum('oihw,ij->ojhw', weight, matrix) * scale[:, None, None, None]
        inside, border = offset_response(conv, weight, offset, input_size)
        bias, border = inside * scale + shift, border * scale[:, None, None]
    device = conv.weight.device
    stem.conv = FoldedStemConv(conv, folded_weight.float().to(device), bias.float().to(device),
                               border[None].float().to(device))
    setattr(stem, stem.norm_name, nn.Identity())
    return model


#: the layouts of mmaction2's ActionDataPreprocessor the wrapper normalises like it
ACTION_FORMATS = ('NCHW', 'NCTHW')


def _is_action_preprocessor(preprocessor) -> bool:
    return (type(preprocessor).__name__ == 'ActionDataPreprocessor'
            and getattr(preprocessor, 'format_shape', None) in ACTION_FORMATS)


def as_tuple(model: nn.Module, inputs: Inputs) -> tuple:
    """The model's inputs in its stream order, as positional tensors."""
    keys = stream_keys(model)
    if isinstance(inputs, dict):
        missing = [key for key in keys if key not in inputs]
        if missing:
            raise KeyError(f'inputs lack {missing} (have {sorted(inputs)})')
        return tuple(inputs[key] for key in keys)
    if len(keys) > 1:
        raise TypeError(f'{type(model).__name__} takes one input per stream {keys}; got one '
                        'tensor')
    return (inputs, )


def export_onnx(model: nn.Module, path: Union[str, Path], inputs: Inputs,
                input_dtype: str = 'float32', opset: int = 17,
                dynamic_batch: bool = True,
                check: Optional[Callable[[Path], None]] = None) -> Path:
    """Export ``model`` (eval mode, on the CPU) to an ONNX file.

    The graph is written beside ``path`` and moved there once written (and checked): a kill,
    a full disk or a failed check leaves ``path`` as it was, never a graph that would pass for
    a finished export.

    Args:
        model (nn.Module): the recognizer (see :func:`~hyperframes_mm.apis.init_recognizer`).
        path (str | Path): the ``.onnx`` file to write; its folder is created.
        inputs (Tensor | dict[str, Tensor]): example ``[B, K, 3T, H, W]`` inputs (per stream),
            e.g. from :func:`~hyperframes_mm.apis.example_inputs`; fix K, T, H, W.
        input_dtype (str): ``'float32'`` or ``'uint8'`` pixels. Defaults to ``'float32'``.
        opset (int): ONNX opset. Defaults to 17.
        dynamic_batch (bool): make dim 0 of every input and output dynamic. Defaults to True.
        check (callable, optional): called with the written graph's (temporary) path before it
            is moved to ``path``, e.g. ``lambda graph: check_parity(model, graph, inputs)``;
            what it raises stops the export (an ``AssertionError``'s message names ``path``
            in place of the temporary file). Defaults to None.

    Returns:
        Path: the written file.
    """
    if input_dtype not in INPUT_DTYPES:
        raise ValueError(f'export_onnx: input_dtype must be one of {INPUT_DTYPES}, got '
                         f'{input_dtype!r}')
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dtype = torch.uint8 if input_dtype == 'uint8' else torch.float32
    example = tuple(tensor.to(dtype) for tensor in as_tuple(model, inputs))
    wrapper = ExportWrapper(model.cpu().eval(),
                            input_size=tuple(example[0].shape[-2:])).eval()
    names = wrapper.keys
    axes = {name: {0: 'batch'} for name in names + ['scores']} if dynamic_batch else None
    with written_beside(path, '.onnx') as partial:
        with torch.no_grad(), warnings.catch_warnings():
            # The models' input checks compare channel counts, fixed at export: the tracer's
            # "converting a tensor to a Python boolean" warnings about them are expected.
            warnings.simplefilter('ignore', torch.jit.TracerWarning)
            torch.onnx.export(wrapper, example, str(partial), input_names=names,
                              output_names=['scores'], dynamic_axes=axes,
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        if check is not None:
            try:
                check(partial)
            except AssertionError as error:
                # the user knows the graph by the path they asked for, not the temporary one
                raise AssertionError(str(error).replace(str(partial), str(path))).with_traceback(
                    error.__traceback__) from None
    shapes = ', '.join(f'{name}: {list(tensor.shape)} {input_dtype}'
                       for name, tensor in zip(names, example))
    print_log(f'export_onnx: wrote {path} ({shapes}; batch dynamic: {dynamic_batch})',
              logger='current', level=logging.INFO)
    return path


def run_onnx(session, model: nn.Module, inputs: Inputs) -> np.ndarray:
    """Scores from an onnxruntime session, fed the way :func:`export_onnx` exported."""
    feeds = {}
    for meta, tensor in zip(session.get_inputs(), as_tuple(model, inputs)):
        dtype = np.uint8 if meta.type == 'tensor(uint8)' else np.float32
        feeds[meta.name] = tensor.cpu().numpy().astype(dtype)
    return session.run(['scores'], feeds)[0]


def pytorch_scores(model: nn.Module, inputs: Inputs) -> np.ndarray:
    """The reference: the model's own ``test_step`` (data preprocessor + predict) on
    ``inputs`` split into samples."""
    from mmaction.structures import ActionDataSample
    tensors = as_tuple(model, inputs)
    keys = stream_keys(model)
    samples = []
    for index in range(tensors[0].shape[0]):
        if len(keys) > 1:
            samples.append({key: tensor[index] for key, tensor in zip(keys, tensors)})
        else:
            samples.append(tensors[0][index])
    data = dict(inputs=samples, data_samples=[ActionDataSample() for _ in samples])
    with torch.no_grad():
        outputs = model.test_step(data)
    return torch.stack([output.pred_score for output in outputs]).float().cpu().numpy()


def check_parity(model: nn.Module, path: Union[str, Path], inputs: Inputs,
                 tolerance: float = 1e-4) -> float:
    """Largest absolute difference between onnxruntime and the PyTorch test step.

    Raises:
        AssertionError: the difference exceeds ``tolerance``.
    """
    expected = pytorch_scores(model, inputs)
    got = run_onnx(onnx_session(path), model, inputs)
    if got.shape != expected.shape:
        raise AssertionError(f'{path}: onnxruntime gave scores of shape {got.shape}, PyTorch '
                             f'{expected.shape}')
    diff = float(np.abs(got - expected).max())
    if diff > tolerance:
        raise AssertionError(f'{path}: onnxruntime and PyTorch differ by {diff:.3g} '
                             f'(> {tolerance:g})')
    return diff


def random_pixels(shapes: Union[Sequence[int], Dict[str, Sequence[int]]], batch: int,
                  seed: int = 0) -> Inputs:
    """Random 0..255 integer pixels (float32) of the given per-sample shapes, ``batch`` deep."""
    generator = torch.Generator().manual_seed(seed)

    def draw(shape):
        return torch.randint(0, 256, (batch, ) + tuple(shape[1:]),
                             generator=generator).float()

    if isinstance(shapes, dict):
        return {key: draw(shape) for key, shape in shapes.items()}
    return draw(shapes)
