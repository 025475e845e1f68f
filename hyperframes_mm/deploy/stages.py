"""A model the streaming engine runs on windows: how to turn a window into inputs, and predict.

:class:`ModelStage` pairs a recognizer with its config's test pipeline (:class:`WindowPipeline`).
The engine hands a stage the last ``window_length(fps)`` frames of a stream; :meth:`prepare`
turns them into one packed sample (in a reader thread) and :meth:`predict` scores a batch of
them (in the model thread). ``prepare`` also returns a key: samples are batched only with
samples of the same key (a dynamic-frame stage keys them by T, see
:mod:`hyperframes_mm.deploy.dynamic_frames`).
"""
from typing import Dict, Hashable, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from ..apis.inference import ConfigLike, WindowPipeline, init_recognizer, predict_scores


def shape_key(packed: Dict) -> Hashable:
    """The input shape(s) of a packed sample, as a batch key: samples of two shapes are never
    stacked into one batch (mmaction2's data preprocessor would pad the smaller to the larger,
    and score it so, silently; a graph would refuse the batch)."""
    inputs = packed['inputs']
    if isinstance(inputs, dict):
        return tuple((name, tuple(part.shape)) for name, part in sorted(inputs.items()))
    return tuple(inputs.shape)


class ModelStage:
    """A recognizer and the pipeline that feeds it windows.

    Args:
        model (nn.Module): the recognizer, in eval mode (see :func:`init_recognizer`).
        pipeline (WindowPipeline, optional): defaults to the model config's ``test_pipeline``.
        name (str): the stage's name in reports. Defaults to ``'model'``.
        window (int, optional): window length in frames. Defaults to the pipeline's
            :meth:`WindowPipeline.default_window` (K clip spans).
    """

    def __init__(self, model: nn.Module, pipeline: Optional[WindowPipeline] = None,
                 name: str = 'model', window: Optional[int] = None) -> None:
        if pipeline is None:
            cfg = getattr(model, 'cfg', None)
            if cfg is None or 'test_pipeline' not in cfg:
                raise ValueError(f'ModelStage {name!r}: the model carries no config with a '
                                 'test_pipeline (build it with init_recognizer) and no pipeline '
                                 'was given')
            pipeline = WindowPipeline(cfg.test_pipeline)
        if window is not None and window < 1:
            raise ValueError(f'ModelStage {name!r}: window must be >= 1 frame, got {window}')
        self.model = model
        self.pipeline = pipeline
        self.name = name
        self.window = window

    @classmethod
    def from_config(cls, config: ConfigLike, checkpoint: Optional[str] = None,
                    device: Optional[str] = None, name: str = 'model',
                    window: Optional[int] = None, cfg_options: Optional[dict] = None,
                    threads: Optional[int] = None) -> 'ModelStage':
        """Build the model of ``config``, load ``checkpoint``, feed it its test pipeline
        (``threads``: an ``.onnx`` checkpoint's onnxruntime threads)."""
        model = init_recognizer(config, checkpoint, device, cfg_options, threads=threads)
        return cls(model, WindowPipeline(model.cfg.test_pipeline), name, window)

    @property
    def decoder(self) -> str:
        """The decoder of the config's offline test pipeline (``'decord'`` or ``'pyav'``)."""
        return self.pipeline.decoder

    def window_length(self, fps: Optional[float]) -> int:
        """Frames this stage's windows span at ``fps``."""
        return self.window or self.pipeline.default_window(fps)

    def spreading_pipeline(self) -> Optional[WindowPipeline]:
        """The pipeline whose sampler spreads its picks over the whole video
        (:meth:`WindowPipeline.spreads_over_video`) where the stage has no window of its own:
        its windows then have no length unless the engine gives one. None otherwise."""
        if self.window is None and self.pipeline.spreads_over_video():
            return self.pipeline
        return None

    def select(self, frames: Sequence[np.ndarray], fps: Optional[float]) -> list:
        """The frames the sampler picks from a window (``frames``: oldest first)."""
        indices = self.pipeline.frame_indices(len(frames), fps)
        return [frames[index] for index in indices]

    def prepare(self, frames: Sequence[np.ndarray], fps: Optional[float],
                filename: str = 'stream') -> Tuple[Hashable, Dict]:
        """``(batch key, packed sample)`` of the window ``frames`` (oldest first). The key is
        the sample's input shape: a pipeline without a crop sizes samples by each stream's
        frames, and samples of two sizes cannot be stacked into one batch. A model that
        checks its samples (an exported graph of fixed sizes) refuses one here, in the stream's
        reader, so that stream fails alone."""
        packed = self.pipeline(self.select(frames, fps), len(frames), fps, filename)
        check = getattr(self.model, 'check_sample', None)
        if check is not None:
            check(packed['inputs'])
        return shape_key(packed), packed

    def key_fields(self, key: Hashable) -> Dict:
        """What a window's record says of its batch key (nothing: it is the input shape)."""
        return {}

    def predict(self, key: Hashable, packed: Sequence[Dict]) -> torch.Tensor:
        """Scores ``[N, num_classes]`` (on the CPU) of samples that share ``key``."""
        return predict_scores(self.model, packed)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}(name={self.name!r}, model={type(self.model).__name__})'
