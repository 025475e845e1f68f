"""A checkpoint save killed before its rename leaves its temporary file: the next training
removes it and says so, where the file, as large as a checkpoint, stayed in the work dir for
good."""
import os
import socket
import subprocess

from mmengine.config import Config
from mmengine.registry import RUNNERS

from hyperframes_mm.engine import SafeCheckpointHook
from hyperframes_mm.utils.paths import remove_orphan_temps
from ..conftest import TINY_CONFIG
from .test_checkpoint import killed_mid_save


def test_the_next_training_removes_what_a_killed_save_left(tmp_path, tiny_dataset, monkeypatch):
    work = tmp_path / 'work'
    work.mkdir()
    writer = killed_mid_save(work / 'epoch_1.pth', 16 << 20)
    left = f'.epoch_1.pth.{socket.gethostname()}.{writer}.tmp'
    assert sorted(path.name for path in work.glob('.*.tmp')) == [left]
    # a live writer's file (this process's) and another host's are not the killed save's
    live = work / f'.epoch_2.pth.{socket.gethostname()}.{os.getpid()}.tmp'
    foreign = work / '.epoch_2.pth.otherhost.1.tmp'
    live.write_bytes(b'x')
    foreign.write_bytes(b'x')
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.work_dir = str(work)
    runner = RUNNERS.build(cfg)
    warned = []
    monkeypatch.setattr(runner.logger, 'warning', warned.append)
    hook = next(hook for hook in runner.hooks if isinstance(hook, SafeCheckpointHook))
    hook.before_train(runner)
    assert sorted(path.name for path in work.glob('.*.tmp')) == sorted([live.name, foreign.name])
    assert warned == [f'removed 1 temporary file(s) that a killed save left: {work / left}']
    hook.before_train(runner)
    assert len(warned) == 1  # nothing left to say


def test_only_the_named_files_temporaries_go(tmp_path):
    """A name with glob characters matches itself only (the frame cache's entries name
    their videos)."""
    dead = subprocess.Popen(['true'])
    dead.wait()
    host = socket.gethostname()
    kept = tmp_path / f'.other[1].pth.{host}.{dead.pid}.tmp'
    gone = tmp_path / f'.epoch[1].pth.{host}.{dead.pid}.tmp'
    kept.write_bytes(b'x')
    gone.write_bytes(b'x')
    assert remove_orphan_temps(tmp_path, 'epoch[1].pth') == [gone]
    assert kept.exists() and not gone.exists()


def test_a_locked_temporary_is_a_live_writers_whatever_its_process_number(tmp_path):
    """A writer in another PID namespace (a container sharing the host's name) is no process
    here: its checkpoint's temporary file was removed mid-write, and its save failed."""
    from hyperframes_mm.utils.paths import claim
    dead = subprocess.Popen(['true'])
    dead.wait()
    temp = tmp_path / f'.epoch_1.pth.{socket.gethostname()}.{dead.pid}.tmp'
    with open(temp, 'wb') as writer:
        claim(writer)
        assert remove_orphan_temps(tmp_path) == []
        assert temp.exists()
    assert remove_orphan_temps(tmp_path) == [temp]


def test_a_file_system_without_locks_saves_and_keeps_what_it_cannot_tell(tmp_path, monkeypatch):
    """flock fails with ENOLCK on some network file systems: the save goes on unlocked, and
    the sweep, unable to tell a live writer's file, leaves it."""
    import errno
    import fcntl

    from hyperframes_mm.engine.checkpoint import atomic_write_bytes

    def no_locks(handle, operation):
        raise OSError(errno.ENOLCK, 'No locks available')
    monkeypatch.setattr(fcntl, 'flock', no_locks)
    atomic_write_bytes(b'abc', tmp_path / 'epoch_1.pth')
    assert (tmp_path / 'epoch_1.pth').read_bytes() == b'abc'
    dead = subprocess.Popen(['true'])
    dead.wait()
    temp = tmp_path / f'.epoch_2.pth.{socket.gethostname()}.{dead.pid}.tmp'
    temp.write_bytes(b'x')
    assert remove_orphan_temps(tmp_path) == [] and temp.exists()
