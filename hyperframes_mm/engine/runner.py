"""The plugin's runner: mmengine's ``Runner`` with verified checkpoint loads, a resume that
survives a kill, and multi-process training on CPU-only machines.

Chosen by the config (``runner_type='HyperframeRunner'``, as
``configs/_base_/default_runtime.py`` sets it): mmaction2's own ``tools/train.py`` and
``tools/test.py`` build ``RUNNERS.build(cfg)`` when a config names a runner type, so they run it
unchanged. Nothing of mmengine is replaced: a config without ``runner_type`` gets mmengine's
stock runner, whatever else it imports.
"""
from typing import Callable, Union

from mmengine.model import is_model_wrapper
from mmengine.runner import Runner, find_latest_checkpoint
from mmengine.runner.checkpoint import _load_checkpoint_to_model

from mmaction.registry import RUNNERS
from .checkpoint import (load_verified, mismatch_error, newest_intact_checkpoint,
                         verify_checkpoint_file)
from .distributed import accelerator_available, init_cpu_process_group, wrap_cpu_model


@RUNNERS.register_module()
class HyperframeRunner(Runner):
    """``Runner`` whose checkpoint loads are checked and whose ``--resume`` survives a kill.

    - Every checkpoint it loads (``load_from``, ``--resume``, ``tools/test.py``'s checkpoint)
      goes through :func:`~hyperframes_mm.engine.checkpoint.load_verified`: a truncated or
      damaged file, a file that weights-only loading refuses (a code payload) and one holding
      NaN or Inf are refused with an error naming the file; the globals of mmengine's own
      checkpoints are allowed for that load only.
    - When it only evaluates (``tools/test.py``: :meth:`test`, :meth:`val`), the checkpoint
      must be the model's: a file that lacks some of the model's weights or holds others raises
      :class:`~hyperframes_mm.engine.checkpoint.CheckpointMismatchError` naming it. mmengine
      loads non-strictly, which fine-tuning needs (``load_from`` a file with another head) and
      keeps here for training, but which would score a network that is partly its initial
      weights, with no more than a warning in the log.
    - ``--resume`` without a path resumes from the file ``last_checkpoint`` names, or, when that
      file is missing or damaged (a run killed while saving), from the newest intact checkpoint
      of the work dir, saying so in the log.
    - With the ``pytorch`` launcher on a machine without an accelerator, the process group
      starts with ``gloo`` and without ``torch.cuda.set_device``, and the model is wrapped in
      DDP with ``device_ids=None`` (:mod:`hyperframes_mm.engine.distributed`); with an
      accelerator, mmengine's own code runs.

    Every argument is ``Runner``'s.
    """

    #: load checkpoints strictly: set while the runner only evaluates
    _evaluating = False

    def test(self) -> dict:
        return self._evaluate(super().test)

    def val(self) -> dict:
        return self._evaluate(super().val)

    def _evaluate(self, run: Callable[[], dict]) -> dict:
        self._evaluating = True
        try:
            return run()
        finally:
            self._evaluating = False

    def setup_env(self, env_cfg: dict) -> None:
        # mmengine's init_dist calls torch.cuda.set_device; starting the group first makes
        # Runner.setup_env skip it (it initialises only when no group exists).
        if self.distributed and self.launcher == 'pytorch' and not accelerator_available():
            from torch import distributed as torch_dist
            if not torch_dist.is_initialized():
                init_cpu_process_group(**env_cfg.get('dist_cfg', {}))
        super().setup_env(env_cfg)

    def wrap_model(self, model_wrapper_cfg, model):
        if self.distributed and not accelerator_available() and not is_model_wrapper(model):
            return wrap_cpu_model(self, model_wrapper_cfg, model)
        return super().wrap_model(model_wrapper_cfg, model)

    def load_or_resume(self) -> None:
        if self._has_loaded or not (self._resume and self._load_from is None):
            return super().load_or_resume()
        resume_from = latest_intact_checkpoint(self.work_dir, self.logger.warning)
        if resume_from is not None:
            self.logger.info(f'Auto resumed from the latest checkpoint {resume_from}.')
            self.resume(resume_from)
        self._has_loaded = True

    def load_checkpoint(self, filename: str, map_location: Union[str, Callable] = 'cpu',
                        strict: bool = False, revise_keys: list = [(r'^module.', '')]):
        # Runner.load_checkpoint, with load_verified in place of _load_checkpoint
        checkpoint = load_verified(filename, map_location=map_location)
        self.call_hook('after_load_checkpoint', checkpoint=checkpoint)
        model = self.model.module if is_model_wrapper(self.model) else self.model
        strict = strict or self._evaluating
        try:
            checkpoint = _load_checkpoint_to_model(model, checkpoint, strict,
                                                   revise_keys=revise_keys)
        except RuntimeError as error:
            if not strict:
                raise
            raise mismatch_error(filename, error) from error
        self._has_loaded = True
        self.logger.info(f'Load checkpoint from {filename}')
        return checkpoint


def latest_intact_checkpoint(work_dir: str, warn: Callable[[str], None] = print):
    """The checkpoint ``--resume`` should continue from: the one ``last_checkpoint`` names when
    it exists and is intact, else the newest intact ``epoch_N``/``iter_N.pth`` of ``work_dir``
    (``warn`` says why), else None.

    mmengine's ``CheckpointHook`` deletes the oldest checkpoint before writing the new one and
    writes ``last_checkpoint`` non-atomically, so a kill while saving can leave it naming a
    deleted, truncated or empty file (:class:`~hyperframes_mm.engine.hooks.SafeCheckpointHook`
    avoids both; runs saved by the stock hook still resume).
    """
    named = find_latest_checkpoint(work_dir)
    problem = 'is missing or empty' if not named else None
    if named:
        try:
            verify_checkpoint_file(named)
            return named
        except FileNotFoundError:
            problem = f'names {named!r}, which does not exist'
        except RuntimeError as error:
            problem = f'names a damaged file ({error})'
    fallback = newest_intact_checkpoint(work_dir)
    if fallback is not None:
        warn(f'last_checkpoint in {work_dir} {problem} (a run killed while saving); resuming '
             f'from the newest intact checkpoint {fallback} instead.')
    return fallback
