"""The pipeline rebuild a config writes when it changes a family's frame sampler, written once.

mmengine evaluates each base config on its own and replaces a list rather than merging into it,
so a config that changes the sampler (T, the picks, the streams) or the stacking at the end of a
pipeline cannot reach into the pipelines its dataset base built: it builds them again. Every
dataset base keeps the parts of its pipelines, ``pipeline_parts`` (per split: the reader, the
sampler's views, the decoding and transforms), and a config rebuilds its pipelines from them
with :func:`pipelines` and hands them to its dataloaders with :func:`dataloaders`; a config
that trains and tests at another input size sets its transforms' side with :func:`at_side`
(``configs/hyperframes/utd_mhad_imagenet/hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-
30e_utd-mhad-depth.py`` is the shortest such config; docs/model_zoo.md walks through it).

The import comes after ``_base_``: mmengine reads a config whose first statement imports a
module from outside the standard library as a new-style (``read_base``) config, which has no
``_base_``. mmengine drops imported functions from the loaded config, so a dumped config holds
the pipelines, not the functions that built them.
"""
from typing import Dict, List, Sequence, Tuple


def pipelines(parts: Sequence[tuple], sampler: Dict,
              clip_format: Sequence[Dict]) -> Tuple[List[Dict], ...]:
    """One pipeline per split of ``parts`` ((reader, the sampler's views, transforms) each):
    ``[reader, sampler with the split's views, *transforms, *clip_format]``."""
    return tuple([reader, dict(sampler, **views), *transforms, *clip_format]
                 for reader, views, transforms in parts)


def dataloaders(*split_pipelines: List[Dict]) -> Tuple[Dict, ...]:
    """The dataloader entries that hand each pipeline to its split's dataset, in order; mmengine
    merges them into the base's dataloaders (their files, batch sizes and samplers stay)."""
    return tuple(dict(dataset=dict(pipeline=pipeline)) for pipeline in split_pipelines)


def side_fields(step: Dict, side: int) -> Dict:
    """The fields of a pipeline step that set the frame side, at ``side`` x ``side``: a training
    crop's size (``ConsistentClipAugment``) and a fixed-size ``Resize``'s scale; none for any
    other step (a ``Resize`` that keeps the ratio sets a short side, not the input's shape)."""
    if step['type'] == 'ConsistentClipAugment':
        return dict(size=side)
    if step['type'] == 'Resize' and step.get('keep_ratio') is False:
        return dict(scale=(side, side))
    return {}


def at_side(transforms: Sequence[Dict], side: int) -> List[Dict]:
    """``transforms`` with every step that sets the frame side (:func:`side_fields`) at ``side``:
    the training crop and the test views change together, so a model is never tested at a
    side it was not trained at."""
    return [dict(step, **side_fields(step, side)) for step in transforms]


def with_test_clips(parts: Sequence[tuple], clips: int) -> List[tuple]:
    """``parts`` with the test split's (the last one's) views at ``clips`` clips a sample: a
    config whose clip costs several passes (shifted hyperframes) buys fewer test views."""
    *others, (reader, views, transforms) = parts
    return [*others, (reader, dict(views, num_clips=clips), transforms)]


def with_train_crops(parts: Sequence[tuple], area_range: Tuple[float, float]) -> List[tuple]:
    """``parts`` with the training split's (the first one's) ``ConsistentClipAugment`` cropping
    ``area_range`` of the frame's area; the views validation and test score are unchanged."""
    (reader, views, transforms), *others = parts
    return [(reader, views, [dict(step, area_range=area_range)
                             if step['type'] == 'ConsistentClipAugment' else step
                             for step in transforms]), *others]


def segment_stack(segments: int) -> List[Dict]:
    """The end of a pipeline whose clip is ``segments`` hyperframes in time order, for a
    backbone shifted over that many segments (``num_segments``) and mmaction2's ``TSMHead``."""
    return [dict(type='HyperframeStack', segments=segments), dict(type='PackActionInputs')]


def shifted_hyperframes(segments: int, test_clips: int, parts: Sequence[tuple],
                        sampler: Dict) -> Tuple[Dict, Dict, List[tuple], List[Dict]]:
    """What a one-hyperframe config changes so that a clip is ``segments`` of its hyperframes in
    time order with features shifted between them (``num_segments`` of ``HyperMobileNetV2`` or
    ``InflatedBackbone``): the model's change (the backbone's segments, mmaction2's ``TSMHead``
    over them), ``sampler`` on ``segments`` times its picks, ``parts`` with ``test_clips`` test
    views (a clip costs ``segments`` passes) and the pipeline's end (:func:`segment_stack`)."""
    model = dict(backbone=dict(num_segments=segments),
                 cls_head=dict(type='TSMHead', num_segments=segments, is_shift=True))
    return (model, dict(sampler, num_frames=segments * sampler['num_frames']),
            with_test_clips(parts, test_clips), segment_stack(segments))


def schedule_over(train_cfg: Dict, param_scheduler: List[Dict],
                  epochs: int) -> Tuple[Dict, List[Dict]]:
    """A base schedule's ``train_cfg`` and ``param_scheduler`` stretched or shortened to
    ``epochs``, every scheduler scaled alike (warm-up, then the decay to the last epoch), as
    :func:`hyperframes_mm.analysis.config_utils.set_epochs` scales a loaded config: a config
    with its own epoch count writes ``train_cfg, param_scheduler = schedule_over(
    _base_.train_cfg, _base_.param_scheduler, 45)`` instead of the schedule's lines again."""
    import copy

    from mmengine.config import Config

    from .analysis.config_utils import set_epochs
    cfg = Config(dict(train_cfg=copy.deepcopy(train_cfg),
                      param_scheduler=copy.deepcopy(param_scheduler)))
    set_epochs(cfg, epochs)
    return cfg.train_cfg.to_dict(), [dict(scheduler) for scheduler in cfg.param_scheduler]

