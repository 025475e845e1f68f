"""The frames a pipeline samples against the frames the hyperframe backbone takes, checked before a
loop runs; and how a config's pipelines and a model's streams are read for that check, which
``tools/doctor.py`` (:mod:`hyperframes_mm.analysis`, which imports the engine) makes too.

A backbone built for T frames takes ``3T`` input channels, and refuses any other count at the
first batch with an error that names neither the pipeline nor its key. A T changed in the
validation or test pipeline alone (``--cfg-options val_dataloader.dataset.pipeline.1.
clip_len=3``) was only found after ``val_interval`` epochs of training. :class:`NumFramesHook`,
registered by :class:`~hyperframes_mm.engine.runner.HyperframeRunner`, names the pipeline's
place and both settings before the first step of any loop the run executes.

A dataset config may wrap others (``GuardedDataset(dataset=...)``, ``RepeatDataset``,
``ConcatDataset(datasets=[...])``); :func:`dataset_leaves` unwraps them to the datasets that hold
a pipeline. The frame sampler of a pipeline (the plugin's ``HyperframeSampleFrames`` or
mmaction2's ``SampleFrames``) is summarised as a :class:`SamplerSpec`: one entry per stream with
its T and interval, as the transform itself would read its arguments.
"""
import copy
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from mmaction.registry import HOOKS
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from torch import nn

from ..datasets.transforms.pipeline_info import fuses_streams, stacked_segments, transform_type
from ..datasets.transforms.pipeline_order import pipeline_order_problems
from .cache_hook import built_loops

DATALOADER_KEYS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
SAMPLER_TYPES = ('HyperframeSampleFrames', 'SampleFrames')
#: the part of a hyperframe backbone (``HyperframeBackboneMixin``) that holds its T
HYPERFRAME_STEM = 'hyperframe_stem'


def dataset_leaves(dataset: Dict, where: str) -> List[Tuple[str, Dict]]:
    """``(where, dataset config)`` for every dataset under ``dataset`` that holds a pipeline."""
    if 'pipeline' in dataset:
        return [(where, dataset)]
    leaves = []
    if isinstance(dataset.get('dataset'), dict):
        leaves += dataset_leaves(dataset['dataset'], f'{where}.dataset')
    for index, inner in enumerate(dataset.get('datasets') or []):
        leaves += dataset_leaves(inner, f'{where}.datasets[{index}]')
    return leaves


def dataloader_datasets(cfg,
                        keys: Tuple[str, ...] = DATALOADER_KEYS) -> List[Tuple[str, Dict]]:
    """``(where, dataset config)`` of every pipeline-holding dataset of the given dataloaders.

    ``where`` reads like ``'train_dataloader.dataset'``; dataloaders missing from the config are
    skipped, and one dataset shared by two dataloaders (``test_dataloader = val_dataloader``) is
    listed under each.
    """
    found = []
    for key in keys:
        loader = cfg.get(key)
        if isinstance(loader, dict) and isinstance(loader.get('dataset'), dict):
            found += dataset_leaves(loader['dataset'], f'{key}.dataset')
    return found


@dataclass(frozen=True)
class StreamSpec:
    """One stream of a sampler: ``name`` (None for a single-stream sampler), T and interval
    (None: picks spread uniformly over the video)."""
    name: Optional[str]
    num_frames: int
    interval: Optional[float]


@dataclass(frozen=True)
class SamplerSpec:
    """What a frame sampler in a pipeline asks for.

    Attributes:
        index (int): position of the sampler in its pipeline.
        type (str): ``'HyperframeSampleFrames'`` or ``'SampleFrames'``.
        streams (tuple[StreamSpec, ...]): one per stream, in order.
        mode (str): ``'interval'`` or ``'uniform'`` (no interval: picks spread over the video).
        time_based (bool): intervals are seconds.
        num_clips (int): K, hyperframes per sample.
        out_of_bound (str): what happens to picks past the end (``'loop'``, ``'repeat_last'``,
            ``'error'``).
    """
    index: int
    type: str
    streams: Tuple[StreamSpec, ...]
    mode: str
    time_based: bool
    num_clips: int
    out_of_bound: str

    def span(self, fps: Optional[float] = None) -> Optional[int]:
        """Frames from the first to the last pick of the longest interval stream, both included.

        Time-based samplers need the video's ``fps``; uniform samplers have no fixed span (None),
        and a uniform stream beside interval ones does not count.
        """
        if self.mode == 'uniform':
            return None
        if self.time_based and fps is None:
            raise ValueError(f'{self.type}: a time-based span in frames needs the video fps')
        spans = []
        for stream in self.streams:
            if stream.interval is None:
                continue
            steps = (stream.num_frames - 1) * stream.interval
            if self.time_based:
                steps = int(steps * fps + 0.5)
            spans.append(int(steps) + 1)
        return max(spans)


def sampler_spec(pipeline: List[Dict]) -> Optional[SamplerSpec]:
    """The first frame sampler of ``pipeline`` as a :class:`SamplerSpec`, or None.

    The sampler is built through the registry, so its arguments are checked and defaulted by
    the transform itself (an invalid sampler raises the transform's own error).
    """
    from mmaction.registry import TRANSFORMS
    for index, transform in enumerate(pipeline):
        kind = transform_type(transform)
        if kind not in SAMPLER_TYPES:
            continue
        built = TRANSFORMS.build(copy.deepcopy(transform))
        if kind == 'HyperframeSampleFrames':
            streams = tuple(StreamSpec(name, num_frames, interval)
                            for name, num_frames, interval in built.streams)
            return SamplerSpec(index, kind, streams, built.mode, built.time_based,
                               built.num_clips, built.out_of_bound)
        if built.target_fps:
            # SampleFrames(target_fps=f) resamples every video to f fps: a time-based interval.
            stream = StreamSpec(None, built.clip_len, built.frame_interval / built.target_fps)
        else:
            stream = StreamSpec(None, built.clip_len, built.frame_interval)
        return SamplerSpec(index, kind, (stream, ), 'interval', bool(built.target_fps),
                           built.num_clips, built.out_of_bound_opt)
    return None


def model_streams(model) -> Dict[Optional[str], object]:
    """Stream name (None for a single-stream model) -> its hyperframe backbone; empty when the
    model has no hyperframe backbone (mmaction2's TSN and TSM models).

    The parts are told by what they have, not by their classes, which this module cannot import
    (the models import the engine to load checkpoints): a multi-stream recognizer
    (``FastSlowRecognizer``) has ``stream_backbone``, a hyperframe backbone its hyperframe stem.
    """
    model = model.module if is_model_wrapper(model) else model
    if callable(getattr(model, 'stream_backbone', None)):
        streams = {name: model.stream_backbone(name) for name in model.streams}
    else:
        streams = {None: getattr(model, 'backbone', None)}
    if not all(isinstance(getattr(backbone, HYPERFRAME_STEM, None), nn.Module)
               for backbone in streams.values()):
        return {}
    return streams


def needs_stack(streams: Dict[Optional[str], object]) -> bool:
    """Whether a model of these :func:`model_streams` needs its pipelines' ``HyperframeStack``:
    any hyperframe backbone of T > 1, and every multi-stream model (the stack writes the
    ``imgs_<name>`` it reads). A T = 1 backbone reads single frames as they are."""
    return bool(streams) and (set(streams) != {None} or streams[None].num_frames > 1)


def frame_count_mismatches(where: str, pipeline: Sequence[Dict],
                           streams: Dict[Optional[str], object]) -> List[Tuple[str, str]]:
    """``(problem, fix)`` for each stream whose sampled T differs from its backbone's
    ``num_frames`` in the pipeline of the dataset at ``where`` (``streams``:
    :func:`model_streams`, not empty); for a pipeline that stacks its streams into one
    hyperframe (``HyperframeStack(fuse_streams=True)``, early fusion) their total against the
    one backbone's; for one that splits each clip into S hyperframes
    (``HyperframeStack(segments=S)``) the sampled T over S."""
    spec = sampler_spec(list(pipeline))
    if spec is None:
        return []
    place = f'{where}.pipeline[{spec.index}]'
    segments = stacked_segments(pipeline)
    # a frame count S does not divide stays a fraction, which no backbone T equals
    sampled = {stream.name: (stream.num_frames // segments if stream.num_frames % segments == 0
                             else stream.num_frames / segments) for stream in spec.streams}
    if fuses_streams(pipeline) and None not in sampled and set(streams) == {None}:
        total, expected = sum(sampled.values()), streams[None].num_frames
        if total == expected:
            return []
        parts = ' + '.join(f'{frames} ({name})' for name, frames in sampled.items())
        return [(f'{place}: {spec.type} samples T={parts} = {total} frames, stacked into one '
                 f'hyperframe (HyperframeStack(fuse_streams=True)), but the backbone takes '
                 f'num_frames={expected} ({3 * expected} channels): it will refuse the '
                 f'{3 * total}-channel input',
                 f'set the backbone\'s num_frames to the streams\' total, {total}')]
    if set(sampled) != set(streams):
        fix = ('give the sampler streams=dict(...) named like the recognizer\'s streams (or '
               'none for a single-stream model)')
        if set(streams) == {None}:
            # a single-stream recognizer (Recognizer2D) reads imgs, which a stack of separate
            # streams leaves empty: it failed with "'dict' object has no attribute 'shape'"
            fix += ('; or keep the streams: FastSlowRecognizer with streams named like the '
                    'sampler\'s, or HyperframeStack(fuse_streams=True) to stack them into one '
                    'hyperframe of their total T for this backbone')
        return [(f'{place}: {spec.type} samples streams {sorted(map(str, sampled))} but the '
                 f'model takes {sorted(map(str, streams))}', fix)]
    found = []
    for name, frames in sampled.items():
        expected = streams[name].num_frames
        if frames != expected:
            label = f' for stream {name!r}' if name else ''
            found.append((f'{place}: {spec.type} samples T={frames} frames{label} but the '
                          f'backbone{label} takes num_frames={expected} ({3 * expected} '
                          f'channels): it will refuse the {3 * frames}-channel input',
                          f'use one T in both: num_frames={expected} in the sampler{label}, or '
                          f'num_frames={frames} in the backbone{label}'))
    return found


@HOOKS.register_module()
class NumFramesHook(Hook):
    """Before a run (``before_run``: loops built, nothing read or trained yet): the T every
    pipeline of the run's loops samples against the model's hyperframe backbone
    (:func:`frame_count_mismatches`, the doctor's ``num-frames`` check), and where the pipeline
    places ``HyperframeStack`` (:func:`~hyperframes_mm.datasets.transforms.pipeline_order.
    pipeline_order_problems`, the doctor's ``pipeline-order`` check: a frame transform after
    it, or no stack for a hyperframe backbone), read from the config's dataloaders so that the
    error names the key to change. A model without a hyperframe backbone gets the order check
    alone. Registered by :class:`~hyperframes_mm.engine.runner.
    HyperframeRunner`.

    Raises:
        ValueError: naming each mismatch's pipeline place, both settings and the fix.
    """

    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        streams = model_streams(runner.model)
        found = []
        for split, _ in built_loops(runner):
            for where, dataset in dataloader_datasets(runner.cfg, (f'{split}_dataloader', )):
                pipeline = dataset['pipeline']
                problems = frame_count_mismatches(where, pipeline, streams) if streams else []
                problems += pipeline_order_problems(where, pipeline, needs_stack(streams))
                found += [f'{problem}; {fix}' for problem, fix in problems]
        if found:
            raise ValueError('\n'.join(found))
