"""Bad input: errors that name the file (and line), and an opt-in skip of bad videos.

Upstream, a broken video surfaces as decord's ``RuntimeError: Error reading 30268 bytes...`` or a
``DECORDError`` from deep inside a DataLoader worker, naming neither the file nor the sample,
and a malformed annotation line as ``ValueError: not enough values to unpack``. This module
provides:

* (from :mod:`.video_io`) :func:`open_video`, the one place the plugin opens a video to read
  its frames, and :class:`BadVideoError`, which names the file.
* :func:`validate_video_annotations`: checks a ``VideoDataset`` list line by line and raises
  :class:`AnnotationError` (from :mod:`.annotations`) naming ``file:line`` (bad label, missing
  or extra field, blank line, bytes that are not UTF-8 text); it returns the lines whose video
  does not exist. :func:`check_video_list` is the parse behind it.
* :class:`SafeDecordInit` (TRANSFORMS): ``DecordInit`` that names the file in every error and
  opens local files by path. mmaction2's ``DecordInit`` hands decord an in-memory copy of the
  file, and decord 0.6.0 then crashes the process (SIGSEGV, uncatchable) on a truncated AVI;
  opened by path, the same file yields its intact frames.
* :class:`CheckedVideoDataset` (DATASETS): mmaction2's ``VideoDataset`` that parses its list
  with :func:`check_video_list`, so a malformed line stops the run when the dataset is built,
  naming ``file:line``, and whose samples that fail to load raise :class:`BadVideoError`
  naming the file and index, in configs that cannot wrap their dataset (the frame-cache
  families, whose leaves and benchmarks set ``dataset.ann_file``).
* :class:`GuardedDataset` (DATASETS): wraps any dataset; a sample whose loading fails raises
  :class:`BadVideoError` naming the file and sample index (``on_bad_video='raise'``), or is
  replaced by another sample, counted and logged (``on_bad_video='skip'``), so an epoch
  completes over a dataset with a few broken files.
"""
import inspect
import io
import logging
import os.path as osp
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from mmaction.datasets import VideoDataset
from mmaction.registry import DATASETS, TRANSFORMS
from mmcv.transforms import BaseTransform
from mmengine.dataset import BaseDataset
from mmengine.logging import print_log

from ..utils.checks import int_at_least
from .annotations import AnnotationError, parse_label, read_list_lines
from .transforms.pipeline_info import transform_type
from .video_io import BadVideoError, _bad_video_errors, _first_line, open_video

ON_BAD_VIDEO = ('raise', 'skip')
#: Lines of missing videos listed in one error or warning before "and N more".
_LIST_LIMIT = 10


class ListEntry(NamedTuple):
    """A checked line of a ``VideoDataset`` list: its 1-based ``number``, the video ``path`` as
    listed and its ``labels`` (``[]`` for an unlabelled line)."""
    number: int
    path: str
    labels: List[int]


def check_video_list(ann_file: str,
                     delimiter: str = ' ',
                     multi_class: bool = False,
                     num_classes: Optional[int] = None,
                     allow_unlabelled: bool = False) -> List[ListEntry]:
    """Every line of a ``VideoDataset`` list, checked: the one parse that
    :func:`validate_video_annotations` reports on and :class:`CheckedVideoDataset` loads.

    Arguments as :func:`validate_video_annotations`'s.

    Raises:
        AnnotationError: ``file:line: what is wrong`` for the first malformed line (a label
            that is not ASCII digits included), the first bytes that are not UTF-8 text, an
            unlabelled line in a list whose other lines have labels, a video listed again with
            other labels; a missing or empty annotation file.
    """
    if osp.isdir(ann_file):
        raise AnnotationError(f'{ann_file}: a directory, not an annotation file (name the list '
                              'file in it)', ann_file)
    if not osp.isfile(ann_file):
        raise AnnotationError(f'{ann_file}: annotation file not found', ann_file)
    if not isinstance(delimiter, str):
        # mmengine's --cfg-options reads ``delimiter=,`` as a list, and no quoting passes a
        # comma through it
        raise AnnotationError(
            f'{ann_file}: the dataset\'s delimiter is {delimiter!r}, not a string (the '
            'delimiter option; a comma set with --cfg-options arrives as a list: set it in '
            'the config file)', ann_file)
    entries = []
    #: path -> (line, labels) of its first line: a video listed again with other labels
    first_of: Dict[str, Tuple[int, List[int]]] = {}
    for number, line, fields in read_list_lines(ann_file, delimiter, blank_lines=False):
        where = f'{ann_file}:{number}'

        def fail(message: str) -> AnnotationError:
            return AnnotationError(f'{where}: {message}: {line!r}', ann_file, number)

        if len(fields) == 1 and delimiter != '\t' and '\t' in fields[0]:
            # read as one path with a tab in it: a labelled line would count as unlabelled
            # --cfg-options passes '\t' through as a backslash and a t
            escaped = (': a backslash and a t, as --cfg-options passes \'\\t\'; set the tab in '
                       'the config file' if delimiter == '\\t' else '')
            raise fail(f'the fields are separated by a tab, and the list\'s delimiter is '
                       f'{delimiter!r} (the dataset\'s delimiter option{escaped})')
        if '' in fields:
            # fields are split at every delimiter, as mmaction2 splits them: two in a row read
            # as an extra, empty field, which the field count blamed on the path or the labels
            empty = fields.index('')
            how = ('is repeated' if 0 < empty < len(fields) - 1 else
                   'starts the line' if empty == 0 else 'ends the line')
            raise fail(f'field {empty + 1} is empty (the delimiter {delimiter!r} {how}): put '
                       f'a single {delimiter!r} between the fields and none at the ends')
        if len(fields) == 1 and not allow_unlabelled:
            raise fail('missing label: expected "path label"')
        if len(fields) > 2 and not multi_class:
            raise fail(f'expected "path label", got {len(fields)} fields (a path with spaces '
                       'needs another delimiter; several labels need multi_class=True)')
        labels = []
        for label in fields[1:]:
            value = parse_label(label)
            if value is None:
                raise fail(f'label {label!r} is not an integer (ASCII digits)')
            if value < 0 or (num_classes is not None and value >= num_classes):
                limit = f'0..{num_classes - 1}' if num_classes is not None else '>= 0'
                raise fail(f'label {value} is out of range ({limit})')
            labels.append(value)
        # An inference list has no labels at all; a list where some lines have them is a
        # labelled list that lost some, and a metric would score those samples as label -1
        if entries and bool(labels) != bool(entries[0].labels):
            (unlabelled, path), labelled = (((number, fields[0]), entries[0].number)
                                            if not labels else
                                            ((entries[0].number, entries[0].path), number))
            raise AnnotationError(
                f'{ann_file}:{unlabelled}: missing label: line {labelled} of this list has one, '
                f'so every line needs one (a list without labels is an inference list): '
                f'{path!r}', ann_file, unlabelled)
        # ``val/a.mp4`` and ``./val/a.mp4`` are one video
        seen = first_of.setdefault(osp.normpath(fields[0]), (number, labels))
        if sorted(seen[1]) != sorted(labels):
            raise fail(f'{fields[0]} is listed with label(s) {seen[1]} on line {seen[0]} and '
                       f'{labels} here: one video, one set of labels')
        entries.append(ListEntry(number, fields[0], labels))
    if not entries:
        raise AnnotationError(f'{ann_file}: the annotation file is empty', ann_file)
    return entries


def validate_video_annotations(ann_file: str,
                               video_prefix: Optional[str] = '',
                               delimiter: str = ' ',
                               multi_class: bool = False,
                               num_classes: Optional[int] = None,
                               allow_unlabelled: bool = False,
                               check_paths: bool = True,
                               decord_names: bool = False) -> List[Tuple[int, str]]:
    """Check a ``VideoDataset`` annotation list (``path label`` per line).

    Args:
        ann_file (str): the list.
        video_prefix (str, optional): prepended to every path (``data_prefix['video']``).
            Defaults to ''.
        delimiter (str): field separator, as the dataset's. Defaults to ``' '``.
        multi_class (bool): lines carry one or more labels. Defaults to False.
        num_classes (int, optional): labels must be below it. Defaults to None (unchecked).
        allow_unlabelled (bool): accept a list whose lines have only a path (mmaction2 gives
            them label -1; meant for inference lists); a list where only some lines have a
            label is refused all the same. Defaults to False.
        check_paths (bool): look up every video on disk. Defaults to True.
        decord_names (bool): look a name without an extension up as its ``.mp4`` file, as a
            pipeline that :func:`decodes_with_decord` reads it. Defaults to False.

    Returns:
        list[tuple[int, str]]: ``(line number, path)`` of videos that do not exist.

    Raises:
        AnnotationError: ``file:line: what is wrong`` for the first malformed line or the
            first bytes that are not UTF-8 text; a missing or empty annotation file.
    """
    entries = check_video_list(ann_file, delimiter, multi_class, num_classes, allow_unlabelled)
    if not check_paths:
        return []
    paths = [(entry.number, osp.join(video_prefix, entry.path) if video_prefix else entry.path)
             for entry in entries]
    return [(number, path) for number, path in paths
            if not osp.isfile(decord_path(path) if decord_names else path)]


def decord_path(path: str) -> str:
    """The file mmaction2's ``DecordInit`` (and :class:`SafeDecordInit`) reads for a listed
    ``path``: a name without an extension is its ``.mp4`` file. The checks that a listed video
    exists look it up the same way for such a pipeline (:func:`decodes_with_decord`), or they
    refuse a list it reads."""
    return path + '.mp4' if osp.splitext(path)[0] == path else path


#: the video openers that read a listed name without an extension as its ``.mp4`` file
DECORD_OPENERS = ('DecordInit', 'SafeDecordInit')


def decodes_with_decord(pipeline) -> bool:
    """Whether a pipeline (config dicts or built transforms) opens its videos with
    :data:`DECORD_OPENERS`; PyAV's and OpenCV's openers read a name as listed."""
    return any((transform_type(step) if isinstance(step, dict) else type(step).__name__)
               in DECORD_OPENERS for step in pipeline or ())


def not_a_file_note(path: str) -> str:
    """What a listed path that is no video file is, where it exists: a folder is not missing,
    and a name without its extension is missing only to a reader that takes the name as listed
    (the frame cache, PyAV's and OpenCV's openers; DecordInit reads its ``.mp4`` file)."""
    if osp.isdir(path):
        return ' (a directory, not a video file)'
    if decord_path(path) != path and osp.isfile(decord_path(path)):
        return (f' (the file is {decord_path(path)}: this pipeline reads a video by the name '
                'the list gives; list it with its extension)')
    return ''


def _list_missing(ann_file: str, missing: Sequence[Tuple[int, str]]) -> str:
    shown = '\n'.join(f'  {ann_file}:{number}: {path}{not_a_file_note(path)}'
                      for number, path in missing[:_LIST_LIMIT])
    more = f'\n  ... and {len(missing) - _LIST_LIMIT} more' if len(missing) > _LIST_LIMIT else ''
    return shown + more


def _backend_arguments(backend: type) -> Optional[Tuple[str, ...]]:
    """The keyword arguments an mmengine file backend's constructor takes, or None when it
    takes any (``**kwargs``)."""
    if backend.__init__ is object.__init__:
        return ()
    parameters = list(inspect.signature(backend.__init__).parameters.values())[1:]
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return tuple(parameter.name for parameter in parameters
                 if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY))


@TRANSFORMS.register_module()
class SafeDecordInit(BaseTransform):
    """``DecordInit`` that names the file in its errors and opens local files by path.

    A drop-in replacement for mmaction2's ``DecordInit`` (same keys, same ``.mp4`` suffix rule
    for names without an extension). Differences: a local file is opened by path (decord 0.6.0
    crashes the whole process on a truncated AVI when given the in-memory copy ``DecordInit``
    makes; by path it returns the intact frames), and a missing, empty or unreadable file, or one
    without frames, raises :class:`BadVideoError` naming it.

    Required Keys:

        - filename

    Added Keys:

        - video_reader (decord.VideoReader)
        - total_frames (int)
        - avg_fps (float)

    Args:
        io_backend (str): ``'disk'`` opens by path; any other mmengine file backend (``'petrel'``,
            ``'http'``, ...) is read into memory first. Defaults to ``'disk'``.
        num_threads (int): decoding threads, ``0`` for decord's automatic count. Defaults to 1.
        **kwargs: arguments of the file backend (none for ``'disk'``, which opens by path).
    """

    def __init__(self, io_backend: str = 'disk', num_threads: int = 1, **kwargs) -> None:
        from mmengine.fileio.backends import backends

        # 'disk' is FileClient's name for mmengine's 'local'; the rest are looked up in the
        # registry when the first sample is read, where an unknown name is a bare KeyError.
        if io_backend != 'disk' and io_backend not in backends:
            raise ValueError(f'SafeDecordInit: io_backend must be one of '
                             f'{["disk", *sorted(backends)]}, got {io_backend!r}')
        # decord takes any int >= 0 (0: automatic) and reports a str or a float as a failure to
        # read each video, so every one would be called corrupt.
        self.num_threads = int_at_least(num_threads, 'num_threads', 0, 'SafeDecordInit')
        takes = () if io_backend == 'disk' else _backend_arguments(backends[io_backend])
        unknown = [] if takes is None else sorted(set(kwargs) - set(takes))
        if unknown:
            # A misspelt name (num_thread=4) would otherwise be kept as a backend argument and
            # never used: DecordInit takes io_backend, num_threads and the backend's arguments.
            raise TypeError(f'SafeDecordInit: unknown argument(s) {unknown}; it takes '
                            f'io_backend, num_threads and the file backend\'s arguments '
                            f'(for io_backend={io_backend!r}: {list(takes) or "none"})')
        self.io_backend = io_backend
        self.kwargs = kwargs

    def _source(self, filename: str):
        if self.io_backend in ('disk', 'local'):
            if not osp.isfile(filename):
                raise BadVideoError(f'{filename}: video file not found', filename)
            if osp.getsize(filename) == 0:
                raise BadVideoError(f'{filename}: video file is empty (0 bytes)', filename)
            return filename
        from mmengine.fileio import get
        data = get(filename, backend_args=dict(backend=self.io_backend, **self.kwargs))
        if not data:
            raise BadVideoError(f'{filename}: video file is empty (0 bytes)', filename)
        return io.BytesIO(data)

    def transform(self, results: Dict) -> Dict:
        """Open the video and add its reader, frame count and frame rate."""
        filename = decord_path(results['filename'])
        reader = open_video(self._source(filename), self.num_threads, filename)
        total = len(reader)
        if total == 0:
            raise BadVideoError(f'{filename}: the video has no frames', filename)
        results['video_reader'] = reader
        results['total_frames'] = total
        results['avg_fps'] = reader.get_avg_fps()
        return results

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(io_backend={self.io_backend!r}, '
                f'num_threads={self.num_threads})')


@DATASETS.register_module()
class CheckedVideoDataset(VideoDataset):
    """mmaction2's ``VideoDataset``, its list checked line by line and its bad videos named.

    Upstream parses a list line with ``int(label)`` and tuple unpacking, so a bad label or a
    missing field stops the run with ``ValueError: invalid literal for int()`` naming neither
    the list nor the line, and reads the list with a plain UTF-8 decode (a Latin-1 list stops
    it with ``UnicodeDecodeError``, a byte-order mark becomes part of the first path). Here the
    list is parsed once by :func:`check_video_list`, the plugin's one reader, which raises
    :class:`AnnotationError` naming ``file:line`` and what is wrong; labels must be below
    ``num_classes`` when it is given. A line with a path only is accepted in test mode
    (mmaction2's inference lists, label -1) and refused in training. The samples are exactly
    upstream's for every list upstream reads correctly.

    A sample whose video fails to load or decode (decord's ``DECORDError: Error sending
    packet`` on a file damaged mid-stream, which names nothing) raises :class:`BadVideoError`
    naming the file and the sample index, the original error chained. Nothing is skipped: the
    frame-cache families' validation and test read their videos through this dataset without a
    :class:`GuardedDataset`, and a test that quietly lost clips would score another test set.
    Missing videos are not looked up when the list is read (a frame cache may outlive its
    videos): opening one raises the same way, :class:`GuardedDataset` around this dataset lists
    them up front or skips them, and ``BuildFrameCacheHook`` lists those without an entry before
    a run that reads them through the cache. Takes ``VideoDataset``'s arguments.
    """

    def load_data_list(self) -> List[dict]:
        if self.multi_class and self.num_classes is None:
            raise ValueError(f'CheckedVideoDataset: {self.ann_file}: multi_class=True needs '
                             'num_classes (the width of the label vectors)')
        entries = check_video_list(self.ann_file, self.delimiter, self.multi_class,
                                   self.num_classes, allow_unlabelled=self.test_mode)
        prefix = self.data_prefix['video']
        data_list = []
        for entry in entries:
            if self.multi_class:
                label = entry.labels
            else:
                label = entry.labels[0] if entry.labels else -1
            filename = osp.join(prefix, entry.path) if prefix is not None else entry.path
            data_list.append(dict(filename=filename, label=label))
        return data_list

    def prepare_data(self, idx: int):
        """The sample through the pipeline; a data error names the file and the index."""
        try:
            return super().prepare_data(idx)
        except _bad_video_errors() as error:
            name = self.get_data_info(idx)['filename']
            raise BadVideoError(f'{name} (sample {idx}): {_first_line(error)}', name,
                                idx) from error


def _read_as_checked(cfg: dict) -> dict:
    """``cfg`` with mmaction2's ``VideoDataset`` (that class, not a subclass with a reader of
    its own) read as :class:`CheckedVideoDataset`: the same samples for every list upstream
    reads correctly, from the list the validation checked (upstream's own parse keeps a
    byte-order mark in the first path, so the video the validation found is then "not found"
    every time it is drawn)."""
    kind = cfg.get('type')
    kind = kind if isinstance(kind, type) else DATASETS.get(kind)
    return dict(cfg, type=CheckedVideoDataset) if kind is VideoDataset else cfg


@DATASETS.register_module()
class GuardedDataset:
    """Wrap a dataset so a bad video names itself, or is skipped and counted.

    ``dict(type='GuardedDataset', dataset=dict(type='VideoDataset', ...), on_bad_video='skip')``

    On construction, a ``VideoDataset`` config's annotation list is validated first
    (:func:`validate_video_annotations`): a malformed line raises :class:`AnnotationError`
    naming ``file:line``; videos that do not exist raise too (``'raise'``) or are listed in a
    warning (``'skip'``) and skipped when drawn. mmaction2's ``VideoDataset`` itself is then
    built as :class:`CheckedVideoDataset`, so that its samples come from the list as validated.

    When loading a sample fails with a data error (decord / PyAV / file errors and the
    ``ValueError`` / ``IndexError`` the plugin's transforms raise naming the file):

    - ``on_bad_video='raise'``: :class:`BadVideoError` naming the file, the sample index and
      the original error (chained); a dataset that names its samples itself
      (:class:`CheckedVideoDataset`) raises its own, so the file is named once;
    - ``on_bad_video='skip'``: a warning naming the file and the error; the sample is replaced
      by a random other sample (numpy's global generator, seeded by mmengine), remembered as bad
      so later epochs skip it without decoding, and counted in :attr:`skipped`. Counts are per
      process (each DataLoader worker keeps its own).

    Other errors (``KeyError``, ``TypeError``, ... from a mis-configured pipeline) propagate
    unchanged, with a note naming the file. ``metainfo``, ``len``, ``get_data_info`` and
    ``full_init`` pass through, so mmengine's samplers and mmaction2's evaluators work.

    Args:
        dataset (dict | BaseDataset): the wrapped dataset or its config.
        on_bad_video (str): ``'raise'`` or ``'skip'``. Defaults to ``'raise'``.
        max_skips (int, optional): with ``'skip'``, raise once more than this many samples were
            replaced in one process (None: no limit; a dataset with no good sample always
            raises). Defaults to None.
        num_classes (int, optional): labels of a ``VideoDataset`` list must be below it.
            Defaults to None.
        check_annotations (bool): validate a ``VideoDataset`` list on construction.
            Defaults to True.
        lazy_init (bool): defer the wrapped dataset's ``full_init``. Defaults to False.
    """

    def __init__(self,
                 dataset: Union[dict, BaseDataset],
                 on_bad_video: str = 'raise',
                 max_skips: Optional[int] = None,
                 num_classes: Optional[int] = None,
                 check_annotations: bool = True,
                 lazy_init: bool = False) -> None:
        if on_bad_video not in ON_BAD_VIDEO:
            raise ValueError(f'GuardedDataset: on_bad_video must be one of {ON_BAD_VIDEO}, got '
                             f'{on_bad_video!r}')
        if max_skips is not None and (isinstance(max_skips, bool) or
                                      not isinstance(max_skips, int) or max_skips < 0):
            raise ValueError(f'GuardedDataset: max_skips must be an int >= 0 or None, got '
                             f'{max_skips!r}')
        self.on_bad_video = on_bad_video
        self.max_skips = max_skips
        if isinstance(dataset, dict):
            if check_annotations:
                self._validate(dataset, num_classes)
            self.dataset = DATASETS.build(_read_as_checked(dataset))
        elif isinstance(dataset, BaseDataset):
            self.dataset = dataset
        else:
            raise TypeError(f'GuardedDataset: dataset must be a config dict or a BaseDataset, '
                            f'got {type(dataset)}')
        #: file name -> number of times a sample of it was replaced, in this process.
        self.skipped: Dict[str, int] = {}
        self._bad_indices = set()
        self._fully_initialized = False
        if not lazy_init:
            self.full_init()

    def _validate(self, cfg: dict, num_classes: Optional[int]) -> None:
        dataset_type = cfg.get('type')
        if not isinstance(dataset_type, type):
            dataset_type = DATASETS.get(dataset_type)
        if not (isinstance(dataset_type, type) and issubclass(dataset_type, VideoDataset)):
            return
        ann_file = cfg['ann_file']
        prefix = (cfg.get('data_prefix') or {}).get('video') or ''
        missing = validate_video_annotations(
            ann_file, prefix, cfg.get('delimiter', ' '), cfg.get('multi_class', False),
            num_classes if num_classes is not None else cfg.get('num_classes'),
            allow_unlabelled=cfg.get('test_mode', False),
            decord_names=decodes_with_decord(cfg.get('pipeline')))
        if not missing:
            return
        listing = _list_missing(ann_file, missing)
        if self.on_bad_video == 'raise':
            # an evaluation scores every line, and a skipped sample is replaced by another
            leave_out = ('remove them from the list' if cfg.get('test_mode', False) else
                         'set on_bad_video=\'skip\'')
            raise AnnotationError(f'{ann_file}: {len(missing)} video(s) do not exist:\n{listing}'
                                  f'\n(fix the paths or data_prefix, or {leave_out})',
                                  ann_file, missing[0][0])
        print_log(f'GuardedDataset: {ann_file}: {len(missing)} video(s) do not exist; they will '
                  f'be skipped:\n{listing}', logger='current', level=logging.WARNING)

    @property
    def metainfo(self) -> dict:
        """The wrapped dataset's meta information."""
        return self.dataset.metainfo

    @property
    def num_skipped(self) -> int:
        """Samples replaced so far in this process."""
        return sum(self.skipped.values())

    def full_init(self) -> None:
        """Fully initialise the wrapped dataset."""
        if self._fully_initialized:
            return
        self.dataset.full_init()
        self._fully_initialized = True

    def get_data_info(self, idx: int) -> dict:
        """The wrapped dataset's annotation of sample ``idx``."""
        return self.dataset.get_data_info(idx)

    def __len__(self) -> int:
        return len(self.dataset)

    def _name(self, idx: int) -> str:
        info = self.dataset.get_data_info(idx)
        for key in ('filename', 'frame_dir', 'video_path'):
            if info.get(key):
                return str(info[key])
        return f'sample {idx}'

    def _replacement(self) -> int:
        if len(self._bad_indices) >= len(self):
            raise BadVideoError(f'GuardedDataset: all {len(self)} samples are bad videos '
                                f'(skipped: {sorted(self.skipped)[:_LIST_LIMIT]})')
        while True:
            idx = int(np.random.randint(len(self)))
            if idx not in self._bad_indices:
                return idx

    def _skip(self, idx: int, name: str, reason: Optional[str]) -> int:
        """Count a replaced sample and pick its replacement; ``reason=None``: known bad, the
        warning was given when it first failed."""
        self._bad_indices.add(idx)
        self.skipped[name] = self.skipped.get(name, 0) + 1
        if self.max_skips is not None and self.num_skipped > self.max_skips:
            raise BadVideoError(f'GuardedDataset: more than max_skips={self.max_skips} bad '
                                f'samples in this process; the last: {name} (sample {idx}): '
                                f'{reason or "known bad"}', name, idx)
        replacement = self._replacement()
        if reason is not None:
            print_log(f'GuardedDataset: skipped bad video {name} (sample {idx}): {reason}; '
                      f'replaced by sample {replacement} ({self.num_skipped} skipped in this '
                      'process)', logger='current', level=logging.WARNING)
        return replacement

    def __getitem__(self, idx: int):
        self.full_init()
        while True:
            if idx in self._bad_indices:
                idx = self._skip(idx, self._name(idx), None)
                continue
            try:
                return self.dataset[idx]
            except _bad_video_errors() as error:
                name = self._name(idx)
                # a dataset that names its own samples (CheckedVideoDataset) has named this one
                named = isinstance(error, BadVideoError) and error.index is not None
                if self.on_bad_video == 'raise':
                    if named:
                        raise
                    raise BadVideoError(f'{name} (sample {idx}): {_first_line(error)}', name,
                                        idx) from error
                cause = error.__cause__ if named and error.__cause__ is not None else error
                idx = self._skip(idx, name, _first_line(cause))
            except Exception as error:
                if hasattr(error, 'add_note'):
                    error.add_note(f'while loading {self._name(idx)} (sample {idx})')
                raise

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(dataset={type(self.dataset).__name__}, '
                f'on_bad_video={self.on_bad_video!r}, max_skips={self.max_skips}, '
                f'num_skipped={self.num_skipped})')
