"""Where a pipeline's ``HyperframeStack`` stands, read from its config dicts: the order the
doctor's ``pipeline-order`` check and the runner's ``NumFramesHook`` refuse before any sample is
read.

``HyperframeStack`` turns the frame list (``[H, W, C]`` frames under ``imgs``, what every
mmaction2 transform reads) into ``[num_hyperframes, 3T, H, W]`` arrays, and for a multi-stream
sample moves them from ``imgs`` to ``imgs_<name>``. A transform after it that works on frames
reads the wrong axes or nothing at all, often without an error: mmaction2's ``Flip`` reads a
hyperframe as a 3T x H image of W channels, so its horizontal flip turns the video upside down;
with two streams it finds no ``imgs``, flips no pixel and still swaps the label by its
``flip_label_map``; crops and resizes cut or scale the channel axis. Without the stack a
hyperframe backbone receives single frames (``FormatShape``'s ``[N, 3, H, W]``) and refuses
them at the first step, naming the sampler.
"""
from typing import Dict, List, Sequence, Tuple

from .pipeline_info import transform_type

STACK = 'HyperframeStack'
#: Steps that read no frames, so their place after the stack is sound: packing the stacked
#: arrays, and the per-sample target read from the sampler's picks.
SAFE_AFTER_STACK = frozenset({'PackActionInputs', 'CenterFrameTarget'})
#: Steps that work on the frame list (``imgs``): mmaction2's crops, flips, colour and format
#: transforms and wrappers, the plugin's own. Only these are refused after the stack: a
#: transform of the user's own may be written for the stacked arrays, which no list can tell.
FRAME_TRANSFORMS = frozenset({
    'Fuse', 'RandomCrop', 'RandomResizedCrop', 'MultiScaleCrop', 'Resize', 'RandomRescale',
    'Flip', 'ColorJitter', 'CenterCrop', 'ThreeCrop', 'TenCrop', 'RandomErasing', 'FormatShape',
    'TorchVisionWrapper', 'PytorchVideoWrapper', 'ImgAug', 'ConsistentClipAugment', STACK})


def steps_after_stack(pipeline: Sequence[Dict]) -> List[Tuple[int, str]]:
    """``(position, type)`` of each step after the pipeline's first ``HyperframeStack`` that
    works on frames (:data:`FRAME_TRANSFORMS`); empty without a stack."""
    kinds = [transform_type(step) for step in pipeline]
    if STACK not in kinds:
        return []
    first = kinds.index(STACK)
    return [(index, kind) for index, kind in enumerate(kinds)
            if index > first and kind in FRAME_TRANSFORMS]


def pipeline_order_problems(where: str, pipeline: Sequence[Dict],
                            needs_stack: bool) -> List[Tuple[str, str]]:
    """``(problem, fix)`` for the pipeline of the dataset at ``where``: the steps placed after
    its ``HyperframeStack`` that work on frames (:func:`steps_after_stack`), or, when the model
    reads hyperframes (``needs_stack``), a pipeline without the stack."""
    kinds = [transform_type(step) for step in pipeline]
    misplaced = steps_after_stack(pipeline)
    if misplaced:
        names = ', '.join(f'{kind} (pipeline[{index}])' for index, kind in misplaced)
        return [(f'{where}.pipeline: {names} after HyperframeStack '
                 f'(pipeline[{kinds.index(STACK)}]), which has already stacked the frames into '
                 '[N, 3T, H, W] hyperframes (and moved a multi-stream sample to imgs_<name>): a '
                 'transform there reads the channels as image rows or finds no frames, so a Flip '
                 'turns the video upside down, or flips nothing and still swaps the label',
                 'move them before HyperframeStack (FormatShape: remove it, the stack lays the '
                 'hyperframes out); of the plugin\'s and mmaction2\'s steps only '
                 + ', '.join(sorted(SAFE_AFTER_STACK)) + ' may follow it')]
    if needs_stack and STACK not in kinds:
        formats = [index for index, kind in enumerate(kinds) if kind == 'FormatShape']
        if formats:
            # FormatShape lays out single frames, the layout the stack replaces
            fix = (f'replace FormatShape (pipeline[{formats[0]}]) by '
                   'dict(type=\'HyperframeStack\')')
        else:
            packs = kinds.index('PackActionInputs') if 'PackActionInputs' in kinds else len(kinds)
            fix = (f'add dict(type=\'HyperframeStack\') at pipeline[{packs}], after the frame '
                   'transforms and before PackActionInputs')
        return [(f'{where}.pipeline has no HyperframeStack, but the model\'s hyperframe backbone '
                 'reads [N, 3T, H, W] hyperframes: it will receive single 3-channel frames and '
                 'refuse them at the first step', fix)]
    return []
