"""GPU benchmark: training throughput and inference latency of four models, side by side.

Rows (:data:`ROWS`, the experiment library's :class:`~benchmarks.lib.rows.Row`): the synthetic
recipe's HyperResNet-18 T=5, the fast/slow model (both streams stacked into one hyperframe), and
mmaction2's TSN-5 and TSM-5, each a config of ``configs/hyperframes/synthetic/`` with only the
sizes of the run edited in (:func:`run_edits`), so the benchmark times the models and pipelines
the project trains.

1. Training: real optimizer steps (``model.train_step`` with mmengine's ``AmpOptimWrapper``,
   bf16 or fp16 autocast, the config's fused AdamW and gradient clipping, weights in
   ``channels_last``) on batches from a real loader: synthetic clips written as videos, decoded
   once into the frame cache, read through each config's own training pipeline (frame cache,
   sampler, ``ConsistentClipAugment`` to the input size, ``HyperframeStack`` / ``FormatShape``,
   ``PackActionInputs``) by ``--workers`` DataLoader workers. The same model is then timed on one
   batch kept on the GPU: the loader-free ceiling. A loader run well below its ceiling, with a
   large data wait and a GPU that is not busy, is data-bound. GPU utilisation is sampled by
   NVML (``pynvml``) in a thread, else by polling ``nvidia-smi``, during each timed run.
2. Inference, batch 1 and ``--infer-batch``, one clip per sample, fp16 weights on the GPU, uint8
   pixels in (normalisation is part of the timed model, as in the ONNX export): eager,
   ``torch.compile`` (skipped with a note when it fails or exceeds its time) and a CUDA graph
   captured from the eager model (skipped with a note where capture fails). Rows of one batch
   size are timed in interleaved rounds (:func:`hyperframes_mm.utils.timing.interleaved_timing`).
3. ``--tiny``: the same run and the same table on the CPU at 32x32, batch 2, a few steps, no
   AMP / compile / graphs, ten clips; ``tests/benchmarks/test_bench_gpu.py`` runs it, so the
   script cannot rot. Its numbers are not results.

Rows run one after another, not interleaved: each training row's loader needs every CPU core,
and the machine this is meant for is a dedicated one. Nothing is asserted: ratios to TSM-5 and
the issue's targets are printed beside the numbers. Writes ``gpu_bench.md`` and
``gpu_bench.json`` under ``--out`` (default: ``$OUT`` when set, else ``work_dirs/bench_gpu``).

    bash tools/gpu_bench.sh run                        # on a lent CUDA machine, wheels installed
    python benchmarks/bench_gpu.py --batch 256 --workers 14 --only 'Hyper|TSM'
    OMP_NUM_THREADS=1 python benchmarks/bench_gpu.py --tiny --out /tmp/bench_gpu   # CPU check
"""
import argparse
import gc
import itertools
import json
import logging
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import edits
from benchmarks.lib.costing import cpu_name, load_average, machine_line
from benchmarks.lib.rows import Row
from benchmarks.lib.tables import heading, markdown_table, print_and_write

CONFIGS = REPO / 'configs' / 'hyperframes' / 'synthetic'
HYPERFRAME = 'HyperResNet-18 T=5'
FAST_SLOW = 'FastSlow HyperResNet-18 T=5+5 shared'
TSN = 'TSN-R18 5 seg'
TSM = 'TSM-R18 5 seg'
REFERENCE = TSM
ROWS = (
    Row(HYPERFRAME, CONFIGS / 'hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py',
        'diff encoding, gain 4, motion products, TSNHead 512 -> 10'),
    Row(FAST_SLOW, CONFIGS / 'fastslow_scratch-r18_1xb16-5x3x1-5x9x1-60e_synthetic-rgb.py',
        'fast and slow T=5 streams stacked into one hyperframe, one backbone pass (T=10)'),
    Row(TSN, CONFIGS / 'tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'mmaction2 ResNet-18 over 5 segments'),
    Row(TSM, CONFIGS / 'tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py',
        'mmaction2 ResNetTSM-18, 5 segments, shift 1/8'),
)
#: what the benchmark reads and edits in each row's training pipeline
REQUIRED_STEPS = ('FrameCacheInit', 'FrameCacheDecode', 'ConsistentClipAugment')
MODES = ('eager', 'compile', 'cuda_graph')
#: The issue's training target: this many times TSM-5's clips/s, with the GPU at least this busy.
TRAIN_TARGET_RATIO = 3.0
TRAIN_TARGET_BUSY = 90.0
#: The seeds' batch-1 latencies the issue quotes (row -> (ms, how they were measured)).
SEED_LATENCY = {HYPERFRAME: (3.2, 'TensorRT FP16, one stream'),
                FAST_SLOW: (6.5, 'TensorRT FP16, two streams')}
#: A compile is not started with less time left than this.
MIN_COMPILE_S = 5.0
#: Seconds of ``--budget`` kept for the inference timing rounds after the compiles.
TIMING_RESERVE_S = 30.0
AMP_DTYPES = {'bf16': 'bfloat16', 'fp16': 'float16', 'none': None}
#: Settings of a run on a lent GPU (the default) and of ``--tiny``; a flag overrides either.
PROFILES = {
    'gpu': dict(size=224, batch=128, steps=40, warmup=5, workers=min(12, os.cpu_count() or 1),
                clips_per_class=6, short_side=256, infer_batch=64, repeats=50, amp='bf16',
                budget=360.0),
    'tiny': dict(size=32, batch=2, steps=3, warmup=1, workers=1, clips_per_class=1,
                 short_side=0, infer_batch=4, repeats=5, amp='none', budget=None),
}


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Command-line arguments; unset sizes come from the ``gpu`` or ``tiny`` profile."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--tiny', action='store_true',
                        help='CPU-sized check: 32x32, batch 2, a few steps, no AMP/compile/graphs')
    parser.add_argument('--out', type=Path, default=None,
                        help='folder for gpu_bench.md/.json (default: $OUT, else '
                             'work_dirs/bench_gpu)')
    parser.add_argument('--data', type=Path, default=None,
                        help='folder for the synthetic clips and their frame cache (kept, reused)')
    parser.add_argument('--size', type=int, help='input height and width (crop size)')
    parser.add_argument('--batch', type=int, help='training clips per step')
    parser.add_argument('--steps', type=int, help='timed training steps per run')
    parser.add_argument('--warmup', type=int,
                        help='untimed steps first (plus workers x prefetch for the loader run)')
    parser.add_argument('--workers', type=int, help='DataLoader worker processes')
    parser.add_argument('--prefetch-factor', type=int, default=2,
                        help='batches each loader worker prepares ahead')
    parser.add_argument('--clips-per-class', type=int,
                        help='synthetic training clips per class (10 classes)')
    parser.add_argument('--short-side', type=int,
                        help='frame cache short side (frames are resized once, when cached); '
                             '0 keeps the 64x64 decoded frames')
    parser.add_argument('--amp', choices=sorted(AMP_DTYPES), help='training autocast dtype')
    parser.add_argument('--no-channels-last', action='store_true',
                        help='keep weights in NCHW (channels_last is the default on CUDA)')
    parser.add_argument('--infer-batch', type=int, help='batch of the throughput rows')
    parser.add_argument('--repeats', type=int, help='timed inference rounds (interleaved)')
    parser.add_argument('--no-compile', action='store_true', help='skip torch.compile')
    parser.add_argument('--no-graphs', action='store_true', help='skip CUDA graphs')
    parser.add_argument('--compile-timeout', type=float, default=90.0,
                        help='seconds one torch.compile (its first call) may take')
    parser.add_argument('--compile-budget', type=float, default=150.0,
                        help='seconds all compiles together may take')
    parser.add_argument('--budget', type=float,
                        help='soft wall-time budget (s): compiles that would overrun it are '
                             'skipped with a note')
    parser.add_argument('--parts', nargs='+', choices=('train', 'infer'),
                        default=['train', 'infer'], help='what to measure')
    parser.add_argument('--only', default=None,
                        help='regex: keep matching rows (TSM-5, the reference, is always kept)')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    profile = PROFILES['tiny' if args.tiny else 'gpu']
    for key, value in profile.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.tiny:
        args.no_compile = args.no_graphs = True
    _check_args(args)
    if args.out is None:
        args.out = Path(os.environ['OUT']) if os.environ.get('OUT') else (
            REPO / 'work_dirs' / 'bench_gpu')
    if args.data is None:
        args.data = (Path(tempfile.gettempdir()) / 'hf_bench_gpu' /
                     f'synthetic_{args.clips_per_class}x10_s{args.short_side}')
    return args


def _check_args(args: argparse.Namespace) -> None:
    positive = ('size', 'batch', 'steps', 'clips_per_class', 'infer_batch', 'repeats',
                'prefetch_factor')
    for name in positive:
        if getattr(args, name) < 1:
            raise ValueError(f'--{name.replace("_", "-")} must be >= 1, got {getattr(args, name)}')
    for name in ('warmup', 'workers', 'short_side'):
        if getattr(args, name) < 0:
            raise ValueError(f'--{name.replace("_", "-")} must be >= 0, got {getattr(args, name)}')
    if args.short_side and args.short_side < args.size:
        raise ValueError(f'--short-side {args.short_side} is below --size {args.size}: the crop '
                         'would be upscaled from fewer pixels than it has')
    for name in ('compile_timeout', 'compile_budget'):
        if getattr(args, name) <= 0:
            raise ValueError(f'--{name.replace("_", "-")} must be > 0, got {getattr(args, name)}')
    if args.budget is not None and args.budget <= 0:
        raise ValueError(f'--budget must be > 0, got {args.budget}')
    if args.only is not None:
        try:
            re.compile(args.only)
        except re.error as error:
            raise ValueError(f'--only {args.only!r} is not a regular expression: {error}') from None


# ----------------------------------------------------------------------------------------------
# Data: synthetic videos, their frame cache, each config's training pipeline


def prepare_data(args: argparse.Namespace) -> Tuple[Path, Dict[str, Any]]:
    """Write the synthetic clips (10 classes) and cache their frames beside them.

    Both steps keep what is already there, so a rerun on the same ``--data`` starts at once.

    Returns:
        tuple: the data root (``train.txt`` lists the clips) and timing/size facts.
    """
    from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
    from hyperframes_mm.datasets.synthetic import PRESETS, make_synthetic_dataset
    side = PRESETS['default'].size
    if not args.short_side and args.size > side:
        raise ValueError(f'--size {args.size} is larger than the synthetic clips\' {side}x{side} '
                         'frames kept by --short-side 0; cache them at --short-side >= --size')
    workers = max(1, min(args.workers, os.cpu_count() or 1))
    start = time.perf_counter()
    annotations = make_synthetic_dataset(args.data, dict(train=args.clips_per_class),
                                         preset='default', seed=args.seed, workers=workers)
    generated = time.perf_counter()
    videos = read_video_list(annotations['train'])
    summary = build_frame_cache(videos, args.data, args.data, short_side=args.short_side or None,
                                workers=workers)
    if summary.failed:
        raise RuntimeError(f'frame cache: {len(summary.failed)} of {len(videos)} clips failed, '
                           f'e.g. {next(iter(summary.failed.items()))}')
    facts = dict(clips=len(videos), generate_s=generated - start, cache_s=summary.seconds,
                 cache_mib=summary.bytes / 2**20)
    print(f'[data] {len(videos)} clips in {args.data}: generated in {facts["generate_s"]:.1f} s, '
          f'frame cache {facts["cache_mib"]:.0f} MiB in {facts["cache_s"]:.1f} s', flush=True)
    return args.data, facts


def frame_cache(short_side: int) -> edits.Edit:
    """Read the training clips from the frame cache at ``short_side`` (0: the decoded frames'
    size). A missing or stale entry is an error (``on_stale='error'``): rebuilding inside a timed
    run would time the decoder instead."""
    return lambda cfg: edits.find(cfg.train_dataloader.dataset.pipeline, 'FrameCacheInit').update(
        short_side=short_side or None, on_stale='error')


def train_loader(batch: int, workers: int, prefetch_factor: int) -> edits.Edit:
    """Batches of ``batch`` clips from ``workers`` processes, each ``prefetch_factor`` batches
    ahead, drawn without end: the timed steps decide when a run stops."""
    def change(cfg):
        cfg.train_dataloader.update(batch_size=batch, num_workers=workers,
                                    persistent_workers=False,
                                    sampler=dict(type='InfiniteSampler', shuffle=True),
                                    pin_memory=torch.cuda.is_available())
        if workers > 0:
            cfg.train_dataloader.prefetch_factor = prefetch_factor
    return change


def run_edits(args: argparse.Namespace, data: Path) -> Tuple[edits.Edit, ...]:
    """The edits every row gets in this run: its clips, input size, frame cache and loader."""
    return (partial(edits.read_data_from, root=data), edits.input_size(args.size),
            frame_cache(args.short_side),
            train_loader(args.batch, args.workers, args.prefetch_factor))


def row_config(row: Row):
    """The row's config with its edits applied.

    Raises:
        ValueError: its training pipeline lacks a step the benchmark reads or edits.
    """
    from mmengine.config import Config
    cfg = Config.fromfile(str(row.config))
    found = {step['type'] for step in cfg.train_dataloader.dataset.pipeline}
    missing = sorted(set(REQUIRED_STEPS) - found)
    if missing:
        raise ValueError(f'{row.config.name}: its train pipeline lacks {missing}; the '
                         'benchmark reads the frame cache and crops with ConsistentClipAugment')
    for edit in row.edits:
        edit(cfg)
    return cfg


def sample_shapes(cfg) -> Dict[str, Tuple[int, ...]]:
    """Input name -> shape of one packed training sample (``[K, C, H, W]``) of the config."""
    from mmaction.registry import DATASETS
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    inputs = dataset[0]['inputs']
    if isinstance(inputs, dict):
        return {key: tuple(value.shape) for key, value in inputs.items()}
    return {'imgs': tuple(inputs.shape)}


def shape_text(shapes: Dict[str, Tuple[int, ...]]) -> str:
    """``[1, 15, 224, 224]``, or ``2 x [1, 15, 224, 224]`` for two equal streams."""
    values = list(shapes.values())
    if all(value == values[0] for value in values):
        return (f'{len(values)} x ' if len(values) > 1 else '') + str(list(values[0]))
    return ', '.join(f'{key}: {list(value)}' for key, value in shapes.items())


# ----------------------------------------------------------------------------------------------
# Measuring helpers


class UtilSampler:
    """Mean GPU utilisation over a ``with`` block, sampled in a background thread.

    NVML (``pynvml``, from nvidia-ml-py) where it loads, else ``nvidia-smi`` polled as a
    subprocess; neither on the CPU or when both fail (``source`` is then None and ``mean`` None).
    NVML's figure is the share of its last sample period (up to a second) in which a kernel ran,
    so a block shorter than that period reads partly what came before it.

    Args:
        device (torch.device): the device being timed.
        interval (float): seconds between samples. Defaults to 0.1.
    """

    def __init__(self, device: torch.device, interval: float = 0.1) -> None:
        self.interval = interval
        self.samples: List[float] = []
        self.error: Optional[str] = None
        self.source: Optional[str] = None
        self._read: Optional[Callable[[], float]] = None
        if device.type == 'cuda':
            for source, make in (('nvml', self._nvml), ('nvidia-smi', self._nvidia_smi)):
                try:
                    read = make(device)
                    read()
                except Exception as error:  # noqa: BLE001  (any failure: try the next source)
                    self.error = f'{source}: {error}'
                    continue
                self._read, self.source, self.error = read, source, None
                break
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @staticmethod
    def _uuid(device: torch.device) -> Optional[str]:
        uuid = getattr(torch.cuda.get_device_properties(device), 'uuid', None)
        return None if uuid is None else f'GPU-{uuid}'

    @classmethod
    def _nvml(cls, device: torch.device) -> Callable[[], float]:
        import pynvml
        pynvml.nvmlInit()
        uuid = cls._uuid(device)
        try:
            handle = pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else None
        except pynvml.NVMLError:
            handle = None
        if handle is None:  # index order is CUDA's only without CUDA_VISIBLE_DEVICES remapping
            handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        return lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    @classmethod
    def _nvidia_smi(cls, device: torch.device) -> Callable[[], float]:
        smi = shutil.which('nvidia-smi')
        if smi is None:
            raise FileNotFoundError('nvidia-smi not on PATH')

        def reader(gpu: str) -> Callable[[], float]:
            command = [smi, f'--id={gpu}', '--query-gpu=utilization.gpu',
                       '--format=csv,noheader,nounits']

            def read() -> float:
                output = subprocess.run(command, capture_output=True, text=True, timeout=5,
                                        check=True).stdout
                return float(output.strip().splitlines()[0])
            return read

        uuid = cls._uuid(device)
        if uuid is not None:
            try:
                read = reader(uuid)
                read()
                return read
            except (subprocess.SubprocessError, ValueError, IndexError):
                pass  # fall back to the index, as for NVML
        return reader(str(device.index or 0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self._read())
            except Exception as error:  # noqa: BLE001  (stop sampling, keep what was read)
                self.error = str(error)
                return

    def __enter__(self) -> 'UtilSampler':
        self.samples = []
        if self._read is not None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name='gpu-util', daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    @property
    def mean(self) -> Optional[float]:
        """Mean utilisation in percent over the block, or None without samples."""
        return statistics.fmean(self.samples) if self.samples else None


class TimeLimit:
    """Raise ``TimeoutError`` inside a ``with`` block after ``seconds`` (SIGALRM, main thread).

    The signal interrupts Python code, which is where ``torch.compile`` spends its time
    (tracing, lowering, waiting on its compile workers); off the main thread, or without
    ``setitimer``, the block runs unlimited. ``fired`` tells afterwards whether the time ran
    out, also when the code interrupted caught the error itself (dynamo may fall back to eager
    for a frame whose compile raised, and return normally).

    Args:
        seconds (float): the limit.
        what (str): what is limited, for the error message.
    """

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        self.fired = False
        self._previous = None
        self._armed = (threading.current_thread() is threading.main_thread()
                       and hasattr(signal, 'setitimer'))

    def _expire(self, signum, frame) -> None:
        self.fired = True
        raise TimeoutError(f'{self.what} took longer than {self.seconds:.0f} s')

    def __enter__(self) -> 'TimeLimit':
        if self._armed:
            self._previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)


def _short(error: BaseException) -> str:
    """An error in one line: its type and the first lines of its message (torch.compile's
    messages run to pages; the cause is in the first two)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f'{type(error).__name__}: {" / ".join(lines[:2])}'[:240]


def synchronizer(device: torch.device) -> Callable[[], None]:
    """``torch.cuda.synchronize`` on a GPU, nothing on the CPU."""
    return (lambda: torch.cuda.synchronize(device)) if device.type == 'cuda' else (lambda: None)


def release(device: torch.device) -> None:
    """Free what the last row left, so the next row's peak memory is its own."""
    gc.collect()
    if device.type == 'cuda':
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def raise_open_file_limit() -> Optional[int]:
    """Lift the soft open-file limit to the hard one: workers pass each sample's tensor
    through shared memory by file descriptor, and a large batch times the prefetched batches
    can exceed a default soft limit of 1024."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


# ----------------------------------------------------------------------------------------------
# Training


def optim_config(cfg, amp: Optional[str]) -> dict:
    """The config's optimizer wrapper, made an ``AmpOptimWrapper`` for autocast training.

    This is what ``tools/train.py --amp`` builds (its dynamic loss scaler included, also for
    bf16, where it is not needed but is what users get), with the dtype chosen here.
    """
    optim = cfg.optim_wrapper.to_dict()
    if amp is not None:
        optim.update(type='AmpOptimWrapper', dtype=amp, loss_scale='dynamic')
    return optim


def timed_steps(model, optim_wrapper, batches: Iterator[dict], steps: int, warmup: int,
                device: torch.device, sampler: UtilSampler) -> Dict[str, Any]:
    """Run ``warmup`` untimed, then ``steps`` timed ``train_step`` calls on ``batches``.

    Returns:
        dict: ``seconds``, ``data_wait_s`` (time blocked waiting for the next batch),
        ``gpu_busy_pct`` (mean utilisation, None off the GPU), ``util_samples``, ``loss`` (the
        last step's).
    """
    sync = synchronizer(device)
    log_vars = None
    for _ in range(warmup):
        log_vars = model.train_step(next(batches), optim_wrapper)
    sync()
    wait = 0.0
    with sampler:
        start = time.perf_counter()
        for _ in range(steps):
            fetch = time.perf_counter()
            data = next(batches)
            wait += time.perf_counter() - fetch
            log_vars = model.train_step(data, optim_wrapper)
        sync()
        seconds = time.perf_counter() - start
    return dict(seconds=seconds, data_wait_s=wait, gpu_busy_pct=sampler.mean,
                util_samples=len(sampler.samples), loss=float(log_vars['loss'].detach()))


def train_row(row: Row, cfg, args: argparse.Namespace, device: torch.device,
              channels_last: bool, amp: Optional[str]) -> Dict[str, Any]:
    """Training throughput of one row: through its loader, then on one batch kept on the GPU.

    The loader run first spends the batches its workers prepared during warm-up (workers x
    prefetch factor of them), so the timed steps see the loader's steady rate, not a backlog.
    """
    from mmaction.registry import MODELS
    from mmengine.optim import build_optim_wrapper
    from mmengine.runner import Runner
    from mmengine.utils.dl_utils import set_multi_processing
    release(device)
    torch.manual_seed(args.seed)
    set_multi_processing(**cfg.env_cfg.get('mp_cfg', {}))  # as the runner does, before loaders
    model = MODELS.build(cfg.model)
    model.init_weights()
    model = model.to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    optim_wrapper = build_optim_wrapper(model, optim_config(cfg, amp))
    loader = Runner.build_dataloader(cfg.train_dataloader.to_dict(), seed=args.seed)
    batches = iter(loader)
    sampler = UtilSampler(device)
    backlog = args.workers * args.prefetch_factor
    through_loader = timed_steps(model, optim_wrapper, batches, args.steps, args.warmup + backlog,
                                 device, sampler)
    resident = model.data_preprocessor.cast_data(next(batches))
    del batches, loader  # stops the workers before the loader-free run
    on_gpu = timed_steps(model, optim_wrapper, itertools.repeat(resident), args.steps,
                         args.warmup, device, sampler)
    clips = args.batch * args.steps
    result = dict(
        model=row.name, config=str(row.config.relative_to(REPO)), batch=args.batch,
        steps=args.steps,
        clips_per_s=clips / through_loader['seconds'],
        clips_per_s_on_gpu=clips / on_gpu['seconds'],
        data_wait_frac=through_loader['data_wait_s'] / through_loader['seconds'],
        gpu_busy_pct=through_loader['gpu_busy_pct'],
        gpu_busy_pct_on_gpu=on_gpu['gpu_busy_pct'],
        util_samples=through_loader['util_samples'], util_source=sampler.source,
        util_error=sampler.error,
        peak_mem_gib=(torch.cuda.max_memory_allocated(device) / 2**30
                      if device.type == 'cuda' else None),
        loss=through_loader['loss'], loss_on_gpu=on_gpu['loss'])
    result['loader_vs_on_gpu'] = result['clips_per_s'] / result['clips_per_s_on_gpu']
    del model, optim_wrapper, resident
    release(device)
    return result


# ----------------------------------------------------------------------------------------------
# Inference


def cast_wrapper(model, dtype: torch.dtype):
    """:class:`~hyperframes_mm.deploy.export.ExportWrapper` (pixels in, scores out) whose
    normalised input is cast to the weights' dtype: the preprocessors normalise in float32, and
    fp16 weights need fp16 activations."""
    from hyperframes_mm.deploy.export import ExportWrapper

    class CastWrapper(ExportWrapper):

        def _normalise(self, pixels: torch.Tensor) -> torch.Tensor:
            return super()._normalise(pixels).to(dtype)

    return CastWrapper(model).eval()


def capture_graph(call: Callable[[], torch.Tensor],
                  device: torch.device) -> Tuple[Callable[[], None], torch.Tensor]:
    """Capture ``call`` (fixed input tensors) in a CUDA graph; return its replay and output.

    Warm-up runs on a side stream first, as CUDA graph capture requires (and so that
    ``cudnn.benchmark`` picks its algorithms outside the capture).
    """
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream), torch.inference_mode():
        for _ in range(3):
            call()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(graph):
        output = call()
    graph.replay()
    torch.cuda.synchronize(device)
    return graph.replay, output


def _max_diff(output: torch.Tensor, reference: torch.Tensor) -> float:
    return float((output.float() - reference.float()).abs().max())


def infer_rows(rows: Sequence[Row], configs: Dict[str, Any], shapes: Dict[str, Dict],
               args: argparse.Namespace, device: torch.device, channels_last: bool,
               deadline: Optional[float], notes: List[str]) -> List[Dict[str, Any]]:
    """Latency (batch 1) and throughput (``--infer-batch``) of every row in every mode.

    Returns:
        list[dict]: one entry per (model, mode, batch): ``median_ms``, ``q1_ms``, ``q3_ms``,
        ``clips_per_s``, ``compile_s`` (compile only), ``max_abs_diff`` (scores against eager,
        graph and compile only), ``note`` (why a mode was skipped); timings None when skipped.
    """
    from mmaction.registry import MODELS

    from hyperframes_mm.utils.timing import interleaved_timing
    dtype = torch.float16 if device.type == 'cuda' else torch.float32
    batches = (1, args.infer_batch)
    calls: Dict[Tuple[str, str, int], Callable] = {}
    entries: Dict[Tuple[str, str, int], Dict[str, Any]] = {}
    references: Dict[Tuple[str, int], torch.Tensor] = {}
    wrappers, inputs = {}, {}
    generator = torch.Generator().manual_seed(args.seed)
    for row in rows:
        model = MODELS.build(configs[row.name].model)
        model.init_weights()
        model = model.to(device=device, dtype=dtype).eval()
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        wrappers[row.name] = cast_wrapper(model, dtype)
        keys = wrappers[row.name].keys
        for batch in batches:
            inputs[row.name, batch] = tuple(
                torch.randint(0, 256, (batch, ) + shapes[row.name][key], generator=generator,
                              dtype=torch.uint8).to(device) for key in keys)
            key = (row.name, 'eager', batch)
            calls[key] = (lambda w=wrappers[row.name], x=inputs[row.name, batch]: w(*x))
            entries[key] = dict(model=row.name, mode='eager', batch=batch, note=None)
            with torch.inference_mode():
                references[row.name, batch] = calls[key]().clone()
    _add_compiled(rows, batches, wrappers, inputs, references, calls, entries, args, device,
                  deadline, notes)
    _add_graphs(rows, batches, calls, entries, references, args, device, notes)
    sync = synchronizer(device)
    for batch in batches:
        group = {key: call for key, call in calls.items() if key[2] == batch}
        print(f'[infer] timing {len(group)} calls at batch {batch}, {args.repeats} interleaved '
              'rounds', flush=True)
        times = interleaved_timing(group, args.repeats, warmup=max(1, args.repeats // 10),
                                   synchronize=sync)
        for key in group:
            median, (first, third) = times.median(key), times.quartiles(key)
            entries[key].update(median_ms=median * 1e3, q1_ms=first * 1e3, q3_ms=third * 1e3,
                                clips_per_s=batch / median)
    ordered = [entries[row.name, mode, batch] for row in rows for batch in batches
               for mode in MODES]
    for entry in ordered:
        for field in ('median_ms', 'q1_ms', 'q3_ms', 'clips_per_s'):
            entry.setdefault(field, None)
    return ordered


def _add_compiled(rows, batches, wrappers, inputs, references, calls, entries, args, device,
                  deadline, notes) -> None:
    """``torch.compile`` each row's wrapper (one graph per batch size), within the budgets."""
    if args.no_compile:
        reason = '--tiny' if args.tiny else '--no-compile'
        for row in rows:
            for batch in batches:
                entries[row.name, 'compile', batch] = dict(model=row.name, mode='compile',
                                                           batch=batch,
                                                           note=f'skipped: {reason}')
        return
    # Every row's wrapper runs ExportWrapper.forward: one code object, a cache entry per model
    # and batch; dynamo's default limit on them would send the last rows back to eager silently.
    for name in ('recompile_limit', 'cache_size_limit', 'accumulated_recompile_limit',
                 'accumulated_cache_size_limit'):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name,
                    max(getattr(torch._dynamo.config, name), 8 * len(rows) * len(batches)))
    compiled = {row.name: torch.compile(wrappers[row.name], dynamic=False) for row in rows}
    spent = 0.0
    for batch in batches:  # every batch-1 compile first: latency is the question
        for row in rows:
            key = (row.name, 'compile', batch)
            entry = entries[key] = dict(model=row.name, mode='compile', batch=batch, note=None)
            left = args.compile_budget - spent
            if deadline is not None:
                left = min(left, deadline - TIMING_RESERVE_S - time.perf_counter())
            allowed = min(args.compile_timeout, left)
            if left < MIN_COMPILE_S:
                entry['note'] = 'skipped: compile budget spent'
                notes.append(f'torch.compile, {row.name}, batch {batch}: {entry["note"]} '
                             '(--compile-budget, --budget)')
                continue
            start = time.perf_counter()
            limit = TimeLimit(allowed, f'torch.compile of {row.name} at batch {batch}')
            try:
                with limit, torch.inference_mode():
                    output = compiled[row.name](*inputs[row.name, batch])
                    synchronizer(device)()
                if limit.fired:  # the compiler caught the interrupt and ran on
                    raise TimeoutError(limit.what)
            except Exception as error:  # noqa: BLE001  (any failure: skip this mode, say why)
                # No torch.compiler.reset() here: it would drop the other rows' compiled code.
                reason = (f'took longer than {allowed:.0f} s (--compile-timeout, '
                          '--compile-budget)' if limit.fired else _short(error))
                entry['note'] = f'skipped: {reason}'
                notes.append(f'torch.compile, {row.name}, batch {batch}: {entry["note"]}')
                continue
            finally:
                spent += time.perf_counter() - start
            entry.update(compile_s=time.perf_counter() - start,
                         max_abs_diff=_max_diff(output, references[row.name, batch]))
            calls[key] = (lambda c=compiled[row.name], x=inputs[row.name, batch]: c(*x))
            print(f'[infer] compiled {row.name} at batch {batch} in {entry["compile_s"]:.1f} s',
                  flush=True)


def _add_graphs(rows, batches, calls, entries, references, args, device, notes) -> None:
    """Capture each row's eager fp16 call in a CUDA graph, where that works."""
    for row in rows:
        for batch in batches:
            key = (row.name, 'cuda_graph', batch)
            entry = entries[key] = dict(model=row.name, mode='cuda_graph', batch=batch,
                                        note=None)
            if args.no_graphs or device.type != 'cuda':
                reason = ('--tiny' if args.tiny else '--no-graphs' if args.no_graphs
                          else 'no CUDA device')
                entry['note'] = f'skipped: {reason}'
                continue
            try:
                replay, output = capture_graph(calls[row.name, 'eager', batch], device)
            except Exception as error:  # noqa: BLE001  (capture failed: skip, say why)
                entry['note'] = f'skipped: {_short(error)}'
                notes.append(f'CUDA graph, {row.name}, batch {batch}: {entry["note"]}')
                torch.cuda.synchronize(device)
                continue
            entry['max_abs_diff'] = _max_diff(output, references[row.name, batch])
            calls[key] = replay


# ----------------------------------------------------------------------------------------------
# Report


def best_inference(entries: List[Dict[str, Any]], model: str,
                   batch: int) -> Optional[Dict[str, Any]]:
    """The fastest timed mode of ``model`` at ``batch``, or None if none was timed."""
    timed = [e for e in entries if e['model'] == model and e['batch'] == batch
             and e['median_ms'] is not None]
    return min(timed, key=lambda e: e['median_ms']) if timed else None


def compute_ratios(train: List[Dict[str, Any]], infer: List[Dict[str, Any]],
                   infer_batch: int) -> Dict[str, Dict[str, Optional[float]]]:
    """Every row against TSM-5, from this run's numbers only.

    Returns:
        dict: ``train_clips_per_s`` and ``train_clips_per_s_on_gpu`` (row / TSM-5),
        ``infer_b1_ms`` (best batch-1 latency, row / TSM-5), ``infer_batch_clips_per_s``
        (best throughput at ``infer_batch``, row / TSM-5); model -> ratio.
    """
    def divide(numerator, denominator):
        return None if numerator is None or not denominator else numerator / denominator

    ratios: Dict[str, Dict[str, Optional[float]]] = {}
    by_model = {entry['model']: entry for entry in train}
    if REFERENCE in by_model:
        for field in ('clips_per_s', 'clips_per_s_on_gpu'):
            ratios[f'train_{field}'] = {name: divide(entry[field], by_model[REFERENCE][field])
                                        for name, entry in by_model.items()}
    models = list(dict.fromkeys(entry['model'] for entry in infer))
    if REFERENCE in models:
        for key, batch, field in (('infer_b1_ms', 1, 'median_ms'),
                                  ('infer_batch_clips_per_s', infer_batch, 'clips_per_s')):
            reference = best_inference(infer, REFERENCE, batch)
            ratios[key] = {}
            for name in models:
                best = best_inference(infer, name, batch)
                ratios[key][name] = divide(best and best[field], reference and reference[field])
    return ratios


def compute_targets(train: List[Dict[str, Any]], infer: List[Dict[str, Any]],
                    ratios: Dict[str, Dict[str, Optional[float]]],
                    dtype_name: str) -> List[Dict[str, Any]]:
    """The issue's targets beside this run's numbers (printed, never asserted)."""
    targets = []
    row = next((entry for entry in train if entry['model'] == HYPERFRAME), None)
    ratio = ratios.get('train_clips_per_s', {}).get(HYPERFRAME)
    if row is not None and ratio is not None:
        busy = row['gpu_busy_pct']
        reached = None if busy is None else (ratio >= TRAIN_TARGET_RATIO
                                              and busy >= TRAIN_TARGET_BUSY)
        targets.append(dict(
            target=f'{HYPERFRAME} training clips/s / TSM-5 clips/s (through the loader)',
            measured=ratio, gpu_busy_pct=busy,
            goal=f'>= {TRAIN_TARGET_RATIO:g}x with the GPU >= {TRAIN_TARGET_BUSY:g} % busy',
            reached=reached))
    for model, (seed_ms, how) in SEED_LATENCY.items():
        best = best_inference(infer, model, 1)
        if best is None:
            continue
        targets.append(dict(target=f'{model} batch-1 {dtype_name} latency ({best["mode"]})',
                            measured=best['median_ms'], seed_ms=seed_ms,
                            goal=f"the seeds' {seed_ms:g} ms ({how})",
                            ratio=best['median_ms'] / seed_ms))
    return targets


def _fmt(value: Optional[float], spec: str = '.1f', suffix: str = '', missing: str = '-') -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    return f'{value:{spec}}{suffix}'


def render(report: Dict[str, Any]) -> str:
    """The markdown report: machine, training, inference, targets, notes."""
    meta, ratios, phases = report['meta'], report['ratios'], report['meta']['phases']

    def versus(key: str, name: str) -> str:
        return _fmt(ratios.get(key, {}).get(name), '.2f', 'x')

    lines = heading(
        'GPU benchmark: training and inference side by side'
        f'{" (--tiny CPU check: not results)" if meta["tiny"] else ""}',
        f'{meta["machine"]} Command: `{meta["command"]}`; {meta["wall_s"]:.0f} s in all (setup '
        f'and data {phases["setup_s"]:.0f}, training {phases["train_s"]:.0f}, inference '
        f'{phases["infer_s"]:.0f}).')
    if report['train']:
        amp = meta['amp'] or 'off'
        lines += [f'## Training: {meta["size"]}x{meta["size"]}, batch {meta["batch"]}, AMP {amp}, '
                  f'channels_last {"on" if meta["channels_last"] else "off"}, loader workers: '
                  f'{meta["workers"]}, {meta["steps"]} timed steps', '',
                  '"through the loader": batches from the frame cache through the config\'s '
                  'training pipeline; "on the device": one batch kept there (the loader-free '
                  'ceiling). Data wait: share of the loader run spent waiting for the next '
                  f'batch. GPU busy: mean utilisation read by {meta["util_source"] or "nothing"} '
                  'during the timed steps.', '']
        header = ('model', 'input per clip', 'clips/s through the loader', 'x TSM-5',
                  'clips/s on the device', 'x TSM-5', 'loader / ceiling', 'data wait',
                  'GPU busy (loader)', 'GPU busy (on the device)', 'peak memory GiB',
                  'last loss')
        cells = [[entry['model'], entry['input'], _fmt(entry['clips_per_s']),
                  versus('train_clips_per_s', entry['model']), _fmt(entry['clips_per_s_on_gpu']),
                  versus('train_clips_per_s_on_gpu', entry['model']),
                  _fmt(entry['loader_vs_on_gpu'], '.2f'),
                  _fmt(100 * entry['data_wait_frac'], '.0f', ' %'),
                  _fmt(entry['gpu_busy_pct'], '.0f', ' %'),
                  _fmt(entry['gpu_busy_pct_on_gpu'], '.0f', ' %'),
                  _fmt(entry['peak_mem_gib'], '.2f'), _fmt(entry['loss'], '.3f')]
                 for entry in report['train']]
        lines += markdown_table(header, 'll' + 'r' * 10, cells) + ['']
    if report['inference']:
        big = meta['infer_batch']
        lines += [f'## Inference: {meta["infer_dtype"]} weights, uint8 pixels in, one clip per '
                  f'sample; median of {meta["repeats"]} interleaved rounds', '']
        header = ('model', 'eager b1 ms', 'compile b1 ms', 'CUDA graph b1 ms',
                  'best b1 x TSM-5', f'eager b{big} clips/s', f'compile b{big}',
                  f'CUDA graph b{big}', f'best b{big} x TSM-5')
        entries = {(e['model'], e['mode'], e['batch']): e for e in report['inference']}
        cells = [[name, *[_fmt(entries[name, mode, 1]['median_ms'], '.2f') for mode in MODES],
                  versus('infer_b1_ms', name),
                  *[_fmt(entries[name, mode, big]['clips_per_s'], '.0f') for mode in MODES],
                  versus('infer_batch_clips_per_s', name)]
                 for name in dict.fromkeys(e['model'] for e in report['inference'])]
        lines += markdown_table(header, 'l' + 'r' * 8, cells) + ['']
    if report['targets']:
        lines += ["## The issue's targets (printed beside the numbers, not checked)", '']
        reads = {True: 'reached', False: 'not reached', None: 'no GPU reading'}
        cells = []
        for target in report['targets']:
            if 'seed_ms' in target:
                cells.append([target['target'], f'{target["measured"]:.2f} ms', target['goal'],
                              f'{target["ratio"]:.2f}x the seeds\' figure'])
            else:
                busy = _fmt(target['gpu_busy_pct'], '.0f', ' % busy', 'no GPU reading')
                cells.append([target['target'], f'{target["measured"]:.2f}x ({busy})',
                              target['goal'], reads[target['reached']]])
        lines += markdown_table(('target', 'measured', 'issue', 'reads'), 'lrll', cells) + ['']
    if report['notes']:
        lines += ['## Notes', ''] + [f'- {note}' for note in report['notes']] + ['']
    return '\n'.join(lines)


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has no such numbers; a diverged loss
    then reads as null rather than making the file unreadable)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def environment(args: argparse.Namespace, device: torch.device) -> Dict[str, Any]:
    """What ran where: device, versions, the settings of the run."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return dict(
        tiny=args.tiny, device=str(device),
        device_name=(torch.cuda.get_device_name(device) if device.type == 'cuda'
                     else f'CPU ({cpu_name()})'),
        torch=torch.__version__, cuda=torch.version.cuda, cudnn=cudnn,
        python=platform.python_version(), cpus=os.cpu_count(),
        command=('python benchmarks/bench_gpu.py ' + ' '.join(sys.argv[1:])).strip(),
        size=args.size, batch=args.batch, steps=args.steps, warmup=args.warmup,
        workers=args.workers, prefetch_factor=args.prefetch_factor, short_side=args.short_side,
        infer_batch=args.infer_batch, repeats=args.repeats, seed=args.seed)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run the benchmark, print the markdown, write ``gpu_bench.md`` and ``gpu_bench.json``."""
    args = parse_args(argv)
    started, load_at_start = time.perf_counter(), load_average()
    deadline = None if args.budget is None else started + args.budget
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    notes: List[str] = []
    amp = AMP_DTYPES[args.amp]
    if amp is not None and device.type != 'cuda':
        notes.append(f'--amp {args.amp} ignored: no CUDA device (mmengine\'s AmpOptimWrapper '
                     'needs one)')
        amp = None
    channels_last = device.type == 'cuda' and not args.no_channels_last
    if device.type == 'cuda':
        torch.backends.cudnn.benchmark = True  # fixed shapes: let cuDNN pick its fastest kernels
    import hyperframes_mm  # noqa: F401  (registers the plugin's transforms and models)
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    init_default_scope('mmaction')
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    open_files = raise_open_file_limit()
    data, data_facts = prepare_data(args)
    rows = [row for row in ROWS if row.name == REFERENCE or args.only is None
            or re.search(args.only, row.name)]
    rows = [row._replace(edits=row.edits + run_edits(args, data)) for row in rows]
    configs = {row.name: row_config(row) for row in rows}
    shapes = {row.name: sample_shapes(configs[row.name]) for row in rows}
    phases = dict(setup_s=time.perf_counter() - started)
    train = []
    if 'train' in args.parts:
        for index, row in enumerate(rows, 1):
            print(f'[train {index}/{len(rows)}] {row.name}: {args.warmup} + '
                  f'{args.workers * args.prefetch_factor} warm-up, {args.steps} timed steps of '
                  f'{args.batch}, then the same on one batch kept on the device', flush=True)
            entry = train_row(row, configs[row.name], args, device, channels_last, amp)
            entry['input'] = shape_text(shapes[row.name])
            train.append(entry)
            print(f'[train {index}/{len(rows)}] {row.name}: {entry["clips_per_s"]:.1f} clips/s '
                  f'through the loader, {entry["clips_per_s_on_gpu"]:.1f} on the device, data '
                  f'wait {100 * entry["data_wait_frac"]:.0f} %, GPU busy '
                  f'{_fmt(entry["gpu_busy_pct"], ".0f", " %")}', flush=True)
            if entry['util_error'] and entry['util_error'] not in ' '.join(notes):
                notes.append(f'GPU utilisation unavailable: {entry["util_error"]}')
    phases['train_s'] = time.perf_counter() - started - sum(phases.values())
    infer = []
    if 'infer' in args.parts:
        infer = infer_rows(rows, configs, shapes, args, device, channels_last, deadline, notes)
        release(device)
    phases['infer_s'] = time.perf_counter() - started - sum(phases.values())
    ratios = compute_ratios(train, infer, args.infer_batch)
    infer_dtype = 'fp16' if device.type == 'cuda' else 'fp32'
    meta = environment(args, device)
    meta.update(amp=args.amp if amp else None, channels_last=channels_last,
                infer_dtype=infer_dtype, data=data_facts, open_file_limit=open_files,
                cudnn_benchmark=bool(torch.backends.cudnn.benchmark), phases=phases,
                util_source=next((entry['util_source'] for entry in train
                                  if entry['util_source']), None),
                wall_s=time.perf_counter() - started)
    meta['machine'] = machine_line(
        f'GPU {meta["device_name"]}, CUDA {meta["cuda"]}, cuDNN {meta["cudnn"]}'
        if device.type == 'cuda' else 'device cpu', load_at_start=load_at_start)
    report = dict(meta=meta, train=train, inference=infer, ratios=ratios,
                  targets=compute_targets(train, infer, ratios, infer_dtype), notes=notes,
                  reference=REFERENCE)
    print_and_write(render(report), args.out / 'gpu_bench.md')
    (args.out / 'gpu_bench.json').write_text(
        json.dumps(json_safe(report), indent=1, allow_nan=False) + '\n')
    print(f'wrote {args.out / "gpu_bench.md"} and {args.out / "gpu_bench.json"}', flush=True)
    return report


if __name__ == '__main__':
    main()
