"""Model speed, side by side in one run: median CPU latency, GFLOPs and parameters, as ratios.

Every row is a whole mmaction2 recognizer (backbone + head, 400 classes) in eval mode, called as
``model(inputs)`` (mmaction2's ``mode='tensor'``) on one clip:

- 2D models on one frame: ResNet-18/50 (mmaction2), MobileNetV3 small/large (mmpretrain);
- hyperframe models: HyperResNet-18 at T=3/5/8 (T=5 also with frame attention and with
  ``extra_bn``), HyperResNet-50 at T=5, HyperMobileNetV3 small at T=3/5/8 (T=5 with frame
  attention) and large at T=5;
- video baselines from mmaction2's own modules: TSN (Recognizer2D + ResNet/MobileNetV3) and TSM
  (``ResNetTSM``, ``MobileNetV2TSM``) over 5 and 8 segments (ResNet-18; TSN-R50 and the
  MobileNets over 5), X3D-S (13 frames).

Timing rounds are interleaved (each round times every row once, in a rotating order) so that
load changes on a shared machine hit all rows alike; the latency is the median over rounds.
GFLOPs and parameters come from ``mmengine.analysis.get_model_complexity_info`` (its FLOPs are
multiply-adds, as in mmaction2's model zoo). Prints a markdown table and the targets, and writes
both to ``benchmarks/results/models.md``.

    python benchmarks/bench_models.py                     # ~3 minutes on 2 cores
    python benchmarks/bench_models.py --size 160 --threads 1 --repeats 50 --only 'R18|ResNet-18'

Rows are :class:`Row` entries ``(name, build, input_shape, baseline)``: ``build()`` returns the
module, ``input_shape`` is a tuple (one tensor) or a dict of tuples (a dict of tensors, e.g. the
streams of a two-stream model), and ``baseline`` names the row a ratio is also taken against
(its own 2D model on one frame). Add rows to :func:`make_rows`.
"""
import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import print_and_write
from hyperframes_mm.utils.timing import Timings, interleaved_timing

RESULTS = REPO / 'benchmarks' / 'results' / 'models.md'
NUM_CLASSES = 400

Shape = Union[Tuple[int, ...], Dict[str, Tuple[int, ...]]]


class Row(NamedTuple):
    """One benchmarked model: ``build()`` is called once; the model is timed on
    ``torch.randn(input_shape)`` (or a dict of such tensors)."""
    name: str
    build: Callable[[], nn.Module]
    input_shape: Shape
    baseline: Optional[str] = None


#: (check, numerator row, denominator row, bound, 'max' = ratio must be <= bound, 'min' >=).
TARGETS = [
    ('HyperResNet-18 T=5 vs one frame', 'HyperResNet-18 T=5', 'ResNet-18 (1 frame)', 1.25, 'max'),
    ('HyperMobileNetV3-small T=5 vs one frame', 'HyperMobileNetV3-small T=5',
     'MobileNetV3-small (1 frame)', 1.3, 'max'),
    ('HyperMobileNetV3-large T=5 vs one frame', 'HyperMobileNetV3-large T=5',
     'MobileNetV3-large (1 frame)', 1.3, 'max'),
    ('two-stream (shared backbone) vs one T=5 stream', 'FastSlow HyperResNet-18 T=5+5 shared',
     'HyperResNet-18 T=5', 2.1, 'max'),
    ('TSN-R18 5 seg / HyperResNet-18 T=5', 'TSN-R18 5 seg', 'HyperResNet-18 T=5', 3.5, 'min'),
    ('TSM-R18 5 seg / HyperResNet-18 T=5', 'TSM-R18 5 seg', 'HyperResNet-18 T=5', 3.5, 'min'),
    ('TSN-MobileNetV3-small 5 seg / HyperMobileNetV3-small T=5', 'TSN-MobileNetV3-small 5 seg',
     'HyperMobileNetV3-small T=5', 3.5, 'min'),
    ('TSM-MobileNetV2 5 seg / HyperMobileNetV3-small T=5', 'TSM-MobileNetV2 5 seg',
     'HyperMobileNetV3-small T=5', 3.5, 'min'),
    ('TSN-MobileNetV3-large 5 seg / HyperMobileNetV3-large T=5', 'TSN-MobileNetV3-large 5 seg',
     'HyperMobileNetV3-large T=5', 3.5, 'min'),
]
#: Costs reported without a bound: (what, numerator row, denominator row).
COSTS = [
    ('frame attention on HyperResNet-18 T=5', 'HyperResNet-18 T=5 +frame attention',
     'HyperResNet-18 T=5'),
    ('frame attention on HyperMobileNetV3-small T=5', 'HyperMobileNetV3-small T=5 +frame attention',
     'HyperMobileNetV3-small T=5'),
    ('extra_bn on HyperResNet-18 T=5', 'HyperResNet-18 T=5 +extra_bn', 'HyperResNet-18 T=5'),
    ('separate backbones vs a shared one (two-stream)', 'FastSlow HyperResNet-18 T=5+5 separate',
     'FastSlow HyperResNet-18 T=5+5 shared'),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--size', type=int, default=224, help='input height and width')
    parser.add_argument('--batch', type=int, default=1, help='clips per call')
    parser.add_argument('--threads', type=int, default=2, help='torch intra-op threads')
    parser.add_argument('--repeats', type=int, default=30, help='timed rounds (interleaved)')
    parser.add_argument('--warmup', type=int, default=3, help='untimed rounds first')
    parser.add_argument('--only', default=None,
                        help='regex: keep matching rows (and the baselines they need)')
    parser.add_argument('--no-flops', action='store_true', help='skip FLOP/parameter counting')
    parser.add_argument('--out', type=Path, default=RESULTS, help='markdown file to write')
    return parser.parse_args(argv)


def recognizer(backbone: dict, channels: int, head: Optional[dict] = None,
               kind: str = 'Recognizer2D', **options) -> Callable[[], nn.Module]:
    """A builder of an mmaction2 recognizer (TSNHead unless ``head`` is given), eval mode;
    ``options`` go to the recognizer (e.g. ``share_backbone`` of ``FastSlowRecognizer``)."""

    def build() -> nn.Module:
        from mmaction.registry import MODELS
        cls_head = head or dict(type='TSNHead', num_classes=NUM_CLASSES, in_channels=channels)
        model = MODELS.build(dict(type=kind, backbone=backbone, cls_head=cls_head, **options))
        model.init_weights()
        model.eval()
        return model

    return build


def make_rows(size: int, batch: int = 1) -> List[Row]:
    """The benchmark's rows at ``size`` x ``size``; inputs are ``[batch, segments, C, H, W]``."""

    def frames(num_frames: int, segments: int = 1) -> Tuple[int, ...]:
        return (batch, segments, 3 * num_frames, size, size)

    def tsm_r18(segments: int) -> Callable[[], nn.Module]:
        # ResNetTSM(pretrained=None) crashes in init_weights unless pretrained2d=False.
        return recognizer(
            dict(type='ResNetTSM', depth=18, num_segments=segments, pretrained=None,
                 pretrained2d=False), 512,
            dict(type='TSMHead', num_classes=NUM_CLASSES, in_channels=512,
                 num_segments=segments))

    def hyper_resnet(depth: int, num_frames: int, **kwargs) -> Callable[[], nn.Module]:
        return recognizer(dict(type='HyperResNet', depth=depth, num_frames=num_frames, **kwargs),
                          512 * (1 if depth < 50 else 4))

    def fast_slow(share_backbone: bool) -> Callable[[], nn.Module]:
        # two T=5 streams, pooled features concatenated: the head sees 2 x 512
        return recognizer(dict(type='HyperResNet', depth=18, num_frames=5), 1024,
                          kind='FastSlowRecognizer', share_backbone=share_backbone)

    streams = {'imgs_fast': frames(5), 'imgs_slow': frames(5)}

    def hyper_mnv3(arch: str, num_frames: int, **kwargs) -> Callable[[], nn.Module]:
        return recognizer(dict(type='HyperMobileNetV3', arch=arch, num_frames=num_frames,
                               **kwargs), {'small': 576, 'large': 960}[arch])

    r18, r50 = 'ResNet-18 (1 frame)', 'ResNet-50 (1 frame)'
    small, large = 'MobileNetV3-small (1 frame)', 'MobileNetV3-large (1 frame)'
    rows = [
        Row(r18, recognizer(dict(type='ResNet', depth=18, pretrained=None), 512), frames(1)),
        Row('HyperResNet-18 T=3', hyper_resnet(18, 3), frames(3), r18),
        Row('HyperResNet-18 T=5', hyper_resnet(18, 5), frames(5), r18),
        Row('HyperResNet-18 T=8', hyper_resnet(18, 8), frames(8), r18),
        Row('HyperResNet-18 T=5 +frame attention', hyper_resnet(18, 5, frame_attention=True),
            frames(5), r18),
        Row('HyperResNet-18 T=5 +extra_bn', hyper_resnet(18, 5, extra_bn=True), frames(5), r18),
        Row('FastSlow HyperResNet-18 T=5+5 shared', fast_slow(True), streams, r18),
        Row('FastSlow HyperResNet-18 T=5+5 separate', fast_slow(False), streams, r18),
        Row('TSN-R18 5 seg', recognizer(dict(type='ResNet', depth=18, pretrained=None), 512),
            frames(1, 5), r18),
        Row('TSN-R18 8 seg', recognizer(dict(type='ResNet', depth=18, pretrained=None), 512),
            frames(1, 8), r18),
        Row('TSM-R18 5 seg', tsm_r18(5), frames(1, 5), r18),
        Row('TSM-R18 8 seg', tsm_r18(8), frames(1, 8), r18),
        Row(r50, recognizer(dict(type='ResNet', depth=50, pretrained=None), 2048), frames(1)),
        Row('HyperResNet-50 T=5', hyper_resnet(50, 5), frames(5), r50),
        Row('TSN-R50 5 seg', recognizer(dict(type='ResNet', depth=50, pretrained=None), 2048),
            frames(1, 5), r50),
        Row(small, recognizer(dict(type='mmpretrain.MobileNetV3', arch='small'), 576), frames(1)),
        Row('HyperMobileNetV3-small T=3', hyper_mnv3('small', 3), frames(3), small),
        Row('HyperMobileNetV3-small T=5', hyper_mnv3('small', 5), frames(5), small),
        Row('HyperMobileNetV3-small T=8', hyper_mnv3('small', 8), frames(8), small),
        Row('HyperMobileNetV3-small T=5 +frame attention',
            hyper_mnv3('small', 5, frame_attention=True), frames(5), small),
        Row('TSN-MobileNetV3-small 5 seg',
            recognizer(dict(type='mmpretrain.MobileNetV3', arch='small'), 576), frames(1, 5),
            small),
        Row('TSM-MobileNetV2 5 seg',
            recognizer(dict(type='MobileNetV2TSM', num_segments=5, pretrained=None,
                            pretrained2d=False), 1280,
                       dict(type='TSMHead', num_classes=NUM_CLASSES, in_channels=1280,
                            num_segments=5)), frames(1, 5), small),
        Row(large, recognizer(dict(type='mmpretrain.MobileNetV3', arch='large'), 960), frames(1)),
        Row('HyperMobileNetV3-large T=5', hyper_mnv3('large', 5), frames(5), large),
        Row('TSN-MobileNetV3-large 5 seg',
            recognizer(dict(type='mmpretrain.MobileNetV3', arch='large'), 960), frames(1, 5),
            large),
        Row('X3D-S 13 frames',
            recognizer(dict(type='X3D', gamma_w=1, gamma_b=2.25, gamma_d=2.2), 432,
                       dict(type='X3DHead', num_classes=NUM_CLASSES, in_channels=432,
                            fc1_bias=False), kind='Recognizer3D'),
            (batch, 1, 3, 13, size, size), r18),
    ]
    return rows


def make_inputs(shape: Shape) -> Union[torch.Tensor, Dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    if isinstance(shape, dict):
        return {key: torch.randn(value, generator=generator) for key, value in shape.items()}
    return torch.randn(shape, generator=generator)


def complexity(model: nn.Module, inputs) -> Tuple[float, float]:
    """(GFLOPs as multiply-adds, millions of parameters) by mmengine's analysis."""
    from mmengine.analysis import get_model_complexity_info
    with torch.no_grad():
        info = get_model_complexity_info(model, inputs=(inputs, ), show_table=False,
                                         show_arch=False)
    return info['flops'] / 1e9, info['params'] / 1e6


def select(rows: List[Row], pattern: Optional[str]) -> List[Row]:
    if pattern is None:
        return rows
    keep = {row.name for row in rows if re.search(pattern, row.name)}
    keep |= {row.baseline for row in rows if row.name in keep and row.baseline}
    return [row for row in rows if row.name in keep]


def render(rows: List[Row], times: Timings, cost: Dict[str, Tuple[float, float]], args,
           environment: str) -> str:
    reference = 'ResNet-18 (1 frame)' if 'ResNet-18 (1 frame)' in times else rows[0].name
    lines = [
        f'# Model speed: {args.size}x{args.size}, batch {args.batch}, {args.threads} threads, '
        f'median of {args.repeats} interleaved rounds', '',
        environment, '',
        f'| model | input | GFLOPs | params (M) | median ms | IQR ms | x {reference} | '
        'x own 2D (1 frame) |',
        '|---|---|---:|---:|---:|---:|---:|---:|',
    ]
    for row in rows:
        shape = row.input_shape
        shape_text = ('{' + ', '.join(f'{k}: {list(v)}' for k, v in shape.items()) + '}'
                      if isinstance(shape, dict) else str(list(shape)))
        flops, params = (f'{value:.3f}' for value in cost[row.name]) if row.name in cost \
            else ('-', '-')
        own = (f'{times.ratio(row.name, row.baseline):.2f}x'
               if row.baseline in times and 'frame)' in row.baseline else '')
        low, high = times.quartiles(row.name)
        lines.append(f'| {row.name} | {shape_text} | {flops} | {params} | '
                     f'{times.median(row.name) * 1e3:.1f} | {low * 1e3:.1f}-{high * 1e3:.1f} | '
                     f'{times.ratio(row.name, reference):.2f}x | {own} |')
    lines += ['', '## Targets (ratios of median latencies)', '',
              '| check | ratio | target | met |', '|---|---:|---:|---|']
    for check, numerator, denominator, bound, kind in TARGETS:
        if numerator in times and denominator in times:
            ratio = times.ratio(numerator, denominator)
            met = ratio <= bound if kind == 'max' else ratio >= bound
            sign = '<=' if kind == 'max' else '>='
            lines.append(f'| {check} | {ratio:.2f}x | {sign} {bound}x | '
                         f'{"yes" if met else "**no**"} |')
    lines += ['', '| extra cost | latency ratio | GFLOPs ratio |', '|---|---:|---:|']
    for what, numerator, denominator in COSTS:
        if numerator in times and denominator in times:
            flops_ratio = (f'{cost[numerator][0] / cost[denominator][0]:.3f}x'
                           if numerator in cost and denominator in cost else '-')
            lines.append(f'| {what} | {times.ratio(numerator, denominator):.3f}x | '
                         f'{flops_ratio} |')
    return '\n'.join(lines) + '\n'


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401  (registers the hyperframe models)
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    from tqdm import tqdm
    init_default_scope('mmaction')  # as mmaction2's tools do: recognizers build their parts
    MMLogger.get_current_instance().setLevel('WARNING')  # init logs would drown the table
    torch.set_num_threads(args.threads)
    load_at_start = load_average()
    rows = select(make_rows(args.size, args.batch), args.only)
    models, inputs, cost = {}, {}, {}
    for row in tqdm(rows, desc='building', unit='model'):
        models[row.name] = row.build()
        inputs[row.name] = make_inputs(row.input_shape)
        if not args.no_flops:
            cost[row.name] = complexity(models[row.name], inputs[row.name])
    times = interleaved_timing(
        {name: (lambda name=name: models[name](inputs[name])) for name in models},
        args.repeats, args.warmup)
    command = shlex.join(['python', 'benchmarks/bench_models.py'] + sys.argv[1:])
    environment = (f'{machine_line(threads=args.threads, load_at_start=load_at_start)} '
                   f'Command: `{command}`')
    table = render(rows, times, cost, args, environment)
    print_and_write(table, args.out)
    return table


if __name__ == '__main__':
    main()
