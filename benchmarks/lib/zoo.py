"""Model-zoo table and metafile of a config family, derived from the family's configs (the
library behind ``tools/analysis/zoo_table.py``).

    python tools/analysis/zoo_table.py configs/hyperframes/ucf101              # print the table
    OMP_NUM_THREADS=1 python tools/analysis/zoo_table.py configs/hyperframes/ucf101 \\
        --readme --metafile                                                    # write both
    python tools/analysis/zoo_table.py configs/hyperframes/ucf101 --check      # metafile current?

Every config of the folder must follow the naming rule (:data:`NAME_RULE`, one
``{clip_len}x{interval}x{clips}`` group per stream) and agree with it (:func:`check_name`).
For each config:

* GFLOPs and parameters: mmengine's count (multiply-adds, as mmaction2's model zoo) of the whole
  test-time model on one *view*: the config's ``val_pipeline`` with its sampler set to one clip
  (one centre crop; for a fast/slow model one fast and one slow hyperframe);
* CPU latency: median of ``--repeats`` calls on that view, batch 1, ``--threads`` threads, the
  family's models interleaved round by round (so a change of load on a shared machine hits every
  row alike);
* test views: clips x crops of the config's ``test_pipeline``;
* top-1 / top-5: from ``<folder>/results/<config name>.json``, the metrics file mmengine writes
  when testing (``WORK_DIR/<timestamp>/<timestamp>.json`` after ``tools/test.py``); "not
  measured here" without one.

``--metafile`` writes ``<folder>/metafile.yml`` in mmaction2's format (no latency: it depends on
the machine; no results unless a results file exists; no weights); ``--readme`` replaces the
table between the :data:`TABLE_START` and :data:`TABLE_END` lines of ``<folder>/README.md``.
"""
import argparse
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .costing import machine_line
from .tables import replace_section
from .views import backbone_parts, view_options, views_per_test_sample

REPO = Path(__file__).resolve().parents[2]
NAME_RULE = ('{algorithm}_{pretrain}-{backbone}_{gpus}xb{batch}-{clip_len}x{interval}x{clips}'
             '[-{clip_len}x{interval}x{clips} per further stream]-{epochs}e_{dataset}-{modality}.py')
# As in mmaction2's names, the algorithm may carry a variant (``tpn-slowonly``, here
# ``hyperframe-indepaug``) and the backbone modifiers (``r50-nl-dot-product``, ``r18-auxframe``).
# T picks spread uniformly over the clip are named as mmaction2 names TSN's T segments of one
# frame: ``1x1x{T}``.
NAME_PATTERN = re.compile(
    r'^(?P<algorithm>[a-z0-9]+(?:-[a-z0-9]+)*)_(?P<pretrain>scratch|[a-z0-9]+-pretrained)-'
    r'(?P<backbone>[a-z0-9]+(?:-[a-z0-9]+)*)_(?P<gpus>\d+)xb(?P<batch>\d+)-'
    r'(?P<sampling>\d+x\d+x\d+(?:-\d+x\d+x\d+)*)-(?P<epochs>\d+)e_'
    r'(?P<dataset>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<modality>rgb|depth|flow)\.py$')
#: algorithm (its first word: ``hyperframe-indepaug`` is a ``hyperframe``) -> recognizer type
ALGORITHMS = ('hyperframe', 'fastslow')
#: pretrain token -> what the metafile calls it
PRETRAINED = {'imagenet-pretrained': 'ImageNet', 'scratch': 'None'}
#: dataset token -> (name in the metafile, number of classes)
DATASETS = {
    'ucf101-split1': ('UCF101', 101),
    'hmdb51-split1': ('HMDB51', 51),
    'kinetics400': ('Kinetics-400', 400),
    'sthv2': ('Something-Something V2', 174),
    'synthetic': ('Synthetic motion benchmark', 10),
    'utd-mhad': ('UTD-MHAD', 27),
}
#: modality token -> what the metafile calls it
MODALITIES = {'rgb': 'RGB', 'depth': 'Depth', 'flow': 'Flow'}
#: a time-based interval (seconds) is named in frames at this frame rate
REFERENCE_FPS = 30
TABLE_START = '<!-- zoo_table: start -->'
TABLE_END = '<!-- zoo_table: end -->'
NOT_MEASURED = 'not measured here'


@dataclass(frozen=True)
class Stream:
    """One stream of a config's training sampler; ``interval`` in frames, None for picks spread
    uniformly over the clip."""
    name: Optional[str]
    num_frames: int
    interval: Optional[float]
    num_clips: int

    @property
    def sampling(self) -> Tuple[int, int, int]:
        """``(clip_len, interval, clips)`` as the config name spells it."""
        if self.interval is None:
            return (1, 1, self.num_frames)
        return (self.num_frames, _number(self.interval), self.num_clips)


@dataclass
class ZooRow:
    """What the table and the metafile say about one config."""
    name: str
    config: str
    architecture: str
    pretrained: str
    dataset: str
    modality: str
    gpus: int
    batch: int
    epochs: int
    streams: Tuple[Stream, ...]
    resolution: Tuple[int, int]
    flops: int
    params: int
    test_clips: int
    test_crops: int
    results: Optional[Dict[str, float]] = None
    latency_ms: Optional[float] = None


def parse_name(filename: str) -> Dict:
    """The fields of a config file name (:data:`NAME_RULE`).

    Returns:
        dict: ``algorithm``, ``pretrain``, ``backbone``, ``dataset`` (str); ``gpus``, ``batch``,
        ``epochs`` (int); ``sampling``: one ``(clip_len, interval, clips)`` int tuple per stream.

    Raises:
        ValueError: the name does not follow the rule.
    """
    match = NAME_PATTERN.match(Path(filename).name)
    if match is None:
        raise ValueError(f'{filename}: the name does not follow {NAME_RULE}')
    fields = match.groupdict()
    sampling = tuple(tuple(int(value) for value in group.split('x'))
                     for group in fields.pop('sampling').split('-'))
    return dict(fields, gpus=int(fields['gpus']), batch=int(fields['batch']),
                epochs=int(fields['epochs']), sampling=sampling)


def backbone_config(cfg) -> Dict:
    """The model's backbone config (a per-stream backbone dict: its first stream's)."""
    return next(iter(backbone_parts(cfg).values()))


def backbone_token(backbone: Dict) -> str:
    """The backbone as config names spell it: ``r18``, ``mobilenetv2``, ``mobilenetv3-large``,
    ``vit-b16``, ``efficientnet-lite0`` (a timm model; an ``InflatedBackbone`` or a
    ``TemporalShiftBackbone`` is named after the backbone it wraps)."""
    kind = str(backbone['type']).split('.')[-1]
    if kind in ('InflatedBackbone', 'TemporalShiftBackbone'):
        return backbone_token(backbone['backbone'])
    if 'ResNet' in kind:
        return f'r{backbone["depth"]}'
    if 'MobileNetV3' in kind:
        return f'mobilenetv3-{backbone.get("arch", "small")}'.replace('_', '-')
    if 'MobileNetV2' in kind:  # mmaction2's MobileNetV2 / MobileNetV2TSM, HyperMobileNetV2
        return 'mobilenetv2'
    if kind == 'VisionTransformer':
        return f'vit-{backbone.get("arch", "b")}{backbone.get("patch_size", 16)}'
    if str(backbone['type']).startswith('timm.'):
        # a name field holds no '_'; timm's tf_ prefix marks TensorFlow padding and norm eps of
        # the same network (tf_efficientnet_lite0 -> efficientnet-lite0)
        return kind.removeprefix('tf_').replace('_', '-')
    return kind.lower()


def num_classes(head: Dict) -> Optional[int]:
    """The head's class count; a head that wraps another (``head=dict(...)``) reports its."""
    if 'num_classes' in head:
        return head['num_classes']
    inner = head.get('head')
    return num_classes(inner) if isinstance(inner, dict) else None


def architecture(cfg) -> str:
    """``HyperResNet-18``; two-stream models add their streams: ``... (fast + slow)``."""
    backbone = backbone_config(cfg)
    kind = str(backbone['type']).split('.')[-1]
    size = backbone.get('depth', backbone.get('arch'))
    name = f'{kind}-{size}' if size is not None else kind
    streams = [stream.name for stream in train_streams(cfg) if stream.name is not None]
    return f'{name} ({" + ".join(streams)})' if streams else name


def train_streams(cfg) -> Tuple[Stream, ...]:
    """The training sampler's streams, intervals in frames (time-based ones at
    :data:`REFERENCE_FPS`; None for uniform picks).

    Raises:
        ValueError: the training pipeline has no frame sampler.
    """
    from hyperframes_mm.analysis.config_utils import dataloader_datasets, sampler_spec
    leaves = dataloader_datasets(cfg, ('train_dataloader', ))
    spec = sampler_spec(leaves[0][1]['pipeline']) if leaves else None
    if spec is None:
        raise ValueError(f'{cfg.filename}: the training pipeline needs a frame sampler '
                         '(HyperframeSampleFrames or SampleFrames)')
    scale = REFERENCE_FPS if spec.time_based else 1
    return tuple(Stream(stream.name, stream.num_frames,
                        None if stream.interval is None else round(stream.interval * scale, 6),
                        spec.num_clips) for stream in spec.streams)


def algorithm_of(cfg) -> str:
    """``fastslow`` for a hyperframe model of several sampled streams (stacked into one
    hyperframe for ``Recognizer2D``, or ``FastSlowRecognizer``'s passes), ``hyperframe`` for
    ``Recognizer2D`` on one stream, else the recognizer's type."""
    recognizer = str(cfg.model.type).split('.')[-1]
    if recognizer not in ('Recognizer2D', 'FastSlowRecognizer'):
        return recognizer
    return 'fastslow' if len(train_streams(cfg)) > 1 else 'hyperframe'


def check_name(path, cfg) -> List[str]:
    """Where a config's name disagrees with the config (empty: it agrees).

    Checked: the rule itself; algorithm and recognizer type; pretrain and ``pretrained``;
    backbone; ``batch`` = the training batch size and ``gpus x batch`` = ``auto_scale_lr``'s
    base batch; one ``clip_len x interval x clips`` group per training stream (T, interval in
    frames, clips); ``epochs`` = ``max_epochs``; a known dataset's number of classes.
    """
    try:
        name = parse_name(path)
    except ValueError as error:
        return [str(error)]
    problems = []

    def differ(what: str, named, actual) -> None:
        if named != actual:
            problems.append(f'{Path(path).name}: the name says {what} {named}, the config has '
                            f'{actual}')

    algorithm = name['algorithm'].split('-')[0]
    if algorithm in ALGORITHMS:
        differ('algorithm', algorithm, algorithm_of(cfg))
    backbone = backbone_config(cfg)
    pretrained = backbone.get('pretrained')
    if (name['pretrain'] == 'scratch') != (pretrained is None):
        differ('pretrain', name['pretrain'], f'pretrained={pretrained!r}')
    token = backbone_token(backbone)
    if not (name['backbone'] == token or name['backbone'].startswith(f'{token}-')):
        differ('backbone', name['backbone'], token)
    differ('batch', name['batch'], cfg.train_dataloader.batch_size)
    if cfg.get('auto_scale_lr'):
        differ('gpus x batch', name['gpus'] * name['batch'], cfg.auto_scale_lr.base_batch_size)
    streams = train_streams(cfg)
    differ('clip_len x interval x clips', name['sampling'],
           tuple(stream.sampling for stream in streams))
    differ('epochs', name['epochs'], cfg.train_cfg.max_epochs)
    if name['dataset'] in DATASETS:
        differ('classes', DATASETS[name['dataset']][1], num_classes(cfg.model.cls_head))
    return problems


def _table_order(path: Path) -> Tuple:
    """Single-stream before two-stream models, ResNets by depth before other backbones."""
    try:
        name = parse_name(path)
    except ValueError:
        return (len(ALGORITHMS), 1, 0, path.name)
    algorithm = list(ALGORITHMS).index(name['algorithm']) if name['algorithm'] in ALGORITHMS \
        else len(ALGORITHMS)
    depth = re.fullmatch(r'r(\d+)', name['backbone'])
    return (algorithm, 0 if depth else 1, int(depth.group(1)) if depth else 0, path.name)


def family_configs(folder) -> List[Path]:
    """The config files of a family folder: single-stream models first, ResNets by depth."""
    configs = sorted(Path(folder).glob('*.py'), key=_table_order)
    if not configs:
        raise FileNotFoundError(f'{folder}: no config files')
    return configs


def load_results(path: Path) -> Optional[Dict[str, float]]:
    """Top-1 / top-5 accuracy (%) from mmengine's test metrics file, None when it is absent.

    Raises:
        ValueError: the file is no JSON object (empty, cut short) or lacks ``acc/top1`` or
            ``acc/top5``: the file named.
    """
    if not path.is_file():
        return None
    try:
        metrics = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
        raise ValueError(f'{path}: not JSON ({error}); expected the metrics file mmengine '
                         'writes after tools/test.py: write it again, or move it aside') from error
    if not isinstance(metrics, dict):
        raise ValueError(f'{path}: a JSON {type(metrics).__name__}, not the object of metrics '
                         'mmengine writes after tools/test.py: write it again, or move it aside')
    missing = [key for key in ('acc/top1', 'acc/top5') if key not in metrics]
    if missing:
        raise ValueError(f'{path}: no {missing} in it; expected the metrics file mmengine writes '
                         'after tools/test.py with AccMetric')
    return {'Top 1 Accuracy': round(100 * metrics['acc/top1'], 2),
            'Top 5 Accuracy': round(100 * metrics['acc/top5'], 2)}


def repo_path(path: Path) -> str:
    """``path`` relative to the repository, with forward slashes."""
    return Path(os.path.relpath(Path(path).resolve(), REPO)).as_posix()


def zoo_row(path: Path, results_dir: Optional[Path] = None) -> ZooRow:
    """Everything the metafile says about the config at ``path`` (no latency yet).

    Raises:
        ValueError: the config's name disagrees with the config (:func:`check_name`).
    """
    from hyperframes_mm.analysis.config_utils import load_config
    from hyperframes_mm.analysis.complexity import model_complexity
    path = Path(path)
    cfg = load_config(str(path))
    problems = check_name(path, cfg)
    if problems:
        raise ValueError('\n'.join(problems))
    name = parse_name(path)
    info = model_complexity(str(path), cfg_options=view_options(cfg))
    height, width = next(iter(info['inputs'].values()))[-2:]
    clips, crops = views_per_test_sample(cfg)
    results_dir = path.parent / 'results' if results_dir is None else Path(results_dir)
    return ZooRow(
        name=path.stem, config=repo_path(path), architecture=architecture(cfg),
        pretrained=PRETRAINED.get(name['pretrain'], name['pretrain']),
        dataset=DATASETS.get(name['dataset'], (name['dataset'], None))[0],
        modality=MODALITIES[name['modality']], gpus=name['gpus'],
        batch=name['batch'], epochs=name['epochs'], streams=train_streams(cfg),
        resolution=(int(height), int(width)), flops=info['flops'], params=info['params'],
        test_clips=clips, test_crops=crops,
        results=load_results(results_dir / f'{path.stem}.json'))


def view_latency(paths: Sequence[Path], repeats: int, warmup: int) -> List[float]:
    """Median CPU latency (ms) of one view of each config, batch 1, random pixels, the models
    timed side by side (:func:`~hyperframes_mm.analysis.complexity.compare_latency`: the whole
    test-time model, normalisation, backbone(s), head, clip averaging)."""
    from hyperframes_mm.analysis.complexity import compare_latency
    from hyperframes_mm.analysis.config_utils import load_config
    configs = {str(path): (str(path), view_options(load_config(str(path)))) for path in paths}
    latency = compare_latency(configs, device='cpu', repeats=repeats, warmup=warmup,
                              progress=False)
    return [latency[str(path)]['median_ms'] for path in paths]


def _number(value: float):
    return int(value) if float(value).is_integer() else float(value)


def metafile_data(folder: Path, rows: Sequence[ZooRow]) -> Dict:
    """mmaction2's metafile structure for a family: one collection, one model per config."""
    folder = Path(folder)
    collection = f'hyperframes-{folder.name}'
    models = []
    for row in rows:
        metadata = {
            'Architecture': row.architecture,
            'Batch Size': row.batch,
            'Epochs': row.epochs,
            'FLOPs': f'{row.flops / 1e9:.2f}G',
            'Parameters': f'{row.params / 1e6:.2f}M',
            'Pretrained': row.pretrained,
            'Resolution': f'{row.resolution[0]}x{row.resolution[1]}',
            'Training Data': row.dataset,
            'Training Resources': f'{row.gpus} GPUs',
        }
        if len(row.streams) == 1:
            metadata['Frames'] = row.streams[0].num_frames
            metadata['Frame Interval'] = _interval(row.streams[0])
        else:
            # list items as strings: mim search lower-cases every item of a metadata list
            metadata['Streams'] = [stream.name for stream in row.streams]
            metadata['Frames'] = [str(stream.num_frames) for stream in row.streams]
            metadata['Frame Interval'] = [str(_interval(stream)) for stream in row.streams]
        model = {'Name': row.name, 'Config': row.config, 'In Collection': collection,
                 'Metadata': metadata, 'Modality': row.modality}
        if row.results:
            model['Results'] = [{'Dataset': row.dataset, 'Task': 'Action Recognition',
                                 'Metrics': dict(row.results)}]
        models.append(model)
    return {'Collections': [{'Name': collection, 'README': repo_path(folder / 'README.md')}],
            'Models': models}


def metafile_text(folder: Path, rows: Sequence[ZooRow]) -> str:
    """The metafile as YAML, with a header saying how it was made."""
    import yaml
    header = (f'# Generated from the configs by tools/analysis/zoo_table.py {repo_path(folder)} '
              '--metafile;\n# tests/configs checks that it matches them. FLOPs and parameters: one '
              'view (README.md).\n# Results only where measured; no weights.\n')
    return header + yaml.safe_dump(metafile_data(folder, rows), sort_keys=False, width=200)


def _interval(stream: Stream):
    """The metafile's frame interval: a number of frames, or ``uniform``."""
    return 'uniform' if stream.interval is None else _number(stream.interval)


def _sampling_cell(streams: Sequence[Stream]) -> str:
    if len(streams) == 1 and streams[0].num_frames == 1 and streams[0].num_clips > 1:
        return f'{streams[0].num_clips} segments'  # TSN / TSM
    if len(streams) == 1:
        return f'{streams[0].num_frames} × {_interval(streams[0])}'
    return ' + '.join(f'{s.name} {s.num_frames} × {_interval(s)}' for s in streams)


def markdown_table(rows: Sequence[ZooRow]) -> str:
    """The family's model-zoo table (markdown)."""
    lines = ['| config | architecture | pretrained | frames × interval | test views | '
             'GFLOPs / view | params (M) | CPU ms / view | top-1 (%) | top-5 (%) |',
             '|---|---|---|---|---|---:|---:|---:|---:|---:|']
    for row in rows:
        latency = NOT_MEASURED if row.latency_ms is None else f'{row.latency_ms:.1f}'
        top1, top5 = ((f'{row.results["Top 1 Accuracy"]:.2f}',
                       f'{row.results["Top 5 Accuracy"]:.2f}') if row.results else
                      (NOT_MEASURED, NOT_MEASURED))
        lines.append(
            f'| [{row.name}]({row.name}.py) | {row.architecture} | {row.pretrained} | '
            f'{_sampling_cell(row.streams)} | {row.test_clips} clips × {row.test_crops} crops | '
            f'{row.flops / 1e9:.2f} | {row.params / 1e6:.2f} | {latency} | {top1} | {top5} |')
    return '\n'.join(lines) + '\n'


def measurement_note(rows: Sequence[ZooRow], repeats: int, warmup: int) -> str:
    """One line on how and where the latency column was measured."""
    if all(row.latency_ms is None for row in rows):
        return 'CPU latency not measured (`--no-latency`).\n'
    return (f'CPU latency: median of {repeats} calls after {warmup} warm-up, the models '
            f'interleaved round by round, batch 1, one view. {machine_line()}\n')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('folders', nargs='+', help='config family folders')
    parser.add_argument('--readme', action='store_true', help='rewrite the table in README.md')
    parser.add_argument('--metafile', action='store_true', help='write metafile.yml')
    parser.add_argument('--check', action='store_true',
                        help='exit 1 when metafile.yml differs from the configs')
    parser.add_argument('--no-latency', action='store_true', help='skip the latency column')
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--threads', type=int, default=1, help='torch threads for latency')
    parser.add_argument('--results', type=Path,
                        help='folder of <config name>.json test metrics (default: '
                        '<folder>/results)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import torch
    from mmengine.logging import MMLogger

    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from mmaction.utils import register_all_modules
    register_all_modules(init_default_scope=True)
    # Building each model logs every initialised weight, and the FLOP counter every operator it
    # does not count (elementwise ops, as mmaction2's tables): the table needs none of it.
    logger = MMLogger.get_current_instance()
    level, threads = logger.level, torch.get_num_threads()
    logger.setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    try:
        return _run(args)
    finally:
        logger.setLevel(level)
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> int:
    status = 0
    for folder in map(Path, args.folders):
        paths = family_configs(folder)
        rows = [zoo_row(path, args.results) for path in paths]
        if not (args.no_latency or args.check):
            for row, latency in zip(rows, view_latency(paths, args.repeats, args.warmup)):
                row.latency_ms = latency
        metafile = metafile_text(folder, rows)
        if args.check:
            committed = folder / 'metafile.yml'
            if not committed.is_file() or committed.read_text() != metafile:
                print(f'{committed} is out of date: run tools/analysis/zoo_table.py {folder} '
                      '--metafile')
                status = 1
            continue
        table = markdown_table(rows) + '\n' + measurement_note(rows, args.repeats, args.warmup)
        if args.metafile:
            (folder / 'metafile.yml').write_text(metafile)
            print(f'wrote {folder / "metafile.yml"}')
        if args.readme:
            replace_section(folder / 'README.md', table, TABLE_START, TABLE_END)
            print(f'wrote the table of {folder / "README.md"}')
        if not (args.metafile or args.readme):
            print(table)
    return status

