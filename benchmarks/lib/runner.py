"""Train and test through mmaction2's own ``tools/train.py`` and ``tools/test.py``, and know
which runs are done: a run is recorded under a key of what it trained, so that a finished run
is never trained again, a stopped one resumes, and a fresh clone writes the tables from the
committed record alone (report-only).

A run lives in its own work dir: the config the benchmark made for it (``config.py``), the
tools' logs, mmengine's timestamp folders and checkpoints. Whether a folder holds a run of a
given config is decided on every setting mmengine's runner reads (:data:`RUN_KEYS`), compared
as data, not text: ``tools/train.py`` rewrites the config it ran (reordered, with the keys it
sets from its command line).
"""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]

#: what mmengine's ``Runner.from_cfg`` reads from a config, but for the keys tools/train.py
#: sets from its command line (``launcher``, ``work_dir``, ``resume``): what makes the run.
#: A config's other top-level names (``train_pipeline``, ...) are its own variables, which
#: only reach the run through these.
RUN_KEYS = ('model', 'train_dataloader', 'val_dataloader', 'test_dataloader', 'train_cfg',
            'val_cfg', 'test_cfg', 'optim_wrapper', 'param_scheduler', 'auto_scale_lr',
            'val_evaluator', 'test_evaluator', 'default_hooks', 'custom_hooks',
            'data_preprocessor', 'load_from', 'env_cfg', 'log_processor', 'log_level',
            'visualizer', 'default_scope', 'randomness', 'experiment_name')


class ToolFailed(RuntimeError):
    """A tool exited non-zero; the message ends with the last lines of its log."""

    def __init__(self, tool: str, code: int, log: Path, tail: int = 30) -> None:
        lines = Path(log).read_text(errors='replace').splitlines()[-tail:]
        super().__init__(f'{tool} failed (exit {code}); last lines of {log}:\n' +
                         '\n'.join(lines))
        self.log = log


def tool_env(**extra: str) -> Dict[str, str]:
    """The environment of a tool run: one OpenMP thread (runs go side by side on a few cores,
    and one thread each beats OpenMP threads spinning against the data-loader workers), no
    Python warnings in the logs."""
    return dict(os.environ, OMP_NUM_THREADS='1', PYTHONWARNINGS='ignore', **extra)


def run_tool(cmd: Sequence[str], log: Path, env: Optional[Dict[str, str]] = None,
             append: bool = False, on_start: Optional[Callable[[], None]] = None) -> None:
    """Run a tool in the repository with its output in ``log`` (which starts with the command).

    Args:
        cmd (Sequence[str]): the command.
        log (Path): the log file: overwritten, or continued with ``append`` (a resumed run).
        env (dict, optional): its environment. Defaults to :func:`tool_env`.
        append (bool): keep the log's earlier content. Defaults to False.
        on_start (callable, optional): called once the log is ready, before the tool starts
            (so that a reader of the log never sees the previous run's). Defaults to None.

    Raises:
        ToolFailed: the tool exited non-zero.
    """
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, 'a' if append else 'w') as out:
        out.write('+ ' + ' '.join(map(str, cmd)) + '\n')
        out.flush()
        if on_start:
            on_start()
        code = subprocess.run([str(part) for part in cmd], cwd=REPO, env=env or tool_env(),
                              stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        raise ToolFailed(str(cmd[1]), code, log)


def train(config, work_dir: Path, log: Path, options: Sequence[str] = (), resume: bool = False,
          **kwargs) -> str:
    """``tools/train.py config --work-dir work_dir [--resume] [--cfg-options ...]``; returns the
    last checkpoint. ``kwargs`` go to :func:`run_tool`."""
    cmd = [sys.executable, 'tools/train.py', config, '--work-dir', work_dir]
    cmd += (['--resume'] if resume else []) + (['--cfg-options', *options] if options else [])
    run_tool(cmd, log, append=resume, **kwargs)
    return (Path(work_dir) / 'last_checkpoint').read_text().strip()


def test(config, checkpoint: str, work_dir: Path, log: Path, options: Sequence[str] = (),
         dump: Optional[Path] = None, **kwargs) -> Tuple[Dict[str, float], Path]:
    """``tools/test.py``; returns mmengine's test metrics and the file they are in
    (``work_dir/<timestamp>/<timestamp>.json``). ``kwargs`` go to :func:`run_tool`."""
    cmd = [sys.executable, 'tools/test.py', config, checkpoint, '--work-dir', work_dir]
    cmd += (['--dump', dump] if dump else []) + (['--cfg-options', *options] if options else [])
    run_tool(cmd, log, **kwargs)
    metrics = max(Path(work_dir).glob('*/*.json'), key=lambda path: path.stat().st_mtime)
    return json.loads(metrics.read_text()), metrics


# ------------------------------------------------------------------------ what a run is
#: how the runtime that trained the recorded runs wrote checkpoints: mmengine's hook with
#: ``save_best='auto'``. Today's runtime writes them with ``SafeCheckpointHook`` through
#: ``backend_args`` and keeps no best copy, which changes how a file is written, never what is
#: trained: a run of it is keyed as that runtime's, so it finds the recorded runs.
RECORDED_CHECKPOINT_WRITING = dict(type='CheckpointHook', save_best='auto')
#: the dataset type the recorded runs read their lists with: ``CheckedVideoDataset`` checks a
#: list before it loads exactly the samples ``VideoDataset`` loads, so a run of it is keyed as
#: the plain dataset's
RECORDED_DATASET = {'CheckedVideoDataset': 'VideoDataset'}


def run_identity(cfg: Dict, key: str):
    """``cfg[key]`` without what decides only how a missing frame cache entry is handled
    (``FrameCacheInit``'s ``on_stale``, ``BuildFrameCacheHook``) and with ``SafeCheckpointHook``
    and ``CheckedVideoDataset`` written as the recorded runs' hook and dataset
    (:data:`RECORDED_CHECKPOINT_WRITING`, :data:`RECORDED_DATASET`), and a single-label
    ``VideoDataset``'s ``num_classes`` left out: the benchmarks build every entry before they
    train, so a run reads the same frames either way, a run trains the same weights whichever
    hook saves them and on the same samples whether its list was checked (against a class
    count or not), and runs trained before those settings changed still count."""
    def strip(value):
        if isinstance(value, dict):
            if value.get('type') in RECORDED_DATASET:
                value = dict(value, type=RECORDED_DATASET[value['type']])
            if value.get('type') == 'VideoDataset' and not value.get('multi_class'):
                # one label a clip: num_classes only bounds the labels the list is checked for
                value = {name: item for name, item in value.items() if name != 'num_classes'}
            if value.get('type') == 'SafeCheckpointHook':
                value = dict({name: item for name, item in value.items()
                              if name != 'backend_args'}, **RECORDED_CHECKPOINT_WRITING)
            return {name: strip(item) for name, item in value.items()
                    if not (value.get('type') == 'FrameCacheInit' and name == 'on_stale')}
        if isinstance(value, (list, tuple)):
            return [strip(item) for item in value if not (
                isinstance(item, dict) and item.get('type') == 'BuildFrameCacheHook')]
        return value
    value = strip(cfg.get(key))
    return None if value == [] and key == 'custom_hooks' else value


def _loaded(config) -> Dict:
    from mmengine.config import Config
    return Config.fromfile(str(config)).to_dict()


def run_key(config, data_root: Path, data: Dict, keys: Sequence[str] = RUN_KEYS) -> str:
    """What a run of ``config`` trains, as a digest: every setting the runner reads
    (``keys``, by default :data:`RUN_KEYS`, as :func:`run_identity` compares them), with
    ``data_root`` written as ``{data}``, and ``data`` (what identifies the data set beyond its
    folder, e.g. a conversion's version and mapping), so the same run has the same key on any
    machine."""
    cfg = _loaded(config)
    text = json.dumps(dict(data=data, run={key: run_identity(cfg, key) for key in keys}),
                      sort_keys=True, default=repr)
    return hashlib.sha256(text.replace(str(data_root), '{data}').encode()).hexdigest()


def same_config(ran: Path, expected: Path) -> bool:
    """Whether the config a run trained with (``ran``: its ``config.py``, as tools/train.py
    rewrote it) is ``expected`` in every key the runner reads (:data:`RUN_KEYS`)."""
    if not Path(ran).is_file():
        return False
    ran_cfg, expected_cfg = _loaded(ran), _loaded(expected)
    return all(run_identity(ran_cfg, key) == run_identity(expected_cfg, key)
               for key in RUN_KEYS)


#: what only ``tools/test.py`` reads: configs that differ in nothing else train the same run
TEST_KEYS = ('test_dataloader', 'test_cfg', 'test_evaluator')


def same_training(config: Path, other: Path) -> bool:
    """Whether two configs train the same run (every key of :data:`RUN_KEYS` but the test's,
    :data:`TEST_KEYS`): a checkpoint of one is a checkpoint of the other."""
    cfg, other_cfg = _loaded(config), _loaded(other)
    return all(run_identity(cfg, key) == run_identity(other_cfg, key)
               for key in RUN_KEYS if key not in TEST_KEYS)


#: the loops whose lists a run reads
DATALOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def list_digests(config, data_root: Path) -> Dict[str, str]:
    """The SHA-256 of every list a run of ``config`` reads (each ``ann_file`` of its loops,
    named relative to ``data_root`` where it lies inside): what its clips are, which a run key
    does not hold for a data set its builder describes by how it was made (a conversion's
    mapping says nothing of which sequences it converted). A list that is not there is left
    out (a fresh clone without the data)."""
    cfg = _loaded(config)
    root = Path(data_root).resolve()

    def found(value) -> Iterator[str]:
        if isinstance(value, dict):
            if isinstance(value.get('ann_file'), str) and value['ann_file']:
                yield value['ann_file']
            for item in value.values():
                yield from found(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from found(item)

    digests = {}
    for path in sorted({Path(name).resolve() for key in DATALOADERS
                        for name in found(cfg.get(key))}):
        if path.is_file():
            name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
            digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def resumable(work_dir: Path, expected: Path) -> bool:
    """Whether a stopped run of the config ``expected`` left a checkpoint to resume from."""
    pointer = Path(work_dir) / 'last_checkpoint'
    return (pointer.is_file() and Path(pointer.read_text().strip()).is_file() and
            same_config(Path(work_dir) / 'config.py', expected))


def set_aside(work_dir: Path) -> Optional[Path]:
    """Move a run folder that cannot be resumed (another config's run, finished or not, or one
    stopped before its first checkpoint) to ``<folder>.replaced-<time>``: a fresh run must not
    mix with it, and a finished result is never deleted. Returns where it went (None: there
    was nothing to keep)."""
    work_dir = Path(work_dir)
    if not work_dir.exists():
        return None
    if not any(work_dir.iterdir()):
        work_dir.rmdir()
        return None
    stamp = time.strftime('%Y%m%d_%H%M%S', time.localtime(work_dir.stat().st_mtime))
    target = work_dir.with_name(f'{work_dir.name}.replaced-{stamp}')
    work_dir.rename(target)
    return target


# ------------------------------------------------------------------- what a run logged
def train_starts(work_dir: Path) -> List[Path]:
    """The timestamp folders of a run's ``tools/train.py`` starts, oldest first (more than one
    when it was resumed)."""
    return sorted(path for path in Path(work_dir).glob('[0-9]*_[0-9]*') if path.is_dir())


def curves(work_dir: Path) -> Dict[str, Dict[str, float]]:
    """Per epoch: ``train_loss`` and ``train_top1`` (means over the epoch's logged batches)
    and, where validated, ``test_top1``, from the training run's ``scalars.json`` files. A run
    trained on blended labels (mixup, cutmix) logs no training top-1, mmaction2's heads having
    no class to score a mix against: its epochs carry the loss alone. A resumed run's later
    start redoes the epochs after its checkpoint: its values replace the earlier start's for
    every epoch it logged."""
    train_points: Dict[int, List[Dict[str, float]]] = {}
    tested: Dict[int, float] = {}
    for start in train_starts(work_dir):
        scalars = start / 'vis_data' / 'scalars.json'
        if not scalars.is_file():
            continue
        epochs: Dict[int, List[Dict[str, float]]] = {}
        for line in scalars.read_text().splitlines():
            entry = json.loads(line)
            if 'acc/top1' in entry:
                tested[int(entry['step'])] = entry['acc/top1']
            elif 'loss' in entry:
                epochs.setdefault(int(entry['epoch']), []).append(entry)
        train_points.update(epochs)
    out = {}
    for epoch, entries in sorted(train_points.items()):
        point = out[str(epoch)] = {}
        scored = [entry['top1_acc'] for entry in entries if 'top1_acc' in entry]
        if scored:
            point['train_top1'] = statistics.fmean(scored)
        point['train_loss'] = statistics.fmean(entry['loss'] for entry in entries)
        if epoch in tested:
            point['test_top1'] = tested[epoch]
    return out


LOG_TIME = re.compile(r'^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) - mmengine')


def training_seconds(work_dir: Path) -> float:
    """Wall time of a run's training from its mmengine logs: each start from its first line to
    its last, except that a start which a later one resumed counts only up to the checkpoint
    that was resumed (the epochs after it were trained again)."""
    starts = [next(start.glob('*.log')) for start in train_starts(work_dir)
              if any(start.glob('*.log'))]
    total = 0.0
    for index, log in enumerate(starts):
        stamped = [(datetime.strptime(match.group(1), '%Y/%m/%d %H:%M:%S'), line)
                   for line in log.read_text().splitlines()
                   for match in [LOG_TIME.match(line)] if match]
        end = stamped[-1][0]
        if index + 1 < len(starts):
            resumed = re.search(r'resumed epoch: (\d+)', starts[index + 1].read_text())
            saved = [stamp for stamp, line in stamped
                     if resumed and f'Saving checkpoint at {resumed.group(1)} epochs' in line]
            end = saved[-1] if saved else end
        total += (end - stamped[0][0]).total_seconds()
    return total


def last_epoch(work_dir: Path) -> Optional[str]:
    """The epoch of a stopped run's last checkpoint (``epoch_<n>.pth``), None if unnamed."""
    name = Path((Path(work_dir) / 'last_checkpoint').read_text().strip()).name
    match = re.fullmatch(r'epoch_(\d+)\.pth', name)
    return match.group(1) if match else None


# ------------------------------------------------------------------------ the record
class Record:
    """The committed JSON record of finished runs: ``{"results": {row: [run, ...]}, ...}``,
    each run with the ``key`` of what it trained, beside whatever else the benchmark keeps
    there (its costs, the data set's description)."""

    def __init__(self, path: Path, must_exist: bool = False) -> None:
        """Read the record at ``path``; one not there yet is empty (a command that trains
        writes it), unless it ``must_exist`` (one the tables are written from alone, where
        an empty record would empty them).

        Raises:
            ValueError: no record there though it ``must_exist``, or the file is not a record
                (no JSON, cut short by a kill, or not a JSON object): the file named, nothing
                written from it.
        """
        self.path = Path(path)
        self.data = {}
        if not self.path.is_file():
            if must_exist:
                raise ValueError(f'{self.path}: no such record; the tables are written from it '
                                 'alone, so name the record a command that trained wrote')
            return
        try:
            data = json.loads(self.path.read_text())
        except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
            what = 'empty' if not self.path.read_bytes().strip() else f'not JSON ({error})'
            raise ValueError(f'{self.path}: {what}, so no record of runs; a write cut short '
                             'leaves such a file: restore it (a committed record from git) or '
                             'move it aside') from error
        if not (isinstance(data, dict) and isinstance(data.get('results', {}), dict)):
            raise ValueError(f'{self.path}: not a record of runs: a record is a JSON object '
                             'whose "results" are an object of rows, each a list of runs; '
                             'name the record the benchmark wrote')
        self.data = data

    def runs(self) -> Dict[str, Dict]:
        """The recorded runs by key (runs recorded without one are not matched)."""
        return {run['key']: run for row_runs in self.data.get('results', {}).values()
                for run in row_runs if 'key' in run}

    def write(self, results: Dict[str, List[Dict]], **extra) -> None:
        """Rewrite the record with ``results`` (paths made portable) and ``extra`` sections,
        through a file beside it: a kill leaves the previous record, not half of this one."""
        from hyperframes_mm.utils import written_beside
        self.data = dict(results=portable(results), **extra)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with written_beside(self.path) as partial:
            partial.write_text(json.dumps(self.data, indent=1) + '\n')


@contextlib.contextmanager
def updating(path: Path) -> Iterator[Record]:
    """The record at ``path``, read when no other process holds it and written by the caller
    before it is released: benchmark commands that share a record (one validation fold each,
    run side by side) each add their runs to the others' instead of writing back a copy read
    before another's runs landed. The lock file lives in the temporary folder, not beside the
    committed record."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f'hyperframes-record-{digest}.lock'
    with open(lock, 'w') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield Record(path)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def portable(results: Dict[str, List[Dict]]) -> Dict[str, List[Dict]]:
    """The runs with their ``config`` and ``checkpoint`` paths relative to the repository
    where they lie inside it, so that the committed results name no machine's folders."""
    def relative(path: str) -> str:
        resolved = Path(path).resolve()
        return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else path
    return {name: [dict(run, **{key: relative(run[key]) for key in ('config', 'checkpoint')
                                if key in run}) for run in runs]
            for name, runs in results.items()}
