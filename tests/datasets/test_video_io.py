"""datasets/video_io.py: the one video opener and its errors."""
import numpy as np
import pytest

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
