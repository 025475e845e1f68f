"""A family's input size, test clips and T are set once: changing the one assignment a config
inherits them from changes every pipeline of the config (and the backbone's T), for every
config of every family."""
import ast
import shutil
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from mmengine.config import Config

from hyperframes_mm.analysis.config_utils import sampler_spec
from hyperframes_mm.datasets.transforms.pipeline_info import fuses_streams, stacked_segments
from ..conftest import REPO
from .conftest import CONFIG_ROOT

FAMILIES = sorted(path.name for path in CONFIG_ROOT.iterdir() if path.is_dir())
#: the settings set once and the value each test gives them (a value no config uses)
NEW_VALUES = dict(input_size=80, test_clips=7, num_frames=6)
SPLITS = ('train', 'val', 'test')


def _bases(path: Path) -> List[Path]:
    """The files ``path`` lists in ``_base_``, resolved."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == '_base_'
                for target in node.targets):
            names = ast.literal_eval(node.value)
            names = [names] if isinstance(names, str) else names
            return [(path.parent / name).resolve() for name in names]
    return []


def _assignment(path: Path, name: str) -> Optional[ast.Constant]:
    """The int literal ``path`` assigns to ``name`` at module level (``a = b = 3`` counts for
    both), or None."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == name for target in node.targets):
            assert isinstance(node.value, ast.Constant) and isinstance(node.value.value, int), \
                f'{path}: {name} is set to an expression; set it to a number once'
            return node.value
    return None


def setter(config: Path, name: str) -> Optional[Path]:
    """The file whose assignment of ``name`` the config reads: the config itself, else its bases
    depth-first in ``_base_`` order (as mmengine merges them, a later base cannot redefine a
    name an earlier one has)."""
    if _assignment(config, name) is not None:
        return config
    for base in _bases(config):
        found = setter(base, name)
        if found is not None:
            return found
    return None


def load_with(config: Path, name: str, value: int, tmp_path: Path) -> Config:
    """``config`` loaded from a copy of configs/ in which the one assignment of ``name`` it
    inherits reads ``value``."""
    source = setter(config, name)
    assert source is not None, f'{config.name} never sets {name}'
    copy = tmp_path / 'configs'
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(REPO / 'configs', copy)
    target = copy / source.relative_to(REPO / 'configs')
    lines = target.read_text().split('\n')
    literal = _assignment(source, name)
    line = lines[literal.lineno - 1]
    lines[literal.lineno - 1] = (line[:literal.col_offset] + str(value) +
                                 line[literal.end_col_offset:])
    target.write_text('\n'.join(lines))
    return Config.fromfile(str(copy / config.relative_to(REPO / 'configs')))


def family_configs(family: str) -> List[Path]:
    return sorted((CONFIG_ROOT / family).glob('*.py'))


def pipelines(cfg: Config) -> Dict[str, list]:
    """Every split's pipeline as the dataloader runs it (through wrappers such as
    GuardedDataset), and the config's own ``<split>_pipeline`` (what inference and the tools
    read) under ``<split> variable``."""
    found = {}
    for split in SPLITS:
        dataset = cfg[f'{split}_dataloader'].dataset
        while 'pipeline' not in dataset:
            dataset = dataset.dataset
        found[split] = dataset.pipeline
        found[f'{split} variable'] = cfg[f'{split}_pipeline']
    return found


def output_side(pipeline: list) -> int:
    """The side of the square frames a pipeline hands to its stacking step: the last step that
    sets it (a crop, an augmentation's crop, a resize to a fixed size)."""
    side = None
    for step in pipeline:
        kind = step['type']
        if kind == 'ConsistentClipAugment':
            side = step['size']
        elif kind in ('CenterCrop', 'ThreeCrop'):
            side = step['crop_size']
        elif kind == 'Resize' and step.get('keep_ratio') is False:
            assert step['scale'][0] == step['scale'][1]
            side = step['scale'][0]
    assert side is not None, f'no step sets the frame size in {pipeline}'
    return side


def is_segments(pipeline: list) -> bool:
    """Whether the pipeline samples TSN segments (one frame each): its views are its segments,
    and its clips count is T, not test clips."""
    step = pipeline[sampler_spec(pipeline).index]
    return step['type'] == 'SampleFrames' and step['clip_len'] == 1


@pytest.mark.parametrize('family', FAMILIES)
def test_input_size_reaches_every_pipeline(family, tmp_path):
    for config in family_configs(family):
        cfg = load_with(config, 'input_size', NEW_VALUES['input_size'], tmp_path)
        assert cfg.input_size == NEW_VALUES['input_size']
        for split, pipeline in pipelines(cfg).items():
            three_crops = any(step['type'] == 'ThreeCrop' for step in pipeline)
            expected = cfg.test_scale if three_crops else cfg.input_size
            assert output_side(pipeline) == expected, f'{config.name}: {split}'
        if 'img_size' in cfg.model.backbone.get('backbone', {}):
            assert cfg.model.backbone.backbone.img_size == cfg.input_size


@pytest.mark.parametrize('family', FAMILIES)
def test_test_clips_reach_every_test_pipeline(family, tmp_path):
    checked = 0
    for config in family_configs(family):
        cfg = load_with(config, 'test_clips', NEW_VALUES['test_clips'], tmp_path)
        found = pipelines(cfg)
        for split in ('val', 'test'):
            # validation takes the test clips unless the config sets its own
            expected = cfg.get('val_clips', cfg.test_clips) if split == 'val' else cfg.test_clips
            for pipeline in (found[split], found[f'{split} variable']):
                if is_segments(pipeline):
                    continue
                assert sampler_spec(pipeline).num_clips == expected, f'{config.name}: {split}'
                checked += 1
    assert checked  # every family has configs tested on clips


def stream_frames(cfg: Config, stream, frames: int) -> int:
    """The T a stream reads: the config's own ``<stream>_frames`` where it sets one (a fast/slow
    model whose slow stream has a T of its own), else the family's ``num_frames``."""
    return cfg.get(f'{stream.name}_frames', frames)


def check_frames(config: Path, cfg: Config, frames: int) -> None:
    """Every pipeline's streams and the backbone read the T they are set from."""
    for split, pipeline in pipelines(cfg).items():
        spec = sampler_spec(pipeline)
        if is_segments(pipeline):
            assert spec.num_clips == frames, f'{config.name}: {split}'
        else:
            # a clip split into S hyperframes samples S x T
            segments = stacked_segments(pipeline)
            assert [stream.num_frames for stream in spec.streams] == \
                [segments * stream_frames(cfg, stream, frames) for stream in spec.streams], \
                f'{config.name}: {split}'
    backbone = cfg.model.backbone
    streams = sampler_spec(pipelines(cfg)['train']).streams
    if 'num_frames' in backbone:
        # two streams stacked into one hyperframe: the backbone reads both
        fused = fuses_streams(pipelines(cfg)['train'])
        assert backbone.num_frames == (sum(stream_frames(cfg, stream, frames)
                                           for stream in streams) if fused else frames), \
            config.name


@pytest.mark.parametrize('family', FAMILIES)
def test_num_frames_reach_every_pipeline_and_the_backbone(family, tmp_path):
    frames = NEW_VALUES['num_frames']
    for config in family_configs(family):
        cfg = load_with(config, 'num_frames', frames, tmp_path)
        check_frames(config, cfg, frames)
        # TSM's segments are its frames; a hyperframe model's are the hyperframes each clip is
        # split into, which T does not change
        segments = (stacked_segments(pipelines(cfg)['train'])
                    if 'num_frames' in cfg.model.backbone else frames)
        for part in (cfg.model.backbone, cfg.model.cls_head):
            if 'num_segments' in part:
                assert part.num_segments == segments, config.name


#: a stream's own T where a config sets one, and the value the test gives it
STREAM_FRAMES = ('slow_frames', 9)


def test_a_streams_own_frames_reach_every_pipeline_and_the_backbone(tmp_path):
    name, value = STREAM_FRAMES
    configs = [config for family in FAMILIES for config in family_configs(family)
               if setter(config, name) is not None]
    assert configs  # the fast/slow model with the T=8 row's slow stream sets one
    for config in configs:
        cfg = load_with(config, name, value, tmp_path)
        assert cfg[name] == value
        check_frames(config, cfg, cfg.num_frames)
