"""A clip's hyperframes against the backbone that shifts features between them, checked before a
loop runs and when a model is loaded for inference.

``HyperframeStack(segments=S)`` splits each clip into S hyperframes in time order, and a shifted
backbone (``num_segments=S``: ``HyperMobileNetV2``, ``InflatedBackbone``) exchanges features
between each S consecutive ones of its batch. The two are separate settings
(:func:`~hyperframes_mm.config_parts.shifted_hyperframes` sets both); where they differ the
backbone pairs hyperframes of other clips, or of other samples, whenever the batch happens to
hold a multiple of its S (2 samples of 3 hyperframes at S=2), and scores them with no error:
the backbone sees only ``[N * K, ...]``, not where one sample ends
(:func:`~hyperframes_mm.models.backbones.temporal_shift.check_segments` catches the batches it
can). A pipeline without ``HyperframeStack`` (mmaction2's TSM configs) is not this plugin's
layout and is not checked.
"""
from typing import Iterable, Optional

from mmaction.registry import HOOKS
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from ..datasets.transforms import HyperframeStack
from .cache_hook import built_loops, leaf_datasets


def backbone_segments(model) -> Optional[int]:
    """The hyperframes a clip that the model's hyperframe backbone shifts features between
    (``backbone.num_segments`` > 1 of a backbone with a ``num_frames``, T per hyperframe), None
    for any other model: an unshifted backbone mixes nothing, and mmaction2's TSM backbones
    shift between the clips of a sample, which may come from any pipeline."""
    model = model.module if is_model_wrapper(model) else model
    backbone = getattr(model, 'backbone', None)
    segments = getattr(backbone, 'num_segments', None)
    if not hasattr(backbone, 'num_frames') or not isinstance(segments, int) or segments < 2:
        return None
    return segments


def check_stacked_segments(model, stacked: Iterable[int], where: str) -> None:
    """Refuse a pipeline whose ``HyperframeStack`` makes another number of hyperframes a clip
    than the model's hyperframe backbone shifts between (``stacked``: the ``segments`` of each
    of its ``HyperframeStack`` steps, none for a pipeline without one).

    Raises:
        ValueError: naming ``where``, both settings and the backbone.
    """
    shifted = backbone_segments(model)
    if shifted is None:
        return
    for segments in stacked:
        if segments != shifted:
            inner = model.module if is_model_wrapper(model) else model
            raise ValueError(
                f'{where}: HyperframeStack(segments={segments}) makes {segments} hyperframe(s) a '
                f'clip, and the backbone {type(inner.backbone).__name__}(num_segments='
                f'{shifted}) shifts features between each {shifted}: it would mix hyperframes of '
                'other clips or samples; set both to the same S (config_parts.'
                'shifted_hyperframes sets both)')


def pipeline_segments(dataset) -> list:
    """The ``segments`` of every ``HyperframeStack`` in the pipelines of a built ``dataset``
    (wrappers unwrapped)."""
    found = []
    for leaf, _ in leaf_datasets(dataset):
        transforms = getattr(getattr(leaf, 'pipeline', None), 'transforms', None) or ()
        found += [step.segments for step in transforms if isinstance(step, HyperframeStack)]
    return found


@HOOKS.register_module()
class SegmentsHook(Hook):
    """Before a run (``before_run``: loops built, nothing read or trained yet): every loop's
    ``HyperframeStack(segments)`` against the backbone's ``num_segments``
    (:func:`check_stacked_segments`). Registered by
    :class:`~hyperframes_mm.engine.runner.HyperframeRunner`."""

    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        for split, loop in built_loops(runner):
            check_stacked_segments(runner.model, pipeline_segments(loop.dataloader.dataset),
                                   f'the {split} pipeline')
