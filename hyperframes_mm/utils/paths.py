"""Where a tool may write: never over what it reads, never half a file where a finished one
goes."""
import errno
import fcntl
import os
import re
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Union

PathLike = Union[str, 'os.PathLike[str]']


def same_file(first: PathLike, second: PathLike) -> bool:
    """Whether two paths name one file: the same spelling, a link to it, or a hard link."""
    if os.path.exists(first) and os.path.exists(second):
        return os.path.samefile(first, second)
    return os.path.realpath(first) == os.path.realpath(second)


def refuse_overwrite(outputs: Dict[str, PathLike], inputs: Dict[str, PathLike]) -> None:
    """Refuse, before any work, outputs that would destroy what the run reads or writes
    (the checkpoint a model is loaded from, its config, a source video, another output of the
    same run) or that name a directory.

    Args:
        outputs (dict): what each file the tool writes is (``'--out'``, ``'the report'``) ->
            its path.
        inputs (dict): what each file the tool reads is -> its path (None: not given).

    Raises:
        ValueError: naming the output, its path and the file it would replace.
    """
    written = list(outputs.items())
    for index, (name, path) in enumerate(written):
        if os.path.isdir(path) or str(path).endswith(('/', os.sep)):
            # a path ending in a separator names a directory even before it exists: writing
            # it as a file would leave a file where the user expects a folder
            raise ValueError(f'{name} {path} is a directory; name the file to write in it')
        others = [(what, other) for what, other in inputs.items() if other is not None]
        others += [(what, other) for what, other in written[:index]]
        for what, other in others:
            if same_file(path, other):
                raise ValueError(f'{name} {path} is {what} ({other}): writing it would destroy '
                                 f'that file; write to another path')


def check_output_folder(name: str, path: PathLike) -> None:
    """Refuse, before any work, an output whose folder cannot be made or written: a tool that
    found out only when it wrote (after loading a model and exporting it) ended in a
    traceback. Nothing is created here (a run refused later leaves no empty folders); the
    tool makes the folder when it writes.

    Raises:
        ValueError: naming the output, its path and the folder in the way.
    """
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f'{name} {path}: its folder {folder} cannot be made: {existing} is a '
                         'file')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f'{name} {path}: its folder {folder} cannot be written ({existing} is '
                         'not writable)')


@contextmanager
def written_beside(path: PathLike, suffix: str = '') -> Iterator[Path]:
    """A temporary path beside ``path`` (``.NAME.PID.tmpSUFFIX``: the same file system, so the
    move is atomic) for the block to write; moved to ``path`` when the block ends without an
    error, removed when it raises. A kill, a full disk or a failed check inside the block
    leaves ``path`` as it was, never a file that would pass for a finished one."""
    path = Path(path)
    partial = path.with_name(f'.{path.name}.{os.getpid()}.tmp{suffix}')
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def host_temp_name(path: PathLike) -> Path:
    """The temporary file beside ``path`` that this process writes it through
    (``.NAME.HOST.PID.tmp``): named by host and process, so a file left by a killed writer is
    told from a live one's, on a file system other hosts share too
    (:func:`remove_orphan_temps`)."""
    path = Path(path)
    return path.with_name(f'.{path.name}.{socket.gethostname()}.{os.getpid()}.tmp')


def remove_orphan_temps(folder: PathLike, name: Optional[str] = None) -> List[Path]:
    """Delete the temporary files in ``folder`` (of the file ``name`` only, where given) that
    writers killed on this host left (:func:`host_temp_name`): a killed process never removes
    its own, and a checkpoint's is as large as the checkpoint. Files of live processes and of
    other hosts are left alone.

    Returns:
        list[Path]: the files removed.
    """
    folder = Path(folder)
    pattern = re.compile(rf'^\.{re.escape(name) if name else ".+"}\.'
                         rf'{re.escape(socket.gethostname())}\.(\d+)\.tmp$')
    removed = []
    for path in sorted(folder.glob(f'.{glob_escape(name) if name else "*"}.*.tmp')):
        match = pattern.match(path.name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        try:
            handle = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            # a writer of another PID namespace (a container sharing the host's name) is no
            # process here, but holds its file's lock (:func:`claim`) until it ends
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # locked; or a file system without locks, where none can be told apart
            continue
        else:
            path.unlink(missing_ok=True)
            removed.append(path)
        finally:
            os.close(handle)
    return removed


def atomic_write_bytes(data: bytes, path: PathLike) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds its old content or all of ``data``.

    The bytes go to a temporary file in the same directory (``os.replace`` is atomic only
    within one file system), which is fsynced, renamed over ``path``, and the directory entry
    fsynced, so neither a kill nor a power loss leaves a partial file under the final name.
    A kill before the rename leaves the hidden ``.NAME.HOST.PID.tmp`` file, which the next
    sweep of its folder removes (:func:`remove_orphan_temps`: the next training's
    :class:`~hyperframes_mm.engine.hooks.SafeCheckpointHook`, a synthetic set's rebuild).

    Args:
        data (bytes): the complete new content.
        path (str | os.PathLike): the file to write; its directory is created if missing.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = str(host_temp_name(os.path.join(directory, os.path.basename(path))))
    # os.open with 0o666 lets the umask decide the mode, as the plain open() it replaces did;
    # a file of this name is this process's own or one a killed process of its number left
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        claim(handle)
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
            os.replace(temporary, path)  # still open, so still locked: no sweep between
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def write_text_atomically(text: str, path: PathLike) -> None:
    """Replace the text file ``path`` with ``text`` whole (UTF-8): ``last_checkpoint``, which a
    bare ``open(..., 'w')`` leaves empty when killed between truncation and write."""
    atomic_write_bytes(text.encode('utf-8'), path)


def _fsync_directory(directory: str) -> None:
    """Persist a rename: on POSIX the directory entry lives in the directory's own inode."""
    if os.name != 'posix':
        return
    handle = os.open(directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def claim(handle) -> None:
    """Lock the temporary file open as ``handle`` (a file object or descriptor) for as long as
    this process holds it open: :func:`remove_orphan_temps` leaves a locked file alone whatever
    its name's process number says, and the kernel drops the lock when the writer dies. A file
    system without locks writes the file unlocked: a save must not fail for want of one (the
    sweep leaves such files alone)."""
    try:
        fcntl.flock(handle if isinstance(handle, int) else handle.fileno(), fcntl.LOCK_EX)
    except OSError as error:
        if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


def glob_escape(name: str) -> str:
    """``name`` as a glob pattern that matches only itself."""
    return re.sub(r'([*?\[])', r'[\1]', name)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
