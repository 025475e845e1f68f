"""A dynamic frame count at inference: a T-trained model run at T' frames, chosen per window.

A hyperframe model trained at T=5 runs at T'=3 or 7 once its first conv is re-inflated
(:func:`~hyperframes_mm.models.backbones.reinflate_backbone`: the kernel is resampled over time,
keeping its temporal sum). Only the first conv changes, so T' barely changes the cost of a
ResNet; what it buys is temporal detail where the scene moves and nothing where it is still.

Per window, a motion score (:func:`motion_score`: mean absolute difference of consecutive
frames picked by the trained-T sampler, in 0-255 grey levels) picks T' among three
(:func:`choose_num_frames`): below ``low`` the cheapest, above ``high`` the densest, the
trained T in between. By default the
picks keep the trained clip's time span (``keep_span=True``: T'=3 at interval 4 spans what
T=5 at interval 2 does), because re-inflation maps the trained kernel's frames onto equal
fractions of the same span.

The models for every T' are built once (copies of the trained model, each re-inflated once);
nothing is re-inflated per window.
"""
import copy
import logging
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

import numpy as np
import torch
from mmengine.logging import print_log
from torch import nn

from ..models.backbones import reinflate_backbone
from ..models.backbones.hyperframe_backbone import HyperframeBackboneMixin
from ..apis.inference import WindowPipeline, predict_scores
from ..datasets.transforms.pipeline_info import fuses_streams, stacked_segments
from .stages import ModelStage, shape_key

#: Default thresholds (grey levels, 0-255) between T'=3, the trained T, and T'=7: the motion
#: score tertiles of the synthetic benchmark's 150 validation clips (default preset, generator
#: version 3, the recipe's T=5 picks 6/30 s apart), rounded, as
#: ``benchmarks/bench_dynamic_frames.py`` prints them. The score's scale depends on the data
#: and the interval: calibrate them on your own clips (``--motion-thresholds``).
DEFAULT_THRESHOLDS = (6.1, 8.7)


def motion_score(frames: Sequence[np.ndarray], max_side: int = 128) -> float:
    """Mean absolute difference of consecutive frames, in grey levels (0-255).

    Frames larger than ``max_side`` on their short side are subsampled by a whole stride
    first (a motion estimate needs no full resolution); the mean runs over every channel.

    Args:
        frames (Sequence[np.ndarray]): at least two ``H x W x C`` uint8 frames, in time order.
        max_side (int): short side above which frames are subsampled. Defaults to 128.

    Returns:
        float: the mean over the ``len(frames) - 1`` consecutive pairs.
    """
    if len(frames) < 2:
        raise ValueError(f'motion_score needs at least 2 frames, got {len(frames)}')
    step = max(1, min(frames[0].shape[:2]) // max_side)
    stack = np.stack([frame[::step, ::step] for frame in frames]).astype(np.int16)
    return float(np.abs(np.diff(stack, axis=0)).mean())


def choose_num_frames(score: float, thresholds: Tuple[float, float],
                      choices: Tuple[int, int, int]) -> int:
    """``choices[0]`` below ``thresholds[0]``, ``choices[2]`` above ``thresholds[1]``,
    ``choices[1]`` otherwise (a score equal to a threshold takes the middle choice)."""
    low, high = thresholds
    if score < low:
        return choices[0]
    if score > high:
        return choices[2]
    return choices[1]


def window_motion_score(pipeline: WindowPipeline, frames: Sequence[np.ndarray],
                        fps: Optional[float] = None) -> float:
    """:func:`motion_score` of each test clip's picks (first stream) in a window of
    ``frames``, averaged over the clips: consecutive picks of one clip, never across clips."""
    layout = pipeline.layout(len(frames), fps)
    num_frames, num_clips = layout['clip_len'], layout['num_clips']
    clips = layout['frame_inds'][:num_clips * num_frames].reshape(num_clips, num_frames)
    return float(np.mean([motion_score([frames[index] for index in clip]) for clip in clips]))


def backbone_num_frames(model: nn.Module) -> int:
    """T of the hyperframe backbone(s) in ``model`` (all must agree)."""
    found = {module.num_frames for module in model.modules()
             if isinstance(module, HyperframeBackboneMixin)}
    if len(found) != 1:
        raise ValueError(f'{type(model).__name__}: expected hyperframe backbone(s) with one T, '
                         f'found {sorted(found) or "none"}')
    return found.pop()


def sampler_overrides(sampler_cfg: Dict, num_frames: int, keep_span: bool = True) -> Dict:
    """Arguments that make a test sampler pick ``num_frames`` frames per clip (and stream).

    With ``keep_span`` the interval is scaled by ``(T - 1) / (T' - 1)`` so the clip spans the
    same time; frame intervals are rounded to whole frames (at least 1).

    Args:
        sampler_cfg (dict): the test pipeline's sampler config (``HyperframeSampleFrames``
            or ``SampleFrames``).
        num_frames (int): T'.
        keep_span (bool): scale the interval. Defaults to True.
    """
    kind = sampler_cfg['type']
    if kind == 'SampleFrames':
        base, interval = sampler_cfg['clip_len'], sampler_cfg.get('frame_interval', 1)
        overrides = dict(clip_len=num_frames)
        if keep_span and num_frames > 1 and base > 1:
            overrides['frame_interval'] = max(1, round(interval * (base - 1) / (num_frames - 1)))
        return overrides
    if kind != 'HyperframeSampleFrames':
        raise ValueError(f'dynamic frames: cannot change the frame count of sampler {kind}')
    time_based = sampler_cfg.get('time_based', False)
    base = sampler_cfg['num_frames']

    def scaled(interval):
        if not keep_span or interval is None or num_frames == 1 or base == 1:
            return interval
        value = interval * (base - 1) / (num_frames - 1)
        return value if time_based else max(1, round(value))

    overrides = dict(num_frames=num_frames)
    if sampler_cfg.get('mode', 'interval') == 'interval':
        overrides['interval'] = scaled(sampler_cfg.get('interval', 1))
    streams = sampler_cfg.get('streams')
    if streams:
        new_streams = {}
        for name, spec in streams.items():
            spec = dict(spec or {})
            if spec.get('num_frames', base) != base:
                raise ValueError(f'dynamic frames: stream {name!r} has its own num_frames; '
                                 'all streams must share the backbone\'s T')
            spec['num_frames'] = num_frames
            if 'interval' in spec:
                spec['interval'] = scaled(spec['interval'])
            new_streams[name] = spec
        overrides['streams'] = new_streams
    return overrides


def reinflated_copies(model: nn.Module, choices: Sequence[int]) -> Dict[int, nn.Module]:
    """``{T': model}``: the model itself at its own T, a re-inflated deep copy for every other
    T' (each re-inflated once, here)."""
    base = backbone_num_frames(model)
    models = {}
    for num_frames in choices:
        if num_frames == base:
            models[num_frames] = model
            continue
        clone = copy.deepcopy(model)
        reinflate_backbone(clone, num_frames)
        models[num_frames] = clone.eval()
    return models


class DynamicFrameStage(ModelStage):
    """A :class:`ModelStage` whose frame count follows each window's motion score.

    Args:
        model (nn.Module): a hyperframe recognizer trained at T (with its config as
            ``model.cfg``, see :func:`~hyperframes_mm.apis.inference.init_recognizer`).
        choices (tuple[int, int, int]): T' for low, medium and high motion; the middle one is
            usually the trained T. Defaults to (3, 5, 7).
        thresholds (tuple[float, float]): motion scores between the choices. Defaults to
            :data:`DEFAULT_THRESHOLDS`.
        keep_span (bool): every T' covers the trained clip's time span. Defaults to True.
        name (str): the stage's name. Defaults to ``'dynamic'``.
        window (int, optional): window length in frames. Defaults to the longest of the
            choices' windows.
    """

    def __init__(self, model: nn.Module, choices: Tuple[int, int, int] = (3, 5, 7),
                 thresholds: Tuple[float, float] = DEFAULT_THRESHOLDS, keep_span: bool = True,
                 name: str = 'dynamic', window: Optional[int] = None) -> None:
        choices = tuple(int(value) for value in choices)
        if len(choices) != 3 or min(choices) < 1:
            raise ValueError(f'DynamicFrameStage: choices must be three frame counts >= 1, '
                             f'got {choices}')
        if len(thresholds) != 2 or thresholds[0] > thresholds[1]:
            raise ValueError(f'DynamicFrameStage: thresholds must be (low, high) with low <= '
                             f'high, got {thresholds}')
        if fuses_streams(model.cfg.test_pipeline):
            raise ValueError('DynamicFrameStage: an early-fusion fast/slow model reads every '
                             'stream\'s frames as one hyperframe, so one T per stream cannot '
                             'be re-inflated on its own; use a single-stream or two-pass model')
        if stacked_segments(model.cfg.test_pipeline) > 1:
            raise ValueError('DynamicFrameStage: the model reads each clip as several shifted '
                             'hyperframes (HyperframeStack(segments=...)), whose T the stage '
                             'would change in one of them only; use a one-hyperframe model')
        super().__init__(model, name=name, window=window)
        base = backbone_num_frames(model)
        if base < 2:
            raise ValueError(f'DynamicFrameStage: the model sees {base} frame; a motion score '
                             'needs a model trained on at least 2')
        sampler_cfg = self.pipeline.sampler_cfg
        self.base_num_frames = base
        self.choices = choices
        self.thresholds = tuple(float(value) for value in thresholds)
        self.models = reinflated_copies(model, sorted(set(choices) | {base}))
        self.pipelines: Dict[int, WindowPipeline] = {
            num_frames: WindowPipeline(model.cfg.test_pipeline,
                                       sampler_overrides(sampler_cfg, num_frames, keep_span))
            for num_frames in self.models}
        print_log(f'DynamicFrameStage: T={base} model at T\'={choices} by motion score '
                  f'thresholds {self.thresholds}; samplers: ' + '; '.join(
                      f'T\'={t}: {p.sampler_cfg}' for t, p in sorted(self.pipelines.items())),
                  logger='current', level=logging.INFO)

    def window_length(self, fps: Optional[float]) -> int:
        return self.window or max(pipeline.default_window(fps)
                                  for pipeline in self.pipelines.values())

    def window_pipelines(self) -> List[WindowPipeline]:
        return list(self.pipelines.values())

    def score_window(self, frames: Sequence[np.ndarray], fps: Optional[float]) -> float:
        """The window's motion score (:func:`window_motion_score` with the trained T)."""
        pipeline = self.pipelines[self.base_num_frames]
        own = frames[-pipeline.default_window(fps):] if self.window is None else frames
        return window_motion_score(pipeline, own, fps)

    def prepare(self, frames: Sequence[np.ndarray], fps: Optional[float],
                filename: str = 'stream') -> Tuple[Hashable, Dict]:
        frames = self.model_frames(frames, filename)
        num_frames = choose_num_frames(self.score_window(frames, fps), self.thresholds,
                                       self.choices)
        pipeline = self.pipelines[num_frames]
        own = frames[-pipeline.default_window(fps):] if self.window is None else frames
        picks = [own[index] for index in pipeline.frame_indices(len(own), fps)]
        packed = pipeline(picks, len(own), fps, filename)
        # by T and by shape: streams of two frame sizes share a T (see shape_key)
        return (num_frames, shape_key(packed)), packed

    def key_fields(self, key: Hashable) -> Dict:
        return dict(num_frames=key[0])  # the T the window's motion chose

    def predict(self, key: Hashable, packed: Sequence[Dict]) -> torch.Tensor:
        return predict_scores(self.models[key[0]], packed)
