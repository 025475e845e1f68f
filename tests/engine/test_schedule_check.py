"""A parameter schedule that does not fit the training loop is named, with the options that
fit it: ``--cfg-options train_cfg.max_epochs=8`` on a family config kept its 50-epoch warm-up
+ cosine schedule, and the run ended at its peak learning rate without a word."""
from mmengine.config import Config
from mmengine.runner import Runner

from hyperframes_mm.engine.schedule_check import schedule_overruns

from ..conftest import REPO

UCF101 = REPO / ('configs/hyperframes/ucf101/'
                 'hyperframe_imagenet-pretrained-mobilenetv2_8xb32-5x2x1-50e_ucf101-split1-rgb.py')


def warm_up_then_cosine(max_epochs: int) -> Config:
    """sgd_warmup_cosine_50e.py's schedule, 5 epochs of warm-up then a cosine to epoch 50, in a
    training of ``max_epochs``."""
    return Config(dict(
        train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=max_epochs),
        param_scheduler=[
            dict(type='LinearLR', start_factor=0.1, by_epoch=True, begin=0, end=5,
                 convert_to_iter_based=True),
            dict(type='CosineAnnealingLR', T_max=45, eta_min=0, by_epoch=True, begin=5, end=50,
                 convert_to_iter_based=True)]))


def test_a_shortened_training_ends_inside_the_cosine():
    cfg = Config.fromfile(str(UCF101))
    assert schedule_overruns(cfg) == []  # the config as it is fits
    cfg.merge_from_dict({'train_cfg.max_epochs': 8})
    assert schedule_overruns(cfg) == [(
        'param_scheduler.1 (CosineAnnealingLR) ends at epoch 50 and anneals over T_max=45 '
        'epochs, to epoch 50, after train_cfg.max_epochs=8: the training stops inside it, at '
        'the value it has reached then (a warm-up\'s peak, a cosine not yet annealed)',
        'end it with the training: --cfg-options param_scheduler.1.end=8 '
        'param_scheduler.1.T_max=3')]


def test_a_training_shorter_than_the_warm_up_never_runs_the_cosine():
    assert schedule_overruns(warm_up_then_cosine(max_epochs=3)) == [
        ('param_scheduler.0 (LinearLR) ends at epoch 5, after train_cfg.max_epochs=3: the '
         'training stops inside it, at the value it has reached then (a warm-up\'s peak, a '
         'cosine not yet annealed)',
         'end it with the training: --cfg-options param_scheduler.0.end=3'),
        ('param_scheduler.1 (CosineAnnealingLR) begins at epoch 5, at or after '
         'train_cfg.max_epochs=3: it never runs, and the training ends at the value the '
         'schedulers before it leave',
         'begin it before epoch 3 (param_scheduler.1.begin and the end of the scheduler before '
         'it), remove it, or train for more than 5 epochs (train_cfg.max_epochs)')]


def test_t_max_alone_and_schedulers_without_an_end():
    cfg = Config(dict(train_cfg=dict(max_epochs=2, by_epoch=True), param_scheduler=dict(
        type='CosineAnnealingLR', T_max=4, by_epoch=True)))
    assert schedule_overruns(cfg) == [(
        'param_scheduler (CosineAnnealingLR) anneals over T_max=4 epochs, to epoch 4, after '
        'train_cfg.max_epochs=2: the training stops inside it, at the value it has reached then '
        '(a warm-up\'s peak, a cosine not yet annealed)',
        'end it with the training: --cfg-options param_scheduler.T_max=2')]
    cfg.param_scheduler.T_max = None  # end - begin: the end mmengine gives it, max_epochs
    assert schedule_overruns(cfg) == []


def test_an_iteration_based_loop_compares_iterations():
    cfg = Config(dict(train_cfg=dict(type='IterBasedTrainLoop', max_iters=100), param_scheduler=[
        dict(type='LinearLR', by_epoch=False, begin=0, end=500),
        dict(type='MultiStepLR', by_epoch=True, begin=0, end=50, milestones=[30])]))
    assert schedule_overruns(cfg) == [(
        'param_scheduler.0 (LinearLR) ends at iteration 500, after train_cfg.max_iters=100: the '
        'training stops inside it, at the value it has reached then (a warm-up\'s peak, a cosine '
        'not yet annealed)',
        'end it with the training: --cfg-options param_scheduler.0.end=100')]
    # by iteration under an epoch loop: its length in iterations depends on the data
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=60)
    assert schedule_overruns(cfg) == []


def test_one_list_per_optimizer_is_named_by_its_key():
    cfg = Config(dict(train_cfg=dict(max_epochs=4), param_scheduler=dict(
        generator=[dict(type='LinearLR', begin=4, end=6)])))
    [(message, fix)] = schedule_overruns(cfg)
    assert message.startswith('param_scheduler.generator.0 (LinearLR) begins at epoch 4, at or '
                              'after train_cfg.max_epochs=4: it never runs')
    assert fix.startswith('begin it before epoch 4 (param_scheduler.generator.0.begin')


def test_the_runner_warns_when_a_training_starts(runner_of, monkeypatch):
    """The tiny config's cosine has T_max=2 for its 2 epochs; a 1-epoch training stops halfway
    down it."""
    runner = runner_of(**{'train_cfg.max_epochs': 1})
    warned = []
    runner.logger.warning = warned.append
    monkeypatch.setattr(Runner, 'train', lambda self: 'trained')
    assert runner.train() == 'trained'
    assert warned == [
        'param_scheduler.0 (CosineAnnealingLR) anneals over T_max=2 epochs, to epoch 2, after '
        'train_cfg.max_epochs=1: the training stops inside it, at the value it has reached then '
        '(a warm-up\'s peak, a cosine not yet annealed) (end it with the training: '
        '--cfg-options param_scheduler.0.T_max=1)']


def test_a_scheduler_named_by_its_class_is_checked_as_by_its_name():
    """A pure-Python config gives the class itself as ``type``: the cosine's ``T_max`` was not
    recognised by name (and a substring test on a class raised)."""
    from mmengine.optim import CosineAnnealingLR
    cfg = warm_up_then_cosine(max_epochs=8)
    cfg.param_scheduler[1]['type'] = CosineAnnealingLR
    assert schedule_overruns(cfg) == schedule_overruns(warm_up_then_cosine(max_epochs=8))


def test_step_schedules_are_read_by_their_steps_not_their_end():
    """A MultiStepLR ending after the training was named with the fix ``end=50``, which
    changes nothing, while its milestone past the training went unnamed; a StepLR's or an
    exponential decay's end cuts nothing short; a scheduler without a type raised KeyError."""
    def config(*schedulers):
        return Config(dict(train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=50),
                           param_scheduler=list(schedulers)))
    assert schedule_overruns(config(dict(type='MultiStepLR', by_epoch=True, begin=0, end=100,
                                         milestones=[40, 80]))) == [(
        'param_scheduler.0 (MultiStepLR) steps at epochs [80], at or after '
        'train_cfg.max_epochs=50: the training ends before them, at the value the earlier '
        'steps leave',
        'move them before epoch 50 (param_scheduler.0.milestones), or train longer')]
    assert schedule_overruns(config(dict(type='MultiStepLR', by_epoch=True, end=100,
                                         milestones=[20, 40]),
                                    dict(type='StepLR', by_epoch=True, end=100, step_size=10),
                                    dict(type='ExponentialLR', by_epoch=True, end=100,
                                         gamma=0.9),
                                    dict(by_epoch=True, end=100))) == []
