"""Int8 static quantisation of an exported recognizer, with activations calibrated on clips of
the config's training list, and the parity report a deployment engineer checks before shipping.

The float graph is :func:`~hyperframes_mm.deploy.export.export_onnx`'s (raw pixels in, the test
step's scores out). onnxruntime's static quantiser then stores weights as int8 per output
channel and inserts int8 activations whose ranges it measured on calibration clips: those are
drawn from the training list (never the test list, which the parity report scores), decoded and
transformed by the config's own test pipeline, so the ranges are those of what the deployed model
sees. Operators onnxruntime has no int8 kernel for stay in float; :func:`float_operators` names
them, and the report lists them.
"""
import logging
import os
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.logging import print_log

from ..apis.onnx_recognizer import onnx_feeds
from ..datasets.bad_video import check_video_list
from ..utils.paths import written_beside
from .export import INPUT_PROJECTION

#: onnxruntime's two encodings of an int8 graph: QDQ (QuantizeLinear/DequantizeLinear pairs
#: around float operators, fused by the runtime) or QOperator (QLinearConv & co.)
QUANT_FORMATS = ('QDQ', 'QOperator')
#: the values of an exported graph's pixel inputs (export.ExportWrapper)
PIXEL_RANGE = (0.0, 255.0)
#: operators that only move or view a tensor's elements: uint8 pixels pass them unchanged
ELEMENT_MOVES = ('Reshape', 'Transpose', 'Squeeze', 'Unsqueeze', 'Flatten', 'Identity')
#: training clips whose activations set the int8 ranges, by default: spread over the list, so
#: every class of a sorted list is seen
CALIBRATION_CLIPS = 64
#: dataset wrappers whose samples are those of the one list of the dataset they wrap (checked,
#: repeated or re-weighted): calibration and parity read that list
LIST_WRAPPERS = ('GuardedDataset', 'RepeatDataset', 'ClassBalancedDataset')

Sample = Union[torch.Tensor, Dict[str, torch.Tensor]]


def labelled_videos(ann_file: Union[str, Path], video_root: Union[str, Path],
                    delimiter: str = ' ', *, num_classes: Optional[int] = None
                    ) -> List[Tuple[Path, int]]:
    """The ``(video, label)`` pairs of a ``VideoDataset`` list, parsed as the plugin's datasets
    parse theirs (:func:`~hyperframes_mm.datasets.bad_video.check_video_list`), every video
    checked to exist.

    Args:
        ann_file (str | Path): the list, ``path label`` per line.
        video_root (str | Path): the folder its paths are relative to (``''``: as listed).
        delimiter (str): the dataset's field delimiter. Defaults to ``' '``.
        num_classes (int, optional): labels must be below it: the model's class count, where
            known (a label the model has no score for would count as a wrong top-1 in the
            parity report, silently). Defaults to None (only negative labels are refused).

    Raises:
        AnnotationError: a ``ValueError`` naming ``file:line`` for the first malformed line
            (no label, a label that is not an integer or is out of range, a blank line, extra
            fields), or naming a list that is missing or empty.
        FileNotFoundError: a listed video is missing; the message names the list, how many are
            missing and the first of them with their lines (a calibration or parity set with
            holes would be measured on other clips than asked, silently).
    """
    entries = check_video_list(str(ann_file), delimiter, num_classes=num_classes)
    pairs = [(Path(video_root) / entry.path, entry.labels[0]) for entry in entries]
    missing = [(entry.number, path) for entry, (path, _) in zip(entries, pairs)
               if not path.is_file()]
    if missing:
        shown = ', '.join(f'{path} (line {number})' for number, path in missing[:5])
        more = f' and {len(missing) - 5} more' if len(missing) > 5 else ''
        raise FileNotFoundError(f'{ann_file}: {len(missing)} of {len(pairs)} listed videos are '
                                f'missing: {shown}{more}')
    return pairs


def dataset_list(loader, where: str = 'dataloader') -> Tuple[str, str, str]:
    """The ``(list file, video folder, delimiter)`` of a dataloader config's ``VideoDataset``,
    as :func:`labelled_videos` takes them, found through the wrappers of
    :data:`LIST_WRAPPERS`.

    Args:
        loader (dict): a dataloader config (``cfg.train_dataloader``).
        where (str): how errors name the loader (``'CONFIG: train_dataloader'``). Defaults to
            ``'dataloader'``.

    Raises:
        ValueError: no single list to read (a ``ConcatDataset``, another wrapper, a dataset
            without ``ann_file``), or a multi-label list (calibration and parity score one
            label a clip); the message names ``where`` and the dataset's key.
    """
    dataset, key = loader['dataset'], f'{where}.dataset'
    while 'ann_file' not in dataset:
        kind = dataset.get('type')
        name = kind if isinstance(kind, str) else getattr(kind, '__name__', repr(kind))
        if name not in LIST_WRAPPERS or not isinstance(dataset.get('dataset'), dict):
            raise ValueError(f'{key}: {name} holds no ann_file; int8 calibration and parity '
                             'read one VideoDataset list, unwrapping only '
                             f'{", ".join(LIST_WRAPPERS)} around it (a ConcatDataset holds '
                             'several lists: quantise with a config whose loader reads one)')
        dataset, key = dataset['dataset'], f'{key}.dataset'
    if dataset.get('multi_class'):
        raise ValueError(f'{key}: a multi_class list; int8 parity scores one label a clip')
    # data_prefix=dict(video=None) means paths as listed, as in VideoDataset
    root = (dataset.get('data_prefix') or {}).get('video') or ''
    return dataset['ann_file'], root, dataset.get('delimiter', ' ')


def spread(pairs: Sequence, count: Optional[int]) -> list:
    """``count`` items spread evenly over ``pairs`` (every class of a sorted list is reached),
    or all of them when ``count`` is None or not smaller."""
    if count is None or count >= len(pairs):
        return list(pairs)
    if count < 1:
        raise ValueError(f'count must be >= 1, got {count}')
    return [pairs[index] for index in np.linspace(0, len(pairs) - 1, count).round().astype(int)]


def pipeline_samples(cfg, pairs: Sequence[Tuple[Path, int]]) -> Iterator[Tuple[Sample, int]]:
    """Each video through the config's ``test_pipeline``: ``(inputs, label)``, inputs
    ``[K, 3T, H, W]`` uint8 (or one per stream) as the test loop packs them.

    Raises:
        BadVideoError: naming the video that cannot be read or decoded (decord's error names
            none).
    """
    from mmaction.registry import TRANSFORMS
    from mmengine.dataset import Compose
    from mmengine.registry import init_default_scope

    from ..datasets.video_io import BadVideoError, _bad_video_errors, _first_line
    init_default_scope(cfg.get('default_scope', 'mmaction'))
    pipeline = Compose([TRANSFORMS.build(step) for step in cfg.test_pipeline])
    for index, (path, label) in enumerate(pairs):
        try:
            packed = pipeline(dict(filename=str(path), label=label, start_index=0,
                                   modality='RGB'))
        except _bad_video_errors() as error:
            if isinstance(error, BadVideoError) and error.index is not None:
                raise
            # SafeDecordInit's error names the file, not which of the clips it is
            detail = _first_line(error)
            if isinstance(error, BadVideoError):
                detail = str(error).removeprefix(f'{path}: ')
            raise BadVideoError(f'{path} (sample {index}): {detail}', str(path),
                                index) from error
        yield packed['inputs'], label


class ClipCalibration:
    """onnxruntime's ``CalibrationDataReader`` over pipeline samples (duck-typed: the quantiser
    only calls ``get_next``), counting the clips the quantiser has run on a progress bar on
    stderr with ``progress``."""

    def __init__(self, inputs: Sequence, samples: Sequence[Sample],
                 progress: bool = False) -> None:
        from tqdm import tqdm
        self.feeds = iter([onnx_feeds(inputs, [sample]) for sample in samples])
        self.bar = tqdm(total=len(samples), desc='calibrating', unit='clip', file=sys.stderr,
                        disable=not progress, dynamic_ncols=True)
        self.handed_out = False

    def get_next(self) -> Optional[Dict[str, np.ndarray]]:
        # the quantiser asks for the next clip once it has run the last one
        if self.handed_out:
            self.bar.update()
        feed = next(self.feeds, None)
        self.handed_out = feed is not None
        if feed is None:
            self.bar.close()
        return feed


def float_operators(path: Union[str, Path], quant_format: str) -> Dict[str, List[str]]:
    """The operator types of the graph at ``path`` that onnxruntime's quantiser has no int8
    implementation for in ``quant_format``, each with its nodes' names (``#<index>`` for an
    unnamed node): they run in float in the quantised model."""
    import onnx
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry
    quantizable = set(QDQRegistry if quant_format == 'QDQ' else QLinearOpsRegistry)
    kept: Dict[str, List[str]] = {}
    for index, node in enumerate(onnx.load(str(path)).graph.node):
        if node.op_type not in quantizable:
            kept.setdefault(node.op_type, []).append(node.name or f'#{index}')
    return dict(sorted(kept.items()))


def consumers_of(graph) -> Dict[str, List[Tuple[object, int]]]:
    """Each tensor of an ONNX ``graph`` with the ``(node, input index)`` pairs that read it."""
    consumers: Dict[str, List[Tuple[object, int]]] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, index))
    return consumers


def moved_tensors(consumers: Dict[str, list], name: str) -> List[str]:
    """``name`` and every tensor made from it by operators that only move its elements."""
    found, frontier = [], [name]
    while frontier:
        found.append(frontier.pop())
        frontier += [node.output[0] for node, index in consumers.get(found[-1], [])
                     if node.op_type in ELEMENT_MOVES and index == 0]
    return found


def pixel_casts(graph) -> list:
    """The nodes of an ONNX ``graph`` that cast one of its uint8 inputs to float."""
    from onnx import TensorProto
    uint8 = {meta.name for meta in graph.input
             if meta.type.tensor_type.elem_type == TensorProto.UINT8}
    return [node for node in graph.node if node.op_type == 'Cast' and node.input[0] in uint8
            and any(attr.name == 'to' and attr.i == TensorProto.FLOAT for attr in node.attribute)]


def pixel_tensors(model) -> List[str]:
    """The float tensors of the ONNX ``model`` that hold the raw pixels: its float inputs, the
    float casts of its uint8 inputs (``export_onnx(..., input_dtype='uint8')``), and what
    reshapes and transposes make of them (onnxruntime quantises the pixels where a conv reads
    them, after such moves)."""
    from onnx import TensorProto
    graph = model.graph
    consumers = consumers_of(graph)
    roots = ([meta.name for meta in graph.input
              if meta.type.tensor_type.elem_type == TensorProto.FLOAT]
             + [node.output[0] for node in pixel_casts(graph)])
    return [name for root in roots for name in moved_tensors(consumers, root)]


def pixel_ranges(model) -> Dict[str, List[Dict[str, float]]]:
    """onnxruntime tensor overrides that quantise the pixel tensors (:func:`pixel_tensors`) of
    the ONNX ``model`` over 0..255: scale 1, zero point 0, so a conv reading raw pixels
    (:func:`fold_input_into_stem`) gets them exactly, whatever range the calibration clips
    happen to span."""
    return {name: [dict(rmin=np.float32(PIXEL_RANGE[0]), rmax=np.float32(PIXEL_RANGE[1]))]
            for name in pixel_tensors(model)}


def unit_quantize(node, initializers: Dict[str, object]) -> bool:
    """Whether ``node`` is a QuantizeLinear to uint8 with scale 1 and zero point 0 (both
    among the graph's ``initializers``, by name): on integer pixels 0..255 it is the identity."""
    from onnx import numpy_helper
    if node.op_type != 'QuantizeLinear' or len(node.input) < 3:
        return False
    if node.input[1] not in initializers or node.input[2] not in initializers:
        return False
    scale, zero = (numpy_helper.to_array(initializers[name]) for name in node.input[1:3])
    return (scale.size == zero.size == 1 and float(scale) == 1.0 and zero.dtype == np.uint8
            and int(zero) == 0)


def feed_uint8_pixels(model) -> list:
    """Let the int8 kernels of the ONNX ``model`` read its uint8 pixel inputs as they come.

    A uint8 input is cast to float and, through operators that only move its elements
    (reshape, transpose), quantised again with scale 1 and zero point 0, which gives back the
    same integers: a pass over every input pixel that computes nothing. Where that is all the
    float cast feeds (besides ``Shape``), the cast and those quantisations are removed, in
    place, and the int8 kernels read the moved uint8 tensor itself; the scores are unchanged,
    bit for bit. An input whose float pixels reach anything else (a float 1x1 projection, a
    normalisation the export could not fold) keeps its cast.

    Returns:
        list: the removed cast nodes (``node.input[0]``: the input now read as uint8).
    """
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    consumers = consumers_of(graph)
    outputs = {meta.name for meta in graph.output}
    removed = []
    for cast in pixel_casts(graph):
        moved = set(moved_tensors(consumers, cast.output[0]))
        # what reads the moved pixels, other than the moves themselves and Shape
        readers = [(node, index) for name in moved for node, index in consumers.get(name, [])
                   if not (node.op_type in ELEMENT_MOVES and index == 0)
                   and node.op_type != 'Shape']
        quantizers = [node for node, index in readers
                      if index == 0 and unit_quantize(node, initializers)]
        if (not readers or len(quantizers) < len(readers)
                or outputs & (moved | {node.output[0] for node in quantizers})):
            continue
        for node, index in consumers[cast.output[0]]:
            node.input[index] = cast.input[0]
        for quantize in quantizers:
            for node, index in consumers.get(quantize.output[0], []):
                node.input[index] = quantize.input[0]
            graph.node.remove(quantize)
        graph.node.remove(cast)
        # the moved tensors hold uint8 now: drop their recorded float types
        kept = [info for info in graph.value_info if info.name not in moved]
        del graph.value_info[:]
        graph.value_info.extend(kept)
        removed.append(cast)
    return removed


def projection_nodes(path: Union[str, Path]) -> List[str]:
    """The nodes of the graph at ``path`` that compute the exported input projection."""
    import onnx
    return [node.name for node in onnx.load(str(path)).graph.node
            if node.name.startswith(f'/{INPUT_PROJECTION}/')]


#: the operators a classifier's last layer exports as
CLASSIFIER_OPS = ('Gemm', 'MatMul')


def head_tail(path: Union[str, Path]) -> Tuple[Optional[str], List[str]]:
    """The op type of the classifier's last linear layer in the graph at ``path``, and the
    chain of nodes after it to each output (the reshape to clips, softmax, the average over
    clips), read along each node's data input (its first; a reshape's target shape is computed
    from the input's shape on the side); ``(None, [])`` where that chain meets a convolution,
    an unnamed node or the graph's input before a linear layer (no head to delimit).

    In int8 the tail would round each clip's probabilities to 1/255 before the clips are
    averaged, and the linear layer's 8-bit output would clip the logits to the range the
    calibration clips reached; alert thresholds compare those scores. The tail stays in float,
    and so does the linear layer's output (its weights stay int8, as int8-aware fine-tuning
    rounds them): a few hundred float operations."""
    import onnx
    graph = onnx.load(str(path)).graph
    producers = {out: node for node in graph.node for out in node.output}
    classifier, tail = None, []
    for output in graph.output:
        chain, node = [], producers.get(output.name)
        while node is not None and node.name and node.op_type != 'Conv':
            if node.op_type in CLASSIFIER_OPS:
                classifier = node.op_type
                tail += chain
                break
            chain.append(node.name)
            node = producers.get(node.input[0]) if node.input else None
    return classifier, list(dict.fromkeys(tail))


def quantize_int8(float_path: Union[str, Path], out_path: Union[str, Path],
                  calibration: Sequence[Sample], quant_format: str = 'QDQ',
                  exclude_nodes: Sequence[str] = (), progress: bool = False
                  ) -> Dict[str, object]:
    """Write the int8 model of the float ONNX graph ``float_path`` to ``out_path``.

    Args:
        float_path (str | Path): the exported float graph.
        out_path (str | Path): the int8 graph to write (atomically: a failed run leaves none).
        calibration (Sequence): pipeline samples whose activation ranges set the int8 scales.
        quant_format (str): ``'QDQ'`` or ``'QOperator'``. Defaults to ``'QDQ'``.
        exclude_nodes (Sequence[str]): node names to keep in float. Defaults to none.
        progress (bool): count the calibration clips run on a tqdm progress bar (stderr).
            Defaults to False (a tool's choice).

    Returns:
        dict: ``float_operators`` (operator types kept in float, each with its node names),
        ``excluded`` nodes, ``calibration_clips``, ``uint8_inputs`` (the uint8 pixel inputs
        the int8 kernels read directly, :func:`feed_uint8_pixels`).

    Raises:
        ValueError: an unknown format, no calibration clips, or ``out_path`` is
            ``float_path``.
    """
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    if quant_format not in QUANT_FORMATS:
        raise ValueError(f'quant_format must be one of {QUANT_FORMATS}, got {quant_format!r}')
    if not calibration:
        raise ValueError('quantize_int8: no calibration clips')
    float_path, out_path = Path(float_path), Path(out_path)
    if out_path.resolve() == float_path.resolve():
        raise ValueError(f'quantize_int8: the output {out_path} is the float model')
    inputs = ort.InferenceSession(str(float_path),
                                  providers=['CPUExecutionProvider']).get_inputs()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    prepared = out_path.with_name(f'.{out_path.name}.{os.getpid()}.prep.onnx')
    try:
        with written_beside(out_path, '.onnx') as partial:
            # shape inference and graph optimisation first, as onnxruntime recommends: the
            # quantiser then sees fused Conv+BN and the shapes of every tensor
            quant_pre_process(str(float_path), str(prepared))
            # A 1x1 input projection (export.fold_input_projection, where the input could not be
            # folded into the stem conv) stays in float: in int8 it would quantise the raw pixels
            # and run a 3T-channel conv at full resolution, which onnxruntime's int8 kernels do
            # slower than its float ones; its output is quantised for the first conv as the
            # unfolded graph's encoded input was.
            import onnx
            prepared_model = onnx.load(str(prepared))
            names = {node.name for node in prepared_model.graph.node}
            unknown = [name for name in exclude_nodes if name not in names]
            if unknown:
                # onnxruntime ignores a name it does not find: the node "kept in float" would be
                # quantised with the rest, and the report would say otherwise
                raise ValueError(f'quantize_int8: --exclude names node(s) the graph does not have: '
                                 f'{unknown} (its nodes after shape inference and optimisation: '
                                 f'{sorted(names)[:5]}, ... {len(names)} in all)')
            classifier, tail = head_tail(prepared)
            exclude_nodes = list(dict.fromkeys(list(exclude_nodes) + projection_nodes(prepared) +
                                               tail))
            extra = dict(TensorQuantOverrides=pixel_ranges(prepared_model))
            if classifier is not None and \
                    sum(node.op_type == classifier for node in prepared_model.graph.node) == 1:
                # onnxruntime excludes outputs by op type: only where the classifier is the one
                # node of its type (a transformer's every MatMul would lose its 8-bit output).
                # QDQ only: a QOperator file's linear layers write 8-bit outputs
                extra['OpTypesToExcludeOutputQuantization'] = [classifier]
            reader = ClipCalibration(inputs, calibration, progress)
            try:
                quantize_static(
                    str(prepared), str(partial), reader,
                    quant_format=QuantFormat.QDQ if quant_format == 'QDQ'
                    else QuantFormat.QOperator,
                    per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8,
                    # 7-bit weights: x86 CPUs without VNNI (AVX2 only) multiply uint8 x int8
                    # with VPMADDUBSW, whose int16 pair sums saturate on full-range weights;
                    # the same file then scores far below its float model there and not on a
                    # VNNI CPU. With reduced range no sum can saturate, so the file computes
                    # the same on every x86 CPU.
                    reduce_range=True,
                    calibrate_method=CalibrationMethod.MinMax, nodes_to_exclude=exclude_nodes,
                    extra_options=extra)
            finally:
                reader.bar.close()  # a failed calibration leaves no bar drawn over the error
            quantized = onnx.load(str(partial))
            removed = feed_uint8_pixels(quantized)
            if removed:
                onnx.save(quantized, str(partial))
            # read on the graph the quantiser saw (batch norms folded into their convs), less the
            # pixel casts the int8 file no longer has
            gone = {cast.name for cast in removed}
            kept = {op: [name for name in nodes if name not in gone]
                    for op, nodes in float_operators(prepared, quant_format).items()}
            kept = {op: nodes for op, nodes in kept.items() if nodes}
    finally:
        prepared.unlink(missing_ok=True)
    if kept:
        named = '; '.join(f'{op} ({", ".join(nodes[:3])}{", ..." if len(nodes) > 3 else ""})'
                          for op, nodes in kept.items())
        print_log(f'quantize_int8: operators without an int8 kernel stay in float: {named}',
                  logger='current', level=logging.WARNING)
    return dict(float_operators=kept, excluded=list(exclude_nodes),
                calibration_clips=len(calibration),
                uint8_inputs=[cast.input[0] for cast in removed])


def parity_report(float_model, int8_model, samples: Sequence[Tuple[Sample, int]],
                  progress: bool = False) -> Dict[str, float]:
    """Top-1 of the float and int8 models on labelled samples, and how often they agree.

    Args:
        float_model, int8_model: recognizers with ``scores(inputs)`` (``OnnxRecognizer``).
        samples (Sequence): ``(inputs, label)`` pairs (:func:`pipeline_samples`).
        progress (bool): count the samples scored on a tqdm progress bar (stderr). Defaults to
            False (a tool's choice).
    """
    from tqdm import tqdm
    if not samples:
        raise ValueError('parity_report: no samples')
    labels = np.array([label for _, label in samples])
    top_float, top_int8 = [], []
    for inputs, _ in tqdm(samples, desc='parity: float and int8', unit='clip', file=sys.stderr,
                          disable=not progress, dynamic_ncols=True):
        top_float.append(float_model.scores([inputs]).argmax(1))
        top_int8.append(int8_model.scores([inputs]).argmax(1))
    top_float, top_int8 = np.concatenate(top_float), np.concatenate(top_int8)
    return dict(clips=len(samples), top1_float=float((top_float == labels).mean()),
                top1_int8=float((top_int8 == labels).mean()),
                agreement=float((top_float == top_int8).mean()))
