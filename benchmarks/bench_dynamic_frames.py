"""A T-trained model run at T' = 3 / 5 / 7 (re-inflated) and per clip by motion: accuracy and
latency side by side on a config's test set.

    python benchmarks/bench_dynamic_frames.py CONFIG CHECKPOINT [--frames 3 5 7] \\
        [--thresholds LOW HIGH] [--threads 1] [--limit N]

Every test video is decoded once; for each T' the config's test pipeline (its sampler given
T' frames over the trained clip's time span, ``keep_span``) makes the clips from the whole
video, exactly as offline testing does, and the re-inflated copy of the model scores them.
The dynamic row picks T' per video by its motion score (``window_motion_score`` of the
trained-T clips) with the given thresholds. Latency: median of interleaved rounds of one
sample per T' through the model's test step (preprocessor, backbone, head). Also prints the
motion-score tertiles of the set, the basis of ``DEFAULT_THRESHOLDS``. Writes
``benchmarks/results/dynamic_frames.md``.
"""
import argparse
import logging
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib.costing import load_average, machine_line
from benchmarks.lib.tables import heading, print_and_write

RESULTS = REPO / 'benchmarks' / 'results' / 'dynamic_frames.md'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--frames', type=int, nargs=3, default=(3, 5, 7),
                        metavar=('LOW', 'MID', 'HIGH'), help="T' for low/medium/high motion")
    parser.add_argument('--thresholds', type=float, nargs=2, metavar=('LOW', 'HIGH'),
                        help='motion thresholds (default: DEFAULT_THRESHOLDS)')
    parser.add_argument('--split', default='test', choices=['test', 'val'],
                        help='the config\'s <split>_dataloader')
    parser.add_argument('--limit', type=int, help='first N videos only')
    parser.add_argument('--batch', type=int, default=16, help='clips per model call')
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--repeats', type=int, default=20, help='latency rounds')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--out', type=Path, default=RESULTS)
    return parser.parse_args(argv)


def read_video_list(cfg, split: str):
    """``[(path, label)]`` of the config's ``<split>_dataloader`` (a VideoDataset list)."""
    dataset = cfg[f'{split}_dataloader']['dataset']
    if dataset.get('type') not in ('VideoDataset', 'CheckedVideoDataset', 'GuardedDataset'):
        raise ValueError(f'{split}_dataloader: expected a VideoDataset, got {dataset.get("type")}')
    dataset = dataset.get('dataset', dataset)
    prefix = Path(dataset.get('data_prefix', {}).get('video', ''))
    items = []
    with open(dataset['ann_file'], encoding='utf-8') as handle:
        for line in handle:
            if line.strip():
                path, label = line.split()[:2]
                items.append((str(prefix / path), int(label)))
    return items


def main(argv=None) -> int:
    args = parse_args(argv)
    import decord
    import hyperframes_mm  # noqa: F401
    from mmengine.analysis import get_model_complexity_info
    from mmengine.logging import MMLogger
    from tqdm import tqdm

    from hyperframes_mm.apis import init_recognizer, predict_scores
    from hyperframes_mm.deploy.dynamic_frames import (DEFAULT_THRESHOLDS, DynamicFrameStage,
                                                    choose_num_frames, window_motion_score)
    from hyperframes_mm.deploy.export import ExportWrapper
    from hyperframes_mm.utils.timing import interleaved_timing
    load_at_start = load_average()
    torch.set_num_threads(args.threads)
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    thresholds = tuple(args.thresholds or DEFAULT_THRESHOLDS)
    model = init_recognizer(args.config, args.checkpoint, args.device)
    stage = DynamicFrameStage(model, tuple(args.frames), thresholds)
    base = stage.base_num_frames
    choices = sorted(stage.models)
    videos = read_video_list(model.cfg, args.split)[:args.limit]

    labels, motion = [], []
    scores = {t: [] for t in choices}
    pending = {t: [] for t in choices}
    latency_samples = {}

    def flush(num_frames):
        if pending[num_frames]:
            scores[num_frames].append(predict_scores(stage.models[num_frames],
                                                     pending[num_frames]).numpy())
            pending[num_frames] = []

    for path, label in tqdm(videos, desc='videos'):
        reader = decord.VideoReader(path)
        frames = list(reader[:].asnumpy())
        fps = reader.get_avg_fps()
        labels.append(label)
        motion.append(window_motion_score(stage.pipelines[base], frames, fps))
        for num_frames in choices:
            pipeline = stage.pipelines[num_frames]
            picks = [frames[i] for i in pipeline.frame_indices(len(frames), fps)]
            packed = pipeline(picks, len(frames), fps, path)
            latency_samples.setdefault(num_frames, packed)
            pending[num_frames].append(packed)
            if len(pending[num_frames]) == args.batch:
                flush(num_frames)
    for num_frames in choices:
        flush(num_frames)
    labels = np.asarray(labels)
    motion = np.asarray(motion)
    predictions = {t: np.concatenate(scores[t]).argmax(1) for t in choices}
    accuracy = {t: float((predictions[t] == labels).mean()) for t in choices}

    # timed as the stream runs it: predict_scores sets its own autograd mode
    times = interleaved_timing(
        {t: (lambda t=t: predict_scores(stage.models[t], [latency_samples[t]]))
         for t in choices}, args.repeats, warmup=2, inference=False)
    latency = {t: times.median(t) * 1e3 for t in choices}
    flops = {}
    # The counter warns about every op it does not count (batch norm, pooling, softmax).
    MMLogger.get_current_instance().setLevel(logging.ERROR)
    for num_frames in choices:
        inputs = latency_samples[num_frames]['inputs']
        tensors = tuple(v[None].float() for v in inputs.values()) if isinstance(inputs, dict) \
            else (inputs[None].float(), )
        with torch.no_grad():
            flops[num_frames] = get_model_complexity_info(
                ExportWrapper(stage.models[num_frames]).eval(), inputs=tensors,
                show_table=False, show_arch=False)['flops'] / 1e9

    chosen = np.asarray([choose_num_frames(m, thresholds, tuple(args.frames)) for m in motion])
    dynamic_pred = np.asarray([predictions[t][i] for i, t in enumerate(chosen)])
    dynamic_acc = float((dynamic_pred == labels).mean())
    dynamic_latency = float(np.mean([latency[t] for t in chosen]))
    dynamic_flops = float(np.mean([flops[t] for t in chosen]))
    tertiles = np.quantile(motion, [1 / 3, 2 / 3])
    quartiles = np.quantile(motion, [0.25, 0.5, 0.75])
    sampler = {t: stage.pipelines[t].sampler_cfg for t in choices}
    lines = heading(
        f'Dynamic frame count: a T={base} model at T\' = {", ".join(map(str, choices))}',
        f'Config `{args.config}`, checkpoint `{args.checkpoint}`; {len(videos)} videos of its '
        f'{args.split} set, {stage.pipelines[base].num_clips} test clips each. Latency: median '
        f'of {args.repeats} interleaved rounds, one sample per call through the test step.',
        machine_line(f'device {args.device}', threads=args.threads,
                     load_at_start=load_at_start)) + [
        '| T\' | sampler (keeps the span) | top-1 | GFLOPs | latency ms | x T=' + str(base) +
        ' |', '|---:|---|---:|---:|---:|---:|']
    for num_frames in choices:
        cfg = sampler[num_frames]
        spacing = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in cfg.items()
                   if k in ('num_frames', 'interval', 'streams', 'clip_len', 'frame_interval')}
        lines.append(f'| {num_frames} | {spacing} | {accuracy[num_frames]:.3f} | '
                     f'{flops[num_frames]:.3f} | {latency[num_frames]:.2f} | '
                     f'{times.ratio(num_frames, base):.2f}x |')
    share = ', '.join(f'T\'={t}: {int((chosen == t).sum())}' for t in tuple(args.frames))
    num_classes = int(np.concatenate(scores[base]).shape[1])
    lines += [
        f'| dynamic | by motion, thresholds {thresholds} ({share}) | {dynamic_acc:.3f} | '
        f'{dynamic_flops:.3f} | {dynamic_latency:.2f} | {dynamic_latency / latency[base]:.2f}x |',
        '', f'Chance level: 1/{num_classes} = {1 / num_classes:.3f} top-1.', '',
        f'Motion score (grey levels, mean over test clips of the mean absolute difference of '
        f'consecutive T={base} picks): tertiles {tertiles[0]:.2f} / {tertiles[1]:.2f}, '
        f'quartiles {quartiles[0]:.2f} / {quartiles[1]:.2f} / {quartiles[2]:.2f}, range '
        f'{motion.min():.2f}-{motion.max():.2f}.', '',
        'Reproduce: `python benchmarks/bench_dynamic_frames.py ' +
        f'{args.config} {args.checkpoint}' +
        (f' --thresholds {thresholds[0]} {thresholds[1]}' if args.thresholds else '') + '`']
    text = '\n'.join(lines) + '\n'
    print_and_write(text, args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
