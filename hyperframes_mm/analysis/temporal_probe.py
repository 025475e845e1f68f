"""Does a model use time? Evaluate it on the test set with the frames of every hyperframe
reversed, shuffled or frozen, and at other sampling intervals.

A hyperframe is frame-major (channels ``3t..3t+2`` are frame ``t``), so reversing, shuffling or
freezing a clip is a permutation of the channel groups of the stacked input
(:func:`frame_order`, :func:`reorder_frames`), applied to every stream before the model's data
preprocessor, exactly as if the video had been played that way; streams stacked into one
hyperframe (``HyperframeStack(fuse_streams=True)``) are reordered each within its own block of
channels. All three keep the centre frame ``T // 2`` in place for odd T (reversal moves it for
even T), so a model that looks only at the centre frame - the single-frame model - gives exactly
its original predictions, and any change comes from the other frames. Other sampling intervals
rebuild the test dataloader with the frame sampler's interval scaled
(:func:`scale_sampling_interval`); a uniform stream has none and keeps its picks.

:func:`run_temporal_probe` returns a :class:`ProbeReport`: accuracy, drop and agreement with the
original predictions per condition, and a verdict in words; :func:`write_probe_outputs` writes it
as JSON and a bar chart.
"""
import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.config import Config
from tqdm import tqdm

from ..apis.inference import init_recognizer
from ..datasets.transforms.pipeline_info import fuses_streams, stream_key, transform_type
from .config_utils import sampler_spec

ORDER_CONDITIONS = ('original', 'reversed', 'shuffled', 'static')
DESCRIPTIONS = {
    'original': 'as sampled',
    'reversed': 'frames in reverse order',
    'shuffled': 'frames shuffled, centre frame kept',
    'static': 'every frame replaced by the centre frame',
}
SPLITS = ('test', 'val')

Inputs = Union[torch.Tensor, Dict[str, torch.Tensor], Sequence]


def frame_order(condition: str, num_frames: int, seed: int = 0) -> np.ndarray:
    """Which input frame each output frame of a hyperframe takes under ``condition``.

    Args:
        condition (str): ``'original'`` (``0..T-1``), ``'reversed'`` (``T-1..0``), ``'static'``
            (``T // 2`` everywhere) or ``'shuffled'``: the centre frame ``T // 2`` stays, the
            others are permuted so that none stays in place (a seeded draw, the same for every
            clip of this T; with fewer than two other frames nothing can move).
        num_frames (int): T.
        seed (int): seed of the shuffle. Defaults to 0.

    Returns:
        np.ndarray: ``[T]`` int64; output frame ``t`` is input frame ``order[t]``.

    Raises:
        ValueError: unknown condition or ``num_frames < 1``.
    """
    if condition not in ORDER_CONDITIONS:
        raise ValueError(f'frame_order: unknown condition {condition!r}; choose from '
                         f'{ORDER_CONDITIONS}')
    if isinstance(num_frames, bool) or not isinstance(num_frames, (int, np.integer)) or \
            num_frames < 1:
        raise ValueError(f'frame_order: num_frames must be an int >= 1, got {num_frames!r}')
    order = np.arange(num_frames, dtype=np.int64)
    centre = num_frames // 2
    if condition == 'reversed':
        return order[::-1].copy()
    if condition == 'static':
        return np.full(num_frames, centre, dtype=np.int64)
    if condition == 'shuffled':
        others = np.delete(order, centre)
        if len(others) >= 2:
            rng = np.random.default_rng([seed, num_frames])
            moved = rng.permutation(others)
            while np.any(moved == others):
                moved = rng.permutation(others)
            order[others] = moved
    return order


def reorder_frames(hyperframes: torch.Tensor, order: Sequence[int],
                   channels_per_frame: int = 3) -> torch.Tensor:
    """Reorder the frames of frame-major hyperframes ``[..., C*T, H, W]``.

    Args:
        hyperframes (torch.Tensor): channels ``C*t .. C*t+C-1`` are frame ``t``.
        order (Sequence[int]): ``[T]``, output frame ``t`` is input frame ``order[t]``.
        channels_per_frame (int): C. Defaults to 3.

    Returns:
        torch.Tensor: a new tensor of the same shape.

    Raises:
        ValueError: the input is not ``[..., C*T, H, W]`` with ``T = len(order)``.
    """
    order = torch.as_tensor(np.asarray(order), dtype=torch.long)
    if hyperframes.dim() < 3 or hyperframes.shape[-3] != channels_per_frame * len(order):
        raise ValueError(f'reorder_frames: expected hyperframes [..., {channels_per_frame}*'
                         f'{len(order)}, H, W] for a {len(order)}-frame order, got shape '
                         f'{tuple(hyperframes.shape)}')
    index = (order[:, None] * channels_per_frame + torch.arange(channels_per_frame)).reshape(-1)
    return hyperframes.index_select(-3, index.to(hyperframes.device))


def _frames_of(tensor: torch.Tensor, key: str, channels_per_frame: int) -> int:
    if tensor.dim() < 3 or tensor.shape[-3] % channels_per_frame:
        raise ValueError(f'{key}: expected hyperframes [..., {channels_per_frame}*T, H, W], got '
                         f'shape {tuple(tensor.shape)}')
    return tensor.shape[-3] // channels_per_frame


def perturb_inputs(inputs: Inputs, condition: str, seed: int = 0, channels_per_frame: int = 3,
                   fused: Optional[Sequence[Tuple[str, int]]] = None
                   ) -> Tuple[Inputs, Dict[str, List[int]]]:
    """Apply ``condition``'s frame order to every hyperframe of a batch, stream by stream.

    Args:
        inputs: what the dataloader gives as ``inputs``: a tensor, a list of per-sample tensors
            ``[K, C*T, H, W]``, a dict of streams (``imgs_<name>`` -> tensor), or a list of
            per-sample dicts of streams. Each stream uses the order of its own T.
        condition (str): one of :data:`ORDER_CONDITIONS`.
        seed (int): seed of the shuffle. Defaults to 0.
        channels_per_frame (int): C. Defaults to 3.
        fused (Sequence[tuple[str, int]], optional): ``(name, T)`` of the streams stacked into
            each tensor (``HyperframeStack(fuse_streams=True)``), in stacking order: each
            stream's frames are reordered within its own block, as they would be for separate
            streams (one order over all of them would swap the streams' places). Defaults to
            None: a tensor is one stream.

    Returns:
        tuple: the perturbed inputs (same structure) and ``{stream: order}`` (``'imgs'`` for a
        single-stream batch, ``imgs_<name>`` per stream, fused or not).
    """
    orders: Dict[str, List[int]] = {}

    def apply(tensor: torch.Tensor, key: str) -> torch.Tensor:
        total = _frames_of(tensor, key, channels_per_frame)
        blocks = [(key, total)] if fused is None else \
            [(stream_key(name), frames) for name, frames in fused]
        if sum(frames for _, frames in blocks) != total:
            raise ValueError(f'{key}: {total} frames a hyperframe, but the fused streams '
                             f'{list(fused)} stack {sum(frames for _, frames in blocks)}; '
                             'pass the (name, T) of the streams the hyperframes stack')
        order, start = [], 0
        for name, frames in blocks:
            orders[name] = frame_order(condition, frames, seed).tolist()
            order += [start + index for index in orders[name]]
            start += frames
        return reorder_frames(tensor, order, channels_per_frame)

    def walk(value, key: str):
        if isinstance(value, torch.Tensor):
            return apply(value, key)
        if isinstance(value, dict):
            return {name: walk(item, name) for name, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(walk(item, key) for item in value)
        raise TypeError(f'perturb_inputs: cannot reorder frames of a {type(value).__name__}')

    return walk(inputs, 'imgs'), orders


def scale_sampling_interval(pipeline: Sequence[Dict], scale: float) -> List[Dict]:
    """A copy of ``pipeline`` whose frame sampler picks frames ``scale`` times as far apart.

    ``HyperframeSampleFrames``: ``interval`` and every stream's own ``interval`` are scaled;
    frame intervals are rounded to the nearest whole frame (at least 1), time-based ones (seconds)
    are not rounded. mmaction2's ``SampleFrames``: ``frame_interval``, rounded the same way.

    Args:
        pipeline (Sequence[dict]): transform configs.
        scale (float): factor, > 0.

    Returns:
        list[dict]: the new pipeline (the input is not modified).

    Raises:
        ValueError: ``scale <= 0``; no frame sampler in the pipeline; a sampler in uniform mode
            (its picks spread over the whole video: there is no interval to scale).
    """
    if not scale > 0:
        raise ValueError(f'scale_sampling_interval: scale must be > 0, got {scale!r}')
    pipeline = copy.deepcopy(list(pipeline))
    spec = sampler_spec(pipeline)
    if spec is None:
        raise ValueError('scale_sampling_interval: the pipeline has no HyperframeSampleFrames or '
                         'SampleFrames, so there is no sampling interval to scale: '
                         f'{[transform_type(t) for t in pipeline]}')
    if spec.mode == 'uniform':
        raise ValueError(f'scale_sampling_interval: {spec.type}(mode=\'uniform\') spreads its '
                         'picks over the whole video; it has no interval to scale')

    def scaled(value: float) -> float:
        if spec.time_based and spec.type == 'HyperframeSampleFrames':
            return value * scale
        return max(1, int(math.floor(value * scale + 0.5)))

    sampler = pipeline[spec.index]
    if spec.type == 'SampleFrames':
        sampler['frame_interval'] = scaled(sampler.get('frame_interval', 1))
        return pipeline
    sampler['interval'] = scaled(sampler.get('interval') or 1)
    for stream in (sampler.get('streams') or {}).values():
        if stream and stream.get('interval') is not None:
            stream['interval'] = scaled(stream['interval'])
    return pipeline


@dataclass
class ConditionResult:
    """The model's results under one condition.

    Attributes:
        name (str): e.g. ``'reversed'`` or ``'interval x2'``.
        kind (str): ``'order'`` (frames permuted) or ``'interval'`` (sampler rescaled).
        description (str): what was done, in words.
        accuracy (float): top-1 accuracy.
        drop (float): original accuracy minus this one (negative: it rose).
        agreement (float): fraction of samples whose top-1 prediction equals the original one.
        detail (dict): ``{stream: frame order}`` or ``{stream: interval}``.
        scores (np.ndarray): ``[N, num_classes]`` class scores per sample.
    """
    name: str
    kind: str
    description: str
    accuracy: float
    drop: float
    agreement: float
    detail: Dict
    scores: np.ndarray = field(repr=False)

    @property
    def predictions(self) -> np.ndarray:
        """``[N]`` top-1 predictions."""
        return self.scores.argmax(axis=1)

    def to_dict(self) -> Dict:
        return dict(name=self.name, kind=self.kind, description=self.description,
                    accuracy=self.accuracy, drop=self.drop, agreement=self.agreement,
                    detail=self.detail)


@dataclass
class ProbeReport:
    """Everything the probe measured.

    Attributes:
        conditions (list[ConditionResult]): ``original`` first, then the other frame orders,
            then the intervals.
        skipped (dict): condition name -> why it was not run.
        labels (np.ndarray): ``[N]`` ground-truth labels.
        num_frames (dict): stream -> T.
        uses_time (bool, optional): the verdict; None when it cannot be told (T = 1, or every
            clip's frames identical).
        verdict (str): the verdict in words.
        still_clips (int): samples whose frames are all identical (a video shorter than one
            step of the sampler, or still): no frame order changes them.
    """
    conditions: List[ConditionResult]
    skipped: Dict[str, str]
    labels: np.ndarray
    num_frames: Dict[str, int]
    uses_time: Optional[bool]
    verdict: str
    still_clips: int = 0

    def condition(self, name: str) -> ConditionResult:
        """The result of condition ``name``."""
        for result in self.conditions:
            if result.name == name:
                return result
        raise KeyError(f'no condition {name!r}; have {[c.name for c in self.conditions]}')

    def to_dict(self) -> Dict:
        num_classes = self.conditions[0].scores.shape[1]
        return dict(num_samples=int(len(self.labels)), num_classes=int(num_classes),
                    chance=1.0 / num_classes, num_frames=self.num_frames,
                    conditions=[c.to_dict() for c in self.conditions], skipped=self.skipped,
                    still_clips=self.still_clips, uses_time=self.uses_time, verdict=self.verdict)


def judge(conditions: Sequence[ConditionResult], num_frames: Dict[str, int], num_classes: int,
          tolerance: float, still_clips: int = 0) -> Tuple[Optional[bool], str]:
    """The verdict: does the model use time? ``(uses_time, text)``.

    The model ignores time when no frame-order condition (reversed, shuffled, static) lowers
    accuracy by more than ``tolerance``; it uses time otherwise. Interval conditions are
    reported, not judged. T = 1 everywhere, or every clip's frames identical
    (``still_clips``: samples no frame order changes), gives None (nothing to permute); so
    does a model at chance or predicting one class for every clip, unless no frame order
    changes its scores at all (then it ignores time whatever its accuracy).
    """
    by_name = {c.name: c for c in conditions}
    original = by_name['original']
    perturbed = [by_name[name] for name in ORDER_CONDITIONS[1:]]
    if all(frames == 1 for frames in num_frames.values()):
        return None, ('Every hyperframe holds one frame (T=1): the model cannot see time and '
                      'there is no frame order to probe.')
    total = len(original.scores)
    if still_clips == total:
        # the perturbed inputs are the original ones: "identical predictions" would be read
        # as a model that ignores time
        return None, (f'Every clip\'s frames are identical ({total} of {total}: videos shorter '
                      'than one step of the sampler, or still): reversing, shuffling or '
                      'freezing them changes nothing, so the probe cannot tell whether the '
                      'model uses time.')
    chance = 1.0 / num_classes
    notes = []
    if still_clips:
        notes.append(f'{still_clips} of {total} clips have identical frames (short or still '
                     'videos): no frame order changes them, which shrinks every drop.')
    if original.accuracy <= chance + tolerance:
        notes.append(f'Accuracy as sampled ({original.accuracy:.1%}) is at chance level '
                     f'(1/{num_classes} = {chance:.1%}), so a drop cannot show: train longer '
                     'or check the data before reading the verdict.')
    classes = np.unique(original.predictions)
    if len(classes) == 1:
        notes.append(f'It predicts class {classes[0]} for every clip: it has learned nothing '
                     'yet, about time or anything else.')
    drops = {c.name: c.drop for c in perturbed}
    # at chance, or with one class predicted for every clip, accuracy has nowhere to drop and
    # agreement is trivial: only scores that no frame order changes at all still decide
    undecided = original.accuracy <= chance + tolerance or len(classes) == 1
    if all(c.agreement == 1.0 for c in perturbed) and (
            not undecided or all(np.array_equal(c.scores, original.scores) for c in perturbed)):
        uses_time = False
        text = ('The model ignores time: its predictions are identical when the frames are '
                'reversed, shuffled or all replaced by the centre frame - it behaves as a '
                'single-frame model.')
    elif undecided:
        uses_time = None
        text = (f'So the probe cannot tell whether the model uses time: accuracy moves by '
                f'{drops["reversed"]:.1%} with the frames reversed, {drops["shuffled"]:.1%} '
                f'shuffled and {drops["static"]:.1%} on a static clip, which at this accuracy '
                'is noise.')
    elif max(drops.values()) <= tolerance:
        uses_time = False
        text = (f'The model ignores time: accuracy drops by at most {max(drops.values()):.1%} '
                f'(tolerance {tolerance:.1%}) when the frames are reversed, shuffled or all '
                'replaced by the centre frame; it behaves much like a single-frame model.')
    else:
        uses_time = True
        text = (f'The model uses time: accuracy drops by {drops["reversed"]:.1%} with the '
                f'frames reversed, {drops["shuffled"]:.1%} shuffled and {drops["static"]:.1%} on '
                'a static clip.')
        if drops['static'] > tolerance and max(drops['reversed'], drops['shuffled']) <= tolerance:
            text += ' It needs motion to be present but not its order or direction.'
    notes.append(text)
    for result in conditions:
        if result.kind == 'interval' and abs(result.drop) > tolerance:
            change = 'drops' if result.drop > 0 else 'rises'
            notes.append(f'At {result.name} accuracy {change} by {abs(result.drop):.1%}: the '
                         'model is sensitive to the sampling interval.')
    return uses_time, ' '.join(notes)


def _loader_cfg(cfg: Config, split: str, batch_size: Optional[int],
                num_workers: Optional[int]) -> Dict:
    key = f'{split}_dataloader'
    if split not in SPLITS or not isinstance(cfg.get(key), dict):
        raise ValueError(f'temporal probe: split must be one of {SPLITS} with a {key} in the '
                         f'config, got {split!r}')
    loader = copy.deepcopy(cfg[key])
    # Every pass must visit the samples in one fixed order so that predictions can be compared.
    loader['sampler'] = dict(loader.get('sampler') or dict(type='DefaultSampler'), shuffle=False)
    if batch_size is not None:
        loader['batch_size'] = batch_size
    if num_workers is not None:
        loader['num_workers'] = num_workers
        if num_workers == 0:
            loader['persistent_workers'] = False
    return loader


def _labels(outputs: Sequence) -> List[int]:
    labels = []
    for sample in outputs:
        label = sample.gt_label.reshape(-1)
        if label.numel() != 1:
            raise ValueError(f'temporal probe: single-label data only; a sample has gt_label '
                             f'{label.tolist()}')
        labels.append(int(label[0]))
    return labels


def _evaluate(model: torch.nn.Module, loader_cfg: Dict, conditions: Sequence[str], seed: int,
              desc: str, progress: bool, fused: Optional[Sequence[Tuple[str, int]]] = None
              ) -> Tuple[np.ndarray, Dict[str, np.ndarray], Dict]:
    """One pass over the dataloader; every batch is scored under each of ``conditions``
    (``fused``: :func:`perturb_inputs`)."""
    from mmengine.runner import Runner
    from mmengine.runner.utils import set_random_seed
    # The same seed before each pass: a test pipeline that draws anything draws it identically.
    set_random_seed(seed)
    loader = Runner.build_dataloader(loader_cfg, seed=seed)
    labels: List[int] = []
    scores: Dict[str, List[torch.Tensor]] = {name: [] for name in conditions}
    orders: Dict[str, Dict] = {}
    still = 0
    with torch.no_grad():
        for data in tqdm(loader, desc=desc, unit='batch', disable=not progress):
            for name in conditions:
                inputs, orders[name] = perturb_inputs(data['inputs'], name, seed,
                                                      fused=fused)
                if name == 'static':
                    still += sum(_unchanged(data['inputs'], inputs))
                outputs = model.test_step(dict(inputs=inputs, data_samples=data['data_samples']))
                scores[name].append(torch.stack([o.pred_score for o in outputs]).float().cpu())
            labels += _labels(outputs)
    del loader
    return (np.asarray(labels, dtype=np.int64),
            {name: torch.cat(value).numpy() for name, value in scores.items()}, orders, still)


def _unchanged(original, perturbed) -> List[bool]:
    """Per sample of a batch (``perturb_inputs``' structures), whether the perturbed inputs
    equal the original ones."""
    if isinstance(original, dict):  # streams of batched tensors
        per_stream = [_unchanged(original[key], perturbed[key]) for key in original]
        return [all(flags) for flags in zip(*per_stream)]
    if isinstance(original, torch.Tensor):
        return [torch.equal(a, b) for a, b in zip(original, perturbed)]
    return [all(torch.equal(a[key], b[key]) for key in a) if isinstance(a, dict)
            else torch.equal(a, b) for a, b in zip(original, perturbed)]


def _result(name: str, kind: str, description: str, scores: np.ndarray, labels: np.ndarray,
            reference: Optional[ConditionResult], detail: Dict) -> ConditionResult:
    predictions = scores.argmax(axis=1)
    accuracy = float(np.mean(predictions == labels))
    if reference is None:
        return ConditionResult(name, kind, description, accuracy, 0.0, 1.0, detail, scores)
    return ConditionResult(name, kind, description, accuracy, reference.accuracy - accuracy,
                           float(np.mean(predictions == reference.predictions)), detail, scores)


def _intervals(pipeline: Sequence[Dict]) -> Dict[str, Optional[float]]:
    """Stream -> interval of the pipeline's sampler (None: a uniform stream)."""
    spec = sampler_spec(pipeline)
    return {stream.name or 'imgs': stream.interval for stream in spec.streams}


def describe_intervals(before: Dict[str, Optional[float]],
                       after: Dict[str, Optional[float]]) -> str:
    """The change of every stream's interval in words; a uniform stream (interval None: its
    picks spread over the whole clip, nothing to scale) says so."""
    return 'interval ' + ', '.join(
        f'{key} uniform over the clip' if before[key] is None else
        f'{key} {before[key]:g} -> {after[key]:g}' for key in before)


def _fused_streams(pipeline: Optional[Sequence[Dict]]) -> Optional[List[Tuple[str, int]]]:
    """``(name, T)`` per stream of a pipeline that stacks its streams into one hyperframe,
    in stacking order; None for any other pipeline."""
    spec = sampler_spec(pipeline) if pipeline is not None else None
    if spec is None or spec.streams[0].name is None or not fuses_streams(pipeline):
        return None
    return [(stream.name, stream.num_frames) for stream in spec.streams]


def run_temporal_probe(cfg: Config,
                       checkpoint: str,
                       scales: Sequence[float] = (0.5, 2.0),
                       seed: int = 0,
                       device: Optional[str] = None,
                       split: str = 'test',
                       batch_size: Optional[int] = None,
                       num_workers: Optional[int] = None,
                       tolerance: float = 0.02,
                       progress: bool = True) -> ProbeReport:
    """Evaluate a trained model on its test set under every frame order and interval.

    Args:
        cfg (Config): the model's config (its ``<split>_dataloader`` is the test set).
        checkpoint (str): the trained weights.
        scales (Sequence[float]): sampling-interval factors to try (e.g. 0.5: frames half as far
            apart). A factor whose rounded intervals equal the original ones is skipped.
            Defaults to ``(0.5, 2.0)``.
        seed (int): seed of the shuffle and of the data passes. Defaults to 0.
        device (str, optional): ``'cuda'``, ``'cpu'``, ... Defaults to CUDA when available.
        split (str): ``'test'`` or ``'val'``. Defaults to ``'test'``.
        batch_size (int, optional): overrides the dataloader's. Defaults to None.
        num_workers (int, optional): overrides the dataloader's. Defaults to None.
        tolerance (float): accuracy drop (fraction) below which a condition counts as no drop.
            Defaults to 0.02.
        progress (bool): show progress bars. Defaults to True.

    Returns:
        ProbeReport: the results and the verdict.
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f'temporal probe: tolerance must be in [0, 1), got {tolerance!r}')
    loader_cfg = _loader_cfg(cfg, split, batch_size, num_workers)
    pipeline = loader_cfg['dataset'].get('pipeline')
    model = init_recognizer(cfg, checkpoint, device)
    labels, scores, orders, still = _evaluate(model, loader_cfg, ORDER_CONDITIONS, seed,
                                              'probe: frame orders', progress,
                                              _fused_streams(pipeline))
    if len(labels) == 0:
        raise ValueError(f'temporal probe: the {split} set of the config is empty')
    original = _result('original', 'order', DESCRIPTIONS['original'], scores['original'], labels,
                       None, orders['original'])
    conditions = [original] + [
        _result(name, 'order', DESCRIPTIONS[name], scores[name], labels, original, orders[name])
        for name in ORDER_CONDITIONS[1:]]
    num_frames = {key: len(order) for key, order in orders['original'].items()}

    skipped: Dict[str, str] = {}
    for scale in scales:
        name = f'interval x{scale:g}'
        if pipeline is None:
            skipped[name] = 'the test dataset has no pipeline of its own (a wrapped dataset)'
            continue
        try:
            scaled = scale_sampling_interval(pipeline, scale)
        except ValueError as error:
            skipped[name] = str(error)
            continue
        before, after = _intervals(pipeline), _intervals(scaled)
        if after == before:
            skipped[name] = f'the intervals {before} stay the same after rounding to whole frames'
            continue
        # described before the pass: a description that fails must not lose the passes' work
        description = describe_intervals(before, after)
        scaled_cfg = copy.deepcopy(loader_cfg)
        scaled_cfg['dataset']['pipeline'] = scaled
        scaled_labels, scaled_scores, _, _ = _evaluate(model, scaled_cfg, ('original', ), seed,
                                                       f'probe: {name}', progress)
        if not np.array_equal(scaled_labels, labels):
            raise RuntimeError('temporal probe: the dataloader visited the samples in another '
                               'order on the second pass; predictions cannot be compared')
        conditions.append(_result(name, 'interval', description, scaled_scores['original'],
                                  labels, original, after))
    uses_time, verdict = judge(conditions, num_frames, scores['original'].shape[1], tolerance,
                               still)
    return ProbeReport(conditions, skipped, labels, num_frames, uses_time, verdict, still)


def format_report(report: ProbeReport) -> str:
    """The report as a plain-text table followed by the verdict."""
    lines = [f'{"condition":<16} {"accuracy":>8} {"drop":>8} {"same pred":>9}  what',
             '-' * 78]
    for result in report.conditions:
        drop = '' if result.name == 'original' else f'{result.drop:+.3f}'
        lines.append(f'{result.name:<16} {result.accuracy:>8.3f} {drop:>8} '
                     f'{result.agreement:>9.3f}  {result.description}')
    for name, reason in report.skipped.items():
        lines.append(f'{name:<16} skipped: {reason}')
    lines += ['', f'verdict: {report.verdict}']
    return '\n'.join(lines)


def plot_report(report: ProbeReport, path: Union[str, Path], title: str = '') -> None:
    """A bar chart of the accuracy per condition, with chance level, as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    names = [c.name for c in report.conditions]
    accuracies = [c.accuracy for c in report.conditions]
    colours = ['tab:blue' if c.kind == 'order' else 'tab:orange' for c in report.conditions]
    colours[0] = 'tab:green'
    figure = Figure(figsize=(1.2 * len(names) + 2, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    bars = axes.bar(names, accuracies, color=colours)
    for bar, result in zip(bars, report.conditions):
        change = result.accuracy - report.conditions[0].accuracy
        label = f'{result.accuracy:.2f}' if result.name == 'original' else \
            f'{result.accuracy:.2f}\n({change:+.2f})'
        axes.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha='center', va='bottom', fontsize=8)
    chance = 1.0 / report.conditions[0].scores.shape[1]
    axes.axhline(chance, color='grey', linestyle='--', linewidth=1, label=f'chance {chance:.2f}')
    axes.set_ylim(0, 1.15)
    axes.set_ylabel('top-1 accuracy')
    axes.set_title(title or 'temporal probe')
    axes.legend(loc='upper right', fontsize=8)
    axes.tick_params(axis='x', labelsize=8)
    figure.tight_layout()
    figure.savefig(str(path), dpi=100)


def write_probe_outputs(report: ProbeReport, out_dir: Union[str, Path],
                        meta: Optional[Dict] = None) -> Tuple[Path, Path]:
    """Write ``temporal_probe.json`` (``meta`` + the report) and ``temporal_probe.png``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out_dir / 'temporal_probe.json', out_dir / 'temporal_probe.png'
    json_path.write_text(json.dumps(dict(meta or {}, **report.to_dict()), indent=1) + '\n')
    plot_report(report, png_path, title=(meta or {}).get('config', ''))
    return json_path, png_path
