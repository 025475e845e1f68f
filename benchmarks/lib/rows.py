"""A benchmark declared as rows on one data set: each row a config and the edits that make it,
trained once per seed through mmaction2's tools (:mod:`.runner`), tested on the test list and
on the training list, and recorded by key, so that a finished run is never trained again, a
stopped one resumes and a fresh clone writes the tables from the committed record.

A script declares its rows (:class:`Row`, which the main job's models are too) and its
tables; :class:`RowBenchmark` runs them side by side (:mod:`.schedule`), on a data set that
describes itself in one file (:class:`DataMeta`: a converted real data set, :data:`CONVERTED`,
or the synthetic motion benchmark, :data:`SYNTHETIC`):

* a run lives in ``<work dir>/<row slug>/seed<s>``: the config :meth:`RowBenchmark.run_config`
  made for it, the tools' logs, checkpoints and ``result.json``;
* a run counts when its ``result.json`` is newer than the data set's meta file and its config is
  the one the row makes now, else when the record holds a run of the same
  :meth:`RowBenchmark.run_key` (every setting the runner reads, the seed, what made the data
  set): a change to one row trains that row again, the tables keep every other, and two
  rows that make the same run share it;
* a row that changes only the test of another (``Row.tested_from``: its test views) tests that
  row's checkpoints, which train first, once, and are not trained again for it.
"""
import argparse
import json
import os
import tempfile
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import runner
from .costing import load_average, side_by_side
from .edits import read_data_from, sync_pipeline_variables
from .schedule import Task, run_tasks
from .tables import mean_sd, summary

#: The 1-minute load average at which the latency timing says the machine is busy: the timing
#: process itself counts about 1, and half a core more is another process's work.
BUSY_LOAD = 1.5


#: the seeds a family's headline rows are trained over: a mean and a spread need three
HEADLINE_SEEDS = (0, 1, 2)


class Row(NamedTuple):
    """One model: a family config, or a config with ``edits`` (an ablation)."""
    name: str
    config: Path
    note: str
    seeds: Tuple[int, ...] = (0, )
    edits: tuple = ()
    #: training cost relative to one hyperframe model, to start the longest runs first
    cost: float = 1.0
    #: the row whose runs this one tests, where its edits change only the test (its views):
    #: each seed is that row's checkpoint tested with this row's config, not trained again
    tested_from: Optional['Row'] = None

    def edited(self, before: tuple = (), after: tuple = ()) -> 'Row':
        """This row with ``before`` and ``after`` its own edits, and so the row it is tested
        from: a fold's lists or a smoke run's epochs change the training it reuses too."""
        source = None if self.tested_from is None else self.tested_from.edited(before, after)
        return self._replace(edits=tuple(before) + self.edits + tuple(after), tested_from=source)


def converted(meta: Dict, lists: Sequence[str]) -> Dict:
    """What the tables and the run keys read of a converter's ``convert_meta.json``: the
    conversion's version and mapping, the number of classes and clips per list."""
    description = dict(version=meta.get('version'), mapping=meta.get('mapping'))
    if 'classes' in meta:  # a converter's meta; the run-key tests write only the two above
        description.update(classes=len(meta['classes']),
                           lists={name: meta['lists'][name] for name in lists})
    return description


def synthetic(meta: Dict, lists: Sequence[str]) -> Dict:
    """What the tables and the run keys read of the synthetic benchmark's ``meta.json``: the
    generator's parameters (what makes the clips), the number of classes, the speed groups as
    labels (each run is also scored on them) and the clips per list."""
    from hyperframes_mm.evaluation.predictions import groups_as_labels
    classes = meta['classes']
    clips = {meta['annotations'][split]: count * len(classes)
             for split, count in meta['params']['clips_per_class'].items()}
    return dict(generator=meta['params'], classes=len(classes), groups=groups_as_labels(meta),
                lists={name: clips[name] for name in lists})


def frame_labels(data: Path) -> None:
    """Write the synthetic benchmark's per-frame motion states (what ``CenterFrameTarget``
    reads) unless every split has them."""
    from hyperframes_mm.datasets.synthetic import (frame_labels_path, load_meta,
                                                   write_frame_labels)
    splits = load_meta(data)['params']['clips_per_class']
    if not all(frame_labels_path(data, split).is_file() for split in splits):
        write_frame_labels(data)


def listed(root: Path, lists: Sequence[str]) -> Dict:
    """What the tables and the run keys read of a data set that has only its lists (a user's
    set, no builder's meta file): the classes its labels name (the largest label + 1), the
    clips per list, and the SHA-256 of each list, so another set in a folder of the same name,
    or these lists changed, are other runs. The lists are read by the datasets' own reader, so
    a malformed line is named."""
    import hashlib

    from hyperframes_mm.datasets.bad_video import check_video_list
    entries = {name: check_video_list(str(root / name)) for name in lists}
    return dict(classes=1 + max((label for found in entries.values() for entry in found
                                 for label in entry.labels), default=-1),
                lists={name: len(found) for name, found in entries.items()},
                digests={name: hashlib.sha256((root / name).read_bytes()).hexdigest()
                         for name in lists})


class DataMeta(NamedTuple):
    """How a data set describes itself to a row benchmark."""
    #: the file its builder writes last: a run older than it trained on other clips
    file: str
    #: ``(meta, (train list, test list))`` -> what the tables and the run keys read of it;
    #: with ``from_root``, ``(data root, (train list, test list))``
    describe: Callable[[Dict, Sequence[str]], Dict]
    #: the description's keys that make a run on this data another run
    identity: Tuple[str, ...]
    #: what training needs written into the data set first, if anything
    prepare: Optional[Callable[[Path], None]] = None
    #: ``describe`` reads the data set itself (:func:`listed`), not a JSON meta file
    from_root: bool = False


#: a run folder's record of the lists it trains on (:meth:`RowBenchmark.list_digests`)
LIST_DIGESTS = 'list_digests.json'

CONVERTED = DataMeta('convert_meta.json', converted, ('version', 'mapping'))
SYNTHETIC = DataMeta('meta.json', synthetic, ('generator', ), frame_labels)


def data_named(description: Dict) -> str:
    """What made the data set of a description (:meth:`RowBenchmark.data_description`, or as
    much of it as a command names), in words for a message: the synthetic generator's preset,
    seed and version, a conversion's version and mapping, or the digests of a set's own lists;
    with its classes where it has them. Empty where it says none of these."""
    generator, digests = description.get('generator'), description.get('digests')
    if generator is not None:
        made = 'the synthetic benchmark (' + ', '.join(
            f'{key} {generator[key]!r}' for key in ('preset', 'seed', 'generator_version')
            if key in generator) + ')'
    elif description.get('version') is not None:
        made = (f'a converted set (conversion version {description["version"]}, mapping '
                f'{description.get("mapping")})')
    elif digests:
        made = 'a set of its own lists (SHA-256 ' + ', '.join(
            f'{name} {digest[:12]}...' for name, digest in sorted(digests.items())) + ')'
    else:
        return ''
    classes = description.get('classes')
    return made + (f', {classes} classes' if classes else '')


def agrees(recorded, named) -> bool:
    """Whether ``recorded`` is ``named`` wherever ``named`` says something: a dict key by key (a
    command names a synthetic set by its preset and seed alone), any other value as equal."""
    if isinstance(named, dict):
        return isinstance(recorded, dict) and all(agrees(recorded.get(key), value)
                                                  for key, value in named.items())
    return recorded == named


def arguments(description: str, data: str, work_dir: str, record: Path,
              parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    """The command line every row benchmark takes (a script adds its own options), on
    ``parser`` where given (a subcommand's)."""
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument('--data', default=data, help='the data set')
    parser.add_argument('--work-dir', default=work_dir)
    parser.add_argument('--jobs', type=int, default=2, help='runs trained at once (1 thread each)')
    parser.add_argument('--part', choices=('zoo', 'ablation', 'all'), default='all')
    parser.add_argument('--rows', nargs='+',
                        help='only these rows: full names, or words of their names')
    parser.add_argument('--seeds', type=int, nargs='+',
                        help='train these seeds of every selected row (default: each row\'s own)')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--report-only', action='store_true',
                      help='write the tables from the finished runs, train nothing')
    mode.add_argument('--train-only', action='store_true',
                      help='train the runs asked for and write no table (several such '
                      'commands can share the cores; one plain command afterwards measures '
                      'every row\'s costs side by side and writes the tables)')
    parser.add_argument('--record', default=str(record),
                        help='the record of finished runs: read for runs not in --work-dir, '
                        'rewritten with the tables')
    return parser


def selected(rows: Sequence[Row], words: Optional[Sequence[str]]) -> List[Row]:
    """The rows ``words`` name: a row's full name selects that row (``'hyperframe T=5'`` not
    also ``'hyperframe T=5 from scratch'``: one command per run), another word every row whose
    name contains it (case-insensitive); all rows without words.

    Raises:
        ValueError: a word names no row (a typo would train and report nothing, silently),
            each such word named, with the rows there are.
    """
    if not words:
        return list(rows)
    names = {row.name.lower() for row in rows}

    def names_row(word: str, row: Row) -> bool:
        word = word.lower()
        return row.name.lower() == word if word in names else word in row.name.lower()
    unknown = [word for word in words if not any(names_row(word, row) for row in rows)]
    if unknown:
        raise ValueError(f'{", ".join(map(repr, unknown))}: no row is named so or has it in its '
                         f'name; the rows: {"; ".join(row.name for row in rows)}')
    return [row for row in rows if any(names_row(word, row) for word in words)]


def weight_files(cfg) -> List[str]:
    """The local files a config's model starts from: ``load_from``, and every ``pretrained``
    path, timm ``pretrained_cfg_overlay.file`` and ``init_cfg`` ``checkpoint`` of its model (a
    URL or ``scheme://`` name is no local file; ``pretrained=True`` names none)."""
    files = [cfg.get('load_from')]

    def visit(node) -> None:
        if isinstance(node, dict):
            files.append(node.get('pretrained'))
            files.append((node.get('pretrained_cfg_overlay') or {}).get('file'))
            if node.get('type') == 'Pretrained':
                files.append(node.get('checkpoint'))
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    visit(cfg.get('model'))
    return sorted({file for file in files if isinstance(file, str) and '://' not in file})


class RowBenchmark:
    """The runs of a row benchmark on one data set.

    Args:
        name (str): the script's name, which prefixes every line it prints.
        lists (tuple[str, str]): the training and test list files of the data set (the test
            list is what the configs validate and test on; the training list is also tested,
            with the test views, after training).
        video_size (tuple[int, int]): the decoded frame size, for the costs.
        data_doc (str): where the data set's making is described (named when it is missing).
        meta (DataMeta): how the data set describes itself. Defaults to :data:`CONVERTED`.
        cost_edits (tuple): edits of every row's config for its costs only (e.g. a deployment
            input size rather than the trained one). Defaults to none.
    """

    def __init__(self, name: str, lists: Tuple[str, str], video_size: Tuple[int, int],
                 data_doc: str, meta: DataMeta = CONVERTED, cost_edits: tuple = ()) -> None:
        self.name = name
        self.data_doc = data_doc
        self.train_list, self.test_list = lists
        self.video_size = video_size
        self.meta = meta
        self.cost_edits = cost_edits
        #: run keys by (row, seed, data root): building a config for each is slow
        self.run_keys: Dict[Tuple[Row, int, str], str] = {}
        #: the digests of the lists a run reads (:meth:`list_digests`), by the same
        self.digests: Dict[Tuple[Row, int, str], Dict[str, str]] = {}

    def log(self, message: str) -> None:
        print(f'[{self.name}] {message}', flush=True)

    def requested(self, args, zoo: Sequence[Row], ablation: Sequence[Row]) -> List[Row]:
        """The rows ``--part`` and ``--rows`` ask for (:func:`selected`).

        Raises:
            SystemExit: training was asked for and the data set is not there, or ``--rows``
                names a row that is not there.
        """
        data = Path(args.data)
        if not (args.report_only or (data / self.meta.file).is_file()):
            raise SystemExit(f'{data}: no {self.meta.file}, so no data set ({self.data_doc})')
        every = list(zoo) + [row for row in ablation if row not in zoo]
        try:
            return selected(dict(zoo=zoo, ablation=ablation, all=every)[args.part], args.rows)
        except ValueError as error:
            part = '' if args.part == 'all' else f' (of --part {args.part})'
            raise SystemExit(f'error: --rows{part}: {error}') from None

    def costs(self, rows: Sequence[Row], args) -> Dict[str, Dict]:
        """The rows' costs (:meth:`cost_of`). Report-only takes them from the record, as every
        other number of the tables (a latency measured again would move with this machine and
        its load); a command that trained measures them anew. A row the record has no cost for
        takes those of a recorded row with its test-time model (:meth:`shared_costs`), else has
        every row timed again with it: latencies are only compared side by side."""
        costs = dict(runner.Record(args.record).data.get('costs', {})) if args.report_only else {}
        missing = [row for row in rows if row.name not in costs]
        if missing:
            costs.update(self.shared_costs(missing, [row for row in rows if row.name in costs],
                                           costs, args))
        if any(row.name not in costs for row in rows):
            costs = self.cost_of(rows, args)
        return costs

    def shared_costs(self, missing: Sequence[Row], costed: Sequence[Row], costs: Dict[str, Dict],
                     args) -> Dict[str, Dict]:
        """The recorded costs of ``costed`` rows whose test-time model is a ``missing`` row's
        (:meth:`test_model`): a row that changes only how a model trains (its crops, labels,
        schedule) is the same graph at test, and timing it again would let this machine's noise
        give one graph two latencies (a latency budget's boundary then decides by chance)."""
        if not costed:
            return {}
        by_model = {self.test_model(row, args): row.name for row in costed}
        return {row.name: costs[by_model[model]] for row in missing
                if (model := self.test_model(row, args)) in by_model}

    def test_model(self, row: Row, args) -> str:
        """What a row's costs are of: its model and its test pipeline as :meth:`cost_of`
        builds them (:meth:`costed_config`), as one comparable string."""
        with tempfile.TemporaryDirectory() as tmp:
            cfg = self.costed_config(row, args, Path(tmp))
        return json.dumps([cfg.model.to_dict(), cfg.test_dataloader.dataset.pipeline],
                          sort_keys=True, default=str)

    def costed_config(self, row: Row, args, folder: Path):
        """The config a row's costs are measured on: its seed-0 run config (:meth:`run_config`,
        written into ``folder``) with ``self.cost_edits``."""
        from mmengine.config import Config
        costed = row._replace(edits=row.edits + self.cost_edits)
        return Config.fromfile(str(self.run_config(costed, 0, args, folder)))

    def run_dir(self, args, row: Row, seed: int) -> Path:
        from hyperframes_mm.utils import slug
        return Path(args.work_dir) / slug(row.name) / f'seed{seed}'

    def data_description(self, args) -> Dict:
        """What the tables and the run keys need of the data set (``self.meta.describe``):
        from its meta file where the data set is here, else from the record (a fresh clone)."""
        here = self.described_here(args)
        return runner.Record(args.record).data.get('data', {}) if here is None else here

    def described_here(self, args) -> Optional[Dict]:
        """The data set's description from its own meta file (``self.meta.describe``), None
        where it is not here."""
        meta_path = Path(args.data) / self.meta.file
        if not meta_path.is_file():
            return None
        lists = (self.train_list, self.test_list)
        if self.meta.from_root:
            return self.meta.describe(Path(args.data), lists)
        return self.meta.describe(json.loads(meta_path.read_text()), lists)

    def refuse_other_data(self, args, record: 'runner.Record',
                          named: Optional[Dict] = None) -> None:
        """Refuse a record of another data set than ``args.data``: its runs would be reported
        as runs on this one, and the record rewritten with them. Its ``data`` section (what
        :func:`write_results` wrote) must have this benchmark's lists (another benchmark's
        record has others) and agree (:func:`agrees`) with what made the data set: the
        description's ``self.meta.identity`` where the set is here, else ``named``, as much as
        the command names of it (a synthetic set's preset and seed). A record with no ``data``
        section (none written yet) is any set's.

        Raises:
            ValueError: the record is of another data set (the record and both sets named).
        """
        recorded = record.data.get('data') or {}
        if not recorded:
            return
        here = self.described_here(args)
        if here is not None:
            named = {key: here.get(key) for key in self.meta.identity}
        own = (self.train_list, self.test_list)
        if set(recorded.get('lists', own)) != set(own):
            other = (f'a data set of the lists {", ".join(sorted(recorded["lists"]))} (another '
                     'benchmark\'s)')
        elif not agrees(recorded, named or {}):
            other = data_named(recorded)
        else:
            return
        described = data_named(named or {})
        raise ValueError(f'{record.path}: the record of {other}, not of the data set at '
                         f'{args.data}{f" ({described})" if described else ""}: its runs would '
                         'be reported, and the record rewritten, as runs on it; name this data '
                         'set\'s record with --record (one not there yet starts it), or move '
                         'this one aside')

    def finished(self, args, row: Row, seed: int) -> Optional[Dict]:
        """The run of this row and seed: its ``result.json`` in the work dir when that is newer
        than the data set's meta file and its config is the one the row makes now, else the
        record's run of the same :meth:`run_key`, else None."""
        folder = self.run_dir(args, row, seed)
        result = folder / 'result.json'
        # a set described by its lists (:func:`listed`) changes with either of them
        written = (self.meta.file, ) + ((self.train_list, self.test_list)
                                        if self.meta.from_root else ())
        stale = any((path := Path(args.data) / name).is_file() and result.is_file()
                    and result.stat().st_mtime <= path.stat().st_mtime for name in written)
        if result.is_file() and not stale and self.same_config(folder, row, seed, args):
            done = json.loads(result.read_text())
            if self.same_lists(done.get('list_digests'), row, seed, args):
                return done
        run = runner.Record(args.record).runs().get(self.run_key(row, seed, args))
        if run is None or not self.same_lists(run.get('list_digests'), row, seed, args):
            return None
        return dict(run, row=row.name)

    def list_digests(self, row: Row, seed: int, args) -> Dict[str, str]:
        """:func:`benchmarks.lib.runner.list_digests` of the run's config: the lists it reads,
        here."""
        cache = (row, seed, str(Path(args.data).resolve()))
        if cache not in self.digests:
            with tempfile.TemporaryDirectory() as tmp:
                self.digests[cache] = runner.list_digests(
                    self.run_config(row, seed, args, Path(tmp)), Path(args.data))
        return self.digests[cache]

    def same_lists(self, recorded: Optional[Dict[str, str]], row: Row, seed: int,
                   args) -> bool:
        """Whether a run that read lists of the ``recorded`` digests read the lists here: a
        data set made again into the same folder (other sequences converted, other subjects)
        keeps its run keys, and its runs were reported, or resumed with no epoch left, as runs
        on it. A run recorded without digests (before they were kept) and a list not here (a
        fresh clone without the data) are taken as they are."""
        if not recorded:
            return True
        return all(recorded.get(name, digest) == digest
                   for name, digest in self.list_digests(row, seed, args).items())

    def run_key(self, row: Row, seed: int, args) -> str:
        """:func:`benchmarks.lib.runner.run_key` of the config :meth:`run_config` makes, with
        the data root written as ``{data}`` and what made the data set (the description's
        ``self.meta.identity``), so the same run has the same key on any machine and a data set
        made otherwise makes other runs."""
        data_root = str(Path(args.data).resolve())
        cache = (row, seed, data_root)
        if cache not in self.run_keys:
            description = self.data_description(args)
            with tempfile.TemporaryDirectory() as tmp:
                self.run_keys[cache] = runner.run_key(
                    self.run_config(row, seed, args, Path(tmp)), data_root,
                    {key: description.get(key) for key in self.meta.identity})
        return self.run_keys[cache]

    def same_config(self, folder: Path, row: Row, seed: int, args) -> bool:
        """Whether the run in ``folder`` trained the config :meth:`run_config` makes now."""
        with tempfile.TemporaryDirectory() as tmp:
            return runner.same_config(folder / 'config.py',
                                      self.run_config(row, seed, args, Path(tmp)))

    def resumable(self, folder: Path, row: Row, seed: int, args) -> bool:
        """Whether a stopped run of this very config, on these very lists, left a checkpoint
        to resume from (a run folder from before the lists' digests were written beside its
        config is not)."""
        digests = folder / LIST_DIGESTS
        try:
            recorded = json.loads(digests.read_text()) if digests.is_file() else None
        except ValueError:
            recorded = None  # cut short by a kill: resuming would trust lists it cannot name
        if recorded is None or not self.same_lists(recorded, row, seed, args):
            return False
        with tempfile.TemporaryDirectory() as tmp:
            return runner.resumable(folder, self.run_config(row, seed, args, Path(tmp)))

    def missing_weights(self, jobs: Sequence[Tuple[Row, int]], args) -> List[str]:
        """``'<row> seed <seed>: <file>'`` for each weight file an unfinished job's config
        starts from (:func:`weight_files`) that is not there: checked before any run starts, so
        a file made per run (a calibrated file per training list) fails in seconds, not after
        the runs queued before it have trained."""
        # relative paths as the runs read them: tools run in the repository
        return [f'{row.name} seed {seed}: {file}' for row, seed in jobs
                if self.finished(args, row, seed) is None
                for file in self.weight_files(row, seed, args)
                if not (runner.REPO / file).is_file()]

    def weight_files(self, row: Row, seed: int, args) -> List[str]:
        """The local files the run of ``row`` and ``seed`` starts from (:func:`weight_files`
        of its config)."""
        from mmengine.config import Config
        with tempfile.TemporaryDirectory() as tmp:
            return weight_files(Config.fromfile(str(self.run_config(row, seed, args, Path(tmp)))))

    @staticmethod
    def run_config(row: Row, seed: int, args, work_dir: Path) -> Path:
        """The row's config for one seed, with every iteration logged, dumped into
        ``work_dir``."""
        from mmengine.config import Config
        cfg = Config.fromfile(str(row.config))
        for edit in row.edits:
            edit(cfg)
        sync_pipeline_variables(cfg)
        read_data_from(cfg, Path(args.data).resolve())
        cfg.randomness = dict(seed=seed)
        # every iteration in the logs, unsmoothed: the epoch's training accuracy is their mean
        cfg.default_hooks.logger = dict(type='LoggerHook', interval=1, ignore_last=False)
        cfg.log_processor = dict(type='LogProcessor', window_size=1, by_epoch=True)
        path = work_dir / 'config.py'
        cfg.dump(str(path))
        return path

    def train_run(self, row: Row, seed: int, args) -> Dict:
        """Train one seed of a row (or resume it), test it on the test and training lists; its
        result. A row tested from another's runs (``tested_from``) tests that row's checkpoint
        of the seed, trained first if it is not (:meth:`test_run`)."""
        done = self.finished(args, row, seed)
        if done is not None:
            return done
        what = f'{row.name} seed {seed}'
        if row.tested_from is not None:
            source = self.train_run(row.tested_from, seed, args)
            checkpoint = runner.REPO / source['checkpoint']
            if checkpoint.is_file():
                return self.test_run(row, seed, args, source, checkpoint)
            self.log(f'{what}: {row.tested_from.name} seed {seed} is recorded, but its '
                     f'checkpoint {checkpoint} is not here: this row trains it again')
        work_dir = self.run_dir(args, row, seed)
        resuming = self.resumable(work_dir, row, seed, args)
        if resuming:
            (work_dir / 'result.json').unlink(missing_ok=True)
            config = work_dir / 'config.py'
            self.log(f'{what}: resuming from '
                     f'{(work_dir / "last_checkpoint").read_text().strip()}')
        else:
            config = self.fresh_run_dir(row, seed, args)
        self.log(f'{what}: training ({work_dir / "train.log"})')
        try:
            checkpoint = runner.train(config, work_dir, work_dir / 'train.log', resume=resuming)
        except runner.ToolFailed as error:
            raise RuntimeError(f'{what}: {error}') from error
        return self.tested(row, seed, args, config, checkpoint,
                           dict(train_min=runner.training_seconds(work_dir) / 60,
                                curves=runner.curves(work_dir)))

    def test_run(self, row: Row, seed: int, args, source: Dict, checkpoint: Path) -> Dict:
        """Test ``row``'s config on ``checkpoint``, the run ``source`` of the row it is tested
        from: the training, its time and its learning curves are that run's.

        Raises:
            ValueError: the row's edits change more than the test (a row declared wrongly).
        """
        config = self.fresh_run_dir(row, seed, args)
        with tempfile.TemporaryDirectory() as tmp:
            if not runner.same_training(config, self.run_config(row.tested_from, seed, args,
                                                                Path(tmp))):
                raise ValueError(f'{row.name}: tested from {row.tested_from.name}\'s runs, but '
                                 'its config trains otherwise; only the test may differ')
        self.log(f'{row.name} seed {seed}: testing {row.tested_from.name}\'s {checkpoint}')
        return self.tested(row, seed, args, config, str(checkpoint),
                           dict(train_min=source['train_min'], curves=source['curves'],
                                tested_from=row.tested_from.name))

    def fresh_run_dir(self, row: Row, seed: int, args) -> Path:
        """An empty run folder for the row and seed (an earlier one there set aside), with the
        run's config in it; that config."""
        work_dir = self.run_dir(args, row, seed)
        moved = runner.set_aside(work_dir)
        if moved is not None:
            self.log(f'{row.name} seed {seed}: the earlier run there cannot be resumed '
                     f'(another config\'s or other lists\', or stopped before its first '
                     f'checkpoint); moved to {moved}')
        work_dir.mkdir(parents=True)
        config = self.run_config(row, seed, args, work_dir)
        (work_dir / LIST_DIGESTS).write_text(json.dumps(self.list_digests(row, seed, args),
                                                        indent=1))
        return config

    def tested(self, row: Row, seed: int, args, config: Path, checkpoint: str,
               training: Dict) -> Dict:
        """Test ``checkpoint`` with ``config`` on the test and the training list, write the
        run's ``result.json`` (with ``training``: its time and curves) and return it."""
        what = f'{row.name} seed {seed}'
        work_dir = config.parent
        groups = self.data_description(args).get('groups', {})
        predictions = work_dir / 'predictions.pkl'
        try:
            test, _ = runner.test(config, checkpoint, work_dir / 'test', work_dir / 'test.log',
                                  dump=predictions if groups else None)
            train_list = str(Path(args.data).resolve() / self.train_list)
            fit, _ = runner.test(config, checkpoint, work_dir / 'test_train',
                                 work_dir / 'test_train.log',
                                 options=[f'test_dataloader.dataset.ann_file={train_list}'])
        except runner.ToolFailed as error:
            raise RuntimeError(f'{what}: {error}') from error
        result = dict(row=row.name, seed=seed, key=self.run_key(row, seed, args),
                      top1=test['acc/top1'], top5=test['acc/top5'], mean_class=test['acc/mean1'],
                      train_top1=fit['acc/top1'], config=str(config), checkpoint=checkpoint,
                      list_digests=self.list_digests(row, seed, args), **training)
        if groups:  # the top-1 of each group of classes of the test list
            from hyperframes_mm.evaluation import accuracy_by_group
            result.update({group: value for group, value in
                           accuracy_by_group(predictions, groups).items() if group in groups})
        (work_dir / 'result.json').write_text(json.dumps(result, indent=1))
        self.log(f'{what}: top-1 {result["top1"]:.3f}, training clips '
                 f'{result["train_top1"]:.3f} ({result["train_min"]:.1f} min)')
        return result

    def train(self, jobs: Sequence[Tuple[Row, int]], args) -> None:
        """Build the training list's frame cache (and what ``self.meta.prepare`` writes), then
        train ``(row, seed)`` jobs, ``--jobs`` at once, the costliest first
        (:func:`.schedule.run_tasks`); the other runs go on when one fails, which is logged as
        it fails.

        Raises:
            SystemExit: once the others have ended, if some runs failed (each named, with its
                log's tail).
        """
        from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
        missing = self.missing_weights(jobs, args)
        if missing:
            raise SystemExit('weight files missing, nothing trained (make them first: '
                             'docs/imagenet_weights.md, docs/efficientnet_lite0.md):\n'
                             + '\n'.join(missing))
        data = Path(args.data)
        cache = build_frame_cache(read_video_list(data / self.train_list), data, data,
                                  workers=max(1, args.jobs))
        self.log(f'frame cache: {cache}')
        if self.meta.prepare is not None:
            self.meta.prepare(data)
        # a row tested from another's runs waits for them: those train first, once each
        # (a folder is a row's name and seed: one job per folder, even when the row is asked
        # for beside it), then their checkpoints are tested
        trained = {(row.name, seed): (row, seed) for row, seed in jobs if row.tested_from is None}
        for row, seed in jobs:
            if row.tested_from is not None:
                trained.setdefault((row.tested_from.name, seed), (row.tested_from, seed))
        errors = self.run_jobs(list(trained.values()), args)
        failed = {(row.name, seed) for row, seed, _ in errors}
        tested = [(row, seed) for row, seed in jobs if row.tested_from is not None]
        errors += [(row, seed, f'{row.name} seed {seed}: not tested, {row.tested_from.name} '
                    f'seed {seed} failed') for row, seed in tested
                   if (row.tested_from.name, seed) in failed]
        errors += self.run_jobs([(row, seed) for row, seed in tested
                                 if (row.tested_from.name, seed) not in failed], args)
        if errors:
            raise SystemExit(f'{len(errors)} runs failed:\n' +
                             '\n'.join(str(error) for _, _, error in errors))

    def run_jobs(self, jobs: Sequence[Tuple[Row, int]], args) -> List[Tuple[Row, int, str]]:
        """Run ``(row, seed)`` jobs (:meth:`train_run`), ``--jobs`` at once, the costliest
        first; the others go on when one fails, which is logged as it fails. Returns
        ``(row, seed, error)`` of each failure."""
        # run_tasks keeps this order among equal costs: every row's seed 0 before any seed 1
        tasks = [Task((row, seed), row.cost, partial(self.train_run, row, seed, args))
                 for row, seed in sorted(jobs, key=lambda job: job[1])]
        failures = run_tasks(tasks, args.jobs, RuntimeError,
                             failed=lambda task, error: self.log(str(error)))
        return [(*task.what, str(error)) for task, error in failures]

    def seeds_of(self, row: Row, args) -> List[int]:
        """The row's own seeds, those asked for, every other seed it has a run folder of (an
        ablation row trained over more seeds once keeps them all in the tables) and every seed
        of the record (:meth:`finished` keeps those the row made)."""
        folders = (path.name for path in self.run_dir(args, row, 0).parent.glob('seed*'))
        found = {int(name[4:]) for name in folders if name[4:].isdigit()}
        recorded = {run['seed'] for run in runner.Record(args.record).runs().values()}
        return sorted({*row.seeds, *(args.seeds or ()), *found, *recorded})

    def results(self, rows: Sequence[Row], args) -> Dict[str, List[Dict]]:
        """Every finished seed of every row, asked for this time or not."""
        out = {}
        for row in rows:
            runs = [run for seed in self.seeds_of(row, args)
                    if (run := self.finished(args, row, seed)) is not None]
            if runs:
                out[row.name] = runs
        return out

    def stopped_runs(self, rows: Sequence[Row], args) -> List[str]:
        """``'<row> seed <s> at epoch <e> of <n>'`` for every seed of ``rows`` that is not
        finished but left a checkpoint of its current config to resume from."""
        from mmengine.config import Config
        out = []
        for row in rows:
            for seed in row.seeds:
                folder = self.run_dir(args, row, seed)
                if (self.finished(args, row, seed) is not None
                        or not self.resumable(folder, row, seed, args)):
                    continue
                total = Config.fromfile(str(folder / 'config.py')).train_cfg.max_epochs
                out.append(f'{row.name} seed {seed} at epoch {runner.last_epoch(folder) or "?"} '
                           f'of {total}')
        return out

    def cost_of(self, rows: Sequence[Row], args) -> Dict[str, Dict]:
        """GFLOPs and params of one view, and the latency of one test sample (all its views,
        batch 1, one thread, every row timed side by side) of each row's config as
        :meth:`run_config` makes it (a run's own folder may be on another machine), with
        ``self.cost_edits``; each with ``load_average``, the machine's 1-minute load average
        at the start and the end of the timing: other processes do not slow every row alike
        (a batch of 15 views loses more to a neighbour than a batch of 4), so they move the
        ratios the tables report, and the record says under which load they were read."""
        from hyperframes_mm.utils import slug
        with tempfile.TemporaryDirectory() as tmp:
            configs = {}
            for row in rows:
                folder = Path(tmp) / slug(row.name)
                folder.mkdir()
                configs[row.name] = self.costed_config(row, args, folder)
            start = load_average()
            if start >= BUSY_LOAD:
                self.log(f'timing the rows\' latency with the load average at {start:.2f} (this '
                         f'process is about 1): other processes move the latency ratios, so time '
                         f'them on an idle machine for the record')
            costs = side_by_side(configs, self.video_size, per_view=True, progress=True)
        end = load_average()
        return {name: dict(cost, load_average=[start, end]) for name, cost in costs.items()}


# ------------------------------------------------------------------------------- tables
def accuracy_cell(runs: List[Dict], key: str) -> str:
    """``**mean** ± sd (seed / seed / seed)``, or the value of one run."""
    mean, spread = summary(runs, key)
    if len(runs) == 1:
        return f'{mean:.3f}'
    seeds = ' / '.join(f'{run[key]:.3f}' for run in runs)
    return f'**{mean:.3f}** ± {spread:.3f} ({seeds})'


def headline_table(rows: Sequence[Row], results: Dict[str, List[Dict]], costs: Dict[str, Dict],
                   reference: str, label: str, footer: str,
                   page: Optional[Path] = None) -> List[str]:
    """The family's rows over their seeds: accuracy, fit, training time, costs, latency
    relative to the ``reference`` row (called ``label`` in the header); ``footer`` says where
    the reference's latency was measured (it is given after its milliseconds). Each row links
    its config relative to ``page``, the folder of the page the table goes into (a link
    resolves there); by default the config's own folder (a family README beside its
    configs)."""
    latency = costs[reference]['latency_ms']
    lines = ['| model | top-1 (mean ± sd; per seed) | mean class acc | top-1 on the training '
             f'clips | training time (min) | GFLOPs / view | params (M) | CPU latency vs '
             f'{label} |', '|---|---|---|---:|---:|---:|---:|---:|']
    for row in rows:
        runs = results[row.name]
        cost = costs[row.name]
        link = (row.config.name if page is None else
                Path(os.path.relpath(row.config, page)).as_posix())
        lines.append(
            f'| [{row.name}]({link}) | {accuracy_cell(runs, "top1")} | '
            f'{summary(runs, "mean_class")[0]:.3f} | {summary(runs, "train_top1")[0]:.3f} | '
            f'{summary(runs, "train_min")[0]:.1f} | {cost["gflops"]:.2f} | '
            f'{cost["params_m"]:.2f} | {cost["latency_ms"] / latency:.2f}x |')
    load = costs[reference].get('load_average')  # a record timed before it was kept has none
    timed = '' if load is None else (f' Timed at a load average of {load[0]:.2f} at the start '
                                     f'and {load[1]:.2f} at the end.')
    return lines + ['', f'{label}: {latency:.1f} ms {footer}{timed}']


def readme_table(rows: Sequence[Row], results: Dict[str, List[Dict]], costs: Dict[str, Dict],
                 reference: str, label: str, notes: Optional[Dict[str, str]] = None
                 ) -> List[str]:
    """A family's rows as the project README shows them, fewer columns than
    :func:`headline_table`: mean top-1 (spread), seeds, GFLOPs per view, latency relative to
    the ``reference`` row (called ``label`` in the header) and training time. ``notes`` follow
    a row's name (e.g. how it was chosen)."""
    latency = costs[reference]['latency_ms']
    lines = ['| model | top-1 (mean ± sd) | seeds | GFLOPs / view | CPU latency vs '
             f'{label} | training time (min) |', '|---|---:|---:|---:|---:|---:|']
    for row in rows:
        runs = results[row.name]
        note = f' ({notes[row.name]})' if notes and row.name in notes else ''
        lines.append(f'| {row.name}{note} | {mean_sd(runs, "top1")} | {len(runs)} | '
                     f'{costs[row.name]["gflops"]:.2f} | '
                     f'{costs[row.name]["latency_ms"] / latency:.2f}x | '
                     f'{summary(runs, "train_min")[0]:.0f} |')
    return lines


def train_cell(point: Dict[str, float]) -> str:
    """An epoch's training top-1, or a dash where the run logged none (blended labels)."""
    return f'{point["train_top1"]:.2f}' if 'train_top1' in point else '-'


def curve_table(rows: Sequence[Row], results: Dict[str, List[Dict]]) -> List[str]:
    """Training / test top-1 by epoch of each row's first seed, at the epochs the first row
    validated."""
    first = results[rows[0].name][0]['curves']
    epochs = [epoch for epoch, point in first.items() if 'test_top1' in point]
    lines = ['| model | ' + ' | '.join(f'ep {epoch}' for epoch in epochs) + ' |',
             '|---|' + '---:|' * len(epochs)]
    for row in rows:
        points = results[row.name][0]['curves']
        cells = [f'{train_cell(points[e])} / {points[e]["test_top1"]:.2f}'
                 if e in points and 'test_top1' in points[e] else '' for e in epochs]
        lines.append(f'| {row.name} | ' + ' | '.join(cells) + ' |')
    return lines


def side_of(runs: Sequence[Dict], base_runs: Sequence[Dict],
            clear_change: float) -> Tuple[float, Optional[str]]:
    """``runs``' mean top-1 minus ``base_runs``', and where it lies: ``'above'`` / ``'below'``
    where it is more than ``clear_change`` times the larger spread over seeds of the two (a
    row over several seeds can be noisier than its base), else ``'within'``; None where
    neither has a spread to read it against."""
    (mean, spread), (base, base_spread) = summary(runs, 'top1'), summary(base_runs, 'top1')
    delta, margin = mean - base, clear_change * max(spread, base_spread)
    if margin == 0:
        return delta, None
    return delta, 'above' if delta > margin else 'below' if delta < -margin else 'within'


def ablation_findings(rows: Sequence[Row], results: Dict[str, List[Dict]],
                      costs: Dict[str, Dict], base_of: Callable[[Row], str],
                      bases: Sequence[str], clear_change: float, reference: str,
                      label: str) -> List[str]:
    """Which rows move their base model (``base_of(row)``, one of ``bases``) by more than
    ``clear_change`` times the larger spread over seeds of the two (a row over several seeds
    can be noisier than its base), and which stay inside it: the reading a default is chosen
    on, written from the numbers so that it cannot go stale.
    Latency is relative to the ``reference`` row (``label``)."""
    latency = costs[reference]['latency_ms']
    lines = []
    for base in bases:
        if len(results.get(base, ())) < 2:
            continue
        mean, spread = summary(results[base], 'top1')
        moved: Dict[str, List[str]] = dict(above=[], within=[], below=[])
        for row in rows:
            if base_of(row) != base or row.name not in results:
                continue
            runs = results[row.name]
            delta, side = side_of(runs, results[base], clear_change)
            moved[side].append(f'{row.name} ({100 * delta:+.1f}, {len(runs)} '
                               f'seed{"s" * (len(runs) > 1)}, '
                               f'{costs[row.name]["latency_ms"] / latency:.2f}x)')
        lines += [''] if lines else []  # a paragraph of its own, not part of the list above
        lines.append(f'Against {base} ({mean:.3f}, spread {spread:.3f} over '
                     f'{len(results[base])} seeds; a clear change is more than '
                     f'{clear_change:g}x the larger spread of the row and its base, '
                     f'{100 * clear_change * spread:.1f} points where the row\'s is smaller; '
                     f'points, seeds, latency vs {label}):')
        lines += [f'- {name}: {"; ".join(moved[side]) or "none"}' for side, name in (
            ('above', 'clearly above'), ('within', 'within the spread'),
            ('below', 'clearly below'))]
    return lines


def write_results(text: List[str], markdown: Path, record: 'runner.Record',
                  results: Dict[str, List[Dict]], costs: Dict[str, Dict], shown: Sequence[Row],
                  data: Dict, zoo: Sequence[Row], curves: Path,
                  declared: Optional[Sequence[Row]] = None) -> str:
    """A row benchmark's outputs beside its record: the markdown report (returned), the record
    of every run with the costs of the rows shown, and the training curves. With ``declared``
    (the rows the command reports on), the record keeps the runs and costs it holds of any
    other row: rows another command wrote there (a family's choice that has moved since) are
    not this command's to drop."""
    report = '\n'.join(text) + '\n'
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(report)
    names = {row.name for row in declared or ()}
    kept = ({} if declared is None else
            {name: runs for name, runs in record.data.get('results', {}).items()
             if name not in names})
    record.write({**results, **kept}, costs={
        **{row.name: costs[row.name] for row in shown},
        **{name: cost for name, cost in record.data.get('costs', {}).items() if name in kept}},
        data=data)
    plot_curves(zoo, results, curves)
    return report


def plot_curves(rows: Sequence[Row], results: Dict[str, List[Dict]], path: Path) -> None:
    """Training and test top-1 by epoch of every seed of every row, one colour a row."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for index, row in enumerate(rows):
        color = f'C{index}'
        for run in results[row.name]:
            points = run['curves']
            name = row.name if run is results[row.name][0] else None
            scored = [e for e in points if 'train_top1' in points[e]]  # none when blended
            axes[0].plot([int(e) for e in scored], [points[e]['train_top1'] for e in scored],
                         color=color, alpha=0.8, label=name)
            tested = [e for e in points if 'test_top1' in points[e]]
            axes[1].plot([int(e) for e in tested], [points[e]['test_top1'] for e in tested],
                         color=color, marker='o', markersize=3, alpha=0.8, label=name)
    axes[0].set_title('training clips (augmented, epoch mean)')
    axes[1].set_title('test clips (cross-subject)')
    for ax in axes:
        ax.set_xlabel('epoch')
        ax.grid(alpha=0.3)
    axes[0].set_ylabel('top-1')
    axes[1].legend(loc='center left', bbox_to_anchor=(1.02, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_zoo_results(rows: Sequence[Row], results: Dict[str, List[Dict]], out: Path) -> None:
    """``out/<config>.json`` per row: the test metrics averaged over its seeds, in the keys of
    mmengine's metrics file (what ``tools/analysis/zoo_table.py`` reads)."""
    out.mkdir(exist_ok=True)
    for row in rows:
        runs = results[row.name]
        metrics = {'acc/top1': summary(runs, 'top1')[0], 'acc/top5': summary(runs, 'top5')[0],
                   'acc/mean1': summary(runs, 'mean_class')[0],
                   'seeds': [run['seed'] for run in runs]}
        (out / f'{row.config.stem}.json').write_text(json.dumps(metrics, indent=1) + '\n')
