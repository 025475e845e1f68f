"""Pictures of what a hyperframe model sees, and of a stream's scores over time.

* :func:`augmented_frames` runs a config's train (or test) pipeline on a video up to
  ``HyperframeStack`` and splits the hyperframes back into frames: per stream,
  ``[hyperframes, T, H, W, 3]`` uint8, exactly the pixels the model is given (before
  normalisation); streams stacked into one hyperframe (``fuse_streams=True``) stay one,
  their frames in stacking order, each labelled by its stream.
* :func:`frame_grid` lays them out as one image: a row per stream and hyperframe, a column per
  frame, each frame enlarged by a whole factor (nearest neighbour, so pixels stay exact). If the
  frames of a row are misaligned (a crop or flip drawn per frame), it shows at a glance.
* :func:`frame_inds_per_tile` repeats the sampler's frame indices over the crops, so that every
  shown frame has the video frame it holds.
* :func:`plot_scores` draws per-class scores over time from a stream-inference JSON-lines file,
  one panel per stream, alerts shaded.
"""
import json
import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope

from ..apis.inference import ConfigLike, load_config
from ..datasets.transforms.pipeline_info import fuses_streams, stream_key
from ..datasets.video_io import BadVideoError, _bad_video_errors, _first_line

PIPELINES = ('train', 'test', 'val')


def augmented_frames(config: ConfigLike, video: Union[str, Path], pipeline: str = 'train',
                     seed: Optional[int] = 0) -> Dict:
    """The frames a config's pipeline makes of one video, per stream.

    Args:
        config (str | Path | Config): the config.
        video (str | Path): the video file.
        pipeline (str): ``'train'``, ``'val'`` or ``'test'`` (the config's
            ``<name>_pipeline``). Defaults to ``'train'``.
        seed (int, optional): seeds numpy's global generator (what the transforms draw from)
            for this call, restoring its state afterwards; None draws freely. Defaults to 0.

    Returns:
        dict: ``frames`` (stream name -> ``[N, T, H, W, 3]`` uint8; ``'imgs'`` for a
        single-stream config and for streams stacked into one hyperframe, whose T is then the
        streams' total, in stacking order), ``frame_inds`` (the video frame of every frame, row
        by row of :func:`frame_grid`: streams x hyperframes x T, crops included),
        ``column_streams`` (the stream of each column of a stacked hyperframe; None unless
        streams are stacked), ``augment_params`` (or None).
    """
    if pipeline not in PIPELINES:
        raise ValueError(f'pipeline must be one of {PIPELINES}, got {pipeline!r}')
    if Path(video).is_dir():
        raise IsADirectoryError(f'{video} is a directory; give one video file')
    if not Path(video).is_file():
        raise FileNotFoundError(f'video file not found: {video}')
    cfg = load_config(config)
    key = f'{pipeline}_pipeline'
    if key not in cfg:
        raise KeyError(f'{getattr(cfg, "filename", "the config")} has no {key}')
    steps = list(cfg[key])
    kinds = [step['type'] for step in steps]
    if 'HyperframeStack' not in kinds:
        raise ValueError(f'{key} has no HyperframeStack step ({kinds}); nothing to show')
    init_default_scope(cfg.get('default_scope', 'mmaction'))
    transforms = Compose(steps[:kinds.index('HyperframeStack') + 1])
    state = np.random.get_state()
    if seed is not None:
        np.random.seed(seed)
    try:
        results = transforms(dict(filename=str(video), start_index=0, modality='RGB', label=-1))
    except _bad_video_errors() as error:
        # decord's and the loaders' messages name no file (an image, an empty file)
        raise BadVideoError(f'{video}: the {pipeline} pipeline cannot read it: '
                            f'{_first_line(error)}', str(video)) from error
    finally:
        if seed is not None:
            np.random.set_state(state)
    streams = results.get('hyperframe_streams')
    names = [stream['name'] for stream in streams] if streams else [None]
    frame_inds, column_streams = np.asarray(results['frame_inds']), None
    if streams and fuses_streams(steps):
        names, (frame_inds, column_streams) = [None], _fused_layout(streams, frame_inds)
    frames = {}
    for name in names:
        stacked = np.asarray(results[stream_key(name)])
        count, channels, height, width = stacked.shape
        split = stacked.reshape(count, channels // 3, 3, height, width).transpose(0, 1, 3, 4, 2)
        frames[name or 'imgs'] = np.clip(np.rint(split), 0, 255).astype(np.uint8)
    return dict(frames=frames, frame_inds=frame_inds_per_tile(frames, frame_inds),
                column_streams=column_streams, augment_params=results.get('augment_params'))


def frame_inds_per_tile(frames: Dict[str, np.ndarray], frame_inds: Sequence[int]) -> np.ndarray:
    """The video frame of every frame of ``frames`` (stream -> ``[N, T, H, W, 3]``), in
    :func:`frame_grid`'s order, from the sampler's indices of one crop (each stream's clips in
    turn, as ``frame_inds`` and a stacked hyperframe order them).

    ``HyperframeStack`` puts crops first: a stream's hyperframes are every clip of the first
    crop, then of the next, so each stream's indices repeat once per crop. Walking the
    sampler's indices straight on captioned the later crops' rows with the next stream's.
    """
    inds = np.asarray(frame_inds)
    sizes = [stream.shape[0] * stream.shape[1] for stream in frames.values()]
    crops = sum(sizes) // len(inds) if len(inds) else 0
    if not crops or crops * len(inds) != sum(sizes) or any(size % crops for size in sizes):
        raise ValueError(f'{len(inds)} frame indices do not fit the {sum(sizes)} frames of '
                         f'streams {list(frames)} as a whole number of crops')
    chunks = np.split(inds, np.cumsum([size // crops for size in sizes])[:-1])
    return np.concatenate([np.tile(chunk, crops) for chunk in chunks])


def _fused_layout(streams: Sequence[Dict], frame_inds: np.ndarray) -> Tuple[np.ndarray, List]:
    """The sampler's frame indices (stream-major, then clip) in the order of the frames of
    stacked hyperframes (clip-major, then stream: ``HyperframeStack``'s ``fuse_streams``), and
    the stream of each frame of one hyperframe."""
    clips, start = [], 0
    for stream in streams:
        size = stream['clip_len'] * stream['num_clips']
        clips.append(frame_inds[start:start + size].reshape(stream['num_clips'], -1))
        start += size
    return (np.concatenate(clips, axis=1).reshape(-1),
            [stream['name'] for stream in streams for _ in range(stream['clip_len'])])


def _text(image: np.ndarray, text: str, origin: Tuple[int, int]) -> None:
    cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)


def frame_grid(frames: Dict[str, np.ndarray], frame_inds: Optional[Sequence[int]] = None,
               scale: Optional[int] = None, title: str = '', gap: int = 4,
               label_width: int = 96, header: int = 34,
               column_streams: Optional[Sequence[str]] = None) -> Tuple[np.ndarray, Dict]:
    """One RGB image: a row per stream and hyperframe, a column per frame.

    Args:
        frames (dict[str, np.ndarray]): stream -> ``[N, T, H, W, 3]`` uint8.
        frame_inds (Sequence[int], optional): the video frame of every shown frame, in the
            order streams x hyperframes x T (:func:`frame_inds_per_tile`); written under each
            tile. Defaults to None.
        scale (int, optional): whole enlargement factor. Defaults to the smallest that makes
            a frame at least 96 px on its short side.
        title (str): first header line. Defaults to ''.
        gap (int): pixels between tiles. Defaults to 4.
        label_width (int): pixels left of the tiles for row names. Defaults to 96.
        header (int): pixels above the tiles for the title. Defaults to 34.
        column_streams (Sequence[str], optional): the stream of each column (streams stacked
            into one hyperframe), written above it. Defaults to None.

    Returns:
        tuple: the ``uint8`` image ``[height, width, 3]`` and ``layout``: ``scale``,
        ``tiles`` (row, column) -> (top, left) of every tile, ``captions`` (row, column) ->
        the text under it (empty without ``frame_inds``).
    """
    rows = [(name, index, stream[index]) for name, stream in frames.items()
            for index in range(len(stream))]
    if not rows:
        raise ValueError('frame_grid: no frames')
    shown = sum(len(row[2]) for row in rows)
    if frame_inds is not None and len(frame_inds) != shown:
        # captions walked the list in order and stopped where it ran out: a list of another
        # layout (one crop's indices) put another stream's or clip's frames under a tile
        raise ValueError(f'frame_grid: {len(frame_inds)} frame indices for {shown} frames')
    if scale is not None and not (isinstance(scale, int) and scale >= 1):
        # 0 fell back to the default silently, a negative scale failed inside numpy
        raise ValueError(f'frame_grid: scale must be an integer >= 1, got {scale!r}')
    height, width = rows[0][2].shape[1:3]
    scale = scale or max(1, math.ceil(96 / min(height, width)))
    tile_h, tile_w = height * scale, width * scale
    columns = max(len(row[2]) for row in rows)
    caption = 14 if frame_inds is not None else 0
    image = np.full((header + len(rows) * (tile_h + gap + caption),
                     label_width + columns * (tile_w + gap), 3), 255, np.uint8)
    _text(image, title, (4, 14))
    for column, stream in enumerate(column_streams or []):
        _text(image, stream, (label_width + column * (tile_w + gap), header - 6))
    tiles, captions = {}, {}
    inds = iter(frame_inds if frame_inds is not None else [])
    for row, (name, index, clip) in enumerate(rows):
        top = header + row * (tile_h + gap + caption)
        _text(image, f'{name} #{index}', (4, top + tile_h // 2))
        for column, frame in enumerate(clip):
            left = label_width + column * (tile_w + gap)
            image[top:top + tile_h, left:left + tile_w] = np.repeat(
                np.repeat(frame, scale, axis=0), scale, axis=1)
            tiles[row, column] = (top, left)
            if frame_inds is not None:
                captions[row, column] = f't={column} f={next(inds)}'
                _text(image, captions[row, column], (left, top + tile_h + 11))
    return image, dict(scale=scale, tiles=tiles, captions=captions)


def describe_augment(params) -> str:
    """A one-line summary of ``ConsistentClipAugment``'s draw (crop box, flip, colour); a
    per-frame draw (``independent=True``) is summarised by its first frame's."""
    if not params:
        return ''
    if isinstance(params, (list, tuple)):
        return f'per-frame draws ({len(params)}), frame 0: ' + describe_augment(params[0])
    parts = [f'crop {list(params["crop_bbox"])}' if 'crop_bbox' in params else '',
             'flipped' if params.get('flip') else 'not flipped']
    colour = [f'{op} {params[op]:.2f}' for op in params.get('color_order', [])]
    if colour:
        parts.append('colour ' + ', '.join(colour))
    return '; '.join(part for part in parts if part)


def write_png(path: Union[str, Path], image: np.ndarray) -> Path:
    """Write an RGB ``uint8`` image as PNG (the folder is created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
        raise OSError(f'cannot write {path}')
    return path


def read_score_series(jsonl: Union[str, Path],
                      streams: Optional[Sequence[str]] = None) -> Dict[str, Dict]:
    """Per stream: ``t`` (window end times), ``scores`` ``[windows, classes]`` (the
    confirming scores where a cascade confirmed, else the window's scores), ``alerts``
    (``[(start, end)]`` times, end None while an alert is still on)."""
    path = Path(jsonl)
    if not path.is_file():
        raise FileNotFoundError(f'stream-inference output not found: {path}')
    series: Dict[str, Dict] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f'{path}:{number}: not JSON: {error}') from error
        stream = record.get('stream')
        if stream is None or (streams and stream not in streams):
            continue
        entry = series.setdefault(stream, dict(t=[], scores=[], alerts=[]))
        if 'scores' in record:
            entry['t'].append(record['t_end'])
            entry['scores'].append(record.get('confirm_scores') or record['scores'])
        elif record.get('event') == 'alert_start':
            entry['alerts'].append([record['t'], None])
        elif record.get('event') == 'alert_end' and entry['alerts']:
            entry['alerts'][-1][1] = record['t']
    series = {name: entry for name, entry in series.items() if entry['t']}
    if not series:
        wanted = f' for streams {list(streams)}' if streams else ''
        raise ValueError(f'{path}: no window records{wanted}')
    for entry in series.values():
        entry['t'] = np.asarray(entry['t'])
        entry['scores'] = np.asarray(entry['scores'])
        entry['alerts'] = [tuple(alert) for alert in entry['alerts']]
    return series


def plot_scores(jsonl: Union[str, Path], out: Union[str, Path],
                classes: Optional[Sequence[int]] = None,
                class_names: Optional[Sequence[str]] = None,
                streams: Optional[Sequence[str]] = None) -> Dict[str, Dict]:
    """Plot per-class scores over time, one panel per stream, alerts shaded; returns the
    plotted series (:func:`read_score_series`)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    series = read_score_series(jsonl, streams)
    num_classes = next(iter(series.values()))['scores'].shape[1]
    shown: List[int] = list(range(num_classes)) if classes is None else list(classes)
    if not shown or max(shown) >= num_classes or min(shown) < 0:
        raise ValueError(f'classes {shown} are not among the {num_classes} classes in {jsonl}')
    # more names than the scores' classes is a file of another data set or label order as
    # surely as fewer: every curve would carry a name, some of them wrong
    if class_names is not None and len(class_names) != num_classes:
        raise ValueError(f'{len(class_names)} class names for the {num_classes} classes of '
                         f'the scores in {jsonl}')
    figure, axes = plt.subplots(len(series), 1, figsize=(9, 2.4 * len(series)), squeeze=False,
                                sharex=True)
    for axis, (name, entry) in zip(axes[:, 0], series.items()):
        for label in shown:
            axis.plot(entry['t'], entry['scores'][:, label],
                      label=class_names[label] if class_names else f'class {label}')
        for start, end in entry['alerts']:
            axis.axvspan(start, end if end is not None else entry['t'][-1], color='red',
                         alpha=0.15)
        axis.set_title(name, fontsize=9)
        axis.set_ylim(0, 1)
        axis.set_ylabel('score')
    axes[-1, 0].set_xlabel('time (s, window end)')
    axes[0, 0].legend(fontsize=7, ncol=min(len(shown), 5), loc='upper right')
    figure.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(str(out), dpi=100)
    plt.close(figure)
    return series
