"""An exported (float or int8) ONNX model behind the recognizer interface the plugin's inference
and streaming code call: ``test_step`` on packed samples, giving ``pred_score``.

So that deployment runs what it will ship: :func:`~hyperframes_mm.apis.init_recognizer` given a
``.onnx`` file instead of a checkpoint returns one, and the streaming pipeline, the cascade and
:func:`~hyperframes_mm.apis.predict_scores` take it unchanged. The graph is the one
:func:`~hyperframes_mm.deploy.export.export_onnx` writes: raw pixels in (the normalisation is in
the graph), the test step's scores out.
"""
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np
import torch


def onnx_feeds(inputs: Sequence, samples: Sequence[Union[torch.Tensor, Dict[str, torch.Tensor]]]
               ) -> Dict[str, np.ndarray]:
    """An onnxruntime feed of N samples for a graph with ``inputs`` (its ``get_inputs()``): each
    input the samples' pixels under its name (``imgs_<stream>``, the key the test pipeline packs
    them under) or the samples themselves for a single-stream graph, stacked, in the input's
    exported dtype. A sample that is one stream's pixels feeds a graph of one input only, and
    pixels for a uint8 input must be whole numbers in 0..255: a cast would wrap or truncate
    anything else (a 16-bit camera's, a float pipeline's) into other pixels, silently.

    Raises:
        ValueError: naming the input, when the samples cannot feed it as they are.
    """
    if len(inputs) > 1 and not all(isinstance(sample, dict) for sample in samples):
        raise ValueError(f'the graph takes {len(inputs)} inputs '
                         f'({", ".join(meta.name for meta in inputs)}), one per stream, and the '
                         'config\'s pipeline makes one stream: export and run it with the '
                         'config it was trained with')
    feeds = {}
    for meta in inputs:
        parts = [sample[meta.name] if isinstance(sample, dict) else sample
                 for sample in samples]
        for part in parts:
            check_fits(meta, tuple(part.shape))
        pixels = torch.stack(parts).cpu().numpy()
        if meta.type == 'tensor(uint8)':
            # uint8 pixels (what the test pipeline packs) need no look: the check is for others
            if pixels.dtype != np.uint8 and pixels.size and (
                    pixels.min() < 0 or pixels.max() > 255
                    or not np.array_equal(pixels, np.round(pixels))):
                raise ValueError(
                    f'graph input {meta.name} takes uint8 pixels, and these are not whole '
                    f'numbers in 0..255 (min {pixels.min():g}, max {pixels.max():g}): export '
                    'the model with --input-dtype float32 for other pixels')
            feeds[meta.name] = pixels.astype(np.uint8, copy=False)
        else:
            feeds[meta.name] = pixels.astype(np.float32, copy=False)
    return feeds


def check_fits(meta, shape: Sequence[int]) -> None:
    """Refuse one sample of ``shape`` (clips x channels x height x width) that graph input
    ``meta`` (an onnxruntime input) cannot take: a pipeline whose sample follows the video's
    frame size (no crop) passes the check at load, and a video of another size than the
    graph's meets it here, not inside onnxruntime, which names neither the sizes nor what to
    do.

    Raises:
        ValueError: naming the input, both sizes and the likely cause.
    """
    differ = fixed_sizes_differ(meta.shape, (None, *shape))
    if not differ:
        return
    why = ('the test pipeline sized it from a video of another frame size than the graph was '
           'exported at (export_onnx.py --video-size)'
           if set(differ) <= {len(shape) - 2, len(shape) - 1} else
           'the graph was exported from another config (another T or number of test clips); '
           'run it with that config')
    raise ValueError(
        f'graph input {meta.name} takes samples of '
        f'{" x ".join(str(size) for size in meta.shape[1:])} and this one is '
        f'{" x ".join(str(size) for size in shape)} (clips x channels x height x width): {why}')


def fixed_sizes_differ(graph: Sequence, shape: Sequence[int]) -> List[int]:
    """The axes of a sample (``shape`` without the batch) where a graph input of ``graph``'s
    shape fixes another size; none where the ranks differ (that is the feed's to refuse)."""
    if len(graph) != len(shape):
        return []
    return [axis for axis, (size, got) in enumerate(zip(graph[1:], shape[1:]))
            if isinstance(size, int) and size != got]


def onnx_session(path: Union[str, Path], threads: Optional[int] = None, spin: bool = True):
    """An onnxruntime CPU session for ``path`` (``threads``: intra-op threads).

    ``spin=False`` stops the session's pool threads from busy-waiting after each run
    (onnxruntime's ``session.intra_op.allow_spinning``). Spinning lowers onnxruntime's own latency
    when it has the cores to itself, but the spinning threads hold those cores for a while after
    the run returns: whatever runs next in the process (a PyTorch model timed in the same
    interleaved rounds) pays for it. Side-by-side timing turns it off; a process that runs only
    this session keeps onnxruntime's default.

    Raises:
        FileNotFoundError: no such file.
    """
    import onnxruntime as ort
    if not Path(path).is_file():
        raise FileNotFoundError(f'ONNX file not found: {path}')
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    if not spin:
        options.add_session_config_entry('session.intra_op.allow_spinning', '0')
    try:
        return ort.InferenceSession(str(path), options, providers=['CPUExecutionProvider'])
    except Exception as error:  # onnxruntime's own exception types, one per failure
        raise ValueError(f'{path}: onnxruntime cannot load it as an ONNX graph (truncated, '
                         f'empty or not a graph): {str(error).strip()}') from error


class OnnxRecognizer:
    """An onnxruntime session (CPU) that answers ``test_step`` like an mmaction2 recognizer.

    Args:
        path (str | Path): the ``.onnx`` file.
        cfg (Config): the model's config (its ``test_pipeline`` feeds the model).
        threads (int, optional): onnxruntime's intra-op threads. Defaults to its own choice.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the graph's inputs are not those export writes (``imgs``, or one
            ``imgs_<stream>`` per stream).
    """

    def __init__(self, path: Union[str, Path], cfg, threads: Optional[int] = None) -> None:
        self.session = onnx_session(path, threads)
        self.path = Path(path)
        self.cfg = cfg
        self.inputs = self.session.get_inputs()
        names = [meta.name for meta in self.inputs]
        if names != ['imgs'] and not (names and all(name.startswith('imgs_') for name in names)):
            raise ValueError(f'{path}: inputs {names} are not an exported recognizer\'s '
                             '(imgs, or imgs_<stream> per stream)')
        # a graph exported with a fixed batch (export_onnx --static-batch) takes exactly that
        # many samples a run; None: the batch is dynamic
        sizes = {meta.shape[0] for meta in self.inputs if meta.shape}
        self.batch = next(iter(sizes)) if len(sizes) == 1 and isinstance(
            next(iter(sizes)), int) else None
        # the classes the graph scores, where its output shape fixes them (a dynamic export
        # leaves them symbolic: check_classes runs the graph once to count them)
        scores = next((meta for meta in self.session.get_outputs() if meta.name == 'scores'),
                      None)
        self.num_classes = (scores.shape[-1] if scores is not None and scores.shape
                            and isinstance(scores.shape[-1], int) else None)

    def check_classes(self, examples: Iterable[Union[torch.Tensor, Dict[str, torch.Tensor]]],
                      configured: Optional[int]) -> None:
        """Refuse a graph that scores another number of classes than ``configured``, the
        config's head's (:func:`~hyperframes_mm.apis.inference.head_classes`; None: not
        checked): labels, alert classes and class names are checked against that head, and
        would name other classes than the scores do. Where the graph's output shape leaves the
        count open (a dynamic export), the first of ``examples`` (batches of one sample,
        :func:`~hyperframes_mm.apis.example_inputs`) that fits the graph is run once: a graph
        whose frame size follows the video fits samples of its own frame shape only. None
        fitting leaves the count unchecked.

        Raises:
            ValueError: naming the file and both counts.
        """
        if configured is None:
            return
        if self.num_classes is None:
            for example in examples:
                sample = ({name: part[0] for name, part in example.items()}
                          if isinstance(example, dict) else example[0])
                try:
                    self.check_sample(sample)
                except ValueError:
                    continue
                self.num_classes = int(self.scores([sample]).shape[-1])
                break
            else:
                return
        if self.num_classes != configured:
            raise ValueError(f'{self.path}: the graph scores {self.num_classes} classes and '
                             f'the config\'s head {configured} (model.cls_head.num_classes): '
                             'run it with the config it was exported from')

    def check_sample(self, inputs: Union[torch.Tensor, Dict[str, torch.Tensor]]) -> None:
        """Refuse one packed sample's ``inputs`` the graph cannot take (:func:`check_fits`),
        so that a stream whose frames make another size fails alone, where it is made,
        instead of the model call that batches it with other streams' samples."""
        for meta in self.inputs:
            part = inputs.get(meta.name) if isinstance(inputs, dict) else inputs
            if part is not None:
                check_fits(meta, tuple(part.shape))

    def check_inputs(self, example: Union[torch.Tensor, Dict[str, torch.Tensor]],
                     others: Iterable[Union[torch.Tensor, Dict[str, torch.Tensor]]] = ()
                     ) -> None:
        """Refuse a graph exported from another config than the one whose test pipeline made
        ``example`` (one sample, :func:`~hyperframes_mm.apis.example_inputs`): its clips a
        sample, its hyperframes' channels (3T) or its frame size differ (a dimension the graph
        leaves dynamic is not compared). Without this the first call fails inside onnxruntime,
        naming neither file nor config, or (streams) a stream thread dies with it. ``others``
        are the same pipeline's samples of frames of other sizes, read only where ``example``
        disagrees with the graph: a dimension they do not all share with ``example`` follows
        the video (a keep-ratio resize without a crop), so the graph's, fixed at the size it
        was exported at, is not compared.

        Raises:
            ValueError: naming the file, the input, and both shapes.
        """
        def sample(made, name):
            return made.get(name) if isinstance(made, dict) else made

        others = iter(others)
        for meta in self.inputs:
            made = sample(example, meta.name)
            if made is None:
                continue
            differ = fixed_sizes_differ(meta.shape, made.shape)
            if differ:
                others = list(others)  # made once, for the first input that needs them
                differ = [axis for axis in differ
                          if all(sample(other, meta.name).shape[1 + axis] == made.shape[1 + axis]
                                 for other in others)]
            if differ:
                shown = ' x '.join(str(size) for size in meta.shape[1:])
                raise ValueError(
                    f'{self.path}: input {meta.name} takes a sample of {shown} (clips x '
                    f'channels x height x width), and the config\'s test pipeline makes '
                    f'{" x ".join(str(size) for size in made.shape[1:])}: the graph was '
                    'exported from another config (another T, number of test clips or frame '
                    'size); run it with that config')

    def eval(self) -> 'OnnxRecognizer':
        return self

    def to(self, device) -> 'OnnxRecognizer':
        if str(device) != 'cpu':
            raise ValueError(f'{self.path}: the ONNX model runs on the CPU (onnxruntime), not '
                             f'{device}')
        return self

    def scores(self, inputs: Sequence[Union[torch.Tensor, Dict[str, torch.Tensor]]]
               ) -> np.ndarray:
        """``[N, num_classes]`` scores of N samples' ``inputs`` (``[K, 3T, H, W]`` each, or one
        per stream). A fixed-batch graph runs them in chunks of its batch, the last one padded
        with copies of its last sample (their scores dropped), so that the callers' batches
        (a test loader's, a stream's windows) need not be its size. Streams given as a dict of
        per-sample lists, as a test loader's collate gives them, are taken sample by sample."""
        if isinstance(inputs, dict):
            inputs = [dict(zip(inputs, parts)) for parts in zip(*inputs.values())]
        inputs = list(inputs)
        if self.batch is None or not inputs:
            return self.session.run(['scores'], onnx_feeds(self.inputs, inputs))[0]
        chunks = []
        for start in range(0, len(inputs), self.batch):
            chunk = inputs[start:start + self.batch]
            padded = chunk + chunk[-1:] * (self.batch - len(chunk))
            chunks.append(self.session.run(['scores'],
                                           onnx_feeds(self.inputs, padded))[0][:len(chunk)])
        return np.concatenate(chunks)

    def test_step(self, data: Dict) -> list:
        """mmaction2's test step contract: ``data_samples`` with ``pred_score`` set."""
        scores = torch.from_numpy(self.scores(data['inputs']))
        samples = data['data_samples']
        for sample, score in zip(samples, scores):
            sample.set_pred_score(score)
        return samples

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({str(self.path)!r})'
