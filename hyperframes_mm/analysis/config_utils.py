"""Find what the diagnostics need in an mmengine config and in the model it builds: dataloaders,
pipelines, frame samplers, hyperframe streams.

The readers the runner's own frame-count check shares with the diagnostics
(:func:`dataset_leaves`, :func:`dataloader_datasets`, :func:`sampler_spec` and its
:class:`SamplerSpec`, :func:`model_streams`) live in :mod:`hyperframes_mm.engine.num_frames_hook`,
below this package, and are re-exported here, where the tools and benchmarks read them.
"""
import argparse
import json
from typing import Dict, List, Optional, Sequence, Tuple

from mmengine.config import Config, DictAction

# Also re-exported: the zoo-table tool reads its configs through here.
from ..apis.inference import load_config
from ..engine.num_frames_hook import (SamplerSpec, StreamSpec,  # noqa: F401
                                      dataloader_datasets, dataset_leaves, model_streams,
                                      sampler_spec)
from ..utils import positive_int


def config_tool_parser(doc: str, config_help: str = 'the config file') -> argparse.ArgumentParser:
    """The command line of a diagnostic tool that reads one config: the tool's ``doc`` (its
    first paragraph) as description, ``config``, ``--cfg-options`` (mmengine's key=value
    overrides, as in ``tools/train.py``) and ``--no-progress``; the tool adds its own."""
    parser = argparse.ArgumentParser(description=doc.split('\n\n')[0])
    parser.add_argument('config', help=config_help)
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings, key=value')
    parser.add_argument('--no-progress', action='store_true', help='hide the progress bars')
    return parser


def parse_config_tool_args(parser: argparse.ArgumentParser,
                           argv: Optional[Sequence[str]] = None
                           ) -> Tuple[argparse.Namespace, Config]:
    """The arguments of a :func:`config_tool_parser` command line, and its config loaded with
    the ``--cfg-options`` merged in."""
    args = parser.parse_args(argv)
    return args, load_config(args.config, args.cfg_options)


def unique_pipelines(cfg: Config) -> List[Tuple[str, Dict, List[Dict]]]:
    """``(where, dataset cfg, pipeline)`` per distinct dataset; a dataset shared by several
    dataloaders (``test_dataloader = val_dataloader``) is listed once, named after all of them."""
    seen: Dict[str, int] = {}
    found: List[Tuple[str, Dict, List[Dict]]] = []
    for where, dataset in dataloader_datasets(cfg):
        key = json.dumps(dataset, sort_keys=True, default=str)
        if key in seen:
            first = found[seen[key]]
            found[seen[key]] = (f'{first[0]} (= {where})', first[1], first[2])
            continue
        seen[key] = len(found)
        found.append((where, dataset, list(dataset['pipeline'])))
    return found


def set_epochs(cfg: Config, epochs: int) -> None:
    """Shorten or stretch an epoch-based schedule to ``epochs``, in place.

    ``train_cfg.max_epochs`` becomes ``epochs``, ``val_interval`` at most ``epochs``, and every
    scheduler's ``begin``/``end`` (and a cosine's ``T_max``) are scaled alike, each keeping at
    least one epoch: 3 warm-up + 27 cosine epochs of 30 become 1 + 9 of 10.
    """
    positive_int(epochs, 'epochs')
    old = cfg.train_cfg.max_epochs
    cfg.train_cfg.max_epochs = epochs
    cfg.train_cfg.val_interval = min(cfg.train_cfg.get('val_interval', 1), epochs)
    scale = epochs / old
    schedulers = cfg.get('param_scheduler') or []
    old_seam = new_seam = None
    for scheduler in schedulers if isinstance(schedulers, list) else [schedulers]:
        old_begin, old_end = scheduler.get('begin', 0), scheduler.get('end', old)
        # a scheduler that started where the previous one ended still does (warm-up, then
        # cosine), whatever the rounding did to that end
        begin = new_seam if old_begin == old_seam else round(old_begin * scale)
        begin = min(begin, epochs - 1)
        end = min(max(begin + 1, round(old_end * scale)), epochs)
        old_seam, new_seam = old_end, end
        scheduler.update(begin=begin, end=end)
        if 'T_max' in scheduler:
            scheduler['T_max'] = end - begin
