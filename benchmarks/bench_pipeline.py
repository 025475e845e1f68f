"""Data path speed, side by side in one run on the same videos: clips/s and time ratios.

Rows (one process; every clip runs through all rows back to back, so load changes hit every
row alike):

- raw decord decode of the frames the hyperframe sampler picks (the floor: no pipeline at all);
- mmaction2's standard equivalent: DecordInit, SampleFrames, DecordDecode, Resize(-1, 256),
  RandomResizedCrop, Resize(size), Flip, FormatShape;
- the hyperframe pipeline from video: SafeDecordInit, HyperframeSampleFrames, DecordDecode,
  ConsistentClipAugment, HyperframeStack (same frames as the floor: same seed per clip);
- the same with colour jitter;
- FRAME-CACHE HOOK: the hyperframe pipeline reading a pre-decoded cache (FrameCacheInit /
  FrameCacheDecode, built with hyperframes_mm.datasets.frame_cache); included automatically
  when those transforms are registered and the cache builds, otherwise listed as unavailable;

then the hyperframe pipeline inside mmaction2's VideoDataset through a torch DataLoader at 0, 1
and 2 workers (worker start-up included, as an epoch pays it).

Videos: the real clips in ``../shared/videos`` when present (``--videos DIR`` for others),
otherwise generated H.264 clips. Prints a markdown table and writes it to
``benchmarks/results/pipeline.md``.

    python benchmarks/bench_pipeline.py                 # ~1 minute on 2 cores
    python benchmarks/bench_pipeline.py --rounds 10 --videos path/to/videos
"""
import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import print_and_write
from hyperframes_mm.utils.timing import Timings, interleaved_timing

SHARED_VIDEOS = REPO.parent / 'shared' / 'videos'
RESULTS = REPO / 'benchmarks' / 'results' / 'pipeline.md'
VIDEO_SUFFIXES = ('.mp4', '.avi', '.mkv', '.webm', '.mov')
FLOOR = 'raw decord decode (floor)'
HYPERFRAME = 'hyperframe pipeline from video'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--videos', type=Path, default=None,
                        help='directory of videos (default: ../shared/videos, else generated)')
    parser.add_argument('--num-frames', type=int, default=5, help='T, frames per hyperframe')
    parser.add_argument('--interval', type=int, default=2, help='frames between picks')
    parser.add_argument('--size', type=int, default=224, help='output crop size')
    parser.add_argument('--rounds', type=int, default=6,
                        help='passes over the videos (every row runs every clip)')
    parser.add_argument('--loader-samples', type=int, default=48,
                        help='samples per DataLoader pass')
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--workers', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def find_videos(directory: Path) -> List[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)


def generate_videos(directory: Path, count: int = 4, frames: int = 120) -> List[Path]:
    """Clips of a textured frame panning over noise, 256x340 at 30 fps, H.264."""
    from tqdm import tqdm

    from hyperframes_mm.datasets.video_io import write_video
    rng = np.random.default_rng(0)
    paths = []
    for index in tqdm(range(count), desc='generating videos', unit='video'):
        scene = rng.integers(0, 256, (256 // 8, 600 // 8, 3), np.uint8)
        scene = np.kron(scene, np.ones((8, 8, 1), np.uint8))
        clip = np.stack([scene[:, 2 * t:2 * t + 340] for t in range(frames)])
        noise = rng.integers(-6, 7, clip.shape)
        clip = np.clip(clip.astype(np.int16) + noise, 0, 255).astype(np.uint8)
        paths.append(directory / f'generated_{index}.mp4')
        write_video(paths[-1], clip, fps=30)
    return paths


def seed_all(seed: int) -> None:
    np.random.seed(seed)
    random.seed(seed)  # mmaction2's RandomResizedCrop draws offsets from Python's random


def sampler(args):
    from hyperframes_mm.datasets.transforms import HyperframeSampleFrames
    return HyperframeSampleFrames(num_frames=args.num_frames, interval=args.interval)


def floor_row(args) -> Callable[[Path, int], None]:
    """Decode the sampler's frames with decord and nothing else."""
    import decord
    pick = sampler(args)

    def run(path: Path, seed: int) -> None:
        reader = decord.VideoReader(str(path), num_threads=1)
        seed_all(seed)
        inds = pick(dict(total_frames=len(reader)))['frame_inds']
        reader.get_batch(list(inds)).asnumpy()
    return run


def pipeline_row(transforms: List[dict]) -> Callable[[Path, int], None]:
    from mmaction.registry import TRANSFORMS
    from mmengine.dataset import Compose
    compose = Compose([TRANSFORMS.build(t) for t in transforms])

    def run(path: Path, seed: int) -> None:
        seed_all(seed)
        compose(dict(filename=str(path), start_index=0, modality='RGB', label=0))
    return run


def standard_transforms(args) -> List[dict]:
    return [dict(type='DecordInit'),
            dict(type='SampleFrames', clip_len=args.num_frames, frame_interval=args.interval,
                 num_clips=1),
            dict(type='DecordDecode'),
            dict(type='Resize', scale=(-1, 256)),
            dict(type='RandomResizedCrop'),
            dict(type='Resize', scale=(args.size, args.size), keep_ratio=False),
            dict(type='Flip', flip_ratio=0.5),
            dict(type='FormatShape', input_format='NCHW')]


def hyperframe_transforms(args, init: Optional[List[dict]] = None, decode: Optional[dict] = None,
                          **color) -> List[dict]:
    init = init or [dict(type='SafeDecordInit')]
    return init + [dict(type='HyperframeSampleFrames', num_frames=args.num_frames,
                        interval=args.interval),
                   decode or dict(type='DecordDecode'),
                   dict(type='ConsistentClipAugment', size=args.size, **color),
                   dict(type='HyperframeStack')]


def frame_cache_row(args, videos: List[Path], work: Path):
    """FRAME-CACHE HOOK: the cache row, or the reason it is unavailable."""
    from mmaction.registry import TRANSFORMS
    missing = [name for name in ('FrameCacheInit', 'FrameCacheDecode')
               if TRANSFORMS.get(name) is None]
    if missing:
        return None, f'{", ".join(missing)} not registered'
    try:
        from hyperframes_mm.datasets.frame_cache import build_frame_cache
    except ImportError as error:
        return None, f'hyperframes_mm.datasets.frame_cache unavailable: {error}'
    video_root = videos[0].parent
    cache_root = work / 'frame_cache'
    summary = build_frame_cache([p.name for p in videos], video_root, cache_root, workers=1,
                                progress=True)
    if summary.failed:
        return None, f'cache build failed: {summary.failed}'
    init = [dict(type='FrameCacheInit', cache_root=str(cache_root), video_root=str(video_root))]
    return pipeline_row(hyperframe_transforms(args, init, dict(type='FrameCacheDecode'))), None


def time_rows(rows: Dict[str, Callable], videos: List[Path], rounds: int) -> Timings:
    """Seconds of each row on each clip. A timing round is one clip, run through all rows back
    to back in an order rotated from clip to clip, so no row always goes first (cold reads) or
    last, and a row's time on a clip can be paired with the floor's time on the same clip. The
    warm-up round (imports, first opens, page cache) is the first video with seed 0."""
    clips = [(videos[0], 0)] + [(path, 1000 * round_index + video_index)
                                for round_index in range(rounds)
                                for video_index, path in enumerate(videos)]
    clip = {}
    return interleaved_timing(
        {name: (lambda row=row: row(*clip['now'])) for name, row in rows.items()},
        len(clips) - 1, warmup=1, inference=False,
        before=lambda name, round_index: clip.update(now=clips[round_index]))


def time_loader(args, videos: List[Path], work: Path) -> Dict[int, float]:
    """Clips/s of the hyperframe pipeline in VideoDataset + DataLoader, per worker count."""
    import torch
    from mmaction.registry import DATASETS
    from mmengine.dataset import pseudo_collate
    from tqdm import tqdm
    ann = work / 'videos.txt'
    lines = [f'{videos[i % len(videos)].name} 0' for i in range(args.loader_samples)]
    ann.write_text('\n'.join(lines) + '\n')
    dataset = DATASETS.build(dict(
        type='VideoDataset', ann_file=str(ann), data_prefix=dict(video=str(videos[0].parent)),
        pipeline=hyperframe_transforms(args) + [dict(type='PackActionInputs')]))
    speeds = {}
    for workers in tqdm(args.workers, desc='DataLoader', unit='setting'):
        seed_all(workers)
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                             num_workers=workers, collate_fn=pseudo_collate)
        start = time.perf_counter()
        count = sum(len(batch['inputs']) for batch in loader)
        speeds[workers] = count / (time.perf_counter() - start)
    return speeds


def describe_videos(videos: List[Path], generated: bool) -> str:
    import decord
    parts = []
    for path in videos:
        reader = decord.VideoReader(str(path), num_threads=1)
        height, width = reader[0].shape[:2]
        parts.append(f'{path.name} ({len(reader)} frames, {height}x{width}, '
                     f'{reader.get_avg_fps():.0f} fps)')
    where = 'generated H.264 clips' if generated else \
        f'`{os.path.relpath(videos[0].parent, REPO)}`'
    return f'{len(videos)} videos from {where}: ' + ', '.join(parts)


def report(args, times: Timings, unavailable: Dict[str, str], loader: Dict[int, float],
           video_text: str, machine: str) -> str:
    ratios = {name: times.paired_ratio(name, FLOOR) for name in times}
    lines = [
        '# Data pipeline speed',
        '',
        f'T={args.num_frames} frames at interval {args.interval}, one clip per sample, '
        f'{args.size}x{args.size} output, {args.rounds} rounds (each clip through every row, '
        f'rows rotated). {video_text}.',
        f'{machine} Shared machines are noisy: compare ratios within one run, not absolute '
        'numbers across runs. "time vs floor" is the median over clips of (row time / floor '
        'time on the same clip, run back to back); mmaction2\'s row samples its own frames, so '
        'its ratio also carries the difference in decoding cost of other frame positions.',
        '',
        '| pipeline (one process) | clips/s | ms/clip (mean) | time vs floor (median) |',
        '|---|---:|---:|---:|']
    for name, values in times.items():
        seconds = statistics.fmean(values)
        lines.append(f'| {name} | {1 / seconds:.1f} | {1000 * seconds:.1f} | '
                     f'{ratios[name]:.2f}x |')
    for name, reason in unavailable.items():
        lines.append(f'| {name} | n/a | n/a | unavailable: {reason} |')
    ratio = ratios[HYPERFRAME]
    lines += ['', f'Target: hyperframe pipeline from video <= 1.1x the raw-decode floor: '
              f'**{ratio:.2f}x, {"met" if ratio <= 1.1 else "NOT met"}**.', '']
    if loader:
        base = loader.get(0)
        lines += [f'| hyperframe pipeline, VideoDataset + DataLoader (batch {args.batch_size}, '
                  f'{args.loader_samples} samples) | clips/s | vs 0 workers |', '|---|---:|---:|']
        for workers, speed in loader.items():
            relative = f'{speed / base:.2f}x' if base else 'n/a'
            lines.append(f'| {workers} workers | {speed:.1f} | {relative} |')
        lines.append('')
    command = 'python benchmarks/bench_pipeline.py ' + ' '.join(sys.argv[1:])
    lines += [f'Reproduce: `{command.strip()}`', '']
    return '\n'.join(lines)


def main(argv=None) -> str:
    args = parse_args(argv)
    import cv2

    import hyperframes_mm  # noqa: F401  (registers the transforms)
    from mmengine.registry import init_default_scope
    from mmengine.utils.dl_utils import set_multi_processing

    # As mmengine's Runner sets up: mmaction2's registry scope, and OpenCV single-threaded
    # (data-loader workers are the parallelism).
    init_default_scope('mmaction')
    set_multi_processing(distributed=False)
    load_at_start = load_average()
    with tempfile.TemporaryDirectory(prefix='bench_pipeline_') as tmp:
        work = Path(tmp)
        directory = args.videos or (SHARED_VIDEOS if SHARED_VIDEOS.is_dir() else None)
        videos = find_videos(directory) if directory else []
        generated = not videos
        if generated:
            videos = generate_videos(work / 'videos')
        rows = {
            FLOOR: floor_row(args),
            'mmaction2 standard (SampleFrames ... FormatShape)':
                pipeline_row(standard_transforms(args)),
            HYPERFRAME: pipeline_row(hyperframe_transforms(args)),
            'hyperframe pipeline from video + colour jitter': pipeline_row(
                hyperframe_transforms(args, brightness=0.4, contrast=0.4, saturation=0.4,
                                      hue=0.1)),
        }
        unavailable = {}
        cache_row, reason = frame_cache_row(args, videos, work)
        if cache_row is None:
            unavailable['hyperframe pipeline from frame cache'] = reason
        else:
            rows['hyperframe pipeline from frame cache'] = cache_row
        times = time_rows(rows, videos, args.rounds)
        loader = time_loader(args, videos, work)
        machine = machine_line(f'Python {platform.python_version()}',
                               f'OpenCV threads {cv2.getNumThreads()}',
                               load_at_start=load_at_start)
        text = report(args, times, unavailable, loader, describe_videos(videos, generated),
                      machine)
    print_and_write(text, args.out)
    return text


if __name__ == '__main__':
    main()
