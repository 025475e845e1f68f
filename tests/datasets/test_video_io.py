"""datasets/video_io.py: the one video opener and its errors, and the video writer."""
import fcntl
import os
import socket

import av
import numpy as np
import pytest

from hyperframes_mm.datasets import video_io
from hyperframes_mm.datasets.video_io import BadVideoError, open_video, write_video

from ..conftest import REPO


def test_open_video_reads_what_write_video_wrote(tmp_path):
    frames = np.zeros((7, 16, 32, 3), np.uint8)
    path = tmp_path / 'clip.mp4'
    write_video(path, frames, fps=10)
    reader = open_video(str(path))
    assert len(reader) == 7
    assert reader.get_batch([0, 6]).asnumpy().shape == (2, 16, 32, 3)
    assert float(reader.get_avg_fps()) == 10.0


def test_write_video_writes_through_a_locked_temporary_named_by_host_and_process(tmp_path,
                                                                              monkeypatch):
    """Its temporaries had random names (tempfile.mkstemp) and no lock: a sweep could not tell
    a killed writer's from a live one's (utils.paths.remove_orphan_temps). The name ends in .tmp,
    so the container is still the one the final name's suffix says."""
    encode, seen = video_io._encode, []

    def watched(path, *args):
        encode(path, *args)
        probe = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = False
        except BlockingIOError:
            locked = True
        finally:
            os.close(probe)
        seen.append((sorted(os.listdir(tmp_path)), locked))
    monkeypatch.setattr(video_io, '_encode', watched)
    frames = np.zeros((3, 16, 16, 3), np.uint8)
    write_video(tmp_path / 'clip.mp4', frames, fps=10)
    write_video(tmp_path / 'clip.avi', frames, fps=10)
    writer = f'{socket.gethostname()}.{os.getpid()}'
    assert seen == [([f'.clip.mp4.{writer}.tmp'], True),
                    ([f'.clip.avi.{writer}.tmp', 'clip.mp4'], True)]
    assert sorted(os.listdir(tmp_path)) == ['clip.avi', 'clip.mp4']
    formats = {}
    for name in ('clip.mp4', 'clip.avi'):
        with av.open(str(tmp_path / name)) as container:
            formats[name] = container.format.name
    assert formats == {'clip.mp4': 'mov,mp4,m4a,3gp,3g2,mj2', 'clip.avi': 'avi'}


def test_a_suffix_that_names_no_container_is_refused_naming_the_file(tmp_path):
    """The container is guessed from the final name before any file is made."""
    path = tmp_path / 'clip.zzz'
    with pytest.raises(ValueError) as refused:
        write_video(path, np.zeros((2, 16, 16, 3), np.uint8))
    assert str(refused.value) == (f"{path}: FFmpeg names no container by the suffix '.zzz' "
                                  '(Could not determine output format)')
    assert os.listdir(tmp_path) == []


def test_a_file_decord_cannot_read_is_a_bad_video_error_naming_it(tmp_path):
    path = tmp_path / 'not_a_video.mp4'
    path.write_bytes(b'\x00' * 4096)
    with pytest.raises(BadVideoError, match=r'not_a_video\.mp4: decord cannot read it as a '
                       r'video \(truncated, not a video, or no video stream\): ') as caught:
        open_video(str(path))
    assert caught.value.filename == str(path)
    assert caught.value.__cause__ is not None  # decord's own error, kept for the traceback
    with pytest.raises(BadVideoError, match=r'^camera 1: decord cannot read it'):
        open_video(str(path), name='camera 1')


def test_a_file_that_does_not_exist_says_so(tmp_path):
    """decord reports a missing file as a read error, which reads as a damaged one."""
    path = tmp_path / 'gone.mp4'
    with pytest.raises(BadVideoError) as caught:
        open_video(str(path))
    assert str(caught.value) == f'{path}: video file not found'
    assert caught.value.filename == str(path)
    with pytest.raises(BadVideoError) as caught:
        open_video(str(path), name='camera 1')
    assert str(caught.value) == f'camera 1: video file not found ({path})'
    # a URL is not a local file: decord tries it, and its error is the one reported
    with pytest.raises(BadVideoError, match=r'^nosuchproto://x/gone\.mp4: decord cannot read '):
        open_video('nosuchproto://x/gone.mp4')


def test_the_package_opens_videos_through_open_video_only():
    openers = [path.relative_to(REPO).as_posix()
               for path in sorted((REPO / 'hyperframes_mm').rglob('*.py'))
               if 'VideoReader(' in path.read_text()]
    assert openers == ['hyperframes_mm/datasets/video_io.py']
