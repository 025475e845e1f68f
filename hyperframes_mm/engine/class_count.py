"""The model's classes against the labels it is trained and scored on, checked before a loop runs.

A config carried to another data set changes the head's class count (``model.cls_head.
num_classes``), and nothing else in mmaction2 compares a list's labels with it: a training label
past the head stops the first step that draws it with ``IndexError: Target 25 is out of
bounds`` (no list, no line), and a test label past it is scored as a class the model cannot
predict, silently (a list numbered from 1 scores 0 with exit 0). The datasets cannot check
this themselves: they take no class count (the count is the head's, and a count left in a
dataset would refuse every label of a larger data set). The batch blending's one-hot width
(``MixupBlending``'s ``num_classes``) is another copy of the head's count that a carried config
leaves behind, which fails in the loss with a broadcasting error.

:class:`ClassCountHook`, which :class:`~hyperframes_mm.engine.runner.HyperframeRunner` registers
itself, checks the labels of the datasets a loop is about to read against the head before the
loop's first step, naming the list, the samples and the key to change, and gives the blending
the head's width.
"""
import os.path as osp
from numbers import Integral
from typing import Iterator, List, Optional, Tuple

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from .cache_hook import built_loops, leaf_datasets

#: samples named in an error (the count names the rest)
_SHOWN = 5


class ClassCountError(ValueError):
    """A list holds labels the model's head has no class for."""


def head_classes(model) -> Optional[int]:
    """The class count of the model's head (``cls_head.num_classes``), None without one."""
    model = model.module if is_model_wrapper(model) else model
    count = getattr(getattr(model, 'cls_head', None), 'num_classes', None)
    return count if isinstance(count, Integral) else None


def labels_outside(dataset, num_classes: int) -> List[Tuple[str, str, str, int]]:
    """``(list, sample, file, label)`` of every single label of ``dataset`` outside
    ``0..num_classes - 1``; the sample is its annotation's ``file:line`` where the record
    gives one (a frame-label dataset's windows, whose index is no line), else its index.
    Unlabelled samples (-1, mmaction2's inference lists) are not labels; multi-label datasets
    are skipped (their label vectors are as wide as their own ``num_classes``, which they
    check)."""
    outside = []
    for leaf, _ in leaf_datasets(dataset):
        if getattr(leaf, 'multi_class', False):
            continue
        source = str(getattr(leaf, 'ann_file', '') or type(leaf).__name__)
        for index, info in enumerate(_samples(leaf)):
            label = info.get('label') if isinstance(info, dict) else None
            if (isinstance(label, Integral) and label != -1
                    and not 0 <= label < num_classes):
                outside.append((source, info.get('annotation') or f'sample {index}',
                                _sample_name(info), int(label)))
    return outside


def _sample_name(info) -> str:
    """The file or frame folder a sample record reads (``filename`` for ``VideoDataset``,
    ``frame_dir`` for ``RawframeDataset``), '' where it names none."""
    return str(info.get('filename') or info.get('frame_dir') or '')


#: the keys by which a record reads part of its file: RawframeDataset(with_offset=True)'s
#: ``offset``, the frame-label datasets' windows and centre frames, untrimmed lists' times
_CLIP_RANGE = ('offset', 'total_frames', 'start_index', 'window_start', 'window_end',
               'center_frame', 'start', 'end', 'start_time', 'end_time')


def _sample_key(info) -> Tuple:
    """What makes two records one sample: the file written either way (``val/a.mp4``,
    ``val/./a.mp4``) and the part of it they read; records of one long video cut into clips
    are several samples."""
    name = _sample_name(info)
    return (osp.normpath(name) if name else name,
            tuple(str(info.get(key)) for key in _CLIP_RANGE))


def _samples(dataset) -> Iterator:
    """The sample records of a dataset: mmengine's ``BaseDataset`` serialises its list (its
    ``data_list`` is then empty) and gives each back by ``get_data_info``."""
    if callable(getattr(dataset, 'get_data_info', None)):
        for index in range(len(dataset)):
            yield dataset.get_data_info(index)
    else:
        yield from getattr(dataset, 'data_list', None) or ()


def check_labels(dataset, num_classes: int, split: str) -> None:
    """Raise :class:`ClassCountError` naming the list, the first samples and the count when a
    label of ``dataset`` (the ``split`` loop's) has no class in the head.

    Raises:
        ClassCountError: some labels are outside ``0..num_classes - 1``.
    """
    outside = labels_outside(dataset, num_classes)
    if not outside:
        return
    lists = ', '.join(dict.fromkeys(source for source, _, _, _ in outside))
    shown = '; '.join(f'{sample} ({name or "no file"}): {label}'
                      for _, sample, name, label in outside[:_SHOWN])
    more = f'; and {len(outside) - _SHOWN} more' if len(outside) > _SHOWN else ''
    largest = max(label for _, _, _, label in outside)
    fix = 'correct those labels'
    if largest >= num_classes:
        fix += (f', or, if the list is right, give the head {largest + 1} classes '
                '(model.cls_head.num_classes)')
    raise ClassCountError(
        f'{split} list {lists}: {len(outside)} label(s) outside 0..{num_classes - 1}, the '
        f'classes of the model\'s head (model.cls_head.num_classes={num_classes}): {shown}'
        f'{more}. {fix[0].upper()}{fix[1:]}; tools/doctor.py --data lists every such line.')


def check_flip_labels(dataset, num_classes: int, split: str) -> None:
    """Raise :class:`ClassCountError` when a transform of ``dataset``'s pipeline (the ``split``
    loop's) maps flipped labels to or from classes the head does not have: a
    ``flip_label_map`` left from another data set (the synthetic family's, carried with the
    data root and class count changed) relabels flipped clips of the wrong classes silently.
    One whose labels all fit cannot be told from this data set's own map; tools/doctor.py
    reads it against the class names.

    Raises:
        ClassCountError: naming the transform, the labels outside the head and the count.
    """
    for leaf, _ in leaf_datasets(dataset):
        for transform in getattr(getattr(leaf, 'pipeline', None), 'transforms', ()):
            mapping = getattr(transform, 'flip_label_map', None)
            if not isinstance(mapping, dict):
                continue
            outside = sorted({label for pair in mapping.items() for label in pair
                              if isinstance(label, Integral) and not 0 <= label < num_classes})
            if outside:
                raise ClassCountError(
                    f'{split} pipeline: {type(transform).__name__}(flip_label_map={mapping}) '
                    f'maps labels {outside}, outside 0..{num_classes - 1}, the classes of the '
                    f'model\'s head (model.cls_head.num_classes={num_classes}): a map left from '
                    'another data set relabels flipped clips of the wrong classes. Give the map '
                    'of this data set\'s classes (tools/doctor.py suggests one from the class '
                    'names), or none.')


#: metrics that need no labels: a loop scored only by them may read an unlabelled list
_LABEL_FREE_METRICS = ('DumpResults', )


def loop_needs_labels(split: str, loop) -> bool:
    """Whether the ``split`` loop reads labels: training does, and so does an evaluation with
    any metric other than a dump of the predictions (accuracy, confusion matrix, ...)."""
    if split == 'train':
        return True
    metrics = getattr(getattr(loop, 'evaluator', None), 'metrics', None) or ()
    return metrics_need_labels(type(metric).__name__ for metric in metrics)


def metrics_need_labels(names) -> bool:
    """Whether an evaluation by the metrics of these type names reads labels."""
    return any(name not in _LABEL_FREE_METRICS for name in names)


def check_labelled(dataset, split: str, metrics: str = '') -> None:
    """Raise :class:`ClassCountError` for a list the ``split`` loop cannot read as labelled:
    samples without a label (-1, a line of a file name alone), one video listed with two
    labels, or, for an evaluation, one video listed twice. mmaction2 reads all three without a
    word: a test scored every unlabelled sample against label -1 with exit 0, training stopped
    at ``Target -1 is out of bounds`` naming nothing, a video with two labels is counted wrong
    under one of them, and a video listed twice is scored twice (a list concatenated with
    itself scores as the list, twice the size). Training may list a video twice: that
    oversamples it.

    Args:
        dataset: the loop's dataset (wrappers unwrapped here).
        split (str): the loop, for the message.
        metrics (str): the loop's metrics that read labels, for the message (empty for
            training).
    """
    for leaf, _ in leaf_datasets(dataset):
        if getattr(leaf, 'multi_class', False):
            continue
        source = str(getattr(leaf, 'ann_file', '') or type(leaf).__name__)
        unlabelled, repeated, first = [], [], {}
        for index, info in enumerate(_samples(leaf)):
            label = info.get('label') if isinstance(info, dict) else None
            if not isinstance(label, Integral):
                continue
            name = _sample_name(info)
            if label == -1:
                unlabelled.append(f'sample {index} ({name or "no file"})')
                continue
            seen = first.setdefault(_sample_key(info), (index, int(label)))
            if name and seen[1] != label:
                raise ClassCountError(
                    f'{split} list {source}: video {name} is listed with label {seen[1]} '
                    f'(sample {seen[0]}) and label {label} (sample {index}); a single-label '
                    'list gives each video one label')
            if name and seen[0] != index and split != 'train':
                repeated.append(f'{name} (samples {seen[0]} and {index})')
        if repeated:
            more = f'; and {len(repeated) - _SHOWN} more' if len(repeated) > _SHOWN else ''
            raise ClassCountError(
                f'{split} list {source}: {len(repeated)} video(s) listed again '
                f'({"; ".join(repeated[:_SHOWN])}{more}), and the {split} loop scores each '
                'line, so such a video counts twice: list each video once')
        if unlabelled:
            use, fix = 'trains on labels', 'give every line its label'
            if metrics:
                # the route to predictions of a list without labels: a dump alone, which
                # reads none (mmaction2's --dump adds one beside the config's metrics)
                use = f'scores them against labels with {metrics}'
                # _delete_: the dump replaces the evaluator whole; merged into it, it took the
                # metric's own options (metric_list), which DumpResults refuses
                fix += (f', or, to predict a list of file names alone, evaluate with '
                        f'{_LABEL_FREE_METRICS[0]} only, which writes the predictions and reads '
                        f'no label: --cfg-options {split}_evaluator._delete_=True '
                        f'{split}_evaluator.type={_LABEL_FREE_METRICS[0]} '
                        f'{split}_evaluator.out_file_path=preds.pkl')
            more = (f'; and {len(unlabelled) - _SHOWN} more' if len(unlabelled) > _SHOWN
                    else '')
            raise ClassCountError(
                f'{split} list {source}: {len(unlabelled)} sample(s) without a label '
                f'({"; ".join(unlabelled[:_SHOWN])}{more}), and the {split} loop {use}: {fix}')


def check_not_replacing(dataset, split: str) -> None:
    """Raise :class:`ClassCountError` when an evaluation loop's dataset is wrapped in
    ``GuardedDataset(on_bad_video='skip')``: it replaces a bad video's sample by another sample,
    so an evaluation would score that one twice and the bad video not at all (the dumped
    predictions too), with exit 0 and a warning in the log."""
    if split != 'train' and any(skips for _, skips in leaf_datasets(dataset)):
        raise ClassCountError(
            f'the {split} dataset is wrapped in GuardedDataset(on_bad_video=\'skip\'), which '
            'replaces a bad video\'s sample by another one: the evaluation would score that one '
            'twice and the bad video not at all. Use on_bad_video=\'raise\' for validation and '
            'test, and remove the videos it names from the list')


def blendings(model) -> List:
    """The batch blending of the model's data preprocessor and, for ``RandomBatchAugment``,
    each of its blendings: every object whose ``num_classes`` is a one-hot width (the first is
    the one the config names)."""
    model = model.module if is_model_wrapper(model) else model
    blending = getattr(getattr(model, 'data_preprocessor', None), 'blending', None)
    if blending is None:
        return []
    inner = [part for part in getattr(blending, 'augments', None) or () if part is not None]
    return [blending, *inner]


class ClassCountHook(Hook):
    """Before a run (``before_run``: its loops are built, nothing is loaded or trained yet, and
    ahead of ``BuildFrameCacheHook``): the labels of every loop the run will read against the
    head's classes (:func:`check_labels`), every sample of a loop that reads labels labelled
    once (:func:`check_labelled`), no evaluation replacing bad videos
    (:func:`check_not_replacing`), and, for training, the blending's one-hot width set
    to the head's count, with a warning naming the key, where a carried config left the data
    set's old count there (a width other than the head's has no meaning: the blended labels
    meet the head's scores in the loss). A model without a ``cls_head.num_classes`` is not
    checked."""

    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        loops = dict(built_loops(runner))
        for split, loop in loops.items():
            check_not_replacing(loop.dataloader.dataset, split)
        classes = head_classes(runner.model)
        if classes is None:
            return
        for split, loop in loops.items():
            check_labels(loop.dataloader.dataset, classes, split)
            check_flip_labels(loop.dataloader.dataset, classes, split)
            if loop_needs_labels(split, loop):
                # the metrics that read labels: a dump beside them reads none
                metrics = ', '.join(name for metric in
                                    getattr(getattr(loop, 'evaluator', None), 'metrics', ())
                                    if metrics_need_labels([name := type(metric).__name__]))
                check_labelled(loop.dataloader.dataset, split,
                               '' if split == 'train' else metrics)
        if 'train' not in loops:
            return
        parts = blendings(runner.model)
        widths = sorted({width for part in parts
                         if isinstance(width := getattr(part, 'num_classes', None), Integral)
                         and width != classes})
        if widths:
            runner.logger.warning(
                f'model.data_preprocessor.blending: {type(parts[0]).__name__} makes labels '
                f'num_classes={", ".join(map(str, widths))} wide, and the head has {classes} '
                f'classes (model.cls_head.num_classes): it blends {classes}-wide labels')
            for part in parts:
                part.num_classes = classes
