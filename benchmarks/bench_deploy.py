"""Int8 on a CPU next to the camera: ms per decision for PyTorch float, onnxruntime float and
onnxruntime int8 (QDQ and QOperator), side by side, and camera streams per core.

    python benchmarks/bench_deploy.py [--threads 1 2] [--repeats 30] [--checkpoint-dir DIR]
    python benchmarks/bench_deploy.py --device cuda   # the GPU columns, results/deploy.gpu.md
    python benchmarks/bench_deploy.py --validate-on 7 --seeds 0 1 2  # results/deploy_val.md
    python benchmarks/bench_deploy.py --report-only   # the page again from deploy.json

Rows: the UTD-MHAD ImageNet family's single frame, hyperframe T=5 and T=8, fast/slow T=5+5 and
mmaction2's TSM-MobileNetV2-5, each exported with ``hyperframes_mm.deploy.export_onnx`` and
quantised with ``hyperframes_mm.deploy.quantize_int8`` (per-channel int8 weights) exactly as
``tools/deployment/quantize_int8.py`` does. Every runtime of every row is timed in the same
interleaved rounds (``interleaved_timing``), batch 1, one test sample (all its clips), at each
thread count; onnxruntime's sessions do not spin (``onnx_session(spin=False)``), since above one
thread their spinning pool threads would slow the next call, whichever runtime's it is.
Latency does not depend on the weights, so a row without a trained checkpoint keeps its initial
weights, is calibrated on random pixels and reads "not trained here" in the top-1 columns. A
row's checkpoints are its finished runs in ``--checkpoint-dir``, a work dir of
``bench_utd_mhad_imagenet.py`` (``--work-dir DIR --train-only``: ``<row slug>/seed<N>``), else
the runs of ``benchmarks/results/utd_mhad_imagenet.json`` whose checkpoint is on this machine.
With them (and the family's data), each seed's int8 model is calibrated on training clips and
the quantisation tool's parity report gives top-1 of both on the test list (``--max-test`` caps
it); the top-1 table and the first target are means over the seeds, each seed's int8 model read
against its own float one, since the seed-to-seed spread of top-1 is as large as int8's loss.

The T=5 row is also fine-tuned through its int8 rounding (``Int8AwareHook``, the family's
``hyperframe-int8aware_*`` config, from each seed's T=5 checkpoint, in
``work_dirs/bench_deploy``) and quantised the same way: a top-1 row of its own, and the int8
model of the first target. Its
options were read with ``--validate-on S``: the T=5 row's validation checkpoint of training
subject S (``bench_utd_mhad_imagenet.py --validate-on S``) fine-tuned under each option and
scored, with the post-training model, on subject S.

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
import shlex
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
from benchmarks.lib.tables import heading, markdown_table, mean_sd, print_and_write

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
#: the T=5 row fine-tuned through its int8 rounding (hyperframes_mm.engine.int8_aware), from the
#: T=5 row's checkpoint; the same graph as that row, so it has top-1 columns and no timings
INT8_AWARE_ROW = 'hyperframe T=5, int8-aware'
INT8_AWARE_CONFIG = 'hyperframe-int8aware_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-5e'
#: the fine-tuning options ``--validate-on`` scores on a training subject, named by learning rate
#: against the family's and epochs: (factor of the config's learning rate, epochs, None for the
#: config's); the config's own is first, and a tie goes to the first
INT8_AWARE_OPTIONS = {
    'lr / 10, 5 epochs': (1.0, None),
    'lr / 100, 5 epochs': (0.1, None),
    'lr / 10, 10 epochs': (1.0, 10),
}
#: the T=5 row's validation runs (bench_utd_mhad_imagenet.py --validate-on), whose checkpoints
#: ``--validate-on`` fine-tunes
VAL_RECORD = RECORD.with_name('utd_mhad_imagenet_val.json')
VAL_RESULTS = RESULTS.with_name('deploy_val.md')
POST_TRAINING = 'none (post-training quantisation)'
WORK_DIR = REPO / 'work_dirs' / 'bench_deploy'
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
                        help='a work dir of bench_utd_mhad_imagenet.py whose finished '
                        '<row slug>/seed<N> runs give the checkpoints (with --validate-on S: '
                        'its val-s<S>/<row slug>/seed<N> runs; default: the run records\' '
                        'ones present here, else initial weights)')
    parser.add_argument('--report-only', action='store_true',
                        help='write the page again from its record (deploy.json) and the '
                        'validation record, measuring nothing')
    parser.add_argument('--device', default='cpu', choices=['cpu', 'cuda'],
                        help='cuda: the GPU columns instead of the CPU ones')
    parser.add_argument('--out', type=Path,
                        help=f'the page (default: {RESULTS.name}; {GPU_RESULTS.name} on cuda, '
                        f'{VAL_RESULTS.name} with --validate-on)')
    parser.add_argument('--validate-on', type=int, choices=[1, 3, 5, 7],
                        help='instead of the tables: score the int8-aware fine-tuning options '
                        'on this training subject, from the T=5 row\'s validation checkpoint '
                        f'(results/{VAL_RESULTS.name}); the test subjects are not read')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0],
                        help='with --validate-on: fine-tune each option with these seeds (its '
                        'data order and augmentation), since one fine-tuning\'s top-1 varies '
                        'with them by more than the options differ')
    args = parser.parse_args(argv)
    # the page's reproduce line: which checkpoints (--checkpoint-dir) gave its top-1 columns
    args.command_line = list(sys.argv[1:] if argv is None else argv)
    return args


def config_of(prefix: str) -> Path:
    (path, ) = FAMILY.glob(f'{prefix}_*.py')
    return path


def checkpoints_of(name: str, args) -> Dict[int, Path]:
    """The row's trained checkpoints on this machine by seed: the finished runs of
    ``--checkpoint-dir`` (:func:`run_folder_checkpoints`), else the family's run records whose
    checkpoint is present; empty where the row is not trained here."""
    from hyperframes_mm.utils import slug
    if args.checkpoint_dir:
        return run_folder_checkpoints(args.checkpoint_dir / slug(name))
    return recorded_checkpoints(RECORD, name)


def run_folder_checkpoints(folder: Path) -> Dict[int, Path]:
    """The checkpoints of the finished runs under ``folder``, one ``seed<N>`` folder per seed
    as ``bench_utd_mhad_imagenet.py --work-dir`` writes them: a run is finished when its
    ``result.json`` is written, after its tests, and its checkpoint is the one that names,
    read in the run's own folder so that the folder can move."""
    found = {}
    for result in sorted(folder.glob('seed*/result.json')):
        seed = result.parent.name[len('seed'):]
        checkpoint = result.parent / Path(json.loads(result.read_text())['checkpoint']).name
        if seed.isdigit() and checkpoint.is_file():
            found[int(seed)] = checkpoint
    return dict(sorted(found.items()))


def recorded_checkpoints(record: Path, key: str) -> Dict[int, Path]:
    """The runs of ``key`` in a run record whose checkpoint is on this machine, by seed."""
    runs = json.loads(record.read_text())['results'].get(key, []) if record.is_file() else []
    return {run['seed']: REPO / run['checkpoint'] for run in runs
            if run.get('checkpoint') and (REPO / run['checkpoint']).is_file()}


def recorded_path(checkpoint: Path) -> str:
    """A checkpoint as the record names it, the same on every machine: relative to the
    repository, or (from ``--checkpoint-dir`` elsewhere) from its row's folder,
    ``<row slug>/seed<N>/<file>``."""
    path = Path(checkpoint).resolve()
    return (path.relative_to(REPO).as_posix() if path.is_relative_to(REPO)
            else '/'.join(path.parts[-3:]))


def recorded_paths(checkpoints: Dict[int, Path]) -> Dict[int, str]:
    return {seed: recorded_path(path) for seed, path in checkpoints.items()}


def first(batch):
    """The first sample of a batch of pixels (one tensor, or one per stream)."""
    return ({key: value[0] for key, value in batch.items()} if isinstance(batch, dict)
            else batch[0])


def labelled_samples(cfg, scored, args) -> tuple:
    """Calibration inputs spread over the config's training list, and the ``(inputs, label)``
    samples of the ``scored`` loader's list (``--max-test`` of them)."""
    from hyperframes_mm.deploy.quantize import (dataset_list, labelled_videos, pipeline_samples,
                                                spread)
    train = spread(labelled_videos(*dataset_list(cfg.train_dataloader)), args.calib_clips)
    scored = spread(labelled_videos(*dataset_list(scored)), args.max_test)
    return ([inputs for inputs, _ in pipeline_samples(cfg, train)],
            list(pipeline_samples(cfg, scored)))


def int8_parity(model, folder: Path, calibration, samples) -> Dict:
    """Export ``model``, quantise it (QDQ) on ``calibration`` and score both graphs."""
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.deploy.export import export_onnx
    from hyperframes_mm.deploy.quantize import parity_report, quantize_int8
    folder.mkdir(parents=True, exist_ok=True)
    example = samples[0][0]
    example = ({key: value[None].float() for key, value in example.items()}
               if isinstance(example, dict) else example[None].float())
    float_path = export_onnx(model, folder / 'float.onnx', example, 'uint8')
    quantize_int8(float_path, folder / 'int8.onnx', calibration, 'QDQ')
    return parity_report(OnnxRecognizer(float_path, model.cfg),
                         OnnxRecognizer(folder / 'int8.onnx', model.cfg), samples)


def fine_tune_int8_aware(float_checkpoint: Path, option: str, work_dir: Path,
                         subject: Optional[int] = None, seed: int = 0) -> Path:
    """The int8-aware config trained from ``float_checkpoint`` with one of
    :data:`INT8_AWARE_OPTIONS` through mmaction2's ``tools/train.py`` (``subject``: on the other
    training subjects; ``seed``: its randomness, the float run's seed); a finished run of the
    same config in ``work_dir`` (every setting the runner reads,
    ``benchmarks.lib.runner.same_config``) is reused."""
    from mmengine.config import Config, DictAction

    from benchmarks.lib import runner
    config = config_of(INT8_AWARE_CONFIG)
    cfg = Config.fromfile(str(config))
    lr_factor, epochs = INT8_AWARE_OPTIONS[option]
    epochs = epochs or cfg.train_cfg.max_epochs
    # randomness in full, as tools/train.py writes it into the config it dumps
    options = [f'load_from={float_checkpoint}', f'randomness.seed={seed}',
               'randomness.deterministic=False', 'randomness.diff_rank_seed=False',
               f'optim_wrapper.optimizer.lr={cfg.optim_wrapper.optimizer.lr * lr_factor!r}',
               f'train_cfg.max_epochs={epochs}', f'param_scheduler.0.T_max={epochs}',
               f'param_scheduler.0.end={epochs}', f'default_hooks.checkpoint.interval={epochs}']
    done = work_dir / f'epoch_{epochs}.pth'
    # the config tools/train.py will run, to compare with the one it dumped in a finished run
    cfg.merge_from_dict({key: DictAction._parse_iterable(value) for key, value in
                         (option.split('=', 1) for option in options)})
    with tempfile.TemporaryDirectory() as tmp:
        expected = Path(tmp) / config.name
        cfg.dump(str(expected))
        if done.is_file() and runner.same_config(work_dir / config.name, expected):
            return done
    env = runner.tool_env(**({'HF_UTD_VAL_SUBJECT': str(subject)} if subject else {}))
    print(f'[bench_deploy] {option}: fine-tuning {float_checkpoint} ({work_dir}/train.log)',
          flush=True)
    runner.train(config, work_dir, work_dir / 'train.log', options, env=env)
    return done


def int8_aware_row(base: Dict, folder: Path, args) -> Optional[Dict]:
    """The T=5 row fine-tuned int8-aware (the config's own options) from each seed's
    checkpoint, with the same seed, and the parity reports on the test list; None when the T=5
    row is not trained here."""
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.utils import slug
    if not base['checkpoints']:
        return None
    option = next(iter(INT8_AWARE_OPTIONS))
    row, samples = dict(checkpoints={}, parity={}), None
    for seed, float_checkpoint in base['checkpoints'].items():
        checkpoint = fine_tune_int8_aware(float_checkpoint, option,
                                          WORK_DIR / slug(INT8_AWARE_ROW) / f'seed{seed}',
                                          seed=seed)
        model = init_recognizer(config_of(INT8_AWARE_CONFIG), str(checkpoint), 'cpu',
                                init_weights=False)
        # one config, so the same clips for every seed: decoded once
        samples = samples or labelled_samples(model.cfg, model.cfg.test_dataloader, args)
        calibration, test = samples
        row['checkpoints'][seed] = checkpoint
        row['parity'][seed] = int8_parity(model, folder / f'seed{seed}', calibration, test)
    return row


def validate(args) -> int:
    """``--validate-on S``: the T=5 row's validation checkpoint (trained on the other training
    subjects) quantised as it is and after each int8-aware option fine-tuned with each of
    ``--seeds``, every model scored on subject S; writes :data:`VAL_RESULTS` with every subject
    validated so far."""
    import os

    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.utils import slug
    subject, t5 = args.validate_on, 'hyperframe T=5'
    # bench_utd_mhad_imagenet.py --validate-on S --work-dir DIR trains into DIR/val-s<S>
    present = (run_folder_checkpoints(args.checkpoint_dir / f'val-s{subject}' / slug(t5))
               if args.checkpoint_dir else recorded_checkpoints(VAL_RECORD, f'{t5} | s{subject}'))
    if not present:
        print(f'error: no validation checkpoint of {t5} for subject {subject} here: python '
              f'benchmarks/bench_utd_mhad_imagenet.py --rows "{t5}" --validate-on {subject} '
              'trains one', file=sys.stderr)
        return 1
    # the family's configs read it when they load: train on the other training subjects, and
    # the validation list is subject S
    os.environ['HF_UTD_VAL_SUBJECT'] = str(subject)
    float_checkpoint = next(iter(present.values()))
    scores = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = init_recognizer(config_of(ROWS[t5]), str(float_checkpoint), 'cpu',
                                init_weights=False)
        calibration, samples = labelled_samples(model.cfg, model.cfg.val_dataloader, args)
        scores[POST_TRAINING] = {'-': int8_parity(model, Path(tmp) / 'post', calibration,
                                                  samples)}
        for index, option in enumerate(INT8_AWARE_OPTIONS):
            scores[option] = {}
            for seed in args.seeds:
                checkpoint = fine_tune_int8_aware(
                    float_checkpoint, option,
                    WORK_DIR / f'val-s{subject}' / slug(option) / f'seed{seed}', subject, seed)
                tuned = init_recognizer(config_of(INT8_AWARE_CONFIG), str(checkpoint), 'cpu',
                                        init_weights=False)
                scores[option][str(seed)] = int8_parity(tuned, Path(tmp) / f'{index}_{seed}',
                                                        calibration, samples)
    record_path = args.out.with_suffix('.json')
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    record[f's{subject}'] = dict(checkpoint=recorded_path(float_checkpoint), scores=scores)
    record = dict(sorted(record.items()))
    record_path.write_text(json.dumps(record, indent=1) + '\n')
    print_and_write(validation_page(record), args.out)
    return 0


def fold_means(record: Dict, option: str, key: str) -> Dict[str, float]:
    """Each validated subject's mean of ``key`` over the fine-tuning seeds of ``option``."""
    return {fold: float(np.mean([run[key] for run in record[fold]['scores'][option].values()]))
            for fold in record}


def chosen_option(record: Dict) -> str:
    """The fine-tuning with the best int8 top-1, averaged over the validated subjects and the
    fine-tuning seeds: post-training quantisation or one of :data:`INT8_AWARE_OPTIONS` (on a
    tie the earlier: post-training first, then the config's own)."""
    return max((POST_TRAINING, *INT8_AWARE_OPTIONS),
               key=lambda option: np.mean(list(fold_means(record, option, 'top1_int8')
                                               .values())))


def validation_page(record: Dict) -> str:
    """The validation page, from :func:`validate`'s record."""
    folds = list(record)
    header = ['fine-tuning', 'seeds',
              *[f'{fold}: top-1 float / int8 / agreement' for fold in folds],
              'int8 top-1, mean']
    table = []
    for option in (POST_TRAINING, *INT8_AWARE_OPTIONS):
        means = {key: fold_means(record, option, key)
                 for key in ('top1_float', 'top1_int8', 'agreement')}
        seeds = sorted({seed for fold in folds for seed in record[fold]['scores'][option]})
        table.append([option, ', '.join(seeds),
                      *[' / '.join(f'{means[key][fold]:.3f}' for key in means)
                        for fold in folds],
                      f'{np.mean(list(means["top1_int8"].values())):.3f}'])
    chosen = chosen_option(record)
    first_option = next(iter(INT8_AWARE_OPTIONS))
    clips = ', '.join(f'{fold} {record[fold]["scores"][POST_TRAINING]["-"]["clips"]}'
                      for fold in folds)
    text = heading(
        'Int8-aware fine-tuning, chosen on training subjects',
        'The T=5 row\'s validation checkpoint of each subject (trained on the other three '
        'training subjects; `bench_utd_mhad_imagenet.py --validate-on S`), quantised as '
        '`tools/deployment/quantize_int8.py` does, as it is (post-training) and after '
        f'fine-tuning with `{INT8_AWARE_CONFIG}_utd-mhad-depth.py` (`Int8AwareHook`) under each '
        'option with each seed listed (a cell is the mean over them); every model scored on '
        'the held-out subject with the test views, calibrated on the other subjects\' clips '
        f'(scored clips: {clips}; one clip of 108 is 0.9 points). Regenerate a subject with '
        '`python benchmarks/bench_deploy.py --validate-on S --seeds 0 1 2`.')
    text += markdown_table(header, 'll' + 'r' * (len(header) - 2), table)
    if chosen == POST_TRAINING:
        verdict = ('int8-aware fine-tuning does not pay: `bench_deploy.py` reads the first '
                   'target from post-training quantisation.')
    elif chosen == first_option:
        verdict = 'the config trains with it.'
    else:
        verdict = f'the config trains with {first_option}: change it.'
    text += ['', f'Chosen (best mean int8 top-1, a tie to the earlier row): **{chosen}**; '
             + verdict]
    return '\n'.join(text) + '\n'


def build_row(name: str, folder: Path, args) -> Dict:
    """The row's model, its pixels, its float and int8 graphs and, trained, its parity report."""
    from hyperframes_mm.apis import example_inputs, init_recognizer
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.deploy.export import export_onnx, random_pixels
    from hyperframes_mm.deploy.quantize import parity_report, quantize_int8
    from hyperframes_mm.utils.folding import foldable_stem, input_affine
    checkpoints = checkpoints_of(name, args)
    # the graphs timed are the first seed's: latency does not depend on the weights
    checkpoint = next(iter(checkpoints.values()), None)
    model = init_recognizer(config_of(ROWS[name]), str(checkpoint) if checkpoint else None,
                            'cpu', init_weights=False)
    example = example_inputs(model.cfg, (128, 128))
    shapes = ({key: tuple(value.shape) for key, value in example.items()}
              if isinstance(example, dict) else tuple(example.shape))
    pixels = random_pixels(shapes, 1)
    # the timed ONNX calls get uint8 pixels, as the test pipeline packs them: float ones would
    # time a conversion to the graph's uint8 input that no deployment makes
    sample = first(pixels)
    sample = ({key: value.to(torch.uint8) for key, value in sample.items()}
              if isinstance(sample, dict) else sample.to(torch.uint8))
    float_path = export_onnx(model, folder / 'float.onnx', pixels, 'uint8')
    # where export_onnx put the normalisation and input encoding (read, not folded again)
    folded = ('into the stem conv' if foldable_stem(model) is not None else
              '1x1 projection' if input_affine(model) is not None else 'not folded')
    if checkpoint:
        calibration, test = labelled_samples(model.cfg, model.cfg.test_dataloader, args)
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
    parity = {}
    for seed, path in checkpoints.items():
        if path == checkpoint:
            parity[seed] = parity_report(onnx['onnxruntime float'],
                                         onnx['onnxruntime int8 QDQ'], test)
        else:  # every other seed exported and quantised on the same clips
            parity[seed] = int8_parity(
                init_recognizer(config_of(ROWS[name]), str(path), 'cpu', init_weights=False),
                folder / f'seed{seed}', calibration, test)
    return dict(model=model, pixels=pixels, sample=sample, graphs=graphs, kept=kept,
                checkpoints=checkpoints, parity=parity, onnx=onnx, input=folded)


def time_rows(rows: Dict[str, Dict], threads: int, args) -> Dict[str, Dict[str, float]]:
    """Median ms per decision of every (row, runtime), all timed in the same rounds."""
    from hyperframes_mm.apis.onnx_recognizer import onnx_session
    from hyperframes_mm.deploy.export import ExportWrapper, as_tuple
    from hyperframes_mm.utils.timing import interleaved_timing
    torch.set_num_threads(threads)
    calls = {}
    for name, row in rows.items():
        wrapper = ExportWrapper(row['model']).eval()
        tensors = as_tuple(row['model'], row['pixels'])
        calls[(name, 'PyTorch float')] = (lambda w=wrapper, t=tensors: w(*t))
        for runtime, recognizer in row['onnx'].items():
            # no spinning pool threads: above one thread they would hold the cores into the
            # next timed call, another runtime's
            recognizer.session = onnx_session(row['graphs'][runtime], threads, spin=False)
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


def top1_cells(parity: Dict[int, Dict], float_parity: Optional[Dict[int, Dict]] = None
               ) -> list:
    """The seeds, float and int8 top-1 and their agreement on the test list (mean ± spread over
    the seeds), and each seed's int8 top-1 against its float model (``float_parity``'s where
    given: the model before fine-tuning), or why they are absent."""
    if not parity:
        return ['0', *[NOT_TRAINED] * 4]
    runs = list(parity.values())
    drops = drops_by_seed(parity, float_parity or parity)
    return [str(len(runs)), *[mean_sd(runs, key) for key in
                              ('top1_float', 'top1_int8', 'agreement')],
            ' / '.join(f'{drop:+.1f}' for drop in drops.values())]


def drops_by_seed(int8: Dict[int, Dict], float_: Dict[int, Dict]) -> Dict[int, float]:
    """Points of top-1 lost in int8, seed by seed: ``float_``'s float top-1 less ``int8``'s int8
    top-1, for the seeds both have."""
    return {seed: 100 * (float_[seed]['top1_float'] - int8[seed]['top1_int8'])
            for seed in int8 if seed in float_}


def targets(rows: Dict, aware: Optional[Dict], latency: Dict, streams: Dict,
            chosen: str = POST_TRAINING) -> list:
    """The issue's four targets, each read from the tables: (target, measured, met or not). The
    first is the mean over seeds of each seed's loss against the float T=5 row of the same seed
    (the model before any fine-tuning), for the int8 model ``chosen`` on validation
    (:func:`chosen_option`): post-training, or the int8-aware row where it was trained; the
    other is shown beside it."""
    t5, one = 'hyperframe T=5', latency[min(latency)]
    parity = rows[t5]['parity']
    post = drops_by_seed(parity, parity)
    drop = float(np.mean(list(post.values()))) if post else None
    seeds = f'mean of {len(post)} seed{"s" if len(post) > 1 else ""}'
    measured = NOT_TRAINED if drop is None else f'{drop:+.1f} points ({seeds})'
    if aware and drop is not None:
        drop_post = drop
        drop_aware = float(np.mean(list(drops_by_seed(aware['parity'], parity).values())))
        if chosen == POST_TRAINING:
            measured = (f'{drop_post:+.1f} points post-training, chosen on validation '
                        f'({drop_aware:+.1f} int8-aware; {seeds})')
        else:
            drop = drop_aware
            measured = (f'{drop_aware:+.1f} points int8-aware, chosen on validation '
                        f'({drop_post:+.1f} post-training; {seeds})')
    int8, tsm = one[t5]['onnxruntime int8 QDQ'], one[TSM]['onnxruntime int8 QDQ']
    ratio_pytorch = int8 / one[t5]['PyTorch float']
    ratio_tsm = int8 / tsm
    per_core = streams[(t5, SOURCES[0])]
    return [
        ['int8 T=5 within 1 point of float top-1', measured,
         'not measured' if drop is None else ('met' if drop <= 1 else 'missed')],
        ['int8 onnxruntime <= 1/2 of float PyTorch latency, 1 thread (T=5)',
         f'{int8:.2f} / {one[t5]["PyTorch float"]:.2f} ms = {ratio_pytorch:.3f}x',
         'met' if ratio_pytorch <= 0.5 else 'missed'],
        ['int8 T=5 <= 1/4 of int8 TSM-MobileNetV2-5 latency, 1 thread',
         f'{int8:.2f} / {tsm:.2f} ms = {ratio_tsm:.3f}x', 'met' if ratio_tsm <= 0.25 else 'missed'],
        ['>= 10 camera streams per core at 5 decisions/s, 320x240 (T=5)',
         f'{per_core:.1f}', 'met' if per_core >= 10 else 'missed'],
    ]


def measure(args) -> Dict:
    """Build, score and time every row (and the int8-aware one): the record :func:`page` reads,
    in JSON's types (seeds, thread counts and sources as strings)."""
    import onnxruntime
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
        # after the timings: its fine-tuning would load the machine they run on
        aware = int8_aware_row(rows['hyperframe T=5'], Path(tmp) / 'int8_aware', args)
    record = dict(
        machine=machine_line(f'onnxruntime {onnxruntime.__version__}',
                             'batch 1, one test sample', threads=args.threads,
                             load_at_start=load),
        onnxruntime=onnxruntime.__version__, torch=torch.__version__, threads=args.threads,
        repeats=args.repeats, load_at_start=load,
        command=shlex.join(['python', 'benchmarks/bench_deploy.py', *args.command_line]),
        latency_ms={str(threads): by_row for threads, by_row in latency.items()},
        decode_ms_per_frame={source_key(size): ms for size, ms in decode.items()},
        pipeline_ms={f'{name} {source_key(size)}': ms for (name, size), ms in prepare.items()},
        rows={name: dict(checkpoints=recorded_paths(row['checkpoints']), parity=row['parity'],
                         float_operators=row['kept'], input=row['input'])
              for name, row in rows.items()},
        int8_aware=(dict(checkpoints=recorded_paths(aware['checkpoints']),
                         parity=aware['parity']) if aware else None))
    # JSON's types, so that a page from a fresh measurement and one from the record are the same
    return json.loads(json.dumps(record))


def source_key(size) -> str:
    return f'{size[0]}x{size[1]}'


def streams_per_core(record: Dict) -> Dict[str, Dict]:
    """Each row's camera streams per core at each source size, and the three costs behind it
    (ms per second of one stream: decode, pipeline, model), from the record's timings."""
    one = record['latency_ms'][str(min(record['threads']))]
    result = {}
    for name in record['rows']:
        model_ms = one[name]['onnxruntime int8 QDQ']
        for size in SOURCES:
            key = source_key(size)
            parts = (SOURCE_FPS * record['decode_ms_per_frame'][key],
                     DECISIONS_PER_SECOND * record['pipeline_ms'][f'{name} {key}'],
                     DECISIONS_PER_SECOND * model_ms)
            result[f'{name} {key}'] = dict(streams=1e3 / sum(parts), costs=parts)
    return result


def page(record: Dict) -> str:
    """The results page from :func:`measure`'s record, with the choice read on validation
    (``chosen_on_validation``) and the targets read from both (``targets``:
    :func:`record_targets`), which :func:`main` adds."""
    latency, rows, aware = record['latency_ms'], record['rows'], record['int8_aware']
    chosen = record['chosen_on_validation']
    header = ['model', 'threads', *[f'{runtime} (ms)' for runtime in RUNTIMES],
              'int8 QDQ / PyTorch float', 'int8 QDQ / TSM int8 QDQ']
    table = []
    for threads, by_row in latency.items():
        for name, ms in by_row.items():
            int8 = ms['onnxruntime int8 QDQ']
            table.append([name, threads, *[f'{ms[runtime]:.2f}' for runtime in RUNTIMES],
                          f'{int8 / ms["PyTorch float"]:.2f}x',
                          f'{int8 / by_row[TSM]["onnxruntime int8 QDQ"]:.2f}x'])
    accuracy_header = ['model', 'seeds', 'top-1 float', 'top-1 int8 QDQ', 'top-1 agreement',
                       'int8 - float by seed (points)', 'normalisation and input encoding',
                       'operators kept in float (QDQ)']
    accuracy = [[name, *top1_cells(row['parity']), row['input'],
                 ', '.join(row['float_operators']['QDQ']) or 'none']
                for name, row in rows.items()]
    if aware:
        accuracy.append([INT8_AWARE_ROW,
                         *top1_cells(aware['parity'], rows['hyperframe T=5']['parity']),
                         'as hyperframe T=5', 'as hyperframe T=5'])
    streams_header = ['model', *[f'{w}x{h}: streams per core' for w, h in SOURCES],
                      *[f'{w}x{h}: decode / pipeline / model (ms per second of video)'
                        for w, h in SOURCES], 'limited by']
    per_source = streams_per_core(record)
    streams = []
    for name in rows:
        cells = [per_source[f'{name} {source_key(size)}'] for size in SOURCES]
        # the largest cost at the smaller source; the pipeline's cost is its Python transforms
        largest = max(zip(cells[0]['costs'], ('decode', 'pipeline (Python)', 'model')))[1]
        streams.append([name, *[f'{cell["streams"]:.1f}' for cell in cells],
                        *[' / '.join(f'{part:.0f}' for part in cell['costs'])
                          for cell in cells], largest])
    trained = [name for name, row in rows.items() if row['parity']]
    text = heading(
        'Int8 deployment on a CPU', record['machine'],
        'Every model of the UTD-MHAD ImageNet family at its trained input (112x112), exported '
        'and quantised (per-channel int8 weights in 7-bit range, uint8 activations) as '
        '`tools/deployment/quantize_int8.py` does; every runtime of every row timed in the same '
        f'interleaved rounds ({record["repeats"]} kept), median ms per decision, onnxruntime\'s '
        'pool threads not spinning after a run (they would hold the cores into the next call, '
        'another runtime\'s). Latency and '
        'streams do not depend on the weights: '
        + ('rows without a trained checkpoint here keep their initial weights (calibrated on '
           'random pixels) and read "not trained here" in the top-1 table; '
           '`tools/deployment/quantize_int8.py` or `--checkpoint-dir` measure it.'
           if len(trained) < len(rows) else 'every row is trained (top-1 on the test list).'))
    text += ['## Targets', '']
    text += markdown_table(['target', 'measured', ''], 'lrl', record['targets'])
    text += ['', '## Latency', '', f'The GPU columns of these rows: [{GPU_RESULTS.name}]'
             f'({GPU_RESULTS.name}) (`bash tools/gpu_bench.sh run deploy` on a lent GPU).', '']
    text += markdown_table(header, 'l' + 'r' * (len(header) - 1), table)
    text += ['', '## Top-1 on the test list', '']
    if aware:
        text += [f'"{INT8_AWARE_ROW}" is each seed\'s T=5 checkpoint fine-tuned through its '
                 f'int8 rounding (`{INT8_AWARE_CONFIG}_utd-mhad-depth.py`, `Int8AwareHook`, '
                 'with the same seed), then exported and quantised as every row; the same graph '
                 'as hyperframe T=5, so the same latency; its int8 loss is read against the '
                 'float T=5 model of its seed. Whether to fine-tune, and how, was read on '
                 f'training subjects ([{VAL_RESULTS.name}]({VAL_RESULTS.name})): **{chosen}**, '
                 'the int8 model of the first target.', '']
    text += ['The "normalisation and input encoding" column says where the graph computes them '
             '([deployment.md](../../docs/deployment.md#onnx-export)): folded into the stem conv, '
             'whose int8 kernel then reads the raw pixels exactly; in a float 1x1 projection; '
             'or as the model writes them.', '']
    text += markdown_table(accuracy_header, 'lrrrrrll', accuracy)
    text += ['', '## Camera streams per core', '',
             f'At {DECISIONS_PER_SECOND} decisions a second, {SOURCE_FPS} fps sources decoded in '
             'full, the int8 QDQ model on one thread; the three costs say what limits it '
             '(milliseconds of work per second of one stream; "limited by" reads the 320x240 '
             'row).', '']
    text += markdown_table(streams_header, 'l' + 'r' * (len(streams_header) - 2) + 'l',
                           streams)
    if record.get('command'):  # records measured before the command was kept have none
        text += ['', f'Reproduce: `{record["command"]}` (`--checkpoint-dir`: a work dir of '
                 '`benchmarks/bench_utd_mhad_imagenet.py --work-dir DIR --train-only`; '
                 '`--report-only` rewrites this page from its record).']
    return '\n'.join(text) + '\n'


def record_targets(record: Dict) -> list:
    """:func:`targets` of a record."""
    per_source = streams_per_core(record)
    streams = {(name, size): per_source[f'{name} {source_key(size)}']['streams']
               for name in record['rows'] for size in SOURCES}
    latency = {int(threads): by_row for threads, by_row in record['latency_ms'].items()}
    return targets(record['rows'], record['int8_aware'], latency, streams,
                   record['chosen_on_validation'])


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out = args.out or (GPU_RESULTS if args.device == 'cuda' else
                            VAL_RESULTS if args.validate_on else RESULTS)
    import hyperframes_mm  # noqa: F401
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
    if args.validate_on:
        return validate(args)
    record_path = args.out.with_suffix('.json')
    if args.report_only and not record_path.is_file():
        print(f'error: bench_deploy --report-only: no record {record_path}', file=sys.stderr)
        return 1
    record = json.loads(record_path.read_text()) if args.report_only else measure(args)
    # post-training or int8-aware, as read on training subjects (--validate-on); without that
    # reading, the model that needs no fine-tuning
    val_record = VAL_RESULTS.with_suffix('.json')
    record['chosen_on_validation'] = (chosen_option(json.loads(val_record.read_text()))
                                      if val_record.is_file() else POST_TRAINING)
    record['targets'] = record_targets(record)
    print_and_write(page(record), args.out)
    record_path.write_text(json.dumps(record, indent=1) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
