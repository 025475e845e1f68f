"""hyperframes_mm.engine.num_frames_hook: the T each loop's pipeline samples against the hyperframe
backbone's num_frames, checked by HyperframeRunner before the loop runs, in the doctor's words. A
validation pipeline of another T failed only at the first validation, after the epochs before
it, with the backbone's error naming neither the pipeline nor its key."""
from pathlib import Path

import pytest
from mmaction.registry import MODELS
from mmengine.runner import BaseLoop

from hyperframes_mm.analysis.doctor import check_num_frames
from hyperframes_mm.apis.inference import load_config
from hyperframes_mm.engine import NumFramesHook
from hyperframes_mm.engine.num_frames_hook import model_streams

from ..conftest import REPO

VAL_T3 = ('val_dataloader.dataset.pipeline[1]: SampleFrames samples T=3 frames but the backbone '
          'takes num_frames=5 (15 channels): it will refuse the 9-channel input; use one T in '
          'both: num_frames=5 in the sampler, or num_frames=3 in the backbone')
DOCTOR_CONFIGS = REPO / 'tests/analysis/configs/doctor'


def test_a_validation_pipeline_of_another_t_stops_the_training_before_its_first_step(
        runner_of):
    runner = runner_of(**{'val_dataloader.dataset.pipeline.1.clip_len': 3})
    with pytest.raises(ValueError) as error:
        runner.train()
    assert str(error.value) == VAL_T3
    assert runner.iter == 0 and not list(Path(runner.work_dir).glob('*.pth'))
    # the doctor's finding, word for word: one check, not two
    [finding] = check_num_frames(runner.cfg, model_streams(runner.model))
    assert f'{finding.message}; {finding.fix}' == VAL_T3


def test_a_test_pipeline_of_another_t_stops_the_test_before_it_loads(runner_of):
    runner = runner_of(**{'test_dataloader.dataset.pipeline.1.clip_len': 3})
    with pytest.raises(ValueError) as error:
        runner.test()
    assert str(error.value) == VAL_T3.replace('val_dataloader', 'test_dataloader')


class _Loop(BaseLoop):
    def run(self):
        pass


class _Runner:
    """What the hook reads of a runner: its config, model and built loops."""

    def __init__(self, cfg, *loops):
        self.cfg = cfg
        self.model = MODELS.build(cfg.model)
        for name in loops:
            setattr(self, f'_{name}_loop', _Loop(self, [0]))


def test_streams_fused_streams_and_other_models_pass_and_only_the_run_s_loops_are_read():
    # a fast/slow recognizer whose slow backbone takes T=3 where the sampler's stream takes 5
    cfg = load_config(str(DOCTOR_CONFIGS / 'fast_slow_num_frames.py'))
    with pytest.raises(ValueError) as error:
        NumFramesHook().before_run(_Runner(cfg, 'train'))
    assert str(error.value) == (
        "train_dataloader.dataset.pipeline[1]: HyperframeSampleFrames samples T=5 frames for "
        "stream 'slow' but the backbone for stream 'slow' takes num_frames=3 (9 channels): it "
        "will refuse the 15-channel input; use one T in both: num_frames=3 in the sampler for "
        "stream 'slow', or num_frames=5 in the backbone for stream 'slow'")
    cfg.model.backbone.slow.num_frames = 5
    NumFramesHook().before_run(_Runner(cfg, 'train', 'val'))
    # two T=5 streams stacked into one hyperframe: a T=10 backbone
    cfg = load_config(str(DOCTOR_CONFIGS / 'early_fusion_num_frames.py'))
    with pytest.raises(ValueError, match=r'^train_dataloader\.dataset\.pipeline\[1\]: '
                       r'HyperframeSampleFrames samples T=5 \(fast\) \+ 5 \(slow\) = 10 frames'):
        NumFramesHook().before_run(_Runner(cfg, 'train'))
    cfg.model.backbone.num_frames = 10
    NumFramesHook().before_run(_Runner(cfg, 'train', 'val', 'test'))
    # a test pipeline of another T is not read by a training, which does not run it
    cfg.test_dataloader = dict(cfg.test_dataloader, dataset=dict(
        cfg.test_dataloader.dataset, pipeline=[dict(type='SampleFrames', clip_len=3)]))
    NumFramesHook().before_run(_Runner(cfg, 'train', 'val'))
    with pytest.raises(ValueError, match=r'^test_dataloader\.dataset\.pipeline\[0\]: '):
        NumFramesHook().before_run(_Runner(cfg, 'test'))
    # mmaction2's TSM: no hyperframe backbone, whatever its sampler's clip_len
    cfg.model = dict(type='Recognizer2D', backbone=dict(type='ResNetTSM', depth=18, num_segments=8),
                     cls_head=dict(type='TSMHead', num_classes=4, in_channels=512))
    NumFramesHook().before_run(_Runner(cfg, 'test'))

