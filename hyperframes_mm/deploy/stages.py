"""A model the streaming engine runs on windows: how to turn a window into inputs, and predict.

:class:`ModelStage` pairs a recognizer with its config's test pipeline (:class:`WindowPipeline`).
The engine hands a stage the last ``window_length(fps)`` frames of a stream; :meth:`prepare`
turns them into one packed sample (in a reader thread) and :meth:`predict` scores a batch of
them (in the model thread). ``prepare`` also returns a key: samples are batched only with
samples of the same key (a dynamic-frame stage keys them by T, see
:mod:`hyperframes_mm.deploy.dynamic_frames`).
"""
import logging
import threading
from typing import Dict, Hashable, List, Optional, Sequence, Set, Tuple

import numpy as np
import torch
from mmengine.logging import print_log
from torch import nn

from ..apis.inference import ConfigLike, WindowPipeline, init_recognizer, predict_scores


def frame_channels(cfg) -> int:
    """Channels of one frame the model of ``cfg`` takes: its data preprocessor's
    ``channels_per_frame``, 3 (RGB) where it names none."""
    preprocessor = (cfg or {}).get('model', {}).get('data_preprocessor') or {}
    return int(preprocessor.get('channels_per_frame', 3))


def _channels(count: int) -> str:
    return f'{count} channel{"s" if count > 1 else ""}'


def model_frames(frames: Sequence[np.ndarray],
                 channels: int, owner: str) -> Tuple[Sequence[np.ndarray], bool]:
    """The window ``frames`` as ``H x W x channels`` uint8 pixels, and whether some were grey.

    The test pipeline stacks whatever it is given and the model scales it as 0..255 pixels:
    16-bit or float 0..1 frames were scored, confidently and wrongly, by a checkpoint (a uint8
    graph refused them), and RGBA frames failed at the model with a message about the config.
    Grey frames (``H x W`` or ``H x W x 1``) of a model that takes RGB are repeated into 3
    channels, as decoders turn a grey video into the RGB frames the model was trained on. Every
    stage kind takes its window through here, at its entry, alike.

    Returns:
        tuple: ``frames`` (a new list where a grey frame was repeated) and whether one was.

    Raises:
        ValueError: naming ``owner``, the frame's index in the window, its dtype or shape, and
            what to do.
    """
    taken, grey = [], False
    for index, frame in enumerate(frames):
        shape = tuple(frame.shape)
        found = shape[2] if len(shape) == 3 else 1 if len(shape) == 2 else None
        if found is not None and frame.dtype != np.uint8:
            # not frame >> 8: it maps a depth camera's millimetres (a few thousand) to 0..17
            raise ValueError(f'{owner}: frame {index} of the window holds {frame.dtype} pixels '
                             'and the model takes uint8 pixels 0..255, as decoders give them: '
                             'map the frames to 0..255 the way the training frames were made '
                             'and convert them to uint8 (depth in millimetres: the near/far '
                             'mapping of depth_to_uint8 in tools/data/utd_mhad/convert_depth.py; '
                             'float 0..1: np.round(frame * 255))')
        if found == 1 and channels == 3:
            frame = np.repeat(frame.reshape(shape[0], shape[1], 1), 3, axis=2)
            grey = True
        elif found != channels:
            hint = 'drop the alpha channel (frame[..., :3])' if (found, channels) == (4, 3) \
                else f'convert them to {_channels(channels)}'
            what = 'not an image' if found is None else _channels(found)
            raise ValueError(f'{owner}: frame {index} of the window is '
                             f'{" x ".join(map(str, shape))} ({what}) and the model takes '
                             f'{_channels(channels)} (H x W x {channels}): {hint}')
        taken.append(frame)
    return (taken if grey else frames), grey


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
        self.channels = frame_channels(getattr(model, 'cfg', None))
        # the streams whose grey frames were logged: once each, not at every window; reader
        # threads of several streams prepare windows at once
        self._grey_streams: Set[str] = set()
        self._grey_lock = threading.Lock()

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

    def window_pipelines(self) -> List[WindowPipeline]:
        """The pipelines this stage's windows go through (a dynamic-frame stage has one a T)."""
        return [self.pipeline]

    def spreading_pipeline(self) -> Optional[WindowPipeline]:
        """The pipeline whose sampler spreads its picks over the whole video
        (:meth:`WindowPipeline.spreads_over_video`) where the stage has no window of its own:
        its windows then have no length unless the engine gives one. None otherwise."""
        return next((pipeline for pipeline in self.window_pipelines()
                     if self.window is None and pipeline.spreads_over_video()), None)

    def check_window(self, window: int, option: str) -> None:
        """Refuse a ``window`` (given as ``option``) shorter than one clip of this stage's
        sampler before any stream opens: each stream would otherwise open and fail at its first
        window, one by one. A time-based sampler's clip is known only at a stream's fps; its
        streams still refuse such a window each.

        Raises:
            ValueError: naming ``option``, the stage and the clip's length in frames.
        """
        spans = [pipeline._fixed_span(None) for pipeline in self.window_pipelines()]
        span = max(filter(None, spans), default=None)
        if span is not None and window < span:
            raise ValueError(f'{option}: a window of {window} frames is shorter than one clip of '
                             f'stage {self.name!r} ({span} frames from its sampler\'s first pick '
                             f'to its last); give a window of at least {span} frames')

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
        frames = self.model_frames(frames, filename)
        packed = self.pipeline(self.select(frames, fps), len(frames), fps, filename)
        check = getattr(self.model, 'check_sample', None)
        if check is not None:
            check(packed['inputs'])
        return shape_key(packed), packed

    def model_frames(self, frames: Sequence[np.ndarray], filename: str) -> Sequence[np.ndarray]:
        """The window ``frames`` of stream ``filename`` as the model takes them, grey ones
        repeated into 3 channels, or refused (:func:`model_frames`); every stage kind's
        :meth:`prepare` begins with it. A stream's grey frames are logged at its first window
        that has them."""
        owner = f'{type(self).__name__} {self.name!r}'
        frames, grey = model_frames(frames, self.channels, owner)
        if grey:
            with self._grey_lock:
                first = filename not in self._grey_streams
                self._grey_streams.add(filename)
            if first:
                print_log(f'{owner}: stream {filename!r} gives grey frames; each is repeated into '
                          '3 channels, as decoders turn a grey video into the RGB frames the '
                          'model was trained on', logger='current', level=logging.WARNING)
        return frames

    def key_fields(self, key: Hashable) -> Dict:
        """What a window's record says of its batch key (nothing: it is the input shape)."""
        return {}

    def predict(self, key: Hashable, packed: Sequence[Dict]) -> torch.Tensor:
        """Scores ``[N, num_classes]`` (on the CPU) of samples that share ``key``."""
        return predict_scores(self.model, packed)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}(name={self.name!r}, model={type(self.model).__name__})'
