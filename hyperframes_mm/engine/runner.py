"""The plugin's runner: mmengine's ``Runner`` with verified checkpoint loads, a resume that
survives a kill, and multi-process training on CPU-only machines.

Chosen by the config (``runner_type='HyperframeRunner'``, as
``configs/_base_/default_runtime.py`` sets it): mmaction2's own ``tools/train.py`` and
``tools/test.py`` build ``RUNNERS.build(cfg)`` when a config names a runner type, so they run it
unchanged. Nothing of mmengine is replaced: a config without ``runner_type`` gets mmengine's
stock runner, whatever else it imports.
"""
import copy
import os
import os.path as osp
import re
from pathlib import Path
from typing import Callable, Iterator, Optional, Tuple, Union

from mmengine.hooks import CheckpointHook, Hook
from mmengine.dist import get_rank, is_main_process, master_only
from mmengine.fileio import LocalBackend
from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapper, OptimWrapperDict
from mmengine.runner import Runner, find_latest_checkpoint
from mmengine.runner.checkpoint import _load_checkpoint_to_model

from mmaction.registry import RUNNERS
from .checkpoint import (CHECKPOINT_PATTERN, CheckpointMismatchError, CheckpointRefusedError,
                         check_input_basis, check_pretrained_inits, first_names, load_verified,
                         mismatch_error, newest_intact_checkpoint, timm_pretrained_nodes,
                         verify_checkpoint_file)
from .cache_hook import MissingVideosHook
from .class_count import ClassCountHook
from .distributed import accelerator_available, init_cpu_process_group, wrap_cpu_model
from .hooks import SafeCheckpointHook
from .last_batch_hook import LastBatchHook
from .num_frames_hook import HYPERFRAME_STEM, NumFramesHook
from .schedule_check import schedule_overruns
from .segments_hook import SegmentsHook


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
      of the work dir, saying so in the log; a file it names outside the work dir and outside
      the checkpoint hook's ``out_dir`` (a copied work dir) gives way to the work dir's own
      newest intact checkpoint, with a warning naming both (:func:`latest_intact_checkpoint`).
    - ``--resume`` takes only a training checkpoint of the config's model: mmengine reads the
      epoch and optimizer state by key after loading the weights non-strictly, so a bare state
      dict failed with ``KeyError: 'meta'`` and another model's checkpoint resumed with part of
      its weights, to fail at the first optimizer step. Such files raise
      :class:`~hyperframes_mm.engine.checkpoint.CheckpointRefusedError` naming the file, as does
      optimizer state of another optimizer; any other error restoring the training state
      keeps its type and gains a note naming the file.
    - ``load_from`` stays non-strict (fine-tuning replaces the head), but a checkpoint that
      shares no key with the model (another network, or keys under another prefix), or whose
      weights outside the head have other shapes (a conv1 of another T, a 2D network's), raises
      :class:`~hyperframes_mm.engine.checkpoint.CheckpointMismatchError` rather than training
      those weights from their initial values; a 2D network's file (the backbone's weights
      alone) is told to go in ``model.backbone.pretrained``.
    - Every load refuses a hyperframe checkpoint whose config (``meta['cfg']``) says its
      backbone read another input encoding than the model's (``ValueError``,
      :func:`~hyperframes_mm.engine.checkpoint.check_input_basis`).
    - ``--resume`` in a work dir whose checkpoints are all damaged raises
      :class:`~hyperframes_mm.engine.checkpoint.CheckpointRefusedError` naming them, rather
      than training from scratch over them; a training that does not resume warns, naming
      them, when the work dir holds an earlier run's checkpoints.
    - A module initialised through mmengine's non-strict ``Pretrained`` init whose file lacks
      some of its weights raises :class:`~hyperframes_mm.engine.checkpoint.
      CheckpointMismatchError` before training
      (:func:`~hyperframes_mm.engine.checkpoint.check_pretrained_inits`).
    - A top-level value of the config that differs from its file's (an override of a value
      the rest was computed from, ``num_frames``) is named in a warning
      (:func:`top_level_overrides`); so, when a training starts, is a parameter scheduler
      that ends (or anneals) after ``train_cfg.max_epochs`` or never runs, with the options
      that fit it (:func:`~hyperframes_mm.engine.schedule_check.schedule_overruns`): a
      ``--cfg-options train_cfg.max_epochs=8`` left the config's 50-epoch schedule as it was.
    - Before a loop runs, the labels it reads are checked against the head's classes, and the
      batch blending gets the head's width (:class:`~hyperframes_mm.engine.class_count.
      ClassCountHook`, registered by the runner): a config carried to another data set with
      a wrong count stops naming the list and its samples, not at the step that draws one;
      and the videos of every loop's lists are looked up (:class:`~hyperframes_mm.engine.
      cache_hook.MissingVideosHook`): a validation or test list naming a missing video stops
      ``tools/train.py`` before its first epoch, not at its first validation; and each
      loop's ``HyperframeStack(segments)`` must be the shifted backbone's ``num_segments``
      (:class:`~hyperframes_mm.engine.segments_hook.SegmentsHook`), which otherwise mixes
      hyperframes of other samples without an error; and each loop's sampled T must be the
      hyperframe backbone's ``num_frames`` (:class:`~hyperframes_mm.engine.num_frames_hook.
      NumFramesHook`, naming the pipeline's key): a validation pipeline of another T failed
      only at its first batch, after the training epochs before it; and a training list whose
      last batch holds one sample the model cannot train on stops before the first epoch, not
      at its last step (:class:`~hyperframes_mm.engine.last_batch_hook.LastBatchHook`).
    - The work dir's copy of the config is written once the run's checkpoint is loaded, and
      only by a training: mmengine wrote it while building the runner, so a ``tools/test.py``
      run in the work dir, or a run its checkpoint then refused, replaced the config its
      checkpoints were trained with. An evaluation writes its copy into its log dir.
    - With the ``pytorch`` launcher on a machine without an accelerator, the process group
      starts with ``gloo`` and without ``torch.cuda.set_device``, and the model is wrapped in
      DDP with ``device_ids=None`` (:mod:`hyperframes_mm.engine.distributed`); with an
      accelerator, mmengine's own code runs.

    Every argument is ``Runner``'s.
    """

    #: load checkpoints strictly: set while the runner only evaluates
    _evaluating = False
    #: load checkpoints strictly and require a training state: set while the runner resumes
    _resuming = False
    #: set while a validation loop runs (:class:`ValidationTracker`)
    _validating = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for line in top_level_overrides(self.cfg):
            self.logger.warning(f'{line} ({OVERRIDE_FIX})')

    def register_hooks(self, default_hooks=None, custom_hooks=None) -> None:
        super().register_hooks(default_hooks, custom_hooks)
        self.register_hook(ClassCountHook(), priority=ClassCountHook.priority)
        self.register_hook(MissingVideosHook(), priority=MissingVideosHook.priority)
        self.register_hook(SegmentsHook(), priority=SegmentsHook.priority)
        self.register_hook(NumFramesHook(), priority=NumFramesHook.priority)
        self.register_hook(LastBatchHook(), priority=LastBatchHook.priority)
        self.register_hook(ValidationTracker(), priority='VERY_HIGH')

    def train(self):
        # here, not in __init__: a tools/test.py run builds the runner with the same schedule
        for message, fix in schedule_overruns(self.cfg):
            self.logger.warning(f'{message} ({fix})')
        try:
            return super().train()
        except Exception:
            if self._validating:
                self._save_trained_epochs()
            raise

    def _save_trained_epochs(self) -> None:
        """A validation that failed (a damaged video in its list, say) ends the run after
        epochs its checkpoint interval has not saved yet: save them, as the config's checkpoint
        hook saves (``last_checkpoint`` pointed at the file), so that ``--resume`` continues
        from them once the validation data is fixed."""
        hook = next((hook for hook in self.hooks if isinstance(hook, CheckpointHook)), None)
        if hook is None or not hook.by_epoch or getattr(hook, 'out_dir', None) is None:
            return
        name = hook.filename_tmpl.format(self.epoch)
        # saved already only if this run saved it: a file of that name from an earlier run in
        # the work dir (which this run writes over) held back the save, and --resume then
        # continued the earlier run's weights
        if self.epoch < 1 or self.message_hub.get_info('last_ckpt') == \
                hook.file_backend.join_path(hook.out_dir, name):
            return
        meta = dict(epoch=self.epoch, iter=self.iter)
        try:
            if is_main_process():
                hook._save_checkpoint_with_step(self, self.epoch, meta)
            elif isinstance(hook, SafeCheckpointHook) and \
                    isinstance(hook.file_backend, LocalBackend):
                # mmengine saves from rank 0 alone, which waits in the validation's gather
                # that this rank never reaches until torchrun ends it: this rank saves. The
                # weights and optimizer state are every rank's (DDP all-reduces gradients);
                # the norms' running statistics are this rank's, as rank 0's would be its own
                hook._save_checkpoint_with_step(self, self.epoch, meta, this_rank=True)
            else:
                # the stock hook saves from rank 0 alone; a remote store has no rename
                how = ('SafeCheckpointHook saves them from this rank to a local out_dir'
                       if isinstance(hook, SafeCheckpointHook) else
                       f'{type(hook).__name__} saves from rank 0 alone; SafeCheckpointHook '
                       'saves them from this rank')
                self.logger.error(f'validation after epoch {self.epoch} failed (below) on rank '
                                  f'{get_rank()}, and the epochs trained since the last saved '
                                  f'checkpoint are not saved in {name}: rank 0 waits for this '
                                  f'rank in the validation; {how}')
                return
        except Exception as error:  # the validation's error, raised next, is the one to read
            self.logger.error(f'validation after epoch {self.epoch} failed (below), and saving '
                              f'the epochs trained in {name} failed too: {error!r}')
            return
        # mmengine's console shows only errors from a rank other than 0
        say = self.logger.warning if is_main_process() else self.logger.error
        say(f'validation after epoch {self.epoch} failed (below); the epochs trained are saved '
            f'in {name}: fix the validation data and train again with --resume to continue '
            'from them')

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

    def build_model(self, model):
        if isinstance(model, dict):
            model = copy.deepcopy(model)  # the check may build a backbone without its file
            self._check_timm_pretrained(model)
        return super().build_model(model)

    def _check_timm_pretrained(self, model: dict) -> None:
        """The files ``timm.*`` backbones load while they are built, checked first
        (:func:`~hyperframes_mm.engine.checkpoint.timm_pretrained_nodes`). A missing one is
        named; where a checkpoint gives the weights (``load_from``: ``tools/test.py``'s
        checkpoint, a fine-tuning; or the one ``--resume`` continues from in the work dir),
        the backbone is built without it, since what it would load is overwritten, and the
        check of that load (every backbone weight present) stands."""
        nodes = timm_pretrained_nodes(model)
        source = weights_checkpoint(self._load_from, self._resume, self._work_dir,
                                    checkpoint_out_dir(self.cfg)) if nodes else None
        for where, node in nodes:
            file = (node.get('pretrained_cfg_overlay') or {}).get('file')
            if file is None:
                continue  # timm's own download, where the machine has a network
            if osp.isfile(file):
                # timm also reads safetensors and numpy files, which carry no torch archive
                if osp.splitext(file)[1] in TORCH_SUFFIXES:
                    verify_checkpoint_file(file)
                continue
            if source:
                self.logger.info(f'{where} ({node["type"]}): its pretrained file {file} is not '
                                 f'here; built without it, its weights come from {source}')
                node['pretrained'] = False
                continue
            raise FileNotFoundError(
                f'{where} ({node["type"]}): its pretrained file {file} (pretrained_cfg_overlay.'
                'file) does not exist, and timm reads it while building the backbone. Convert '
                'the weights to that path (the config\'s README says how, and which variable '
                'points at another copy), or set pretrained=False to train from scratch.')

    def _init_model_weights(self) -> None:
        # only where the run initialises (training): a test loads a checkpoint over these
        # weights, strictly
        check_pretrained_inits(self.model.module if is_model_wrapper(self.model) else self.model)
        super()._init_model_weights()

    def dump_config(self) -> None:
        # mmengine writes the work dir's copy of the config while it builds the runner, so a
        # tools/test.py run there, or a run its checkpoint then refuses, replaced the copy of
        # the config the work dir's checkpoints were trained with: load_or_resume writes it
        # once the run's checkpoint is loaded (_write_config_copy)
        pass

    @master_only
    def _write_config_copy(self) -> None:
        """The run's config beside what the run writes: a training's in the work dir, where
        its checkpoints go; an evaluation's in its log dir (``<work dir>/<timestamp>``), since
        it writes no checkpoint and the work dir's copy stays the one of the checkpoints
        there."""
        name = (osp.basename(self.cfg.filename) if self.cfg.filename
                else f'{self.timestamp}.py')
        self.cfg.dump(osp.join(self.log_dir if self._evaluating else self.work_dir, name))

    def load_or_resume(self) -> None:
        self._load_or_resume()
        self._write_config_copy()

    def _load_or_resume(self) -> None:
        if not self._has_loaded and not self._resume and not self._evaluating:
            self._warn_of_earlier_checkpoints()
        if self._has_loaded or not (self._resume and self._load_from is None):
            return super().load_or_resume()
        resume_from = latest_intact_checkpoint(self.work_dir, self.logger.warning,
                                               checkpoint_out_dir(self.cfg))
        if resume_from is not None:
            self.logger.info(f'Auto resumed from the latest checkpoint {resume_from}.')
            self.resume(resume_from)
        self._has_loaded = True

    def _warn_of_earlier_checkpoints(self) -> None:
        """A training that does not resume writes ``epoch_N.pth`` over an earlier run's in the
        same work dir and leaves its later ones beside them, ``last_checkpoint`` pointing at the
        new run: say so before the first epoch, naming them (mmengine says nothing)."""
        if not osp.isdir(self.work_dir):
            return
        earlier = sorted((name for name in os.listdir(self.work_dir)
                          if CHECKPOINT_PATTERN.match(name)),
                         key=lambda name: int(CHECKPOINT_PATTERN.match(name).group(2)))
        if earlier:
            self.logger.warning(
                f'{self.work_dir} holds checkpoints of an earlier run ({", ".join(earlier)}); '
                'this run does not resume, so it writes over those of the epochs it trains and '
                'leaves the others beside its own: use another --work-dir, or --resume to '
                'continue that run')

    def resume(self, filename: str, resume_optimizer: bool = True,
               resume_param_scheduler: bool = True,
               map_location: Union[str, Callable] = 'default') -> None:
        self._resuming = True
        try:
            super().resume(filename, resume_optimizer, resume_param_scheduler, map_location)
        except CheckpointRefusedError:
            raise
        # Optimizer.load_state_dict and the schedulers raise for state of another setup without
        # the file's name; so do errors that are not the file's (a GPU count auto_scale_lr
        # refuses, memory), so the error stays theirs and only gains the file
        except (KeyError, ValueError, RuntimeError) as error:
            if resume_optimizer:
                # Optimizer.load_state_dict installs the saved groups before its own
                # __setstate__ reads another optimizer's per-parameter state (AdamW a 'step'
                # that SGD never saved): the groups then say whose state it is
                try:
                    check_optimizer_groups(self.optim_wrapper, filename)
                except CheckpointRefusedError as refused:
                    raise refused from error
            error.add_note(f'while resuming from {filename}')
            raise
        finally:
            self._resuming = False
        if resume_optimizer:
            check_optimizer_groups(self.optim_wrapper, filename)
        done = finished_training(self.train_loop)
        if done:
            # mmengine's loop then returns at once: exit 0, no epoch, no checkpoint, no word
            self.logger.warning(f'{filename} was saved {done}: this run trains nothing. Raise '
                                'it (and the schedulers\' end) to train on.')

    def load_checkpoint(self, filename: str, map_location: Union[str, Callable] = 'cpu',
                        strict: bool = False, revise_keys: list = [(r'^module.', '')]):
        # Runner.load_checkpoint, with load_verified in place of _load_checkpoint
        checkpoint = load_verified(filename, map_location=map_location)
        if self._resuming:  # before the hooks: EMAHook reads checkpoint['state_dict']
            check_training_checkpoint(checkpoint, filename)
        self.call_hook('after_load_checkpoint', checkpoint=checkpoint)
        model = self.model.module if is_model_wrapper(self.model) else self.model
        checkpoint = load_fitting(model, checkpoint, filename,
                                  strict or self._evaluating or self._resuming, revise_keys)
        self._has_loaded = True
        self.logger.info(f'Load checkpoint from {filename}')
        return checkpoint


class ValidationTracker(Hook):
    """Tells :class:`HyperframeRunner` whether a validation loop is running, so that a run
    that fails there saves its trained epochs first."""

    def before_val(self, runner) -> None:
        runner._validating = True

    def after_val(self, runner) -> None:
        runner._validating = False


#: the names of files torch.save writes, which a timm backbone's file is verified as
TORCH_SUFFIXES = ('.pth', '.pt', '.bin', '.tar', '.ckpt')
#: what Runner.resume reads from a checkpoint by key, beside the weights
TRAINING_STATE = ('meta.epoch', 'meta.iter', 'message_hub')


#: top-level settings the runner itself reads: an override of one takes effect
RUNNER_SETTINGS = frozenset({'work_dir', 'experiment_name', 'load_from', 'resume', 'launcher',
                             'default_scope', 'log_level', 'runner_type',
                             'find_unused_parameters', 'compile', 'sync_bn'})


def _holds(value, key: str, wanted) -> bool:
    """Whether a setting named ``key`` somewhere inside ``value`` is ``wanted``."""
    if isinstance(value, dict):
        return any((name == key and item == wanted) or _holds(item, key, wanted)
                   for name, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds(item, key, wanted) for item in value)
    return False


def _leaves(value, path=()) -> Iterator[Tuple[tuple, object]]:
    """``(path, value)`` of every plain value inside nested dicts and lists."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _leaves(item, path + (name, ))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index, ))
    else:
        yield path, value


def _followed(original: dict, current: dict, before, after) -> bool:
    """Whether a setting inside ``current`` was changed along with a top-level value: one
    that held ``before`` in ``original`` and holds ``after`` now, or, for a string, one made
    with it (``f'{data_root}/train.txt'``) and made with ``after`` now."""
    now = dict(_leaves(current))
    for path, then in _leaves(original):
        if not path or path not in now or now[path] == then:
            continue
        if then == before and now[path] == after:
            return True
        if (isinstance(before, str) and isinstance(after, str) and before
                and isinstance(then, str) and before in then
                and now[path] == then.replace(before, after)):
            return True
    return False


def top_level_overrides(cfg) -> list:
    """Warnings for the top-level values of ``cfg`` that differ from its file's where the
    change reached none of the settings inside the config (none went from the old value to
    the new one, and no string made with it changed with it), or a setting of the same name
    inside still holds the file's value: a config's own variables (``num_frames``,
    ``test_clips``, ``data_root``) are read when mmengine reads the file, so ``--cfg-options
    num_frames=3`` changes that value alone, and the run trains at the file's T while its saved
    config shows both. A change made with the settings that use it (a benchmark's edit) is not
    named; nor are values the runner reads itself, nor any of a config made in code (no
    file)."""
    from mmengine.config import Config
    filename = getattr(cfg, 'filename', None)
    if not filename or not osp.isfile(filename):
        return []
    try:
        original = Config.fromfile(filename)
    except Exception:  # an environment the file reads is gone: nothing to compare with
        return []
    lines = []
    current, file_values = cfg._cfg_dict.to_dict(), original._cfg_dict.to_dict()
    for key, value in cfg.items():
        if key in RUNNER_SETTINGS or key not in original or key.startswith('_'):
            continue
        before = original[key]
        if not isinstance(before, (bool, int, float, str)) or before == value:
            continue
        # settings inside: nested values only, not the other top-level scalars (two overrides
        # at once could otherwise read as one made with the other)
        inside = {name: item for name, item in current.items()
                  if name != key and isinstance(item, (dict, list, tuple))}
        if (_holds(current, key, before)
                or not _followed({name: item for name, item in file_values.items()
                                  if name in inside}, inside, before, value)):
            lines.append(f'{key} = {value!r} differs from the {before!r} of {filename}: the '
                         f'config\'s other settings were computed from {key} when the file was '
                         'read, so this override changes that value alone')
    return lines


#: what :func:`top_level_overrides`' warnings ask
OVERRIDE_FIX = 'override the keys that use it, or set it in a config of your own'


def finished_training(loop) -> str:
    """``'at epoch 3, and train_cfg.max_epochs is 3'`` where a resumed training ``loop`` has
    already reached its end (``max_iters`` for an iteration-based loop), else ''."""
    from mmengine.runner import IterBasedTrainLoop
    unit, done, end = (('iteration', '_iter', 'max_iters') if isinstance(loop, IterBasedTrainLoop)
                       else ('epoch', '_epoch', 'max_epochs'))
    reached, limit = getattr(loop, done, None), getattr(loop, end, None)
    if isinstance(reached, int) and isinstance(limit, int) and reached >= limit:
        return f'at {unit} {reached}, and train_cfg.{end} is {limit}'
    return ''


def load_fitting(model, checkpoint, filename: str, strict: bool,
                 revise_keys: list = [(r'^module.', '')]):
    """Load ``checkpoint`` (read from ``filename``) into ``model`` once it is checked to be
    this model's: a non-strict load of another model's file changes little or nothing and only
    prints the mismatch. Returns what ``_load_checkpoint_to_model`` returns.

    Raises:
        CheckpointMismatchError: naming ``filename`` and what does not fit.
    """
    check_shares_keys(model, checkpoint, filename, revise_keys)
    check_input_basis(model, checkpoint, filename)
    if not strict:  # a strict load names every mismatch itself (mismatch_error)
        check_shapes(model, checkpoint, filename, revise_keys)
    try:
        return _load_checkpoint_to_model(model, checkpoint, strict, revise_keys=revise_keys)
    except RuntimeError as error:
        if not strict:
            raise
        raise mismatch_error(filename, error) from error


def check_training_checkpoint(checkpoint, filename: str) -> None:
    """Refuse to resume from a checkpoint that lacks what ``Runner.resume`` reads by key (a
    bare state dict, or weights saved with a hand-made ``meta``), naming the file and the key.

    Raises:
        CheckpointRefusedError: naming ``filename`` and the first missing key.
    """
    for dotted in TRAINING_STATE:
        value, path = checkpoint, []
        for key in dotted.split('.'):
            path.append(key)
            if not isinstance(value, dict) or key not in value:
                raise CheckpointRefusedError(
                    f'{filename}: not a training checkpoint: it has no {".".join(path)!r}, which a '
                    'checkpoint saved by a training run (CheckpointHook) holds beside the '
                    'weights, so training cannot resume from it. To start a run from these '
                    f'weights, set load_from={filename!r} without --resume.')
            value = value[key]


def check_shares_keys(model, checkpoint, filename: str, revise_keys: list) -> None:
    """Refuse a checkpoint none of whose weights is the model's: a non-strict load of it
    changes nothing and only prints the mismatch, so training would silently start from
    scratch. Keys are revised as ``_load_checkpoint_to_model`` revises them. A file that holds
    the hyperframe backbone's weights alone (:func:`holds_backbone_weights`: a torchvision
    ImageNet ResNet's) is named as such, with where it goes: the user gave a 2D network's file
    as ``load_from``, and only the backbone's ``pretrained`` reads its layout and inflates it.

    Raises:
        CheckpointMismatchError: naming ``filename`` and a few keys of each side.
    """
    state_dict = checkpoint.get('state_dict', checkpoint) if isinstance(checkpoint, dict) \
        else checkpoint
    if not isinstance(state_dict, dict):
        raise CheckpointMismatchError(f'{filename}: holds a {type(state_dict).__name__}, not '
                                      'a state dict of weights')
    keys = list(state_dict)
    for pattern, replacement in revise_keys:
        keys = [re.sub(pattern, replacement, key) for key in keys]
    expected = list(model.state_dict())
    if expected and not set(keys) & set(expected):
        hint = (' Its weights are a backbone\'s alone, as a 2D network\'s file (an ImageNet '
                'ResNet\'s) holds them: such a file goes in `model.backbone.pretrained` (the '
                'backbone reads its layout and inflates its first conv), not in load_from.'
                if holds_backbone_weights(model, dict(zip(keys, state_dict.values())), expected)
                else '')
        raise CheckpointMismatchError(
            f'{filename}: no weight of the checkpoint is one of the model of the config, so '
            f'loading it would change nothing. It holds {first_names(keys) or "no keys"}; the '
            f'model has {first_names(expected)}.{hint}')


def holds_backbone_weights(model, state_dict: dict, expected: list) -> bool:
    """Whether most weights of ``state_dict`` are those of the model's hyperframe backbone (the
    model's keys: ``expected``) once read in that backbone's key layout, through the
    ``convert_checkpoint`` its ``pretrained`` reads files with (torchvision's ResNet layout, a
    timm network's): a 2D network's file, without the recognizer's ``backbone.`` and head."""
    convert = getattr(getattr(model, 'backbone', None), 'convert_checkpoint', None)
    if not callable(convert) or not state_dict:
        return False
    try:
        converted = convert(dict(state_dict))
    except Exception:  # a layout the backbone cannot read: the refusal stands without a hint
        return False
    own = set(expected)
    return 2 * sum(f'backbone.{key}' in own for key in converted) >= len(state_dict)


#: weights whose shape a fine-tuning ``load_from`` may change: the classifier's (another data
#: set's class count)
HEAD_PREFIX = 'cls_head.'


def check_shapes(model, checkpoint, filename: str, revise_keys: list) -> None:
    """Refuse a checkpoint whose weights of the model's network (outside ``cls_head``) have
    other shapes than the model's, or that lacks some of them: a non-strict load skips both
    with a printed line, so a conv1 of another T, a 2D network's, or the blocks a ResNet-34
    has and a ResNet-18's file has not, train from their random initial values. A head of
    another class count is what fine-tuning replaces, and loads as before; a missing
    ``num_batches_tracked`` counter (older files) holds no weight.

    Raises:
        CheckpointMismatchError: naming ``filename``, the first keys and both shapes, or the
            first missing keys and how many.
    """
    state_dict = checkpoint.get('state_dict', checkpoint)
    expected = model.state_dict()
    others, given = [], set()
    for key, value in state_dict.items():
        for pattern, replacement in revise_keys:
            key = re.sub(pattern, replacement, key)
        given.add(key)
        if (key in expected and not key.startswith(HEAD_PREFIX) and hasattr(value, 'shape')
                and tuple(value.shape) != tuple(expected[key].shape)):
            others.append(f'{key} {tuple(value.shape)} (the model: '
                          f'{tuple(expected[key].shape)})')
    missing = [key for key in expected if key not in given and not _new_in_fine_tuning(key)]
    if missing and not others:
        raise CheckpointMismatchError(
            f'{filename}: lacks {len(missing)} weight(s) of the model of the config: '
            f'{first_names(missing)}; loading it would leave them at their initial values (a '
            'checkpoint of another network, or of another depth). Load a checkpoint of this '
            'model; a file that starts only part of it is its modules\' `pretrained` or '
            'init_cfg, not load_from.')
    if others:
        raise CheckpointMismatchError(
            f'{filename}: weights of another shape than the model of the config: '
            f'{first_names(others)}; loading it would leave them at their initial values. A 2D '
            'network, or a hyperframe network of another T, starts a model as its backbone\'s '
            '`pretrained` (its first conv is inflated), not as load_from.')


#: where a recognizer keeps a neck, and the hyperframe stem's optional parts (frame attention,
#: extra_bn, motion products: models.backbones.stem.STEM_NAME): what a fine-tuning adds
NECK_PREFIX, STEM_PARTS = 'neck.', f'.{HYPERFRAME_STEM}.'


def _new_in_fine_tuning(key: str) -> bool:
    """Whether a weight may be missing from a ``load_from`` file: the head (another class
    count), a neck or a stem part fine-tuning adds, a batch-norm counter older files lack."""
    return (key.startswith((HEAD_PREFIX, NECK_PREFIX)) or STEM_PARTS in key
            or key.endswith('num_batches_tracked'))


def check_optimizer_groups(optim_wrapper, filename: str) -> None:
    """Refuse resumed optimizer state of another optimizer: ``Optimizer.load_state_dict`` takes
    the saved parameter groups whole, so an Adam state loaded into SGD lacks ``momentum`` and
    fails at the first step with a bare ``KeyError``. Every key of the optimizer's defaults
    must be in each group (torch fills in the keys newer versions added when it loads).

    Raises:
        CheckpointRefusedError: naming ``filename``, the optimizer and the missing keys.
    """
    wrappers = optim_wrapper.values() if isinstance(optim_wrapper, OptimWrapperDict) \
        else [optim_wrapper]
    for wrapper in wrappers:
        if not isinstance(wrapper, OptimWrapper):  # never built: nothing was loaded into it
            continue
        optimizer = wrapper.optimizer
        for group in optimizer.param_groups:
            missing = sorted(set(optimizer.defaults) - set(group))
            if missing:
                raise CheckpointRefusedError(
                    f'{filename}: its optimizer state is not of the config\'s '
                    f'{type(optimizer).__name__}: its parameter groups lack {missing}. Resume '
                    'from a checkpoint saved with this config, or start from its weights with '
                    'load_from.')


def weights_checkpoint(load_from: Optional[str], resume: bool, work_dir: str,
                       out_dir: Optional[str] = None) -> Optional[str]:
    """The checkpoint whose weights replace the model's initial ones when the run loads:
    ``load_from``, else with ``resume`` the one :func:`latest_intact_checkpoint` finds in
    ``work_dir`` (quietly: the load says why it skips a file; ``out_dir``: the config's
    :func:`checkpoint_out_dir`), else None.

    Raises:
        CheckpointRefusedError: with ``resume``, every checkpoint of ``work_dir`` is damaged
            (a training started over them would write over what is left of the run).
    """
    if load_from or not resume:
        return load_from or None
    return latest_intact_checkpoint(work_dir, lambda _: None, out_dir)


def checkpoint_out_dir(cfg) -> Optional[str]:
    """The ``out_dir`` of the config's checkpoint hook (``default_hooks.checkpoint``): where
    it saves instead of the work dir, None where it saves into the work dir."""
    hook = (cfg.get('default_hooks') or {}).get('checkpoint')
    return hook.get('out_dir') if isinstance(hook, dict) else getattr(hook, 'out_dir', None)


def _lies_in(path: str, folder: str) -> bool:
    """Whether ``path`` is inside ``folder``, links and relative names resolved."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def latest_intact_checkpoint(work_dir: str, warn: Callable[[str], None] = print,
                             out_dir: Optional[str] = None):
    """The checkpoint ``--resume`` should continue from: the one ``last_checkpoint`` names when
    it exists and is intact, else the newest intact ``epoch_N``/``iter_N.pth`` of ``work_dir``
    (``warn`` says why), else None.

    mmengine's ``CheckpointHook`` deletes the oldest checkpoint before writing the new one and
    writes ``last_checkpoint`` non-atomically, so a kill while saving can leave it naming a
    deleted, truncated or empty file (:class:`~hyperframes_mm.engine.hooks.SafeCheckpointHook`
    avoids both; runs saved by the stock hook still resume).

    ``last_checkpoint`` holds an absolute path, so in a work dir copied or moved elsewhere it
    names the original's file: a resume there continued from the original's weights (trained
    on since, or gone) while saving into the copy. Where the work dir holds a file of the
    name it gives, that file is the one resumed (``warn`` says so). A name outside the work
    dir is kept where it lies in ``out_dir`` (the config's :func:`checkpoint_out_dir`:
    ``CheckpointHook(out_dir=...)`` saves there, and ``last_checkpoint`` names its files).
    Elsewhere, the work dir's own newest intact checkpoint is resumed when it has one (a copy
    whose newest file was deleted resumed the original's, silently), and the outside file
    otherwise; ``warn`` names both.
    """
    named = find_latest_checkpoint(work_dir)
    outside = ''  # the warning's start: a file named neither in the work dir nor in out_dir
    if named and not _lies_in(named, work_dir):
        local = Path(work_dir) / Path(named).name
        if local.is_file():
            warn(f'last_checkpoint in {work_dir} names {named}, outside this work dir (it was '
                 f'copied or moved from there); resuming from this work dir\'s {local} instead.')
            named = str(local)
        elif not (out_dir and _lies_in(named, out_dir)):
            where = (f'not in the checkpoint hook\'s out_dir {out_dir}' if out_dir else
                     'and the config\'s checkpoint hook has no out_dir')
            outside = f'last_checkpoint in {work_dir} names {named}, outside this work dir, {where}'
            own = newest_intact_checkpoint(work_dir)
            if own is not None:
                warn(f'{outside}; resuming from this work dir\'s newest intact checkpoint '
                     f'{own} instead.')
                return own
    problem = 'is missing or empty' if not named else None
    cause, gone = ' (a run killed while saving)', False
    if named:
        try:
            verify_checkpoint_file(named)
            if outside:
                warn(f'{outside}; this work dir holds no checkpoint of its own: resuming from '
                     f'{named} itself.')
            return named
        except FileNotFoundError:
            problem, gone = f'names {named!r}, which does not exist', True
        except IsADirectoryError:  # the work dir itself, written by hand or by another tool
            problem, cause, gone = (f'names {named!r}, which is a directory, not a checkpoint',
                                    '', True)
        except RuntimeError as error:
            problem = f'names a damaged file ({error})'
    # a name outside had the work dir searched already, and it held no intact checkpoint
    fallback = None if outside else newest_intact_checkpoint(work_dir)
    if fallback is not None:
        warn(f'last_checkpoint in {work_dir} {problem}{cause}; resuming from the newest '
             f'intact checkpoint {fallback} instead.')
        return fallback
    saved = sorted(path.name for path in Path(work_dir).glob('*.pth')
                   if CHECKPOINT_PATTERN.match(path.name))
    if named and not saved and gone:
        # the earlier run's only trace: nothing of it to move aside, but starting from scratch
        # is not what --resume asked for
        raise CheckpointRefusedError(
            f'--resume: last_checkpoint in {work_dir} {problem}, and the work dir holds no other '
            'checkpoint, so there is nothing to resume from. Restore that file, or delete '
            f'{Path(work_dir) / "last_checkpoint"} to train from the start.')
    if named or saved:
        # a run that saved checkpoints, none of them intact: starting again from scratch would
        # write its epochs over them, with nothing but a log line to say so
        raise CheckpointRefusedError(
            f'--resume: {work_dir} holds checkpoints of an earlier run, none of them intact '
            f'(last_checkpoint {problem or "names " + repr(named)}; damaged: '
            f'{first_names(saved) or "none other"}), so there is nothing to resume from. Move '
            'them aside, or repair them, before training again in this work dir.')
    return None
