"""Find what the diagnostics need in an mmengine config and in the model it builds: dataloaders,
pipelines, frame samplers, hyperframe streams.

A dataset config may wrap others (``GuardedDataset(dataset=...)``, ``RepeatDataset``,
``ConcatDataset(datasets=[...])``); :func:`dataset_leaves` unwraps them to the datasets that hold
a pipeline. The frame sampler of a pipeline (the plugin's ``HyperframeSampleFrames`` or
mmaction2's ``SampleFrames``) is summarised as a :class:`SamplerSpec`: one entry per stream with
its T and interval, as the transform itself would read its arguments.
"""
import argparse
import copy
import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from mmengine.config import Config, DictAction

# Also re-exported: the zoo-table tool reads its configs through here.
from ..apis.inference import load_config
from ..datasets.transforms.pipeline_info import transform_type
from ..utils import positive_int

DATALOADER_KEYS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
SAMPLER_TYPES = ('HyperframeSampleFrames', 'SampleFrames')


def config_tool_parser(doc: str, config_help: str = 'the config file') -> argparse.ArgumentParser:
    """The command line of a diagnostic tool that reads one config: the tool's ``doc`` (its
    first paragraph) as description, ``config``, ``--cfg-options`` (mmengine's key=value
    overrides, as in ``tools/train.py``) and ``--no-progress``; the tool adds its own."""
    parser = argparse.ArgumentParser(description=doc.split('\n\n')[0])
    parser.add_argument('config', help=config_help)
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings, key=value')
    parser.add_argument('--no-progress', action='store_true', help='hide the progress bars')
    return parser


def parse_config_tool_args(parser: argparse.ArgumentParser,
                           argv: Optional[Sequence[str]] = None
                           ) -> Tuple[argparse.Namespace, Config]:
    """The arguments of a :func:`config_tool_parser` command line, and its config loaded with
    the ``--cfg-options`` merged in."""
    args = parser.parse_args(argv)
    return args, load_config(args.config, args.cfg_options)


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


def dataloader_datasets(cfg: Config,
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


def unique_pipelines(cfg: Config) -> List[Tuple[str, Dict, List[Dict]]]:
    """``(where, dataset cfg, pipeline)`` per distinct dataset; a dataset shared by several
    dataloaders (``test_dataloader = val_dataloader``) is listed once, named after all of them."""
    seen: Dict[str, int] = {}
    found: List[Tuple[str, Dict, List[Dict]]] = []
    for where, dataset in dataloader_datasets(cfg):
        key = json.dumps(dataset, sort_keys=True, default=str)
        if key in seen:
            first = found[seen[key]]
            found[seen[key]] = (f'{first[0]} (= {where})', first[1], first[2])
            continue
        seen[key] = len(found)
        found.append((where, dataset, list(dataset['pipeline'])))
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
    model has no hyperframe backbone."""
    from ..models.backbones.hyperframe_backbone import HyperframeBackboneMixin
    from ..models.recognizers.fast_slow import FastSlowRecognizer
    if isinstance(model, FastSlowRecognizer):
        streams = {name: model.stream_backbone(name) for name in model.streams}
    else:
        streams = {None: getattr(model, 'backbone', None)}
    if not all(isinstance(b, HyperframeBackboneMixin) for b in streams.values()):
        return {}
    return streams


def set_epochs(cfg: Config, epochs: int) -> None:
    """Shorten or stretch an epoch-based schedule to ``epochs``, in place.

    ``train_cfg.max_epochs`` becomes ``epochs``, ``val_interval`` at most ``epochs``, and every
    scheduler's ``begin``/``end`` (and a cosine's ``T_max``) are scaled alike, each keeping at
    least one epoch: 3 warm-up + 27 cosine epochs of 30 become 1 + 9 of 10.
    """
    positive_int(epochs, 'epochs')
    old = cfg.train_cfg.max_epochs
    cfg.train_cfg.max_epochs = epochs
    cfg.train_cfg.val_interval = min(cfg.train_cfg.get('val_interval', 1), epochs)
    scale = epochs / old
    schedulers = cfg.get('param_scheduler') or []
    old_seam = new_seam = None
    for scheduler in schedulers if isinstance(schedulers, list) else [schedulers]:
        old_begin, old_end = scheduler.get('begin', 0), scheduler.get('end', old)
        # a scheduler that started where the previous one ended still does (warm-up, then
        # cosine), whatever the rounding did to that end
        begin = new_seam if old_begin == old_seam else round(old_begin * scale)
        begin = min(begin, epochs - 1)
        end = min(max(begin + 1, round(old_end * scale)), epochs)
        old_seam, new_seam = old_end, end
        scheduler.update(begin=begin, end=end)
        if 'T_max' in scheduler:
            scheduler['T_max'] = end - begin
