"""One *view* of a config, the unit the model zoo states costs in (mmaction2's tables: GFLOPs of one
clip and one crop): the options that make a config's test-time model take one view, and how many
views its test pipeline takes per sample."""
import copy
from typing import Dict, Tuple

#: test-time crops of one clip, by transform type (others take one)
CROPS = {'ThreeCrop': 3, 'TenCrop': 10}


def backbone_parts(cfg) -> Dict[str, Dict]:
    """The model's backbone configs by their key in the config: ``{'model.backbone': ...}``,
    or one ``model.backbone.<stream>`` per stream (``FastSlowRecognizer`` with
    ``share_backbone=False``)."""
    backbone = cfg.model.backbone
    if 'type' in backbone:
        return {'model.backbone': backbone}
    return {f'model.backbone.{stream}': part for stream, part in backbone.items()}


def segments_per_view(cfg) -> int:
    """Clips of the test sampler that make one view: 1, or for a TSN-style model (mmaction2's
    ``SampleFrames`` with ``clip_len=1`` in training: its ``num_clips`` frames are one input of
    the model, not separate views) as many test clips as hold its segments: 5 one-frame clips,
    or one clip of 5 frames."""
    from hyperframes_mm.analysis.config_utils import dataloader_datasets, sampler_spec
    leaves = dataloader_datasets(cfg, ('train_dataloader', ))
    spec = sampler_spec(leaves[0][1]['pipeline']) if leaves else None
    if spec is not None and spec.type == 'SampleFrames' and spec.streams[0].num_frames == 1:
        test = sampler_spec(cfg.test_pipeline)
        frames = test.streams[0].num_frames if test is not None else 1
        return max(1, spec.num_clips // frames)
    return 1


def view_options(cfg) -> Dict:
    """cfg_options for one view: no checkpoint, ``val_pipeline`` with one clip (a TSN-style
    model: its segments) as the test pipeline."""
    from hyperframes_mm.analysis.config_utils import sampler_spec
    pipeline = copy.deepcopy(list(cfg.val_pipeline))
    spec = sampler_spec(pipeline)
    if spec is None:
        raise ValueError(f'{cfg.filename}: val_pipeline has no frame sampler')
    pipeline[spec.index] = dict(pipeline[spec.index], num_clips=segments_per_view(cfg),
                                test_mode=True)
    options = dict(test_pipeline=pipeline)
    for key, part in backbone_parts(cfg).items():
        if 'pretrained' in part:
            options[f'{key}.pretrained'] = None
        if part.get('pretrained2d'):
            # mmaction2's TSM backbones load their 2D file whatever it is, None included
            options[f'{key}.pretrained2d'] = False
    return options


def views_per_test_sample(cfg) -> Tuple[int, int]:
    """``(clips, crops)`` of one sample of the config's ``test_pipeline``."""
    from hyperframes_mm.analysis.config_utils import sampler_spec
    from hyperframes_mm.datasets.transforms.pipeline_info import transform_type
    clips = sampler_spec(cfg.test_pipeline).num_clips // segments_per_view(cfg)
    crops = 1
    for transform in cfg.test_pipeline:
        crops *= CROPS.get(transform_type(transform), 1)
    return clips, crops
