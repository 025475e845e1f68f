"""Config edits a benchmark row declares: each a function of an mmengine ``Config`` that changes
one thing in every place the run reads it (the dataloaders' pipelines, the backbone, the
schedule), so that a row is its base config and a tuple of these."""
from pathlib import Path
from typing import Callable, Dict, List, Optional

Edit = Callable[[object], None]


def one_config(folder: Path, pattern: str) -> Path:
    """The one config of ``folder`` whose file name matches ``pattern`` (a glob).

    Raises:
        FileNotFoundError: none or several match.
    """
    matches = sorted(Path(folder).glob(pattern))
    if len(matches) != 1:
        raise FileNotFoundError(f'{folder}: expected one config named {pattern}, found '
                                f'{[path.name for path in matches]}')
    return matches[0]


def find(pipeline: List[dict], type_name: str) -> dict:
    """The first step of ``type_name`` in a pipeline (it must exist)."""
    return next(step for step in pipeline if step['type'] == type_name)


def pipelines(cfg) -> List[List[dict]]:
    """The train, val and test dataloaders' pipelines (what a run reads)."""
    return [cfg.train_dataloader.dataset.pipeline, cfg.val_dataloader.dataset.pipeline,
            cfg.test_dataloader.dataset.pipeline]


def sync_pipeline_variables(cfg) -> None:
    """Point the config's ``train_pipeline`` / ``val_pipeline`` / ``test_pipeline`` at its
    dataloaders' pipelines. The edits change the dataloaders' (what a run reads); mmaction2's
    inference, the model-zoo view and the latency tools read the variables, which would
    otherwise keep the family config's T and sampling."""
    for split in ('train', 'val', 'test'):
        if f'{split}_pipeline' in cfg:
            cfg[f'{split}_pipeline'] = cfg[f'{split}_dataloader'].dataset.pipeline


def read_data_from(cfg, root: Path) -> None:
    """Every dataloader reads its list (the same path below the config's ``data_root``, else
    the same file name) and videos from ``root``, and a training step that reads per-frame
    labels (``CenterFrameTarget``) its label file too."""
    def below_root(path: str) -> Path:
        if cfg.get('data_root'):
            try:
                return Path(path).relative_to(cfg.data_root)
            except ValueError:
                pass
        return Path(Path(path).name)

    for loader in (cfg.train_dataloader, cfg.val_dataloader, cfg.test_dataloader):
        loader.dataset.ann_file = str(Path(root) / below_root(loader.dataset.ann_file))
        loader.dataset.data_prefix = dict(video=str(root))
    for step in cfg.train_dataloader.dataset.pipeline:
        if step['type'] == 'CenterFrameTarget':
            step.update(ann_file=str(Path(root) / Path(step['ann_file']).name),
                        data_prefix=str(root))


def _update(spec: Dict, changes: Dict) -> None:
    """``spec.update(changes)``, where a ``None`` value drops the key."""
    spec.update(changes)
    for key in [key for key, value in changes.items() if value is None]:
        spec.pop(key)


def backbone(**kwargs) -> Edit:
    """Set backbone arguments."""
    return lambda cfg: cfg.model.backbone.update(kwargs)


def wrapped_backbone(**kwargs) -> Edit:
    """Set the arguments of the network an ``InflatedBackbone`` wraps (for a ``timm.`` one,
    ``timm.create_model``'s keywords)."""
    return lambda cfg: cfg.model.backbone.backbone.update(kwargs)


def head(**kwargs) -> Edit:
    """Set classification head arguments."""
    return lambda cfg: cfg.model.cls_head.update(kwargs)


def train_augment(**kwargs) -> Edit:
    """Set the training ``ConsistentClipAugment``'s arguments."""
    return lambda cfg: find(cfg.train_dataloader.dataset.pipeline,
                            'ConsistentClipAugment').update(kwargs)


def sampling(**kwargs) -> Edit:
    """Set every pipeline's ``HyperframeSampleFrames`` arguments (``None`` drops one)."""
    def change(cfg):
        for pipeline in pipelines(cfg):
            _update(find(pipeline, 'HyperframeSampleFrames'), kwargs)
    return change


def stream(name: str, **kwargs) -> Edit:
    """Set one stream's arguments in every pipeline's ``HyperframeSampleFrames`` (``None``
    drops one)."""
    def change(cfg):
        for pipeline in pipelines(cfg):
            _update(find(pipeline, 'HyperframeSampleFrames')['streams'][name], kwargs)
    return change


def frames(num_frames: int, interval: Optional[float] = None, segments: int = 1) -> Edit:
    """T picks a hyperframe (the backbone's), ``interval`` apart when given; in a config whose
    clip is ``segments`` shifted hyperframes (``config_parts.shifted_hyperframes``) the sampler
    takes ``segments`` x T."""
    extra = {} if interval is None else dict(interval=interval)

    def change(cfg):
        cfg.model.backbone.num_frames = num_frames
        sampling(num_frames=segments * num_frames, **extra)(cfg)
    return change


def own_backbones(**frames_per_stream: int) -> Edit:
    """One backbone per stream (not shared), each with its stream's T."""
    def change(cfg):
        shared = dict(cfg.model.backbone)
        cfg.model.backbone = {name: dict(shared, num_frames=num_frames)
                              for name, num_frames in frames_per_stream.items()}
        cfg.model.share_backbone = False
        for name, num_frames in frames_per_stream.items():
            stream(name, num_frames=num_frames)(cfg)
    return change


def schedule_of(config: Path) -> Edit:
    """Take another config's optimiser and schedule (e.g. the baselines' SGD)."""
    def change(cfg):
        from mmengine.config import Config
        other = Config.fromfile(str(config))
        for key in ('optim_wrapper', 'param_scheduler', 'train_cfg', 'auto_scale_lr'):
            cfg[key] = other[key]
    return change


def two_passes(cfg) -> None:
    """A fast/slow config's streams through the shared backbone one after the other, features
    concatenated (``FastSlowRecognizer``), instead of stacked into one hyperframe for one pass
    (early fusion, as the family configs have them)."""
    sampler = find(cfg.train_dataloader.dataset.pipeline, 'HyperframeSampleFrames')
    names = tuple(sampler['streams'])
    cfg.model.update(type='FastSlowRecognizer', streams=names, share_backbone=True,
                     fusion='concat')
    cfg.model.backbone.num_frames = sampler['num_frames']
    cfg.model.cls_head.in_channels *= len(names)
    for pipeline in pipelines(cfg):
        find(pipeline, 'HyperframeStack').pop('fuse_streams', None)
        find(pipeline, 'PackActionInputs')['collect_keys'] = tuple(f'imgs_{name}'
                                                                   for name in names)


def input_size(side: int) -> Edit:
    """Train and test at ``side`` x ``side``: every step that sets the frame side, in every
    pipeline, as a config does it (:func:`hyperframes_mm.config_parts.at_side`)."""
    def change(cfg):
        # the one rule configs set sides by; imported here, not when the edit is declared: the
        # package imports torch and mmaction2, which a benchmark's row list must not cost
        from hyperframes_mm.config_parts import side_fields
        cfg.input_size = side
        for pipeline in pipelines(cfg):
            for step in pipeline:
                step.update(side_fields(step, side))
    return change


def test_clips(count: int) -> Edit:
    """Test on ``count`` clips a sample (the test pipeline's ``HyperframeSampleFrames``), the
    model and its training unchanged: the views its test-time cost buys."""
    def change(cfg):
        find(cfg.test_dataloader.dataset.pipeline, 'HyperframeSampleFrames')['num_clips'] = count
    return change


def lr_scale(factor: float) -> Edit:
    """The optimiser's learning rate times ``factor`` (the schedule's shape unchanged)."""
    def change(cfg):
        cfg.optim_wrapper.optimizer.lr *= factor
    return change


def warmup(epochs: int) -> Edit:
    """A linear warm-up of ``epochs`` epochs before the cosine decay (the schedule of
    ``LinearLR`` then ``CosineAnnealingLR`` to the last epoch); 0 drops the warm-up."""
    def change(cfg):
        linear, cosine = (next(step for step in cfg.param_scheduler if step['type'] == kind)
                          for kind in ('LinearLR', 'CosineAnnealingLR'))
        cosine.update(begin=epochs, T_max=cosine['end'] - epochs)
        if epochs:
            linear['end'] = epochs
        else:
            cfg.param_scheduler = [cosine]
    return change


def stop_after(epochs: int) -> Edit:
    """Train only the first ``epochs`` epochs of the schedule, with a checkpoint at the end (a
    smoke run of a row's command)."""
    def change(cfg):
        cfg.train_cfg.max_epochs = epochs
        cfg.default_hooks.checkpoint.interval = epochs
    return change


def epochs(count: int) -> Edit:
    """The whole schedule in ``count`` epochs, every scheduler scaled alike (warm-up, then the
    decay to the last epoch: :func:`hyperframes_mm.analysis.config_utils.set_epochs`), where
    :func:`stop_after` cuts a schedule short."""
    def change(cfg):
        from hyperframes_mm.analysis.config_utils import set_epochs
        set_epochs(cfg, count)
    return change


def validate_every(count: int) -> Edit:
    """Validate every ``count`` epochs (and after the last): a validation pass draws from the
    loader's random generator, so the interval is part of what a run trains."""
    def change(cfg):
        cfg.train_cfg.val_interval = count
    return change


def checkpoint_every(count: int) -> Edit:
    """Save a checkpoint every ``count`` epochs (and after the last), keeping only the latest:
    what a stopped run resumes from, and what a row that starts from another row's weights
    reads."""
    def change(cfg):
        cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=count,
                                            max_keep_ckpts=1)
    return change


def lists(train: str, val: str, test: str) -> Edit:
    """Train, validate and test on these lists (paths below the config's ``data_root``)."""
    def edit(cfg) -> None:
        for loader, name in ((cfg.train_dataloader, train), (cfg.val_dataloader, val),
                             (cfg.test_dataloader, test)):
            loader.dataset.ann_file = str(Path(cfg.data_root) / name)
    return edit
