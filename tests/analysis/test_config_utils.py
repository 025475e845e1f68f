"""config_utils.set_epochs: a schedule shortened or stretched keeps its shape."""
import pytest
from mmengine.config import Config

from hyperframes_mm.analysis.config_utils import set_epochs


def _schedule():
    return Config(dict(train_cfg=dict(max_epochs=30, val_interval=10), param_scheduler=[
        dict(type='LinearLR', begin=0, end=3),
        dict(type='CosineAnnealingLR', T_max=27, begin=3, end=30)]))


def test_set_epochs_scales_every_scheduler():
    cfg = _schedule()
    set_epochs(cfg, 10)
    assert cfg.train_cfg == dict(max_epochs=10, val_interval=10)
    assert cfg.param_scheduler == [dict(type='LinearLR', begin=0, end=1),
                                   dict(type='CosineAnnealingLR', T_max=9, begin=1, end=10)]
    set_epochs(cfg, 1)
    assert cfg.train_cfg.val_interval == 1
    assert [(s['begin'], s['end']) for s in cfg.param_scheduler] == [(0, 1), (0, 1)]


def test_set_epochs_stretches_and_keeps_the_same_length():
    cfg = _schedule()
    set_epochs(cfg, 30)
    assert cfg.param_scheduler == _schedule().param_scheduler
    set_epochs(cfg, 60)
    assert cfg.train_cfg == dict(max_epochs=60, val_interval=10)
    assert cfg.param_scheduler[1] == dict(type='CosineAnnealingLR', T_max=54, begin=6, end=60)


def test_set_epochs_keeps_schedulers_back_to_back():
    # 3 warm-up epochs of 60 become 0.6 of 12: both sides of the seam round the same way
    cfg = Config(dict(train_cfg=dict(max_epochs=60, val_interval=20), param_scheduler=[
        dict(type='LinearLR', begin=0, end=3),
        dict(type='CosineAnnealingLR', T_max=57, begin=3, end=60)]))
    set_epochs(cfg, 12)
    assert cfg.param_scheduler == [dict(type='LinearLR', begin=0, end=1),
                                   dict(type='CosineAnnealingLR', T_max=11, begin=1, end=12)]


@pytest.mark.parametrize('epochs', [0, -3, 2.5])
def test_set_epochs_refuses_a_bad_count(epochs):
    with pytest.raises(ValueError, match='epochs must be a positive int'):
        set_epochs(_schedule(), epochs)
