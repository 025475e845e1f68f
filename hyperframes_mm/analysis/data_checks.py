"""The doctor's checks that read the data: every video's frame count and frame rate against the
sampler of the pipeline that reads it.

- ``span``: videos shorter than the sampling span ``(T - 1) * interval + 1`` frames: their
  picks loop back to the start (a jump cut inside the hyperframe) or repeat the last frame, and
  with ``out_of_bound='error'`` training stops;
- ``frame-rate``: frame rates that differ by more than :data:`FPS_TOLERANCE` across a dataset
  while the sampler counts frames (``time_based=False``): the same interval spans different
  times, so one class moves by different amounts per frame in different videos;
- ``unreadable-video``: a listed video that is missing or cannot be opened, or, for a pipeline
  that reads with decord (:func:`reads_with_decord`), whose first frame decord cannot decode or
  whose frames it returns out of place;
- ``label-range`` (:func:`check_frame_label_range`, with the head's class count): window labels
  of a ``FrameLabelVideoDataset`` outside the head's classes, by annotation ``file:line``;
- ``interrupted-build``: a dataset folder holding the mark of a synthetic build that a kill or
  a crash stopped midway (part of its videos written, no lists, no meta.json).
"""
import json
import os.path as osp
from dataclasses import dataclass
from statistics import median
from typing import Dict, List, Optional, Sequence, Tuple

from mmaction.registry import DATASETS
from mmengine.config import Config
from tqdm import tqdm

from ..datasets.annotations import AnnotationError, read_list_lines
from ..datasets.bad_video import DECORD_OPENERS, decodes_with_decord, decord_path
from ..datasets.frame_label_dataset import FrameLabelVideoDataset
from ..datasets.synthetic.generate import BUILDING, interrupted_build
from ..datasets.transforms.pipeline_info import transform_type
from .config_utils import SamplerSpec, sampler_spec, unique_pipelines
from .findings import Finding

#: largest max/min frame-rate ratio accepted with frame-based sampling
FPS_TOLERANCE = 1.2
_LISTED = 5
#: the steps whose frames decord decodes: its openers, and the frame cache's, whose entries its
#: builder decodes with ``open_video``
DECORD_READERS = frozenset(DECORD_OPENERS) | {'FrameCacheInit'}


@dataclass(frozen=True)
class VideoInfo:
    """What probing a video found: frame count and frame rate, or why it failed."""
    path: str
    frames: int = 0
    fps: float = 0.0
    error: Optional[str] = None


def annotation_videos(dataset: Dict) -> Tuple[List[str], Optional[str]]:
    """Video paths of a dataset config (``data_prefix['video']`` joined), or why there are none.

    Reads ``VideoDataset`` lists (``path label`` per line, the dataset's ``delimiter``) and
    ``FrameLabelVideoDataset`` JSON lines (``"video"`` key).
    """
    if not dataset.get('ann_file'):
        return [], f'{dataset.get("type")} has no ann_file'
    ann_file, root = dataset_paths(dataset)
    if not osp.isfile(ann_file):
        return [], f'annotation file {ann_file} not found'
    paths = []
    # the datasets' reader: a list that is not UTF-8 text is a reason naming file:line, and a
    # byte-order mark is not glued to the first path (which would then be "not found")
    try:
        for line in read_list_lines(str(ann_file), dataset.get('delimiter', ' ')):
            if line.blank:
                continue
            if str(ann_file).endswith('.jsonl'):
                try:
                    relative = json.loads(line.text)['video']
                except (ValueError, KeyError, TypeError) as error:
                    return [], (f'{ann_file}:{line.number}: not a JSON object with a "video" '
                                f'key ({type(error).__name__}: {error})')
            else:
                relative = line.fields[0]
            paths.append(osp.join(root, relative) if root else relative)
    except AnnotationError as error:
        return [], str(error)
    if decodes_with_decord(dataset.get('pipeline')):  # a name without extension: its .mp4
        paths = [decord_path(path) for path in paths]
    # A frame-label file lists a video once; a video list may repeat one in several lines.
    return list(dict.fromkeys(paths)), None


def reads_frame_labels(dataset: Dict) -> bool:
    """Whether the dataset config is a ``FrameLabelVideoDataset`` (JSON-lines annotation)."""
    kind = dataset.get('type')
    kind = kind if isinstance(kind, type) else DATASETS.get(kind)
    return isinstance(kind, type) and issubclass(kind, FrameLabelVideoDataset)


def check_frame_label_range(where: str, dataset: Dict, num_classes: int) -> List[Finding]:
    """The window labels of a ``FrameLabelVideoDataset`` config outside ``0..num_classes - 1``,
    by annotation ``file:line``, and the line its reader refuses. The dataset is built without
    its pipeline: its windows are the samples a run reads, labelled by its ``label_mode``, and
    the runner's check (:func:`~hyperframes_mm.engine.class_count.labels_outside`) reads them."""
    from ..engine.class_count import labels_outside
    if not osp.isfile(dataset_paths(dataset)[0]):
        return []  # a missing list is the data check's finding
    try:
        built = DATASETS.build(dict(dataset, pipeline=[]))
    except ValueError as error:
        return [Finding('error', 'annotation', f'{where}: {error}',
                        'correct that line: a run that reads the annotation stops there')]
    outside = labels_outside(built, num_classes)
    if not outside:
        return []
    # one line gives many windows: name each line once, with its labels
    lines: Dict[str, List[int]] = {}
    for _, line, _, label in outside:
        lines.setdefault(line, [])
        if label not in lines[line]:
            lines[line].append(label)
    shown = ', '.join(f'{line}: {", ".join(map(str, labels))}'
                      for line, labels in list(lines.items())[:_LISTED])
    more = f', and {len(lines) - _LISTED} more lines' if len(lines) > _LISTED else ''
    largest = max(label for _, _, _, label in outside)
    return [Finding(
        'error', 'label-range',
        f'{where}: {len(outside)} window label(s) of {built.ann_file} are outside '
        f'0..{num_classes - 1}, the classes of the model\'s head (num_classes={num_classes}); a '
        f'run that reads the annotation stops before its first step: {shown}{more}',
        f'correct those labels, or, if the annotation is right, give the model\'s head '
        f'{largest + 1} classes')]


def dataset_paths(dataset: Dict) -> Tuple[str, str]:
    """The list file and the video root (``''``: none) of a dataset config, ``data_root``
    joined to them as mmengine's BaseDataset joins it to a relative list and prefix."""
    data_root = dataset.get('data_root') or ''
    ann_file = str(dataset.get('ann_file') or '')
    ann_file = osp.join(data_root, ann_file) if data_root and ann_file else ann_file
    root = (dataset.get('data_prefix') or {}).get('video') or ''
    root = osp.join(data_root, root) if data_root and root else (root or data_root)
    return ann_file, root


def interrupted_builds(dataset: Dict) -> Dict[str, str]:
    """Folder -> the command that finishes the synthetic build interrupted there, for the
    folders of a dataset config (its list's, its videos') that hold a build mark."""
    ann_file, root = dataset_paths(dataset)
    folders = {osp.normpath(folder) for folder in (osp.dirname(ann_file), root) if folder}
    commands = {folder: interrupted_build(folder) for folder in sorted(folders)}
    return {folder: command for folder, command in commands.items() if command is not None}


def reads_with_decord(pipeline: Sequence[Dict]) -> bool:
    """Whether a pipeline's frames are decord's (a step of :data:`DECORD_READERS`): the
    failures of decord alone (a width it cannot copy out, frames it returns out of place) are
    then the pipeline's; PyAV's and OpenCV's readers decode such videos right."""
    return any(transform_type(step) in DECORD_READERS for step in pipeline)


def probe_video(path: str, decord_reads: bool = True) -> VideoInfo:
    """Frame count and average frame rate as decord (what ``DecordInit`` uses) reports them.

    With ``decord_reads`` (:func:`reads_with_decord`), a video whose frames decord returns out
    of place is refused as ``open_video`` refuses it, and its first frame is decoded: opening
    reads only the container's headers, while decord 0.6 cannot copy out any frame of
    some narrow widths and a damaged start fails every read; one frame finds both at a bounded
    cost whatever the video's length. Damage further in is found by a full decode, which
    ``tools/build_frame_cache.py`` makes (it lists such a video as ``FAILED``)."""
    from ..datasets.video_io import _bad_video_errors, _first_line, open_video
    if not osp.isfile(path):
        return VideoInfo(path, error='file not found')
    try:
        reader = open_video(path, refuse_misread=decord_reads)
        if decord_reads and len(reader):  # a video of no frame is the span check's
            reader.get_batch([0])
        return VideoInfo(path, len(reader), float(reader.get_avg_fps()))
    except _bad_video_errors() as error:
        return VideoInfo(path, error=_first_line(error.__cause__ or error) + _rotated(path))


def _rotated(path: str) -> str:
    """The display size of a video stored on its side, as a note: decord turns the frames
    upright before copying them out, so a width its error blames is the display width, which
    the file's stored size does not show. ``''`` for an upright video, or one that PyAV cannot
    read either."""
    from ..datasets.video_io import _bad_video_errors
    try:
        import av
        with av.open(path) as container:
            frame = next(container.decode(video=0))
    except (ImportError, StopIteration) + _bad_video_errors():
        return ''
    rotation = getattr(frame, 'rotation', 0)  # PyAV 13 and later read the display matrix
    if rotation % 180 == 0:
        return ''
    return (f' (stored {frame.width}x{frame.height} and rotated by {abs(rotation)} degrees: '
            f'the display width after rotation is {frame.height} pixels)')


def probe_videos(paths: Sequence[str], progress: bool = True,
                 cache: Optional[Dict[Tuple[str, bool], VideoInfo]] = None,
                 decord_reads: bool = True) -> List[VideoInfo]:
    """:func:`probe_video` for every path, with a progress bar; ``cache`` (keyed by path and
    ``decord_reads``) is reused and filled."""
    cache = {} if cache is None else cache
    for path in tqdm(paths, desc='doctor: probing videos', unit='video', disable=not progress):
        if (path, decord_reads) not in cache:
            cache[path, decord_reads] = probe_video(path, decord_reads)
    return [cache[path, decord_reads] for path in paths]


def _describe(spec: SamplerSpec) -> str:
    unit = ' s' if spec.time_based else ''
    return ', '.join(f'{stream.name + ": " if stream.name else ""}T={stream.num_frames} ' + (
        'uniform' if stream.interval is None else f'interval={stream.interval:g}{unit}')
        for stream in spec.streams)


def check_span(where: str, spec: SamplerSpec, videos: Sequence[VideoInfo]) -> List[Finding]:
    """Videos shorter than the sampler's span."""
    if spec.mode == 'uniform':
        return []
    short = [(video, spec.span(video.fps if spec.time_based else None)) for video in videos]
    short = sorted(((v, span) for v, span in short if span > v.frames), key=lambda p: p[0].frames)
    if not short:
        return []
    shortest, span = short[0]
    outcome = {'loop': 'loop back to the start (a jump cut inside the hyperframe)',
               'repeat_last': 'repeat the last frame (a frozen tail)',
               'error': 'raise an error: training stops'}[spec.out_of_bound]
    return [Finding(
        'error' if spec.out_of_bound == 'error' else 'warning', 'span',
        f'{where}.pipeline[{spec.index}]: {len(short)} of {len(videos)} videos are shorter than '
        f'the sampling span ({_describe(spec)}); the shortest, {shortest.path}, has '
        f'{shortest.frames} frames for a {span}-frame span; picks past its end {outcome}',
        'lower the interval or num_frames (span = (T-1) x interval + 1 frames), or leave out '
        f'videos shorter than {span} frames')]


def check_uniform_picks(where: str, spec: SamplerSpec,
                        videos: Sequence[VideoInfo]) -> List[Finding]:
    """Videos with fewer frames than a uniform stream's picks: the picks share frames, so the
    hyperframe holds still steps (refused by the sampler under ``out_of_bound='error'``)."""
    picks = max((stream.num_frames for stream in spec.streams if stream.interval is None),
                default=0)
    short = sorted((video for video in videos if video.frames < picks),
                   key=lambda video: video.frames)
    if not short:
        return []
    outcome = ('the sampler raises an error: training stops' if spec.out_of_bound == 'error'
               else 'picks share frames, so its hyperframes hold still steps')
    return [Finding(
        'error' if spec.out_of_bound == 'error' else 'warning', 'span',
        f'{where}.pipeline[{spec.index}]: {len(short)} of {len(videos)} videos have fewer '
        f'frames than the {picks} uniform picks ({_describe(spec)}); the shortest, '
        f'{short[0].path}, has {short[0].frames}: {outcome}',
        f'leave out videos shorter than {picks} frames, or lower num_frames')]


def counts_frames(spec: Optional[SamplerSpec]) -> bool:
    """Whether a sampler picks frames a number of frames apart, whatever the video's rate."""
    return spec is not None and not spec.time_based and spec.mode != 'uniform'


def common_rate(checked: Sequence[Tuple[Optional[SamplerSpec], Sequence[VideoInfo]]]
                ) -> Optional[float]:
    """The one frame rate that :func:`check_frame_rates` suggests sampling every split at: the
    median over the videos (each once) of all the pipelines whose sampler counts frames. A
    rate per split would sample training and testing at different rates. None: no such
    video."""
    rates = {video.path: video.fps for spec, videos in checked if counts_frames(spec)
             for video in videos if video.fps > 0}
    return median(rates.values()) if rates else None


def check_frame_rates(where: str, spec: SamplerSpec, videos: Sequence[VideoInfo],
                      typical: float) -> List[Finding]:
    """Frame rates that vary by more than :data:`FPS_TOLERANCE` under frame-based sampling;
    the fix samples by time at ``typical`` fps (:func:`common_rate`, the same in every
    split)."""
    rates = [video.fps for video in videos if video.fps > 0]
    if not counts_frames(spec) or not rates:
        return []
    low, high = min(rates), max(rates)
    if high <= FPS_TOLERANCE * low:
        return []
    interval = next(stream.interval for stream in spec.streams if stream.interval is not None)
    if spec.type == 'HyperframeSampleFrames':
        fix = (f'sample by time: HyperframeSampleFrames(time_based=True, interval='
               f'{interval / typical:.4g}) keeps {interval:g} frames at the median '
               f'{typical:g} fps for every video (per stream likewise)')
    else:
        fix = (f'sample by time: SampleFrames(target_fps={typical:g}) or '
               'HyperframeSampleFrames(time_based=True, interval=<seconds>)')
    fix += (f'; one rate for every split: {typical:g} fps is the median over the videos of '
            'all the splits whose sampler counts frames, so training and testing sample alike')
    return [Finding(
        'warning', 'frame-rate',
        f'{where}.pipeline[{spec.index}]: frame rates range from {low:g} to {high:g} fps '
        f'({len(set(rates))} distinct) while {spec.type} counts frames: an interval of '
        f'{interval:g} frames spans {interval / high * 1000:.0f}-{interval / low * 1000:.0f} ms, '
        'so the same motion looks different from video to video', fix)]


def check_data(cfg: Config, progress: bool = True) -> List[Finding]:
    """Probe the videos of every dataset of the config and check them against its sampler."""
    findings: List[Finding] = []
    cache: Dict[Tuple[str, bool], VideoInfo] = {}
    interrupted: Dict[str, Tuple[List[str], str]] = {}  # folder -> wheres, command
    checked: List[Tuple[str, SamplerSpec, List[VideoInfo]]] = []
    for where, dataset, pipeline in unique_pipelines(cfg):
        builds = interrupted_builds(dataset)
        for folder, command in builds.items():
            interrupted.setdefault(folder, ([], command))[0].append(where)
        if builds:  # part of its videos written, maybe over another set's: nothing to check
            continue
        spec = sampler_spec(pipeline)
        paths, reason = annotation_videos(dataset)
        if reason is not None:
            # a dataset without a list file is another kind (frames, a generator); a text list
            # that is missing, unreadable or empty stops tools/train.py and tools/test.py at
            # once (a binary annotation, a pose .pkl, is not read here)
            listed = str(dataset.get('ann_file') or '').endswith(('.txt', '.jsonl', '.csv'))
            findings.append(Finding(
                'error' if listed else 'info', 'annotation' if listed else 'span',
                f'{where}: data not checked: {reason}',
                'fix the list or the data root' if listed else ''))
            continue
        if not paths:
            findings.append(Finding('error', 'annotation',
                                    f'{where}: {dataset.get("ann_file")} lists no video',
                                    'fill the list, or point ann_file at the right one'))
            continue
        decord_reads = reads_with_decord(pipeline)
        videos = probe_videos(paths, progress, cache, decord_reads)
        bad = [video for video in videos if video.error is not None]
        if bad:
            listed = '; '.join(f'{video.path}: {video.error}' for video in bad[:_LISTED])
            more = f'; and {len(bad) - _LISTED} more' if len(bad) > _LISTED else ''
            how = 'opened and their first frame decoded' if decord_reads else 'opened'
            findings.append(Finding(
                'error', 'unreadable-video',
                f'{where}: {len(bad)} of {len(videos)} videos cannot be read ({how}): '
                f'{listed}{more}',
                'fix or remove them, or wrap the dataset in GuardedDataset(on_bad_video=\'skip\')'))
        good = [video for video in videos if video.error is None]
        if spec is not None and good:
            checked.append((where, spec, good))
    findings += [Finding(
        'error', 'interrupted-build',
        f'{", ".join(wheres)}: {folder} holds {BUILDING}: an interrupted synthetic build (a kill '
        'or a crash stopped it midway: part of its videos written, no lists, no meta.json)',
        f'rerun {command}') for folder, (wheres, command) in interrupted.items()]
    typical = common_rate([(spec, good) for _, spec, good in checked])
    for where, spec, good in checked:
        findings += check_span(where, spec, good) + check_uniform_picks(where, spec, good)
        findings += check_frame_rates(where, spec, good, typical)
    return findings
