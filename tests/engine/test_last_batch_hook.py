"""A training list whose last batch holds one sample, checked before the first epoch."""
import pytest
import torch
from mmengine.config import Config

from hyperframes_mm.engine import LastBatchHook
from hyperframes_mm.engine.last_batch_hook import epoch_share, holds_one

from ..conftest import TINY_CONFIG


def _runner(runner_of, batch_size, side, drop_last=False):
    """The tiny config (16 training clips) at ``batch_size``, frames resized to ``side``."""
    pipeline = Config.fromfile(str(TINY_CONFIG)).train_dataloader.dataset.pipeline
    for step in pipeline:
        if step['type'] == 'Resize':
            step['scale'] = (side, side)
    return runner_of(**{'train_dataloader.batch_size': batch_size,
                        'train_dataloader.drop_last': drop_last,
                        'train_dataloader.dataset.pipeline': pipeline})


def test_a_last_batch_of_one_sample_the_model_cannot_train_on_stops_before_training(
        runner_of):
    """ResNet-18 at 32x32 ends on a 1x1 map: a batch of one sample gave its batch norm one value
    a channel, and torch raised at the last step of the first epoch, nothing saved."""
    runner = _runner(runner_of, batch_size=5, side=32)
    with pytest.raises(ValueError) as refused:
        runner.train()
    assert str(refused.value) == (
        'the training list gives 16 samples an epoch (per process), 3 batches of 5 and a last '
        'batch of 1 sample, and the model cannot train on one sample: its batch norm says '
        '"Expected more than 1 value per channel when training, got input size '
        'torch.Size([1, 512, 1, 1])". It would fail at the last step of the first epoch, with '
        'nothing saved. Set '
        'train_dataloader.drop_last=True (one sample an epoch is skipped, another each epoch '
        'when shuffled), or a batch size that leaves no single sample.')
    assert runner.iter == 0
    # ahead of every hook's before_train: int8-aware fine-tuning attaches its rounding there,
    # which the probe's forward pass would otherwise feed
    assert type(runner.hooks[0]).__name__ == 'LastBatchHook'


def test_a_model_that_trains_on_one_sample_passes_and_keeps_its_norms(runner_of):
    runner = _runner(runner_of, batch_size=5, side=56)
    loader = runner.train_loop.dataloader
    assert epoch_share(loader) == (16, 5, False) and holds_one(epoch_share(loader))
    before = {name: buffer.clone() for name, buffer in runner.model.named_buffers()}
    runner.model.eval()
    runner.model.backbone.layer1.train()  # a mode of its own, as a frozen stage's inverse
    import random

    import numpy as np
    generators = (random.random(), np.random.random(), torch.rand(1))
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    LastBatchHook().before_train(runner)  # one forward pass of one sample, in training mode
    after = dict(runner.model.named_buffers())
    assert before.keys() == after.keys()
    for name, buffer in before.items():  # the running statistics are put back exactly
        torch.testing.assert_close(after[name], buffer, rtol=0, atol=0)
    # every module's mode and the random draws the run makes next are as they were
    assert not runner.model.training and runner.model.backbone.layer1.training
    assert not runner.model.backbone.layer2.training
    drawn = (random.random(), np.random.random(), torch.rand(1))
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    assert drawn == (random.random(), np.random.random(), torch.rand(1)) != generators


def test_only_a_last_batch_of_one_sample_is_tried(runner_of):
    # 16 = 4 x 4, and 16 = 3 x 5 + 1 dropped: nothing to try, whatever the input size
    for batch_size, drop_last in ((4, False), (5, True)):
        runner = _runner(runner_of, batch_size, 32, drop_last)
        assert not holds_one(epoch_share(runner.train_loop.dataloader))
        LastBatchHook().before_train(runner)


def test_a_batch_size_of_one_the_model_cannot_train_on_is_named(runner_of):
    """Every batch holds one sample: torch's bare batch norm error at the first step named
    neither the batch size nor the input size."""
    runner = _runner(runner_of, batch_size=1, side=32)
    assert epoch_share(runner.train_loop.dataloader) == (16, 1, False)
    with pytest.raises(ValueError) as refused:
        runner.train()
    assert str(refused.value) == (
        'train_dataloader.batch_size is 1, and the model cannot train on one sample: its batch '
        'norm says "Expected more than 1 value per channel when training, got input size '
        'torch.Size([1, 512, 1, 1])". It would fail at the first step. Set a batch size of 2 '
        'or more.')
    assert runner.iter == 0
    LastBatchHook().before_train(_runner(runner_of, batch_size=1, side=56))  # it trains there


def test_an_epoch_of_no_training_step_is_refused(runner_of):
    """16 clips in batches of 20 with drop_last=True: mmengine's loop ran each epoch without a
    step or a word, and saved the untrained model as its checkpoints, exit 0."""
    runner = _runner(runner_of, batch_size=20, side=56, drop_last=True)
    with pytest.raises(ValueError) as refused:
        runner.train()
    assert str(refused.value) == (
        'the training list gives 16 samples an epoch (per process), fewer than one batch of '
        '20, and drop_last=True drops them: every epoch would train no step and save the '
        'untrained model. Set a batch size of at most 16, or drop_last=False.')
    assert runner.iter == 0


def test_one_sample_an_epoch_is_not_told_to_drop_it(runner_of):
    """The advice for a last batch of one sample, drop_last=True, left a one-sample list an
    epoch of no step."""
    pipeline = Config.fromfile(str(TINY_CONFIG)).train_dataloader.dataset.pipeline
    for step in pipeline:
        if step['type'] == 'Resize':
            step['scale'] = (32, 32)
    runner = runner_of(**{'train_dataloader.batch_size': 2,
                          'train_dataloader.dataset.indices': 1,
                          'train_dataloader.dataset.pipeline': pipeline})
    with pytest.raises(ValueError) as refused:
        runner.train()
    assert str(refused.value).startswith(
        'the training list gives 1 samples an epoch (per process), 0 batches of 2 and a last '
        'batch of 1 sample, and the model cannot train on one sample')
    assert str(refused.value).endswith(
        'with nothing saved. Train on more samples: no batch size gives this list two a batch.')
