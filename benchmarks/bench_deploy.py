"""Int8 on a CPU next to the camera: ms per decision for PyTorch float, onnxruntime float and
onnxruntime int8 (QDQ and QOperator), side by side, and camera streams per core.

    python benchmarks/bench_deploy.py [--threads 1 2] [--repeats 30] [--checkpoint-dir DIR]

Rows: the UTD-MHAD ImageNet family's single frame, hyperframe T=5 and T=8, fast/slow T=5+5 and
mmaction2's TSM-MobileNetV2-5, each exported with ``hyperframes_mm.deploy.export_onnx`` and
quantised with ``hyperframes_mm.deploy.quantize_int8`` (per-channel int8 weights) exactly as
``tools/deployment/quantize_int8.py`` does. Every runtime of every row is timed in the same
interleaved rounds (``interleaved_timing``), batch 1, one test sample (all its clips), at each
thread count. Latency does not depend on the weights: without ``--checkpoint-dir`` (a folder of
``<row slug>.pth``) the models keep their initial weights and are calibrated on random pixels,
and the table says that top-1 was not measured; with trained checkpoints the quantisation tool's
parity report gives top-1 of both (docs/deployment.md).

Streams per core at 5 decisions a second each: a stream costs the decoding of every frame of its
source (30 fps, decoded in order by decord, timed on a generated H.264 video of each size), and
per decision the test pipeline over the window's frames (2 s of them) and the int8 model (one
thread):
``1 / (30 * decode + 5 * (pipeline + model))``. Writes ``benchmarks/results/deploy.md``.
"""
import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Dict

import numpy as np
import torch

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import heading, markdown_table, print_and_write

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / 'benchmarks' / 'results' / 'deploy.md'
FAMILY = REPO / 'configs' / 'hyperframes' / 'utd_mhad_imagenet'
ROWS = {
    'single frame': 'singleframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x1-30e',
    'hyperframe T=5': 'hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e',
    'hyperframe T=8': 'hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e',
    'fast/slow T=5+5': 'fastslow_imagenet-pretrained-mobilenetv2_1xb16-5x4x1-1x1x5-30e',
    'TSM-MobileNetV2-5 (mmaction2)': 'tsm_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e',
}
RUNTIMES = ('PyTorch float', 'onnxruntime float', 'onnxruntime int8 QDQ',
            'onnxruntime int8 QOperator')
#: source sizes (W, H) of the streams-per-core columns, and their frame rate
SOURCES = ((320, 240), (640, 480))
SOURCE_FPS = 30
DECISIONS_PER_SECOND = 5
#: the window a decision reads: the family's models spread their picks over the whole clip, and
#: its clips last about this long
WINDOW_SECONDS = 2


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--threads', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--repeats', type=int, default=30, help='timed rounds')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--calib-clips', type=int, default=16)
    parser.add_argument('--checkpoint-dir', type=Path,
                        help='trained <row slug>.pth files (default: initial weights)')
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def config_of(prefix: str) -> Path:
    (path, ) = FAMILY.glob(f'{prefix}_*.py')
    return path


def build_row(name: str, folder: Path, args) -> Dict:
    """The row's model, its pixels, its float and int8 graphs and the int8 model's window."""
    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.deploy.export import export_onnx, random_pixels
    from hyperframes_mm.deploy.quantize import quantize_int8
    from hyperframes_mm.utils import slug
    config = config_of(ROWS[name])
    checkpoint = args.checkpoint_dir / f'{slug(name)}.pth' if args.checkpoint_dir else None
    model = init_recognizer(config, str(checkpoint) if checkpoint else None, 'cpu',
                            init_weights=False)
    example = example_inputs(model.cfg, (128, 128))
    shapes = ({key: tuple(value.shape) for key, value in example.items()}
              if isinstance(example, dict) else tuple(example.shape))
    pixels = random_pixels(shapes, 1)
    float_path = export_onnx(model, folder / 'float.onnx', pixels)
    calibration = []
    for seed in range(args.calib_clips):
        drawn = random_pixels(shapes, 1, seed=seed + 1)
        calibration.append({key: value[0] for key, value in drawn.items()}
                           if isinstance(drawn, dict) else drawn[0])
    graphs = {'onnxruntime float': float_path}
    kept = {}
    for quant_format in ('QDQ', 'QOperator'):
        path = folder / f'int8_{quant_format}.onnx'
        kept[quant_format] = quantize_int8(float_path, path, calibration,
                                           quant_format)['float_operators']
        graphs[f'onnxruntime int8 {quant_format}'] = path
    sample = ({key: value[0] for key, value in pixels.items()} if isinstance(pixels, dict)
              else pixels[0])
    return dict(model=model, pixels=pixels, sample=sample, graphs=graphs, kept=kept,
                trained=checkpoint is not None,
                onnx={key: OnnxRecognizer(path, model.cfg) for key, path in graphs.items()})


def time_rows(rows: Dict[str, Dict], threads: int, args) -> Dict[str, Dict[str, float]]:
    """Median ms per decision of every (row, runtime), all timed in the same rounds."""
    import onnxruntime as ort
    from hyperframes_mm.deploy.export import ExportWrapper, as_tuple
    from hyperframes_mm.utils.timing import interleaved_timing
    torch.set_num_threads(threads)
    calls = {}
    for name, row in rows.items():
        wrapper = ExportWrapper(row['model']).eval()
        tensors = as_tuple(row['model'], row['pixels'])
        calls[(name, 'PyTorch float')] = (lambda w=wrapper, t=tensors: w(*t))
        for runtime, recognizer in row['onnx'].items():
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            recognizer.session = ort.InferenceSession(str(row['graphs'][runtime]), options,
                                                      providers=['CPUExecutionProvider'])
            calls[(name, runtime)] = (lambda r=recognizer, s=row['sample']: r.scores([s]))
    times = interleaved_timing(calls, args.repeats, args.warmup)
    out: Dict[str, Dict[str, float]] = {}
    for (name, runtime) in calls:
        out.setdefault(name, {})[runtime] = times.median((name, runtime)) * 1e3
    return out


def decode_ms_per_frame(size, frames: int = 90) -> float:
    """ms to decode one frame of a ``size`` (W, H) H.264 video in order with decord."""
    import time

    import decord
    from hyperframes_mm.datasets.video_io import write_video
    rng = np.random.default_rng(0)
    width, height = size
    base = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    video = [np.roll(base, 4 * t, axis=1) for t in range(frames)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'source.mp4'
        write_video(path, np.stack(video), fps=SOURCE_FPS)
        best = float('inf')
        for _ in range(3):
            reader = decord.VideoReader(str(path), num_threads=1)
            start = time.perf_counter()
            for index in range(len(reader)):
                reader[index]
            best = min(best, (time.perf_counter() - start) / len(reader))
    return best * 1e3


def pipeline_ms(row: Dict, size, repeats: int = 20) -> float:
    """ms of the test pipeline over one window of ``size`` frames (the int8 model's input)."""
    import time

    from hyperframes_mm.deploy import ModelStage
    window = WINDOW_SECONDS * SOURCE_FPS
    stage = ModelStage(row['model'], window=window)
    width, height = size
    frames = [np.full((height, width, 3), t % 256, np.uint8) for t in range(window)]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        stage.prepare(frames, SOURCE_FPS)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main(argv=None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    import onnxruntime
    from mmengine.logging import MMLogger
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    load = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        rows = {}
        for name in ROWS:
            folder = Path(tmp) / str(len(rows))
            folder.mkdir()
            rows[name] = build_row(name, folder, args)
        latency = {threads: time_rows(rows, threads, args) for threads in args.threads}
        torch.set_num_threads(1)
        decode = {size: decode_ms_per_frame(size) for size in SOURCES}
        prepare = {(name, size): pipeline_ms(row, size) for name, row in rows.items()
                   for size in SOURCES}
    header = ['model', 'threads', *[f'{runtime} (ms)' for runtime in RUNTIMES],
              'int8 QDQ / PyTorch float', 'int8 QDQ / TSM int8 QDQ']
    table = []
    tsm = 'TSM-MobileNetV2-5 (mmaction2)'
    for threads, by_row in latency.items():
        for name, ms in by_row.items():
            int8 = ms['onnxruntime int8 QDQ']
            table.append([name, str(threads), *[f'{ms[runtime]:.2f}' for runtime in RUNTIMES],
                          f'{int8 / ms["PyTorch float"]:.2f}x',
                          f'{int8 / by_row[tsm]["onnxruntime int8 QDQ"]:.2f}x'])
    streams_header = ['model', *[f'{w}x{h}: streams per core' for w, h in SOURCES],
                      *[f'{w}x{h}: decode / pipeline / model (ms per second of video)'
                        for w, h in SOURCES]]
    streams = []
    one = latency[min(latency)]
    for name in rows:
        model_ms = one[name]['onnxruntime int8 QDQ']
        cells, shares = [], []
        for size in SOURCES:
            parts = (SOURCE_FPS * decode[size], DECISIONS_PER_SECOND * prepare[(name, size)],
                     DECISIONS_PER_SECOND * model_ms)
            cells.append(f'{1e3 / sum(parts):.1f}')
            shares.append(' / '.join(f'{part:.0f}' for part in parts))
        streams.append([name, *cells, *shares])
    kept = sorted({op for row in rows.values() for ops in row['kept'].values() for op in ops})
    trained = all(row['trained'] for row in rows.values())
    text = heading(
        'Int8 deployment on a CPU',
        machine_line(f'onnxruntime {onnxruntime.__version__}', 'batch 1, one test sample',
                     threads=args.threads, load_at_start=load),
        'Every model of the UTD-MHAD ImageNet family at its trained input (112x112), exported '
        'and quantised (per-channel int8 weights, uint8 activations) as '
        '`tools/deployment/quantize_int8.py` does; every runtime of every row timed in the same '
        f'interleaved rounds ({args.repeats} kept), median ms per decision. '
        + ('Top-1 of the trained models: the quantisation tool\'s parity reports.' if trained
           else 'Initial weights, calibrated on random pixels: latency only; top-1 float and '
           'int8 were not measured here (no trained checkpoints on this machine; '
           '`--checkpoint-dir` and `tools/deployment/quantize_int8.py` measure them).'),
        'Operators without an int8 kernel, kept in float: ' + (', '.join(kept) or 'none') + '.')
    text += markdown_table(header, 'l' + 'r' * (len(header) - 1), table)
    text += ['', f'Camera streams per core at {DECISIONS_PER_SECOND} decisions a second, '
             f'{SOURCE_FPS} fps sources decoded in full, the int8 QDQ model on one thread; the '
             'three costs say what limits it (milliseconds of work per second of one stream).',
             '']
    text += markdown_table(streams_header, 'l' + 'r' * (len(streams_header) - 1), streams)
    print_and_write('\n'.join(text) + '\n', args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
