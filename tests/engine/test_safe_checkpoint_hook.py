"""SafeCheckpointHook's order (save, point last_checkpoint, prune) and every zoo config's engine
parts, which come from configs/_base_/default_runtime.py."""
import logging
import os

import pytest
from mmengine.config import Config
from mmengine.logging import MessageHub

from hyperframes_mm.engine import AtomicLocalBackend, SafeCheckpointHook
from ..conftest import REPO

RUNTIME = REPO / 'configs' / '_base_' / 'default_runtime.py'
ZOO = sorted((REPO / 'configs' / 'hyperframes').rglob('*.py'))
#: runner_type, checkpoint hook, its backend_args, whether it keeps a best checkpoint
ENGINE_PARTS = ('HyperframeRunner', 'SafeCheckpointHook', {'backend': 'atomic_local'}, False)


class _Runner:
    """What the hook reads of a runner; ``save_checkpoint`` records the files it finds."""

    def __init__(self, work_dir) -> None:
        self.work_dir = str(work_dir)
        self.logger = logging.getLogger(__name__)
        self.message_hub = MessageHub.get_instance(f'safe_hook_{work_dir.name}')
        self.found_while_saving = []

    def save_checkpoint(self, out_dir, filename, *args, backend_args=None, **kwargs) -> None:
        self.found_while_saving.append(sorted(os.listdir(out_dir)))
        assert backend_args == dict(backend='atomic_local')
        AtomicLocalBackend().put(filename.encode(), os.path.join(out_dir, filename))


def test_saves_then_points_last_checkpoint_then_prunes(tmp_path):
    runner = _Runner(tmp_path)
    hook = SafeCheckpointHook(interval=1, max_keep_ckpts=2,
                              backend_args=dict(backend='atomic_local'))
    hook.before_train(runner)
    for step in (1, 2, 3, 4):
        hook._save_checkpoint_with_step(runner, step, meta={})
        assert (tmp_path / 'last_checkpoint').read_text() == str(tmp_path / f'epoch_{step}.pth')
    # the oldest kept checkpoint is still there while the next one is written
    assert runner.found_while_saving[2:] == [
        ['epoch_1.pth', 'epoch_2.pth', 'last_checkpoint'],
        ['epoch_2.pth', 'epoch_3.pth', 'last_checkpoint']]
    assert sorted(os.listdir(tmp_path)) == ['epoch_3.pth', 'epoch_4.pth', 'last_checkpoint']
    assert runner.message_hub.get_info('keep_ckpt_ids') == [3, 4]


def test_each_checkpoint_counts_itself_among_the_kept_so_a_resumed_run_prunes_it(tmp_path):
    """The kept steps were counted after the save, so a checkpoint recorded them without
    itself: every --resume left the checkpoint it resumed from beyond max_keep_ckpts for good."""
    runner = _Runner(tmp_path)
    recorded = []
    save = runner.save_checkpoint

    def save_recording(*args, **kwargs):
        recorded.append(list(runner.message_hub.get_info('keep_ckpt_ids')))
        save(*args, **kwargs)
    runner.save_checkpoint = save_recording
    hook = SafeCheckpointHook(interval=1, max_keep_ckpts=2,
                              backend_args=dict(backend='atomic_local'))
    hook.before_train(runner)
    for step in (1, 2):
        hook._save_checkpoint_with_step(runner, step, meta={})
    assert recorded == [[1], [1, 2]]
    # a run resumed from epoch_2.pth starts from what that checkpoint recorded
    resumed = _Runner(tmp_path)
    resumed.message_hub = MessageHub.get_instance(f'resumed_{tmp_path.name}')
    resumed.message_hub.update_info('keep_ckpt_ids', recorded[-1])
    hook = SafeCheckpointHook(interval=1, max_keep_ckpts=2,
                              backend_args=dict(backend='atomic_local'))
    hook.before_train(resumed)
    for step in (3, 4):
        hook._save_checkpoint_with_step(resumed, step, meta={})
    assert sorted(os.listdir(tmp_path)) == ['epoch_3.pth', 'epoch_4.pth', 'last_checkpoint']


def test_saving_a_step_again_prunes_nothing(tmp_path):
    runner = _Runner(tmp_path)
    hook = SafeCheckpointHook(interval=1, max_keep_ckpts=1)
    hook.before_train(runner)
    hook.backend_args = dict(backend='atomic_local')
    for step in (1, 1):
        hook._save_checkpoint_with_step(runner, step, meta={})
    assert sorted(os.listdir(tmp_path)) == ['epoch_1.pth', 'last_checkpoint']


@pytest.mark.parametrize('path', ZOO, ids=lambda path: str(path.relative_to(REPO / 'configs')))
def test_every_zoo_config_has_the_engine_parts(path):
    cfg = Config.fromfile(str(path))
    checkpoint = cfg.default_hooks.checkpoint
    assert (cfg.get('runner_type'), checkpoint.type, checkpoint.get('backend_args'),
            'save_best' in checkpoint) == ENGINE_PARTS


def test_a_users_config_gets_them_with_one_base_line(tmp_path):
    """The line docs/reliability.md gives, in a config with its own base and settings."""
    (tmp_path / 'my_model.py').write_text("model = dict(type='Recognizer2D')\n")
    user = tmp_path / 'my_tsn.py'
    user.write_text(f"_base_ = ['my_model.py', {str(RUNTIME)!r}]\n"
                    "default_hooks = dict(checkpoint=dict(max_keep_ckpts=5))\n")
    cfg = Config.fromfile(str(user))
    checkpoint = cfg.default_hooks.checkpoint
    assert (cfg.runner_type, checkpoint.type, checkpoint.backend_args,
            'save_best' in checkpoint) == ENGINE_PARTS
    assert cfg.custom_imports.imports == ['hyperframes_mm']
    assert (cfg.model.type, checkpoint.max_keep_ckpts) == ('Recognizer2D', 5)
