"""FLOPs, parameters and latency of a config's model, on the input its test pipeline makes.

Both measure the whole test-time model, :class:`~hyperframes_mm.deploy.export.ExportWrapper`:
normalisation, backbone(s), head and clip averaging, on one sample of ``[1, K, 3T, H, W]``
per stream (K, T, H, W from the test pipeline applied to frames of ``video_size``), so
single-stream and fast/slow models (dict inputs) are counted alike. Latency also times an
exported ``.onnx`` graph (float or int8) given as the checkpoint, in onnxruntime, as
deployment runs it.

Measuring builds models outside a runner, where mmengine would print every parameter's
initialiser and the FLOP counter every operator it does not count; both are silenced here, at
their source and for these calls only (:func:`_without_init_dump`, :func:`_count_flops`).
"""
import logging
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, Optional, Tuple, Union

import torch

from ..utils.timing import Timings, interleaved_timing
from ..deploy.export import ExportWrapper, as_tuple, random_pixels
from ..apis.inference import ConfigLike, example_inputs, init_recognizer
from ..apis.onnx_recognizer import OnnxRecognizer, onnx_session


def describe_inputs(inputs: Dict[str, Tuple[Union[int, str], ...]]) -> str:
    """``name [shape], ...``: the ``inputs`` of a complexity or latency result, for a log line
    (a size may be a name, such as a graph's dynamic ``batch``)."""
    return ', '.join(f'{name} [{", ".join(str(size) for size in shape)}]'
                     for name, shape in inputs.items())


def _shapes(inputs) -> Dict[str, Tuple[int, ...]]:
    if isinstance(inputs, dict):
        return {key: tuple(value.shape) for key, value in inputs.items()}
    return {'imgs': tuple(inputs.shape)}


def _not_init_dump(record: logging.LogRecord) -> bool:
    return record.funcName != '_dump_init_info'


@contextmanager
def _without_init_dump() -> Iterator[None]:
    """Build models without mmengine's per-parameter initialisation dump on the console.

    ``BaseModule.init_weights`` logs each parameter's initialiser ("Initialized by ...") at INFO
    when the current logger has no log file; a runner's logger has one and keeps the dump in the
    training log. A model built only to be measured needs none of it. The filter drops exactly
    the records of ``_dump_init_info``: every other message, warnings included, still shows.
    """
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    logger.addFilter(_not_init_dump)
    try:
        yield
    finally:
        logger.removeFilter(_not_init_dump)


#: Submodules the test-time wrapper runs without calling their ``forward`` (the preprocessor's
#: normalisation is called directly) or never needs (losses): the FLOP counter cannot attribute
#: them, by design. Any other submodule it reports as never called may be FLOPs it missed.
_UNCALLED_BY_DESIGN = ('data_preprocessor', 'loss')


def _count_flops(wrapper: torch.nn.Module, tensors: tuple, show_table: bool) -> Dict:
    """mmengine's FLOP and parameter count, without its operator-by-operator warnings.

    The counter, like mmaction2's model zoo, counts multiply-adds of convolutions and linear
    layers and deliberately skips elementwise operators (add, batch norm, pooling...); it warns
    once per skipped operator type on every call. That switch alone is turned off. Submodules
    that were never called are still reported, unless the wrapper bypasses them by design.
    """
    from mmengine.analysis import ActivationAnalyzer, FlopAnalyzer, parameter_count
    from mmengine.analysis.print_helper import complexity_stats_table
    from mmengine.logging import print_log
    flops = FlopAnalyzer(wrapper, tensors).unsupported_ops_warnings(False) \
        .uncalled_modules_warnings(False)
    total = flops.total()
    missed = sorted(name for name in flops.uncalled_modules()
                    if not any(part.startswith(_UNCALLED_BY_DESIGN) for part in name.split('.')))
    if missed:
        print_log('model_complexity: these submodules were never called while counting FLOPs, '
                  'so their FLOPs may be missing: ' + ', '.join(missed), 'current',
                  logging.WARNING)
    info = dict(flops=total, params=parameter_count(wrapper)[''])
    if show_table:
        activations = ActivationAnalyzer(wrapper, tensors).unsupported_ops_warnings(False) \
            .uncalled_modules_warnings(False)
        info['table'] = '\n' + complexity_stats_table(flops=flops, activations=activations,
                                                      show_param_shapes=True)
    return info


def model_complexity(config: ConfigLike, video_size: Tuple[int, int] = (256, 340),
                     fps: float = 30.0, cfg_options: Optional[dict] = None,
                     show_table: bool = False) -> Dict:
    """mmengine's complexity analysis of the model on one test sample.

    Args:
        config (str | Path | Config): the config.
        video_size (tuple[int, int]): decoded frame size ``(H, W)``. Defaults to (256, 340).
        fps (float): frame rate for time-based samplers. Defaults to 30.
        cfg_options (dict, optional): config overrides. Defaults to None.
        show_table (bool): also return mmengine's per-module table. Defaults to False.

    Returns:
        dict: ``flops`` (multiply-adds, as mmaction2's model zoo counts them), ``params``,
        ``inputs`` (name -> shape), ``clips`` (K), ``table`` (str, with ``show_table``).
    """
    with _without_init_dump():
        model = init_recognizer(config, None, 'cpu', cfg_options)
    inputs = example_inputs(model.cfg, video_size, fps=fps)
    # the model as mmaction2 runs it: the model zoo's FLOPs and latency are of that model, not
    # of the exported graph's folded input (export.fold_input_into_stem, fold_input_projection)
    wrapper = ExportWrapper(model, fold_input=False).eval()
    tensors = tuple(tensor.float() for tensor in as_tuple(model, inputs))
    with torch.no_grad():
        info = _count_flops(wrapper, tensors, show_table)
    shapes = _shapes(inputs)
    result = dict(flops=int(info['flops']), params=int(info['params']), inputs=shapes,
                  clips=next(iter(shapes.values()))[1])
    if show_table:
        result['table'] = info['table']
    return result


def _timed_call(config: ConfigLike, checkpoint: Optional[str], device: Optional[str],
                batch: int, video_size: Tuple[int, int], fps: float,
                cfg_options: Optional[dict], alone: bool
                ) -> Tuple[Callable[[], object], Dict, torch.device, str]:
    """A no-argument call of the whole test-time model on ``batch`` random samples, its input
    shapes, device and runtime: the PyTorch model, or the onnxruntime graph of an ``.onnx``
    checkpoint (:func:`_onnx_call`)."""
    with _without_init_dump():
        model = init_recognizer(config, checkpoint, device, cfg_options)
    sample = example_inputs(model.cfg, video_size, fps=fps)
    pixels = random_pixels({key: value.shape for key, value in sample.items()}
                           if isinstance(sample, dict) else sample.shape, batch)
    if isinstance(model, OnnxRecognizer):
        return _onnx_call(model, pixels, batch, alone), _shapes(pixels), \
            torch.device('cpu'), 'onnxruntime'
    device = next(model.parameters()).device
    wrapper = ExportWrapper(model, fold_input=False).eval()
    tensors = tuple(tensor.to(device) for tensor in as_tuple(model, pixels))
    return (lambda: wrapper(*tensors)), _shapes(pixels), device, 'PyTorch'


def _onnx_call(model: OnnxRecognizer, pixels, batch: int, alone: bool) -> Callable[[], object]:
    """An exported (float or int8) graph called as deployment calls it, as
    ``benchmarks/bench_deploy.py`` times it: :meth:`OnnxRecognizer.scores` on the uint8 samples
    the test pipeline packs (float pixels would time a cast no deployment makes).

    Its session gets PyTorch's intra-op thread count, so that one setting
    (``torch.set_num_threads``, ``benchmark_latency.py --threads``) governs whichever runtime is
    timed; its pool threads spin only when it is timed alone (see :func:`onnx_session`: beside
    other models they would hold the cores into their calls).
    """
    if model.batch is not None and model.batch != batch:
        # it would run padded chunks of its own batch, and the time per sample be wrong
        raise ValueError(f'{model.path}: the graph takes batches of {model.batch} (a static '
                         f'batch export); time it at that batch, not {batch}')
    model.session = onnx_session(model.path, torch.get_num_threads(), spin=alone)
    if isinstance(pixels, dict):
        samples = [{key: value[index].to(torch.uint8) for key, value in pixels.items()}
                   for index in range(batch)]
    else:
        samples = list(pixels.to(torch.uint8))
    return lambda: model.scores(samples)


def compare_latency(configs: Dict[str, Union[ConfigLike, Tuple[ConfigLike, dict]]],
                    device: Optional[str] = None, batch: int = 1, repeats: int = 30,
                    warmup: int = 5, video_size: Tuple[int, int] = (256, 340), fps: float = 30.0,
                    progress: bool = True, checkpoint: Optional[str] = None) -> Dict[str, Dict]:
    """Median latency of several configs' models, timed side by side in interleaved rounds
    (:func:`~hyperframes_mm.utils.timing.interleaved_timing`, which makes the process's heap
    steady for the rest of the process: :func:`~hyperframes_mm.utils.timing.steady_heap`).

    Args:
        configs (dict): name -> config, or name -> ``(config, cfg_options)``.
        device (str, optional): defaults to CUDA when present, else the CPU.
        batch (int): samples per call. Defaults to 1.
        repeats (int): timed rounds. Defaults to 30.
        warmup (int): untimed rounds first. Defaults to 5.
        video_size (tuple[int, int]): decoded frame size. Defaults to (256, 340).
        fps (float): frame rate for time-based samplers. Defaults to 30.
        progress (bool): show a progress bar. Defaults to True.
        checkpoint (str, optional): weights for every model (latency does not depend on
            them; a model is timed as it will be loaded), or an exported ``.onnx`` graph
            (float or int8), timed in onnxruntime on the CPU with PyTorch's intra-op thread
            count. Defaults to None.

    Returns:
        dict: name -> ``median_ms``, ``q1_ms``, ``q3_ms`` (per call), ``per_sample_ms``,
        ``device``, ``runtime`` (``'PyTorch'`` or ``'onnxruntime'``), ``batch``, ``inputs``
        (name -> shape of one call).
    """
    if batch < 1 or repeats < 1 or warmup < 0:
        raise ValueError(f'latency: need batch >= 1, repeats >= 1, warmup >= 0; got '
                         f'{batch}, {repeats}, {warmup}')
    calls, shapes, devices, runtimes = {}, {}, {}, {}
    for name, entry in configs.items():
        config, cfg_options = entry if isinstance(entry, tuple) else (entry, None)
        calls[name], shapes[name], devices[name], runtimes[name] = _timed_call(
            config, checkpoint, device, batch, video_size, fps, cfg_options,
            alone=len(configs) == 1)
    cuda = any(dev.type == 'cuda' for dev in devices.values())
    times = interleaved_timing(calls, repeats, warmup, progress=progress,
                               synchronize=torch.cuda.synchronize if cuda else (lambda: None))
    return {name: _summarise(times, name, batch, devices[name], runtimes[name], shapes[name])
            for name in times}


def _summarise(times: Timings, name: str, batch: int, device: torch.device, runtime: str,
               shapes: Dict) -> Dict:
    median, (first, third) = times.median(name), times.quartiles(name)
    return dict(median_ms=median * 1e3, q1_ms=first * 1e3, q3_ms=third * 1e3,
                per_sample_ms=median * 1e3 / batch, device=str(device), runtime=runtime,
                batch=batch, inputs=shapes)


def measure_latency(config: ConfigLike, checkpoint: Optional[str] = None,
                    device: Optional[str] = None, batch: int = 1, repeats: int = 30,
                    warmup: int = 5, video_size: Tuple[int, int] = (256, 340),
                    fps: float = 30.0, cfg_options: Optional[dict] = None) -> Dict:
    """Median latency of one config's model on ``batch`` samples of random pixels:
    :func:`compare_latency` of it alone, without a progress bar (the same arguments and the
    same lasting steady heap; the result is that function's entry for the model)."""
    return compare_latency({'model': (config, cfg_options)}, device, batch, repeats, warmup,
                           video_size, fps, progress=False, checkpoint=checkpoint)['model']
