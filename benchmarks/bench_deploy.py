"""Int8 on a CPU next to the camera: ms per decision for PyTorch float, onnxruntime float and
onnxruntime int8 (QDQ and QOperator), side by side, and camera streams per core.

    python benchmarks/bench_deploy.py [--threads 1 2] [--repeats 30] [--checkpoint-dir DIR]
    python benchmarks/bench_deploy.py --device cuda   # the GPU columns, results/deploy.gpu.md

Rows: the UTD-MHAD ImageNet family's single frame, hyperframe T=5 and T=8, fast/slow T=5+5 and
mmaction2's TSM-MobileNetV2-5, each exported with ``hyperframes_mm.deploy.export_onnx`` and
quantised with ``hyperframes_mm.deploy.quantize_int8`` (per-channel int8 weights) exactly as
``tools/deployment/quantize_int8.py`` does. Every runtime of every row is timed in the same
interleaved rounds (``interleaved_timing``), batch 1, one test sample (all its clips), at each
thread count. Latency does not depend on the weights, so a row without a trained checkpoint keeps
its initial weights, is calibrated on random pixels and reads "not trained here" in the top-1
columns. A row's checkpoint is ``--checkpoint-dir/<row slug>.pth``, else the first run record
of ``benchmarks/results/utd_mhad_imagenet.json`` whose checkpoint is on this machine; with one
(and the family's data), the int8 model is calibrated on training clips and the quantisation
tool's parity report gives top-1 of both on the test list (``--max-test`` caps it).

Streams per core at 5 decisions a second each: a stream costs the decoding of every frame of its
source (30 fps, decoded in order by decord, timed on a generated H.264 video of each size), and
per decision the test pipeline over the window's frames (2 s of them) and the int8 model (one
thread):
``1 / (30 * decode + 5 * (pipeline + model))``. Writes ``benchmarks/results/deploy.md`` and its
record ``deploy.json``.

``--device cuda`` (``tools/gpu_bench.sh run deploy`` on a lent GPU) times the GPU columns of the
same rows instead: PyTorch float, PyTorch fp16 with channels-last weights and onnxruntime's CUDA
execution provider on the float graph where the installed onnxruntime has it (the table says
when it does not), batch 1, with a CUDA synchronisation before each clock read.
"""
import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import heading, markdown_table, print_and_write

RESULTS = REPO / 'benchmarks' / 'results' / 'deploy.md'
GPU_RESULTS = RESULTS.with_name('deploy.gpu.md')
#: the family's run records, whose checkpoints give the top-1 columns where they are present
RECORD = REPO / 'benchmarks' / 'results' / 'utd_mhad_imagenet.json'
FAMILY = REPO / 'configs' / 'hyperframes' / 'utd_mhad_imagenet'
ROWS = {
    'single frame': 'singleframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x1-30e',
    'hyperframe T=5': 'hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e',
    'hyperframe T=8': 'hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e',
    'fast/slow T=5+5': 'fastslow_imagenet-pretrained-mobilenetv2_1xb16-5x4x1-1x1x5-30e',
    'TSM-MobileNetV2-5 (mmaction2)': 'tsm_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e',
}
TSM = 'TSM-MobileNetV2-5 (mmaction2)'
RUNTIMES = ('PyTorch float', 'onnxruntime float', 'onnxruntime int8 QDQ',
            'onnxruntime int8 QOperator')
GPU_RUNTIMES = ('PyTorch float', 'PyTorch fp16 channels-last', 'onnxruntime CUDA float')
NOT_TRAINED = 'not trained here'
#: source sizes (W, H) of the streams-per-core columns, and their frame rate
SOURCES = ((320, 240), (640, 480))
SOURCE_FPS = 30
DECISIONS_PER_SECOND = 5
#: the window a decision reads: the family's models spread their picks over the whole clip, and
#: its clips last about this long
WINDOW_SECONDS = 2


def parse_args(argv=None):
    from hyperframes_mm.deploy.quantize import CALIBRATION_CLIPS
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--threads', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--repeats', type=int, default=30, help='timed rounds')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--calib-clips', type=int, default=CALIBRATION_CLIPS)
    parser.add_argument('--max-test', type=int, help='test clips of the top-1 columns (all)')
    parser.add_argument('--checkpoint-dir', type=Path,
                        help='trained <row slug>.pth files (default: the run records\' ones '
                        'present here, else initial weights)')
    parser.add_argument('--device', default='cpu', choices=['cpu', 'cuda'],
                        help='cuda: the GPU columns instead of the CPU ones')
    parser.add_argument('--out', type=Path,
                        help=f'the page (default: {RESULTS.name}, or {GPU_RESULTS.name} on cuda)')
    return parser.parse_args(argv)


def config_of(prefix: str) -> Path:
    (path, ) = FAMILY.glob(f'{prefix}_*.py')
    return path


def checkpoint_of(name: str, args) -> Optional[Path]:
    """The row's trained checkpoint on this machine: ``--checkpoint-dir``'s, else the first of
    the family's run records that is present, else None."""
    from hyperframes_mm.utils import slug
    if args.checkpoint_dir:
        path = args.checkpoint_dir / f'{slug(name)}.pth'
        return path if path.is_file() else None
    runs = json.loads(RECORD.read_text())['results'].get(name, []) if RECORD.is_file() else []
    present = [REPO / run['checkpoint'] for run in runs if (REPO / run['checkpoint']).is_file()]
    return present[0] if present else None


def recorded_path(checkpoint: Optional[str]) -> Optional[str]:
    """A checkpoint as the record names it, the same on every machine: relative to the
    repository, or (from ``--checkpoint-dir`` elsewhere) its file name, the row's slug."""
    if checkpoint is None:
        return None
    path = Path(checkpoint).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name


def first(batch):
    """The first sample of a batch of pixels (one tensor, or one per stream)."""
    return ({key: value[0] for key, value in batch.items()} if isinstance(batch, dict)
            else batch[0])


def build_row(name: str, folder: Path, args) -> Dict:
    """The row's model, its pixels, its float and int8 graphs and, trained, its parity report."""
    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.deploy.export import export_onnx, random_pixels
    from hyperframes_mm.deploy.quantize import (dataset_list, labelled_videos, parity_report,
                                                pipeline_samples, quantize_int8, spread)
    checkpoint = checkpoint_of(name, args)
    model = init_recognizer(config_of(ROWS[name]), str(checkpoint) if checkpoint else None,
                            'cpu', init_weights=False)
    example = example_inputs(model.cfg, (128, 128))
    shapes = ({key: tuple(value.shape) for key, value in example.items()}
              if isinstance(example, dict) else tuple(example.shape))
    pixels = random_pixels(shapes, 1)
    sample = first(pixels)
    float_path = export_onnx(model, folder / 'float.onnx', pixels)
    if checkpoint:
        cfg = model.cfg
        train = spread(labelled_videos(*dataset_list(cfg.train_dataloader)), args.calib_clips)
        test = spread(labelled_videos(*dataset_list(cfg.test_dataloader)), args.max_test)
        calibration = [inputs for inputs, _ in pipeline_samples(cfg, train)]
    else:
        calibration = [first(random_pixels(shapes, 1, seed=seed + 1))
                       for seed in range(args.calib_clips)]
    graphs = {'onnxruntime float': float_path}
    kept = {}
    for quant_format in ('QDQ', 'QOperator'):
        path = folder / f'int8_{quant_format}.onnx'
        kept[quant_format] = quantize_int8(float_path, path, calibration,
                                           quant_format)['float_operators']
        graphs[f'onnxruntime int8 {quant_format}'] = path
    onnx = {key: OnnxRecognizer(path, model.cfg) for key, path in graphs.items()}
    parity = (parity_report(onnx['onnxruntime float'], onnx['onnxruntime int8 QDQ'],
                            list(pipeline_samples(model.cfg, test))) if checkpoint else None)
    return dict(model=model, pixels=pixels, sample=sample, graphs=graphs, kept=kept,
                checkpoint=str(checkpoint) if checkpoint else None, parity=parity, onnx=onnx)


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


def fp16(wrapper, tensors: tuple) -> torch.Tensor:
    """One fp16 call: the normalisation in the graph yields float32, which autocast casts once
    at the first convolution (the weights are fp16 already)."""
    with torch.autocast('cuda', dtype=torch.float16):
        return wrapper(*tensors)


def time_gpu(args) -> Dict:
    """Median ms per decision of every row on the GPU for ``GPU_RUNTIMES``, in shared rounds;
    ``'onnxruntime CUDA float'`` is absent when onnxruntime has no CUDA provider here."""
    import onnxruntime as ort
    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.deploy.export import ExportWrapper, as_tuple, export_onnx, random_pixels
    from hyperframes_mm.utils.timing import interleaved_timing
    cuda_ep = 'CUDAExecutionProvider' in ort.get_available_providers()
    calls = {}
    with tempfile.TemporaryDirectory() as tmp:
        for index, name in enumerate(ROWS):
            model = init_recognizer(config_of(ROWS[name]), None, 'cpu', init_weights=False)
            example = example_inputs(model.cfg, (128, 128))
            shapes = ({key: tuple(value.shape) for key, value in example.items()}
                      if isinstance(example, dict) else tuple(example.shape))
            pixels = random_pixels(shapes, 1)
            if cuda_ep:
                path = export_onnx(model, Path(tmp) / f'{index}.onnx', pixels)
                session = ort.InferenceSession(str(path), providers=['CUDAExecutionProvider'])
                feeds = {meta.name: tensor.numpy() for meta, tensor
                         in zip(session.get_inputs(), as_tuple(model, pixels))}
                calls[(name, 'onnxruntime CUDA float')] = (
                    lambda s=session, f=feeds: s.run(['scores'], f))
            tensors = tuple(tensor.cuda() for tensor in as_tuple(model, pixels))
            wrapper = ExportWrapper(model.cuda()).eval()
            calls[(name, 'PyTorch float')] = (lambda w=wrapper, t=tensors: w(*t))
            # a second copy in fp16 with channels-last weights, the layout tensor cores read
            half = ExportWrapper(init_recognizer(config_of(ROWS[name]), None, 'cpu',
                                                 init_weights=False)).eval()
            half = half.cuda().half().to(memory_format=torch.channels_last)
            calls[(name, 'PyTorch fp16 channels-last')] = (lambda w=half, t=tensors: fp16(w, t))
        times = interleaved_timing(calls, args.repeats, args.warmup,
                                   synchronize=torch.cuda.synchronize)
    out: Dict[str, Dict[str, float]] = {}
    for (name, runtime) in calls:
        out.setdefault(name, {})[runtime] = times.median((name, runtime)) * 1e3
    return dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                onnxruntime=ort.__version__, cuda_ep=cuda_ep, repeats=args.repeats, latency=out)


def gpu_page(result: Dict) -> str:
    """The GPU columns' page, from :func:`time_gpu`'s record."""
    header = ['model', *[f'{runtime} (ms)' for runtime in GPU_RUNTIMES],
              'fp16 channels-last / float', 'fp16 / TSM fp16']
    table = []
    latency = result['latency']
    tsm = latency[TSM]['PyTorch fp16 channels-last']
    for name, ms in latency.items():
        half = ms['PyTorch fp16 channels-last']
        table.append([name, *[f'{ms[runtime]:.2f}' if runtime in ms else 'no CUDA provider'
                              for runtime in GPU_RUNTIMES],
                      f'{half / ms["PyTorch float"]:.2f}x', f'{half / tsm:.2f}x'])
    text = heading(
        'Deployment on a GPU',
        f'Machine: {result["device"]}, torch {result["torch"]}, onnxruntime '
        f'{result["onnxruntime"]}; batch 1, one test sample, initial weights (latency does '
        'not depend on them).',
        f'The rows of [the CPU page](deploy.md), every runtime timed in the same interleaved '
        f'rounds ({result["repeats"]} kept), median ms per decision, uint8-range pixels in '
        '(normalisation in the timed model). '
        + ('' if result['cuda_ep'] else 'The installed onnxruntime wheel has no CUDA execution '
           'provider, so its column is empty.'))
    text += markdown_table(header, 'l' + 'r' * (len(header) - 1), table)
    return '\n'.join(text) + '\n'


def top1_cells(row: Dict) -> list:
    """Float and int8 top-1 and their agreement on the test list, or why they are absent."""
    parity = row['parity']
    if parity is None:
        return [NOT_TRAINED] * 3
    return [f'{parity["top1_float"]:.3f}', f'{parity["top1_int8"]:.3f}',
            f'{parity["agreement"]:.3f}']


def targets(rows: Dict, latency: Dict, streams: Dict) -> list:
    """The issue's four targets, each read from the tables: (target, measured, met or not)."""
    t5, one = 'hyperframe T=5', latency[min(latency)]
    parity = rows[t5]['parity']
    drop = (None if parity is None else 100 * (parity['top1_float'] - parity['top1_int8']))
    int8 = one[t5]['onnxruntime int8 QDQ']
    ratio_pytorch = int8 / one[t5]['PyTorch float']
    ratio_tsm = int8 / one[TSM]['onnxruntime int8 QDQ']
    per_core = streams[(t5, SOURCES[0])]
    return [
        ['int8 T=5 within 1 point of float top-1',
         NOT_TRAINED if drop is None else f'{drop:+.1f} points',
         'not measured' if drop is None else ('met' if drop <= 1 else 'missed')],
        ['int8 onnxruntime <= 1/2 of float PyTorch latency, 1 thread (T=5)',
         f'{ratio_pytorch:.2f}x', 'met' if ratio_pytorch <= 0.5 else 'missed'],
        ['int8 T=5 <= 1/4 of int8 TSM-MobileNetV2-5 latency, 1 thread',
         f'{ratio_tsm:.2f}x', 'met' if ratio_tsm <= 0.25 else 'missed'],
        ['>= 10 camera streams per core at 5 decisions/s, 320x240 (T=5)',
         f'{per_core:.1f}', 'met' if per_core >= 10 else 'missed'],
    ]


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out = args.out or (GPU_RESULTS if args.device == 'cuda' else RESULTS)
    import hyperframes_mm  # noqa: F401
    import onnxruntime
    from mmengine.logging import MMLogger
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    if args.device == 'cuda':
        if not torch.cuda.is_available():
            print('error: bench_deploy --device cuda: no CUDA device (torch.cuda.is_available() '
                  'is False)', file=sys.stderr)
            return 1
        result = time_gpu(args)
        print_and_write(gpu_page(result), args.out)
        args.out.with_suffix('.json').write_text(json.dumps(result, indent=1) + '\n')
        return 0
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
    for threads, by_row in latency.items():
        for name, ms in by_row.items():
            int8 = ms['onnxruntime int8 QDQ']
            table.append([name, str(threads), *[f'{ms[runtime]:.2f}' for runtime in RUNTIMES],
                          f'{int8 / ms["PyTorch float"]:.2f}x',
                          f'{int8 / by_row[TSM]["onnxruntime int8 QDQ"]:.2f}x'])
    accuracy_header = ['model', 'top-1 float', 'top-1 int8 QDQ', 'top-1 agreement',
                       'operators kept in float (QDQ)']
    accuracy = [[name, *top1_cells(row), ', '.join(row['kept']['QDQ']) or 'none']
                for name, row in rows.items()]
    streams_header = ['model', *[f'{w}x{h}: streams per core' for w, h in SOURCES],
                      *[f'{w}x{h}: decode / pipeline / model (ms per second of video)'
                        for w, h in SOURCES], 'limited by']
    streams, per_core = [], {}
    one = latency[min(latency)]
    for name in rows:
        model_ms = one[name]['onnxruntime int8 QDQ']
        cells, shares, costs = [], [], {}
        for size in SOURCES:
            parts = (SOURCE_FPS * decode[size], DECISIONS_PER_SECOND * prepare[(name, size)],
                     DECISIONS_PER_SECOND * model_ms)
            per_core[(name, size)] = 1e3 / sum(parts)
            costs[size] = parts
            cells.append(f'{per_core[(name, size)]:.1f}')
            shares.append(' / '.join(f'{part:.0f}' for part in parts))
        # the largest cost at the smaller source; the pipeline's cost is its Python transforms
        largest = max(zip(costs[SOURCES[0]], ('decode', 'pipeline (Python)', 'model')))[1]
        streams.append([name, *cells, *shares, largest])
    goals = targets(rows, latency, per_core)
    trained = [name for name, row in rows.items() if row['checkpoint']]
    text = heading(
        'Int8 deployment on a CPU',
        machine_line(f'onnxruntime {onnxruntime.__version__}', 'batch 1, one test sample',
                     threads=args.threads, load_at_start=load),
        'Every model of the UTD-MHAD ImageNet family at its trained input (112x112), exported '
        'and quantised (per-channel int8 weights in 7-bit range, uint8 activations) as '
        '`tools/deployment/quantize_int8.py` does; every runtime of every row timed in the same '
        f'interleaved rounds ({args.repeats} kept), median ms per decision. Latency and streams '
        'do not depend on the weights: '
        + ('rows without a trained checkpoint here keep their initial weights (calibrated on '
           'random pixels) and read "not trained here" in the top-1 table; '
           '`tools/deployment/quantize_int8.py` or `--checkpoint-dir` measure it.'
           if len(trained) < len(rows) else 'every row is trained (top-1 on the test list).'))
    text += ['## Targets', '']
    text += markdown_table(['target', 'measured', ''], 'lrl', goals)
    text += ['', '## Latency', '', f'The GPU columns of these rows: [{GPU_RESULTS.name}]'
             f'({GPU_RESULTS.name}) (`bash tools/gpu_bench.sh run deploy` on a lent GPU).', '']
    text += markdown_table(header, 'l' + 'r' * (len(header) - 1), table)
    text += ['', '## Top-1 on the test list', '']
    text += markdown_table(accuracy_header, 'lrrrl', accuracy)
    text += ['', '## Camera streams per core', '',
             f'At {DECISIONS_PER_SECOND} decisions a second, {SOURCE_FPS} fps sources decoded in '
             'full, the int8 QDQ model on one thread; the three costs say what limits it '
             '(milliseconds of work per second of one stream; "limited by" reads the 320x240 '
             'row).', '']
    text += markdown_table(streams_header, 'l' + 'r' * (len(streams_header) - 2) + 'l',
                           streams)
    print_and_write('\n'.join(text) + '\n', args.out)
    record = dict(
        onnxruntime=onnxruntime.__version__, torch=torch.__version__, threads=args.threads,
        repeats=args.repeats, load_at_start=load,
        latency_ms={str(threads): by_row for threads, by_row in latency.items()},
        decode_ms_per_frame={f'{w}x{h}': ms for (w, h), ms in decode.items()},
        pipeline_ms={f'{name} {w}x{h}': ms for (name, (w, h)), ms in prepare.items()},
        streams_per_core={f'{name} {w}x{h}': value
                          for (name, (w, h)), value in per_core.items()},
        rows={name: dict(checkpoint=recorded_path(row['checkpoint']), parity=row['parity'],
                         float_operators=row['kept']) for name, row in rows.items()},
        targets=goals)
    args.out.with_suffix('.json').write_text(json.dumps(record, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
