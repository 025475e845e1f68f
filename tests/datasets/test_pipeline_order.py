"""hyperframes_mm.datasets.transforms.pipeline_order: the steps a pipeline places after
HyperframeStack, and a missing stack, refused by NumFramesHook before a run. mmaction2's Flip
after the stack flipped a single-stream video upside down, and for two streams flipped nothing
but swapped the label; a TSN-style FormatShape ending failed at the first step naming the
sampler's num_frames, which equalled the backbone's."""
import copy

import pytest

from hyperframes_mm.apis.inference import load_config
from hyperframes_mm.datasets.transforms.pipeline_order import (pipeline_order_problems,
                                                               steps_after_stack)
from hyperframes_mm.engine import NumFramesHook
from hyperframes_mm.engine.num_frames_hook import needs_stack

from ..conftest import REPO
from ..engine.test_num_frames_hook import _Runner

GOOD = REPO / 'tests/analysis/configs/doctor/good.py'
DECODE = [dict(type='SafeDecordInit'), dict(type='HyperframeSampleFrames', num_frames=5),
          dict(type='DecordDecode')]
FRAME_STEPS = ['Flip', 'Resize', 'CenterCrop', 'ThreeCrop', 'TenCrop', 'RandomResizedCrop',
               'RandomCrop', 'MultiScaleCrop', 'ColorJitter', 'ConsistentClipAugment',
               'FormatShape', 'mmaction.Flip']
FLIP_AFTER = ('train_dataloader.dataset.pipeline: Flip (pipeline[4]) after HyperframeStack '
              '(pipeline[3]), which has already stacked the frames into [N, 3T, H, W] '
              'hyperframes (and moved a multi-stream sample to imgs_<name>): a transform there '
              'reads the channels as image rows or finds no frames, so a Flip turns the video '
              'upside down, or flips nothing and still swaps the label; move them before '
              'HyperframeStack (FormatShape: remove it, the stack lays the hyperframes out); of '
              'the plugin\'s and mmaction2\'s steps only CenterFrameTarget, PackActionInputs '
              'may follow it')
NO_STACK = ('train_dataloader.dataset.pipeline has no HyperframeStack, but the model\'s '
            'hyperframe backbone reads [N, 3T, H, W] hyperframes: it will receive single '
            '3-channel frames and refuse them at the first step')


def test_every_frame_transform_after_the_stack_is_named_with_its_position():
    pipeline = DECODE + [dict(type='HyperframeStack')] + [dict(type=kind) for kind in FRAME_STEPS]
    assert steps_after_stack(pipeline + [dict(type='PackActionInputs')]) == [
        (4 + index, kind.split('.')[-1]) for index, kind in enumerate(FRAME_STEPS)]
    # a transform of the user's own may be written for the stacked arrays: not refused
    assert steps_after_stack(DECODE + [dict(type='HyperframeStack'),
                                       dict(type='MyStackedNoise')]) == []
    # the same steps before the stack, and the ones that read no frames after it, are sound
    sound = DECODE + [dict(type=kind) for kind in FRAME_STEPS if kind != 'FormatShape'] + [
        dict(type='HyperframeStack'), dict(type='CenterFrameTarget'),
        dict(type='PackActionInputs')]
    assert steps_after_stack(sound) == []
    assert pipeline_order_problems('x', sound, needs_stack=True) == []


def test_flip_after_the_stack_and_a_missing_stack_are_problems_with_their_fix():
    flipped = DECODE + [dict(type='HyperframeStack'), dict(type='Flip', flip_ratio=0.5),
                        dict(type='PackActionInputs')]
    [(problem, fix)] = pipeline_order_problems('train_dataloader.dataset', flipped, False)
    assert f'{problem}; {fix}' == FLIP_AFTER
    tsn = DECODE + [dict(type='Flip'), dict(type='FormatShape', input_format='NCHW'),
                    dict(type='PackActionInputs')]
    assert pipeline_order_problems('train_dataloader.dataset', tsn, True) == [
        (NO_STACK, 'replace FormatShape (pipeline[4]) by dict(type=\'HyperframeStack\')')]
    assert pipeline_order_problems('train_dataloader.dataset', tsn[:4] + tsn[5:], True) == [
        (NO_STACK, 'add dict(type=\'HyperframeStack\') at pipeline[4], after the frame '
                   'transforms and before PackActionInputs')]
    # a model that reads single frames (TSN, TSM) needs no stack
    assert pipeline_order_problems('train_dataloader.dataset', tsn, False) == []


class _Backbone:
    def __init__(self, num_frames):
        self.num_frames = num_frames


def test_a_stack_is_needed_by_backbones_of_several_frames_and_by_streams():
    assert not needs_stack({})
    assert not needs_stack({None: _Backbone(1)})
    assert needs_stack({None: _Backbone(5)})
    assert needs_stack({'fast': _Backbone(1), 'slow': _Backbone(1)})


def test_the_runner_refuses_a_flip_after_the_stack_and_a_missing_stack_before_a_run():
    cfg = load_config(str(GOOD))
    pipeline = cfg.train_dataloader.dataset.pipeline
    NumFramesHook().before_run(_Runner(copy.deepcopy(cfg), 'train', 'val'))
    flipped = copy.deepcopy(cfg)
    flipped.train_dataloader.dataset.pipeline = pipeline[:3] + [
        pipeline[4], dict(type='Flip', flip_ratio=0.5), pipeline[5]]
    with pytest.raises(ValueError) as error:
        NumFramesHook().before_run(_Runner(flipped, 'train'))
    assert str(error.value) == FLIP_AFTER
    unstacked = copy.deepcopy(cfg)
    unstacked.train_dataloader.dataset.pipeline = pipeline[:4] + [
        dict(type='FormatShape', input_format='NCHW'), pipeline[5]]
    with pytest.raises(ValueError) as error:
        NumFramesHook().before_run(_Runner(unstacked, 'train'))
    assert str(error.value) == (f'{NO_STACK}; replace FormatShape (pipeline[4]) by '
                                'dict(type=\'HyperframeStack\')')
    # mmaction2's TSN reads single frames: the same pipeline is sound for it
    unstacked.model.backbone = dict(type='ResNet', depth=18)
    NumFramesHook().before_run(_Runner(unstacked, 'train'))
