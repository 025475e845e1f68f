"""Static checks of a hyperframe config: the mistakes that make a hyperframe model fail quietly.

:func:`diagnose` runs every check and returns :class:`Finding` objects (severity, code, message,
one-line fix):

- ``per-frame-augment``: a random transform that draws per frame after sampling
  (``ConsistentClipAugment(independent=True)``, mmaction2's ``RandomErasing(mode='rand')``), so
  the frames of a hyperframe are no longer aligned and the model sees invented motion;
- ``color-jitter``: mmaction2's ``ColorJitter``, whose hue shift overflows uint8 under numpy 2
  (``OverflowError: Python integer -6 out of bounds for uint8``) and whose order of operations
  is fixed once per run;
- ``flip-label-map``: a horizontal (vertical) flip without a ``flip_label_map`` while class names
  say left/right/clockwise (up/down), so a flipped "swipe left" keeps its label;
- ``num-frames``: the backbone's ``num_frames`` differs from the sampler's T (per stream);
- ``pipeline-order``: a transform that works on frames (mmaction2's ``Flip``, a crop, a resize)
  placed after ``HyperframeStack``, which reads the stacked hyperframes' channels as image rows
  (a flip turns the video upside down) or, for two streams, finds no frames and still swaps the
  label; or no ``HyperframeStack`` in front of a hyperframe backbone;
- ``mean-std``: the data preprocessor's mean/std have neither 3 nor 3T values;
- ``pretrained``: the ``pretrained`` checkpoint is missing, unreadable with weights-only loading,
  or its first conv has neither 3 nor 3T input channels; a ``timm.*`` backbone asks for
  pretrained weights without a file that exists (timm would download them);
- ``model-build``: the model cannot be built at all;
- ``load-from``: the checkpoint training starts from (``load_from``, or with ``resume`` the one
  the work dir's ``last_checkpoint`` names) is missing, damaged, another model's, or (to
  resume) has no training state;
- with data: ``label-range``, labels of a video list or frame-label annotation outside the
  classes of the model's head
  (the loss stops at the first with ``IndexError: Target 12 is out of bounds``, naming no file
  or line), and ``annotation``, a list that is not UTF-8 text, a line the datasets refuse (a
  blank line, a label that is not an integer) or a video listed twice in a validation or test
  list; and (:mod:`.data_checks`)
  ``span``, ``frame-rate``, ``unreadable-video``, ``interrupted-build`` (a synthetic set whose
  build a kill stopped midway);
- ``override``: a config's own variable (``data_root``, ``num_frames``) overridden on the
  command line, which reaches none of the settings made from it when the file was read, so the
  other checks read the file's data and T;
- ``schedule`` (:func:`~hyperframes_mm.engine.schedule_check.schedule_overruns`): a parameter
  scheduler that ends, or whose cosine anneals, after ``train_cfg.max_epochs`` (a shortened
  training that stops at its peak learning rate), or that begins after it and never runs;
- ``memory`` (:mod:`.memory`): activation memory per sample and the largest batch that fits.
"""
import copy
import json
import os.path as osp
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from mmaction.datasets import VideoDataset
from mmaction.registry import DATASETS
from mmengine.config import Config

from ..apis.inference import init_recognizer
from ..datasets.annotations import AnnotationError, ListLine, parse_label, read_list_lines
from ..datasets.transforms.pipeline_info import transform_type
from ..datasets.transforms.pipeline_order import pipeline_order_problems
from ..engine.num_frames_hook import frame_count_mismatches, model_streams, needs_stack
from ..engine.runner import OVERRIDE_FIX, top_level_overrides
from ..engine.schedule_check import schedule_overruns
from .config_utils import unique_pipelines
from .data_checks import check_data, check_frame_label_range, reads_frame_labels
from .findings import SEVERITIES, Finding
from .memory import check_memory

#: words of a class name that a flip turns into their mirror, per flip direction
MIRROR_WORDS: Dict[str, Dict[str, str]] = {
    'horizontal': {
        'left': 'right', 'right': 'left', 'leftward': 'rightward', 'rightward': 'leftward',
        'leftwards': 'rightwards', 'rightwards': 'leftwards', 'clockwise': 'counterclockwise',
        'counterclockwise': 'clockwise', 'anticlockwise': 'clockwise', 'cw': 'ccw', 'ccw': 'cw'},
    'vertical': {
        'up': 'down', 'down': 'up', 'upward': 'downward', 'downward': 'upward',
        'upwards': 'downwards', 'downwards': 'upwards', 'clockwise': 'counterclockwise',
        'counterclockwise': 'clockwise', 'anticlockwise': 'clockwise', 'cw': 'ccw', 'ccw': 'cw'},
}
_CLASS_FILES = ('classes.txt', 'class_names.txt', 'label_map.txt')
#: lines with an out-of-range label quoted in a finding before "and N more"
_LISTED_LABELS = 5


# ------------------------------------------------------------------------------ augmentation
def _hue_can_go_negative(hue) -> bool:
    """mmaction2's ``ColorJitter`` shifts hue by ``int(h * 255)`` for ``h ~ U(range)``; a shift of
    -1 or less is what numpy 2 refuses to add to a uint8 array."""
    low = -hue if not isinstance(hue, (tuple, list)) else hue[0]
    return low * 255 <= -1


def check_augmentation(cfg: Config) -> List[Finding]:
    """Per-frame random transforms and mmaction2's ``ColorJitter``, in every pipeline."""
    findings = []
    for where, _, pipeline in unique_pipelines(cfg):
        for index, transform in enumerate(pipeline):
            kind, place = transform_type(transform), f'{where}.pipeline[{index}]'
            if kind == 'ConsistentClipAugment' and transform.get('independent', False):
                findings.append(Finding(
                    'error', 'per-frame-augment',
                    f'{place}: ConsistentClipAugment(independent=True) draws a crop, flip and '
                    'colour per frame, so the frames of a hyperframe no longer line up and the '
                    'model learns motion that is not in the video',
                    'set independent=False (one draw per sample; independent=True is only for '
                    'the ablation)'))
            elif kind == 'RandomErasing' and transform.get('mode', 'const') == 'rand':
                findings.append(Finding(
                    'error', 'per-frame-augment',
                    f'{place}: RandomErasing(mode=\'rand\') fills the erased box with fresh '
                    'noise in every frame: the box flickers, which looks like motion',
                    'use mode=\'const\' (one fill colour for every frame)'))
            elif kind == 'ColorJitter':
                findings.append(_color_jitter_finding(place, transform))
    return findings


def _color_jitter_finding(place: str, transform: Dict) -> Finding:
    fix = ('replace it with ConsistentClipAugment(brightness=..., contrast=..., saturation=..., '
           'hue=...), which draws the op order per sample and works on uint8')
    major = int(np.__version__.split('.')[0])
    if major >= 2 and _hue_can_go_negative(transform.get('hue', 0.1)):
        return Finding('error', 'color-jitter',
                       f'{place}: mmaction2\'s ColorJitter overflows uint8 under numpy '
                       f'{np.__version__} whenever it draws a negative hue shift (OverflowError: '
                       'Python integer -6 out of bounds for uint8): training crashes', fix)
    return Finding('warning', 'color-jitter',
                   f'{place}: mmaction2\'s ColorJitter draws its order of operations once, in '
                   '__init__, and keeps it for the whole run', fix)


# ------------------------------------------------------------------------------- class names
@dataclass(frozen=True)
class ClassNames:
    """Label -> class name (or the words of its video paths), and where they came from.

    Attributes:
        names (dict[int, str]): label -> name.
        source (str): the file or config key they were read from.
        exact (bool): real class names (False: guessed from the annotation's video paths).
    """
    names: Dict[int, str]
    source: str
    exact: bool


def _read_class_file(path: str) -> Optional[Dict[int, str]]:
    if path.endswith('.json'):
        classes = json.loads(open(path, encoding='utf-8').read()).get('classes')
    else:
        classes = [line.strip() for line in open(path, encoding='utf-8') if line.strip()]
    return {index: str(name) for index, name in enumerate(classes)} if classes else None


def find_class_names(dataset: Dict) -> Optional[ClassNames]:
    """The class names of a dataset config, from the first source that has them.

    1. ``metainfo.classes`` of the dataset config (a list, or a file path);
    2. ``meta.json`` (the synthetic benchmark's), ``classes.txt``, ``class_names.txt`` or
       ``label_map.txt`` beside the annotation file or in ``data_prefix['video']``;
    3. the annotation itself: the words of the video paths of each label
       (``train/swipe_left_0003.mp4 0``, Kinetics' ``abseiling/xyz.mp4``), not exact.

    Returns:
        ClassNames, or None when none of them exists.
    """
    classes = (dataset.get('metainfo') or {}).get('classes')
    if isinstance(classes, str) and osp.isfile(classes):
        return ClassNames(_read_class_file(classes), classes, True)
    if classes:
        return ClassNames({i: str(name) for i, name in enumerate(classes)}, 'metainfo.classes',
                          True)
    ann_file = dataset.get('ann_file')
    folders = [osp.dirname(str(ann_file))] if ann_file else []
    video_root = (dataset.get('data_prefix') or {}).get('video')
    if video_root:
        folders.append(str(video_root))
    for folder in folders:
        for name in ('meta.json', ) + _CLASS_FILES:
            path = osp.join(folder, name)
            if osp.isfile(path):
                names = _read_class_file(path)
                if names:
                    return ClassNames(names, path, True)
    if ann_file and osp.isfile(str(ann_file)) and not str(ann_file).endswith('.jsonl'):
        try:
            lines = list(read_list_lines(str(ann_file), dataset.get('delimiter', ' ')))
        except AnnotationError:
            return None  # not text: check_labels reports it, with --data
        words: Dict[int, List[str]] = {}
        for _, _, fields in lines:
            if len(fields) >= 2 and fields[-1].lstrip('-').isdigit():
                stem = osp.splitext(fields[0])[0]
                words.setdefault(int(fields[-1]), []).append(stem)
        if words:
            return ClassNames({label: ' '.join(sorted(set(stems)))
                               for label, stems in words.items()}, str(ann_file), False)
    return None


def name_words(name: str) -> List[str]:
    """Lower-case words of a class name: ``'swipe_left'`` -> ``['swipe', 'left']``."""
    return re.findall(r'[a-z]+', re.sub(r'([a-z])([A-Z])', r'\1 \2', name).lower())


def mirror_name(name: str, direction: str) -> str:
    """The class name a flip in ``direction`` turns ``name`` into (``swipe_left`` ->
    ``swipe_right``); unchanged when it holds no direction word."""
    swaps = MIRROR_WORDS[direction]
    return re.sub(r'[A-Za-z]+', lambda m: swaps.get(m.group().lower(), m.group()), name)


def suggest_flip_label_map(names: Dict[int, str], direction: str) -> Dict[int, int]:
    """Label -> label of its mirror class, for every class whose mirror is among ``names``."""
    by_name = {name.lower(): label for label, name in names.items()}
    suggestion = {}
    for label, name in names.items():
        mirror = mirror_name(name, direction).lower()
        if mirror != name.lower() and mirror in by_name:
            suggestion[label] = by_name[mirror]
    return suggestion


def _flips(pipeline: Sequence[Dict]) -> List[Tuple[int, str, Dict[int, int]]]:
    """``(index, direction, flip_label_map)`` of every transform that flips with ratio > 0."""
    flips = []
    for index, transform in enumerate(pipeline):
        kind = transform_type(transform)
        if kind not in ('Flip', 'ConsistentClipAugment'):
            continue
        if transform.get('flip_ratio', 0.5) <= 0:
            continue
        if kind == 'ConsistentClipAugment' and transform.get('independent', False):
            continue  # reported as per-frame-augment: per-frame flips cannot map labels
        direction = transform.get('direction', 'horizontal') if kind == 'Flip' else 'horizontal'
        mapping = {int(k): int(v) for k, v in (transform.get('flip_label_map') or {}).items()}
        flips.append((index, direction, mapping))
    return flips


def check_flip_labels(cfg: Config) -> List[Finding]:
    """Flips without (or with an incomplete) ``flip_label_map`` while class names have a
    direction."""
    findings = []
    for where, dataset, pipeline in unique_pipelines(cfg):
        flips = _flips(pipeline)
        if not flips:
            continue
        classes = find_class_names(dataset)
        if classes is None:
            findings.append(Finding(
                'info', 'flip-label-map',
                f'{where}: the pipeline flips, but no class names were found (no '
                'metainfo.classes, classes.txt or meta.json, no readable annotation), so '
                'whether a flip changes the label was not checked'))
            continue
        for index, direction, mapping in flips:
            words = MIRROR_WORDS[direction]
            directional = {label: name for label, name in classes.names.items()
                           if set(name_words(name)) & set(words)}
            missing = sorted(set(directional) - set(mapping))
            if not missing:
                continue
            shown = ', '.join(f'{label} ({directional[label][:40]})' for label in missing[:6])
            more = f' and {len(missing) - 6} more' if len(missing) > 6 else ''
            kind = transform_type(pipeline[index])
            suggestion = suggest_flip_label_map(classes.names, direction)
            fix = (f'give {kind} flip_label_map={suggestion}' if suggestion else
                   f'give {kind} a flip_label_map to each class\'s mirror class')
            findings.append(Finding(
                'error' if classes.exact else 'warning', 'flip-label-map',
                f'{where}.pipeline[{index}]: {kind} flips {direction}ly but its '
                f'flip_label_map {mapping or None} leaves labels {shown}{more} unchanged, and '
                f'their names (from {classes.source}) say a direction: a flipped clip keeps the '
                'wrong label', fix + ', or set flip_ratio=0'))
    return findings


# ------------------------------------------------------------------- model against the data
def _reads_video_list(dataset: Dict) -> bool:
    """Whether the dataset config reads a ``VideoDataset`` list (``path label ...``): other
    lists put other numbers after the path (a frame count in ``RawframeDataset``'s)."""
    kind = dataset.get('type')
    kind = kind if isinstance(kind, type) else DATASETS.get(kind)
    return isinstance(kind, type) and issubclass(kind, VideoDataset)


def _labels(line: ListLine) -> List[int]:
    """The integer labels of a list line; a label that is not an integer is
    :func:`_malformed`'s finding."""
    return [label for field in line.fields[1:] if (label := parse_label(field)) is not None]


def _evaluation_needs_labels(cfg: Config, where: str) -> bool:
    """Whether the loop of the dataset at ``where`` reads labels, as the runner decides
    (:func:`~hyperframes_mm.engine.class_count.metrics_need_labels`): an evaluation scored only
    by a dump of its predictions does not."""
    from ..engine.class_count import metrics_need_labels
    evaluator = cfg.get(f'{where.split("_dataloader")[0]}_evaluator') or []
    metrics = [metric for metric in (evaluator if isinstance(evaluator, (list, tuple))
                                     else [evaluator]) if isinstance(metric, dict)]
    # no evaluator given here: a config's loop gets one, which reads labels unless a dump
    return not metrics or metrics_need_labels(str(metric.get('type', '')) for metric in metrics)


def _malformed(where: str, dataset: Dict, lines: Sequence[ListLine],
               reported: Sequence[int], needs_labels: bool = True) -> List[Finding]:
    """What the datasets refuse in a list when they read it, found before a run builds them:
    its first malformed line (a blank line, a label that is not an integer, a missing label:
    :func:`~hyperframes_mm.datasets.bad_video.check_video_list`, the datasets' own reader) but
    for the lines ``reported`` already (labels out of range); and in a validation or test list
    whose loop reads labels (``needs_labels``), a labelled video listed again, which the loop
    would score twice (the runner's class-count check refuses it)."""
    from ..datasets.bad_video import check_video_list
    if all(line.blank for line in lines):
        return []  # a list of no video is the data check's finding ('lists no video')
    findings = []
    ann_file = str(dataset['ann_file'])
    try:
        check_video_list(ann_file, dataset.get('delimiter', ' '), dataset.get('multi_class', False),
                         allow_unlabelled=bool(dataset.get('test_mode', False)))
    except AnnotationError as error:
        if error.line not in reported:
            findings.append(Finding('error', 'annotation', f'{where}: {error}',
                                    'correct that line: a run that reads the list stops there'))
    if not needs_labels or where.startswith('train_') or dataset.get('multi_class', False):
        return findings
    first: Dict[str, int] = {}  # ``val/a.mp4`` and ``./val/a.mp4`` are one video
    repeated = []
    for line in lines:
        if len(line.fields) < 2:  # blank, or an inference line the runner does not score
            continue
        seen = first.setdefault(osp.normpath(line.fields[0]), line.number)
        if seen != line.number:
            repeated.append(f'{line.fields[0]} (lines {seen} and {line.number})')
    if repeated:
        more = f'; and {len(repeated) - _LISTED_LABELS} more' \
            if len(repeated) > _LISTED_LABELS else ''
        findings.append(Finding(
            'error', 'annotation',
            f'{where}: {len(repeated)} video(s) of {ann_file} listed again '
            f'({"; ".join(repeated[:_LISTED_LABELS])}{more}): the loop scores each line, so '
            'such a video counts twice, and a run stops before its first step',
            'list each video once'))
    return findings


def check_labels(cfg: Config, num_classes: int) -> List[Finding]:
    """Labels of every ``VideoDataset`` list (and frame-label annotation:
    :func:`~.data_checks.check_frame_label_range`) outside ``0..num_classes - 1``, the
    classes of the model's head; lists that cannot be read as UTF-8 text; and what else the
    datasets or the runner refuse in a list (:func:`_malformed`)."""
    findings = []
    for where, dataset, _ in unique_pipelines(cfg):
        if reads_frame_labels(dataset):
            findings += check_frame_label_range(where, dataset, num_classes)
            continue
        ann_file = str(dataset.get('ann_file') or '')
        # a missing list is the data check's note ("data not checked")
        if not (ann_file and _reads_video_list(dataset) and osp.isfile(ann_file)):
            continue
        try:
            lines = list(read_list_lines(ann_file, dataset.get('delimiter', ' ')))
        except AnnotationError as error:
            findings.append(Finding('error', 'annotation', f'{where}: {error}',
                                    'save the list as UTF-8 text (or name the list, not a video, '
                                    'as ann_file)'))
            continue
        outside = [(line.number, label) for line in lines for label in _labels(line)
                   if not 0 <= label < num_classes]
        findings += _malformed(where, dataset, lines, [number for number, _ in outside],
                               _evaluation_needs_labels(cfg, where))
        if not outside:
            continue
        shown = ', '.join(f'{ann_file}:{number}: {label}'
                          for number, label in outside[:_LISTED_LABELS])
        more = (f', and {len(outside) - _LISTED_LABELS} more' if len(outside) > _LISTED_LABELS
                else '')
        largest = max(label for _, label in outside)
        fix = 'correct those labels'
        if largest >= num_classes:
            fix += (f', or, if the list is right, give the model\'s head {largest + 1} '
                    'classes')
        findings.append(Finding(
            'error', 'label-range',
            f'{where}: {len(outside)} label(s) of {ann_file} are outside 0..{num_classes - 1}, '
            f'the classes of the model\'s head (num_classes={num_classes}); a run that reads the '
            f'list stops before its first step: {shown}{more}', fix))
    return findings


def check_num_frames(cfg: Config, streams: Dict[Optional[str], object]) -> List[Finding]:
    """The sampler's T per stream against the backbone's ``num_frames``, in every pipeline
    (:func:`~hyperframes_mm.engine.num_frames_hook.frame_count_mismatches`, the check the
    runner makes before a loop runs)."""
    return [Finding('error', 'num-frames', problem, fix)
            for where, _, pipeline in unique_pipelines(cfg)
            for problem, fix in frame_count_mismatches(where, pipeline, streams)]


def check_pipeline_order(cfg: Config, streams: Dict[Optional[str], object]) -> List[Finding]:
    """Frame transforms after ``HyperframeStack``, and a missing stack for the model's hyperframe
    backbone (``streams``: :func:`model_streams`, empty for another model), in every pipeline
    (:func:`~hyperframes_mm.datasets.transforms.pipeline_order.pipeline_order_problems`, the
    check the runner makes before a loop runs)."""
    return [Finding('error', 'pipeline-order', problem, fix)
            for where, _, pipeline in unique_pipelines(cfg)
            for problem, fix in pipeline_order_problems(where, pipeline, needs_stack(streams))]


def check_mean_std(cfg: Config, frames: Sequence[int]) -> List[Finding]:
    """The data preprocessor's mean/std length: 3 (tiled over the frames) or 3T (per frame)."""
    preprocessor = cfg.model.get('data_preprocessor') or {}
    mean, std = preprocessor.get('mean'), preprocessor.get('std')
    if mean is None or not frames:
        return []
    kind = transform_type(preprocessor)
    per_frame = preprocessor.get('channels_per_frame', 3)
    lengths = {len(mean), len(std) if std is not None else len(mean)}
    if kind == 'HyperframeDataPreprocessor':
        valid = lengths == {per_frame} or all(lengths == {per_frame * t} for t in frames)
        fix = f'give mean and std {per_frame} values (one frame; they are tiled over T)'
    else:
        valid = all(lengths == {per_frame * t} for t in frames)
        fix = ('use HyperframeDataPreprocessor with the 3-value image mean/std: '
               f'{kind} cannot tile a 3-value mean over 3T channels')
    if valid:
        return []
    channels = sorted({per_frame * t for t in frames})
    return [Finding('error', 'mean-std',
                    f'model.data_preprocessor ({kind}): mean/std have {sorted(lengths)} values, '
                    f'but the inputs have {channels} channels ({per_frame} per frame): neither '
                    'one frame\'s nor one per channel', fix)]


def first_conv_channels(path: str, backbone) -> int:
    """Input channels of the first conv in checkpoint ``path``, read as ``backbone`` reads it.

    The file is loaded with :func:`~hyperframes_mm.engine.load_verified`: checked, then
    weights-only (plain tensors and the values mmengine writes), never arbitrary objects.

    Raises:
        FileNotFoundError: no such file.
        CheckpointNotFiniteError: a tensor of the file holds NaN or Inf.
        KeyError: no first-conv weight after the backbone's key mapping.
        CheckpointRefusedError: the file is damaged or needs more than weights-only loading
            allows.
    """
    from ..engine.checkpoint import load_verified
    from ..models.backbones.hyperframe_backbone import strip_prefixes
    if not osp.isfile(path):
        raise FileNotFoundError(f'{path}: checkpoint not found')
    checkpoint = load_verified(path, map_location='cpu')
    for key in ('state_dict', 'model'):
        if isinstance(checkpoint, dict) and isinstance(checkpoint.get(key), dict):
            checkpoint = checkpoint[key]
            break
    state_dict = backbone.convert_checkpoint(strip_prefixes(checkpoint))
    key = f'{backbone.first_conv_name}.weight'
    if key not in state_dict:
        raise KeyError(f'{path}: no first conv weight {key!r} (first keys: '
                       f'{list(state_dict)[:5]})')
    return int(state_dict[key].shape[1])


def check_pretrained(streams: Dict[Optional[str], object]) -> List[Finding]:
    """Every backbone's ``pretrained`` file: present, weights-only readable, conv1 3 or 3T."""
    from ..engine.checkpoint import CheckpointNotFiniteError
    findings, seen = [], set()
    for name, backbone in streams.items():
        path = backbone.pretrained
        if path is None or (path, backbone.num_frames) in seen:
            continue
        seen.add((path, backbone.num_frames))
        label = f'backbone of stream {name!r}' if name else 'backbone'
        per_frame, frames = backbone.channels_per_frame, backbone.num_frames
        try:
            channels = first_conv_channels(path, backbone)
        except FileNotFoundError as error:
            findings.append(Finding('error', 'pretrained', f'{label}: {error}',
                                    'fix the path (nothing is downloaded) or set pretrained=None'))
            continue
        except CheckpointNotFiniteError as error:
            findings.append(Finding('error', 'pretrained', f'{label}: {error}',
                                    'use a checkpoint saved before the run diverged'))
            continue
        except (RuntimeError, KeyError) as error:
            findings.append(Finding(
                'error', 'pretrained', f'{label}: {path} cannot be read as weights: '
                f'{str(error).splitlines()[0]}',
                'use a checkpoint of plain tensors (torch.save(model.state_dict(), path))'))
            continue
        if channels in (per_frame, per_frame * frames):
            continue
        if channels % per_frame == 0:
            fix = (f'use a 2D checkpoint, or build with num_frames={channels // per_frame}, load '
                   f'it, then call reinflate_backbone(model, {frames})')
        else:
            fix = f'use a checkpoint of this architecture with {per_frame}-channel input'
        findings.append(Finding(
            'error', 'pretrained',
            f'{label}: the first conv in {path} takes {channels} channels, neither {per_frame} '
            f'(a 2D checkpoint, inflated) nor {per_frame * frames} (num_frames={frames}): '
            'loading it fails', fix))
    return findings


def timm_pretrained_offline(cfg: Config) -> Tuple[Config, List[Finding]]:
    """``timm.*`` backbones that load pretrained weights while they are built.

    timm reads ``pretrained_cfg_overlay.file`` inside the backbone's constructor (init_weights
    does not skip it) and downloads when no file is named, so a missing file would otherwise be
    reported as a model that cannot be built. Each such backbone is one ``pretrained`` finding,
    and the returned copy of ``cfg`` builds it without weights so the other checks still run.
    Where a checkpoint gives the weights (``load_from``, or the one ``resume`` continues from),
    the runner builds the backbone without the file, so its absence is only a note.
    """
    from ..engine.checkpoint import CheckpointRefusedError, timm_pretrained_nodes
    from ..engine.runner import checkpoint_out_dir, weights_checkpoint
    findings, offline = [], copy.deepcopy(cfg)
    nodes = timm_pretrained_nodes(offline.model)
    try:
        source = weights_checkpoint(cfg.get('load_from'), bool(cfg.get('resume')),
                                    default_work_dir(cfg), checkpoint_out_dir(cfg)) if nodes \
            else None
    except CheckpointRefusedError:
        source = None  # the load-from check reports the damaged checkpoints by name
    for where, node in nodes:
        file = (node.get('pretrained_cfg_overlay') or {}).get('file')
        if file is None:
            problem = 'names no pretrained_cfg_overlay.file: timm would download weights'
        elif not osp.isfile(file):
            problem = f'{file}: checkpoint not found'
        else:
            continue
        node['pretrained'] = False
        if source:
            findings.append(Finding(
                'info', 'pretrained', f'{where} ({node["type"]}): {problem}; the weights come '
                f'from {source}, so the backbone is built without it'))
            continue
        findings.append(Finding(
            'error', 'pretrained', f'{where} ({node["type"]}): {problem}',
            'convert the weights to that path (nothing is downloaded) or set pretrained=False'))
    return offline, findings


# ------------------------------------------------------------------------------ everything
def check_pipelines(cfg: Config, data: bool = False) -> List[Finding]:
    """Every data pipeline of the config built as its dataset builds it: a transform name
    mistyped (``SampelFrames``) or an argument it does not take stops tools/train.py and
    tools/test.py at once, and was reported only as a memory estimate that could not run. A
    transform that reads a data file when it is built (per-frame labels) is an error for a
    missing file only where the data is checked (``data``)."""
    from mmengine.dataset import Compose
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmaction'))
    findings = []
    for where, _, pipeline in unique_pipelines(cfg):
        try:
            Compose(copy.deepcopy(list(pipeline)))
        except OSError as error:
            findings.append(Finding('error' if data else 'info', 'pipeline',
                                    f'{where}.pipeline: cannot be built: {error}',
                                    'fix the path, or build the file it names'))
        except Exception as error:  # any transform's own complaint, named with its place
            findings.append(Finding('error', 'pipeline',
                                    f'{where}.pipeline: cannot be built: {error}',
                                    'fix the transform the message names'))
    return findings


def default_work_dir(cfg: Config) -> str:
    """The work dir ``tools/train.py`` gives ``cfg``: its ``work_dir``, else
    ``./work_dirs/<config name>``."""
    stem = osp.splitext(osp.basename(cfg.filename or 'config'))[0]
    return cfg.get('work_dir') or osp.join('./work_dirs', stem)


def check_load_from(cfg: Config, model=None) -> List[Finding]:
    """The checkpoint ``tools/train.py`` starts from, as mmengine picks it: ``load_from`` (with
    ``resume``: the file resumed, ``--resume PATH``), else with ``resume`` (``--resume``) the one
    the work dir's ``last_checkpoint`` names. tools/train.py stops on a path that names no
    local file, a damaged file, another model's weights or (to resume) a file without the
    training state, but only after building everything; the doctor reads the file as the
    runner would (weights-only, then :func:`~hyperframes_mm.engine.runner.load_fitting` into
    the config's ``model``, strictly when resuming)."""
    from ..engine.checkpoint import CheckpointRefusedError, load_verified
    from ..engine.runner import (check_training_checkpoint, checkpoint_out_dir,
                                 latest_intact_checkpoint, load_fitting)
    findings, resume = [], bool(cfg.get('resume'))
    for key in ('load_from', 'resume'):
        path = cfg.get(key)
        if isinstance(path, str) and '://' not in path and not osp.isfile(path):
            findings.append(Finding('error', 'load-from',
                                    f'{key}: {path} is not a file',
                                    f'give {key} the path of a checkpoint, or None'))
    if findings:
        return findings
    path, notes = cfg.get('load_from'), []
    if resume and not path:
        work_dir = default_work_dir(cfg)
        try:
            path = latest_intact_checkpoint(work_dir, notes.append, checkpoint_out_dir(cfg))
        except CheckpointRefusedError as error:
            return [Finding('error', 'load-from', f'resume: {error}',
                            'restore the checkpoint, or train in another --work-dir')]
        if path is None:
            return [Finding('info', 'load-from', f'resume: {work_dir} holds no checkpoint: '
                            'the training starts from the beginning')]
        findings += [Finding('warning', 'load-from', f'resume: {note}') for note in notes]
    if not isinstance(path, str) or '://' in path or model is None:
        return findings
    key = 'resume' if resume else 'load_from'
    try:
        checkpoint = load_verified(path)
        if resume:
            check_training_checkpoint(checkpoint, path)
        load_fitting(model, checkpoint, path, strict=resume)
    # ValueError: a hyperframe checkpoint of another input encoding (check_input_basis)
    except (CheckpointRefusedError, ValueError) as error:
        findings.append(Finding('error', 'load-from', f'{key}: {error}',
                                'give the checkpoint of a run of this config'
                                + ('' if resume else ', or None')))
    return findings


def diagnose(cfg: Config,
             data: bool = False,
             gpu_mem_gib: Optional[float] = None,
             input_size: Optional[Tuple[int, int]] = None,
             progress: bool = True) -> List[Finding]:
    """Run every check on ``cfg``; errors first, then warnings, then notes.

    Args:
        cfg (Config): the config.
        data (bool): also read the annotation files (labels against the head's classes) and
            probe every video (frame counts, fps). Defaults to False.
        gpu_mem_gib (float, optional): GPU memory to fit the training batch into, GiB.
            Defaults to None (the memory estimate is reported without a verdict).
        input_size (tuple[int, int], optional): ``(H, W)`` of the model input for the memory
            estimate; by default read from a real sample with ``data``, else from the training
            pipeline's crop/resize sizes.
        progress (bool): progress bar while probing videos. Defaults to True.

    Returns:
        list[Finding]: sorted by severity.
    """
    if gpu_mem_gib is not None and not gpu_mem_gib > 0:
        raise ValueError(f'doctor: gpu_mem_gib must be > 0, got {gpu_mem_gib!r}')
    if cfg.get('custom_imports'):
        from mmengine.utils import import_modules_from_strings
        import_modules_from_strings(**cfg.custom_imports)
    # a config's own variable overridden on the command line reaches none of the settings
    # made from it: the checks below read the file's data and T, not the ones the user named
    findings = [Finding('warning', 'override', line, OVERRIDE_FIX)
                for line in top_level_overrides(cfg)]
    findings += [Finding('warning', 'schedule', message, fix)
                 for message, fix in schedule_overruns(cfg)]
    findings += check_augmentation(cfg) + check_flip_labels(cfg)
    buildable, timm_findings = timm_pretrained_offline(cfg)
    findings += timm_findings
    try:
        # No weights are read: a missing or unreadable pretrained file is the pretrained
        # finding, not a failed build.
        model = init_recognizer(buildable, device='cpu', init_weights=False)
    except Exception as error:  # any config mistake: report it, run the checks that remain
        findings.append(Finding('error', 'model-build', f'model: cannot be built: {error}',
                                'fix the model config (the message names the part)'))
        model = None
    streams = model_streams(model) if model is not None else {}
    if model is not None and not streams:
        findings.append(Finding('info', 'num-frames',
                                'the model has no hyperframe backbone: T checks skipped'))
    findings += check_num_frames(cfg, streams) if streams else []
    findings += check_pipeline_order(cfg, streams)
    findings += check_mean_std(cfg, sorted({b.num_frames for b in streams.values()}))
    findings += check_pretrained(streams)
    findings += check_pipelines(cfg, data) + check_load_from(cfg, model)
    if data:
        head_classes = getattr(getattr(model, 'cls_head', None), 'num_classes', None)
        findings += check_labels(cfg, head_classes) if head_classes is not None else []
        findings += check_data(cfg, progress=progress)
    if model is not None:
        findings += check_memory(cfg, model, gpu_mem_gib, input_size, data)
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
