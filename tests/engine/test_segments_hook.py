"""A clip's hyperframes (HyperframeStack(segments)) against the shifted backbone's num_segments:
where they differ the model mixed hyperframes of other samples, scoring with no error."""
import pytest
import torch
from mmaction.registry import MODELS
from mmaction.structures import ActionDataSample
from mmengine.dataset import Compose
from mmengine.logging import MMLogger
from mmengine.runner import BaseLoop
from torch.utils.data import DataLoader

from hyperframes_mm.apis import init_recognizer
from hyperframes_mm.engine import SegmentsHook, check_stacked_segments

from ..conftest import SINGLE_CONFIG


def shifted_recognizer(segments: int = 2):
    """A small HyperMobileNetV2 recognizer shifting between ``segments`` T=2 hyperframes."""
    model = MODELS.build(dict(
        type='Recognizer2D',
        backbone=dict(type='HyperMobileNetV2', num_frames=2, num_segments=segments,
                      widen_factor=0.25),
        cls_head=dict(type='TSMHead', num_classes=3, in_channels=1280, num_segments=segments,
                      is_shift=True, average_clips='prob'),
        data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[0.0] * 3,
                               std=[1.0] * 3)))
    return model.eval()


def test_a_batch_of_other_clips_is_scored_silently_by_the_model_alone():
    """Why the check is needed: 2 samples of 3 hyperframes at num_segments=2 make 6, a multiple
    of 2, and the model answers for both samples, its pairs straddling them."""
    model = shifted_recognizer(2)
    inputs = torch.rand(2, 3, 6, 32, 32) * 255
    samples = [ActionDataSample() for _ in range(2)]
    with torch.no_grad():
        predicted = model.test_step(dict(inputs=list(inputs), data_samples=samples))
    assert len(predicted) == 2
    with pytest.raises(ValueError, match=r'^the test pipeline: HyperframeStack\(segments=3\) '
                       r'makes 3 hyperframe\(s\) a clip, and the backbone '
                       r'HyperMobileNetV2\(num_segments=2\) shifts features between each 2: it '
                       r'would mix hyperframes of other clips or samples'):
        check_stacked_segments(model, [3], 'the test pipeline')
    check_stacked_segments(model, [2, 2], 'the test pipeline')
    check_stacked_segments(model, [], 'a pipeline without HyperframeStack')


def test_models_that_shift_nothing_or_shift_clips_are_not_checked():
    """An unshifted hyperframe backbone mixes nothing; mmaction2's TSM backbones shift between
    a sample's clips, which any pipeline may make (T=1 hyperframes among them)."""
    check_stacked_segments(shifted_recognizer(1), [2], 'x')
    tsm = MODELS.build(dict(type='Recognizer2D',
                            backbone=dict(type='ResNetTSM', depth=18, num_segments=8),
                            cls_head=dict(type='TSMHead', num_classes=3, in_channels=512)))
    check_stacked_segments(tsm, [1], 'x')


class _Loop(BaseLoop):
    def run(self):
        pass


class _Runner:
    """What the hook reads of a runner: its model and built loops."""

    def __init__(self, model, **datasets):
        self.model = model
        self.logger = MMLogger.get_current_instance()
        for name, dataset in datasets.items():
            setattr(self, f'_{name}_loop', _Loop(self, DataLoader(dataset)))


class _Dataset(torch.utils.data.Dataset):
    def __init__(self, segments):
        self.pipeline = Compose([dict(type='HyperframeStack', segments=segments),
                                 dict(type='PackActionInputs')])

    def __len__(self):
        return 1


class _Wrapper(torch.utils.data.Dataset):
    """A dataset wrapper as mmengine's and the plugin's are: the wrapped one as ``dataset``."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return 1


def test_the_hook_checks_every_loop_before_the_run(tmp_path):
    model = shifted_recognizer(2)
    SegmentsHook().before_run(_Runner(model, train=_Dataset(2), test=_Dataset(2)))
    with pytest.raises(ValueError, match=r'^the val pipeline: HyperframeStack\(segments=1\)'):
        SegmentsHook().before_run(_Runner(model, train=_Dataset(2),
                                          val=_Wrapper(_Dataset(1))))


def test_init_recognizer_refuses_a_test_pipeline_of_other_segments(tmp_path):
    """Streaming, export and inference build their model here, from the config alone."""
    stacked = SINGLE_CONFIG.replace("dict(type='HyperResNet', depth=18, num_frames=3, "
                                    "pretrained=None)",
                                    "dict(type='HyperMobileNetV2', num_frames=3, num_segments=2, "
                                    "widen_factor=0.25)")
    stacked = stacked.replace('in_channels=512', 'in_channels=1280')
    assert stacked.count('num_segments=2') == 1
    config = tmp_path / 'shifted.py'
    config.write_text(stacked)
    with pytest.raises(ValueError, match=rf'^{config}: test_pipeline: HyperframeStack'
                       r'\(segments=1\) makes 1 hyperframe\(s\) a clip, and the backbone '
                       r'HyperMobileNetV2'):
        init_recognizer(config, device='cpu')
    config.write_text(stacked.replace("dict(type='HyperframeStack')",
                                      "dict(type='HyperframeStack', segments=2)")
                      .replace('num_frames=3, interval=2, num_clips=2',
                               'num_frames=6, interval=1, num_clips=2'))
    init_recognizer(config, device='cpu')
