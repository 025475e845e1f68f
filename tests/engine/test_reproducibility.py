"""Same seed, same run; a run killed with SIGKILL mid-epoch resumes to bit-identical weights."""
import random
import shutil
import signal

import numpy as np
import pytest
import torch
from mmengine.model import BaseModel
from torch import nn
from torch.utils.data import Dataset

from hyperframes_mm.engine import HyperframeRunner, epoch_seed
from hyperframes_mm.engine.hooks import seed_everything

from .conftest import load, train, train_scalars, write_config

#: 32-px frames, 2 epochs of 4 iterations (16 clips, batch 4), a checkpoint every epoch.
SMALL = ['train_dataloader.dataset.pipeline.3.scale=(32,32)',
         'val_dataloader.dataset.pipeline.3.scale=(32,32)', 'train_cfg.max_epochs=2']
EPOCH_SEED = "epoch_seed=dict(type='EpochSeedHook')"


@pytest.fixture(scope='module')
def reference_run(tiny_dataset, tmp_path_factory):
    """An uninterrupted 2-epoch run with the EpochSeedHook."""
    root = tmp_path_factory.mktemp('reference')
    config = write_config(root / 'config.py', default_hooks=EPOCH_SEED)
    train(config, root / 'work', tiny_dataset, SMALL)
    return root / 'work'


def _assert_same_training_state(left: dict, right: dict) -> None:
    assert left['state_dict'].keys() == right['state_dict'].keys()
    for name, tensor in left['state_dict'].items():
        assert torch.equal(tensor, right['state_dict'][name]), name
    for index, state in left['optimizer']['state'].items():
        assert torch.equal(state['momentum_buffer'],
                           right['optimizer']['state'][index]['momentum_buffer'])
    assert left['param_schedulers'] == right['param_schedulers']


def test_epoch_seed_values():
    assert epoch_seed(0, 0) == 2968811710
    assert epoch_seed(0, 1) == 3964924996
    assert epoch_seed(1, 0) == 1835504127  # not seed + epoch: run 1's epoch 0 != run 0's epoch 1
    assert epoch_seed(0, 1, rank=1) == 901243215
    with pytest.raises(ValueError):
        epoch_seed(-1, 0)


def test_seed_everything_resets_every_generator():
    seed_everything(7)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.fixture(scope='module')
def killed_run(tiny_dataset, tmp_path_factory):
    """The same run, killed with SIGKILL after iteration 2 of epoch 2 (6 of 8 iterations)."""
    root = tmp_path_factory.mktemp('killed')
    config = write_config(root / 'config.py', default_hooks=EPOCH_SEED,
                          custom_hooks="dict(type='SigkillHook', epoch=2, iteration=2)")
    result = train(config, root / 'work', tiny_dataset, SMALL, check=False)
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    return root / 'work'


def test_same_seed_gives_identical_losses(reference_run, killed_run):
    """Two processes, same seed, deterministic mode: the 6 iterations both ran are identical."""
    expected, got = train_scalars(reference_run), train_scalars(killed_run)
    assert len(expected) == 8
    # scalars.json is appended every iteration (stdout died in its buffer with the kill).
    assert [record['iter'] for record in got] == [1, 2, 3, 4, 5, 6]
    for key in ('loss', 'grad_norm', 'lr'):
        assert [record[key] for record in got] == [record[key] for record in expected[:6]], key


def test_sigkill_mid_epoch_then_resume_reaches_the_same_weights(reference_run, killed_run,
                                                                 tiny_dataset, tmp_path):
    assert (killed_run / 'epoch_1.pth').is_file() and not (killed_run / 'epoch_2.pth').exists()
    assert (killed_run / 'last_checkpoint').read_text().endswith('epoch_1.pth')
    work = tmp_path / 'work'
    shutil.copytree(killed_run, work)
    # as mmengine's stock hook leaves a kill while it saves epoch 2: last_checkpoint names a
    # file that was never completed; the config's runner resumes from the newest intact one
    (work / 'last_checkpoint').write_text(str(work / 'epoch_2.pth'))
    config = write_config(tmp_path / 'resume.py', default_hooks=EPOCH_SEED)
    result = train(config, work, tiny_dataset, SMALL, extra=['--resume'])
    log = result.stdout + result.stderr
    assert f"names {str(work / 'epoch_2.pth')!r}, which does not exist" in log
    assert f"resuming from the newest intact checkpoint {work / 'epoch_1.pth'}" in log
    assert 'resumed epoch: 1, iter: 4' in log
    _assert_same_training_state(load(work / 'epoch_2.pth'), load(reference_run / 'epoch_2.pth'))


class _RandomDraws(Dataset):
    """Each sample is what Python, numpy and torch draw in the worker that loads it."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> dict:
        return dict(inputs=torch.tensor([random.random(), np.random.rand(), torch.rand(1).item()],
                                        dtype=torch.float64))


class _RecordingModel(BaseModel):
    """Records the inputs of every training step; its one weight never changes (lr 0)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.seen = []

    def forward(self, inputs, data_samples=None, mode='tensor'):
        self.seen.append(torch.stack(inputs))
        return dict(loss=self.weight.sum() * 0)


def _draws_per_epoch(work_dir, hooks, **resume) -> list:
    model = _RecordingModel()
    # the plugin's runner, as the configs name it: mmengine's own cannot resume its checkpoints
    # under torch's weights-only default
    runner = HyperframeRunner(
        model=model, work_dir=str(work_dir), experiment_name=work_dir.name,
        train_dataloader=dict(dataset=_RandomDraws(), batch_size=2, num_workers=1,
                              persistent_workers=False, collate_fn=dict(type='pseudo_collate'),
                              sampler=dict(type='DefaultSampler', shuffle=False)),
        train_cfg=dict(by_epoch=True, max_epochs=2),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.0)),
        default_hooks=dict(hooks, logger=None, checkpoint=dict(type='CheckpointHook',
                                                               interval=1)),
        randomness=dict(seed=0), default_scope='mmaction', **resume)
    runner.train()
    return [torch.cat(model.seen[i:i + 2]) for i in range(0, len(model.seen), 2)]


def test_epoch_seed_hook_reseeds_dataloader_workers(tmp_path):
    """With workers, mmengine alone repeats one epoch's draws every epoch; with the hook each
    epoch draws anew, and a run resumed from the epoch-1 checkpoint draws the same."""
    plain = _draws_per_epoch(tmp_path / 'plain', {})
    assert torch.equal(plain[0], plain[1])
    hooked = _draws_per_epoch(tmp_path / 'hooked', dict(epoch_seed=dict(type='EpochSeedHook')))
    assert not torch.equal(hooked[0], hooked[1])
    resumed = _draws_per_epoch(tmp_path / 'resumed', dict(epoch_seed=dict(type='EpochSeedHook')),
                               resume=True, load_from=str(tmp_path / 'hooked/epoch_1.pth'))
    assert len(resumed) == 1 and torch.equal(resumed[0], hooked[1])
