"""FLOPs, parameters and latency of a config's model, on the input its test pipeline makes.

Both measure the whole test-time model, :class:`~hyperframes_mm.apis.export.ExportWrapper`:
normalisation, backbone(s), head and clip averaging, on one sample of ``[1, K, 3T, H, W]``
per stream (K, T, H, W from the test pipeline applied to frames of ``video_size``), so
single-stream and fast/slow models (dict inputs) are counted alike.
"""
import statistics
from typing import Callable, Dict, Optional, Tuple, Union

import torch

from ..utils.timing import interleaved_timing
from .export import ExportWrapper, as_tuple
from .inference import ConfigLike, example_inputs, init_recognizer, stream_keys


def _shapes(inputs) -> Dict[str, Tuple[int, ...]]:
    if isinstance(inputs, dict):
        return {key: tuple(value.shape) for key, value in inputs.items()}
    return {'imgs': tuple(inputs.shape)}


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
    from mmengine.analysis import get_model_complexity_info
    model = init_recognizer(config, None, 'cpu', cfg_options)
    inputs = example_inputs(model.cfg, video_size, fps=fps)
    wrapper = ExportWrapper(model).eval()
    tensors = tuple(tensor.float() for tensor in as_tuple(model, inputs))
    with torch.no_grad():
        info = get_model_complexity_info(wrapper, inputs=tensors, show_table=show_table,
                                         show_arch=False)
    shapes = _shapes(inputs)
    result = dict(flops=int(info['flops']), params=int(info['params']), inputs=shapes,
                  clips=next(iter(shapes.values()))[1])
    if show_table:
        result['table'] = info['out_table']
    return result


def _timed_call(config: ConfigLike, checkpoint: Optional[str], device: Optional[str],
                batch: int, video_size: Tuple[int, int], fps: float,
                cfg_options: Optional[dict]) -> Tuple[Callable[[], object], Dict, torch.device]:
    """A no-argument call of the whole test-time model on ``batch`` random samples."""
    model = init_recognizer(config, checkpoint, device, cfg_options)
    device = next(model.parameters()).device
    sample = example_inputs(model.cfg, video_size, fps=fps)
    generator = torch.Generator().manual_seed(0)
    tensors = tuple(torch.randint(0, 256, (batch, ) + tuple(tensor.shape[1:]),
                                  generator=generator).float().to(device)
                    for tensor in as_tuple(model, sample))
    wrapper = ExportWrapper(model).eval()
    shapes = {key: (batch, ) + tuple(tensor.shape[1:])
              for key, tensor in zip(stream_keys(model), tensors)}
    return (lambda: wrapper(*tensors)), shapes, device


def compare_latency(configs: Dict[str, Union[ConfigLike, Tuple[ConfigLike, dict]]],
                    device: Optional[str] = None, batch: int = 1, repeats: int = 30,
                    warmup: int = 5, video_size: Tuple[int, int] = (256, 340), fps: float = 30.0,
                    progress: bool = True) -> Dict[str, Dict]:
    """Median latency of several configs' models, timed side by side in interleaved rounds.

    Args:
        configs (dict): name -> config, or name -> ``(config, cfg_options)``.
        device (str, optional): defaults to CUDA when present, else the CPU.
        batch (int): samples per call. Defaults to 1.
        repeats (int): timed rounds. Defaults to 30.
        warmup (int): untimed rounds first. Defaults to 5.
        video_size (tuple[int, int]): decoded frame size. Defaults to (256, 340).
        fps (float): frame rate for time-based samplers. Defaults to 30.
        progress (bool): show a progress bar. Defaults to True.

    Returns:
        dict: name -> ``median_ms``, ``q1_ms``, ``q3_ms`` (per call), ``per_sample_ms``,
        ``device``, ``batch``, ``inputs`` (name -> shape of one call).
    """
    if batch < 1 or repeats < 1 or warmup < 0:
        raise ValueError(f'compare_latency: need batch >= 1, repeats >= 1, warmup >= 0; got '
                         f'{batch}, {repeats}, {warmup}')
    calls, shapes, devices = {}, {}, {}
    for name, entry in configs.items():
        config, cfg_options = entry if isinstance(entry, tuple) else (entry, None)
        calls[name], shapes[name], devices[name] = _timed_call(
            config, None, device, batch, video_size, fps, cfg_options)
    cuda = any(dev.type == 'cuda' for dev in devices.values())
    times = interleaved_timing(calls, repeats, warmup, progress=progress,
                               synchronize=torch.cuda.synchronize if cuda else (lambda: None))
    return {name: _summarise(values, batch, devices[name], shapes[name])
            for name, values in times.items()}


def _summarise(times, batch: int, device: torch.device, shapes: Dict) -> Dict:
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else times * 3
    median = statistics.median(times)
    return dict(median_ms=median * 1e3, q1_ms=quartiles[0] * 1e3, q3_ms=quartiles[2] * 1e3,
                per_sample_ms=median * 1e3 / batch, device=str(device), batch=batch,
                inputs=shapes)


def measure_latency(config: ConfigLike, checkpoint: Optional[str] = None,
                    device: Optional[str] = None, batch: int = 1, repeats: int = 30,
                    warmup: int = 5, video_size: Tuple[int, int] = (256, 340),
                    fps: float = 30.0, cfg_options: Optional[dict] = None) -> Dict:
    """Median latency of the model on ``batch`` samples of random pixels.

    Args:
        config (str | Path | Config): the config.
        checkpoint (str, optional): weights (latency does not depend on them).
        device (str, optional): defaults to CUDA when present, else the CPU.
        batch (int): samples per call. Defaults to 1.
        repeats (int): timed calls. Defaults to 30.
        warmup (int): untimed calls first. Defaults to 5.
        video_size (tuple[int, int]): decoded frame size. Defaults to (256, 340).
        fps (float): frame rate for time-based samplers. Defaults to 30.
        cfg_options (dict, optional): config overrides.

    Returns:
        dict: ``median_ms``, ``q1_ms``, ``q3_ms`` (per call), ``per_sample_ms``, ``device``,
        ``batch``, ``inputs`` (name -> shape of one call).
    """
    if batch < 1 or repeats < 1 or warmup < 0:
        raise ValueError(f'measure_latency: need batch >= 1, repeats >= 1, warmup >= 0; got '
                         f'{batch}, {repeats}, {warmup}')
    call, shapes, device = _timed_call(config, checkpoint, device, batch, video_size, fps,
                                       cfg_options)
    times = interleaved_timing(
        {'model': call}, repeats, warmup, progress=False,
        synchronize=(lambda: torch.cuda.synchronize(device)) if device.type == 'cuda'
        else (lambda: None))['model']
    return _summarise(times, batch, device, shapes)
