"""datasets/video_io.py: the one video opener and its errors, and the video writer."""
import fcntl
import io
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


def moving_bar(count=60):
    """Frame i lights column i: the column a decoder returns says which frame it gave."""
    frames = np.zeros((count, 48, 64, 3), np.uint8)
    frames[np.arange(count), :, np.arange(count)] = 255
    return frames


def lit_columns(frames):
    return [int(frame.mean(axis=(0, 2)).argmax()) for frame in frames]


MISREAD = ('MPEG-TS with B-frames (pictures stored out of display order), whose frames decord '
           '0.6 returns out of place (later frames first, then one frame repeated): remux it into '
           'mp4 without re-encoding (ffmpeg -i IN -c copy OUT.mp4) and list the mp4')


def test_an_mpeg_ts_is_refused_saying_how_to_remux_it(tmp_path):
    """decord read an intact MPEG-TS without an error, its later frames in place of its first
    ones and then one frame repeated (only its stderr said so): training, testing and the
    frame cache took them as the video's. The container is probed, not guessed from the name."""
    import decord
    ts = tmp_path / 'clip.ts'
    write_video(ts, moving_bar(), fps=25)
    # what decord hands out (if a decord release reads it right, the refusal can go)
    assert lit_columns(decord.VideoReader(str(ts)).get_batch(list(range(60))).asnumpy()[:1]) \
        != [0]
    with pytest.raises(BadVideoError) as caught:
        open_video(str(ts))
    assert str(caught.value) == f'{ts}: {MISREAD}'
    assert caught.value.filename == str(ts)
    # the doctor and the frame-cache builder report the cause, as for decord's own errors
    assert type(caught.value.__cause__) is ValueError and str(caught.value.__cause__) == MISREAD
    with pytest.raises(BadVideoError) as caught:
        open_video(str(ts), name='camera 1')
    assert str(caught.value) == f'camera 1 ({ts}): {MISREAD}'
    named_mp4 = tmp_path / 'really_ts.mp4'
    named_mp4.write_bytes(ts.read_bytes())
    assert video_io.decord_misread(named_mp4) == 'MPEG-TS'
    with pytest.raises(BadVideoError) as caught:
        open_video(str(named_mp4))
    assert str(caught.value) == f'{named_mp4}: {MISREAD}'
    # an in-memory copy (SafeDecordInit's remote backends) is probed too
    with pytest.raises(BadVideoError) as caught:
        open_video(io.BytesIO(ts.read_bytes()), name='s3://bucket/clip.ts')
    assert str(caught.value) == f's3://bucket/clip.ts: {MISREAD}'


def write_ts(path, codec, options):
    """The moving bar as an MPEG-TS, encoded with ``codec`` and its ``options``."""
    with av.open(str(path), 'w', format='mpegts') as container:
        stream = container.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, 'yuv420p'
        stream.options = options
        for frame in moving_bar():
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format='rgb24')))
        container.mux(stream.encode())


@pytest.mark.parametrize('codec, options', [
    ('libx264', {'bf': '0'}), ('libx264', {'x264-params': 'bframes=0'}), ('mpeg4', {})])
def test_an_mpeg_ts_without_b_frames_is_read_and_right(tmp_path, codec, options):
    """decord misreads an MPEG-TS only where its stream has B-frames; one without them (MPEG-4
    Part 2, H.264 as cameras write it) read right, and every MPEG-TS was refused all the same:
    data sets that trained before stopped at their first sample."""
    ts = tmp_path / 'camera.ts'
    write_ts(ts, codec, options)
    with av.open(str(ts)) as container:
        assert container.format.name == 'mpegts'
        decoded = np.stack([frame.to_ndarray(format='rgb24')
                            for frame in container.decode(video=0)])
    assert video_io.decord_misread(ts) is None
    frames = open_video(str(ts)).get_batch(list(range(60))).asnumpy()
    assert lit_columns(frames) == list(range(60))
    np.testing.assert_array_equal(frames, decoded)
    # random access too: decord seeks a B-frame stream's frames out of place
    assert lit_columns(open_video(str(ts)).get_batch([50, 3, 27, 59, 0]).asnumpy()) == \
        [50, 3, 27, 59, 0]


def test_an_mpeg_ts_is_probed_once_per_process_until_it_changes(tmp_path, monkeypatch):
    """The probe (an av.open) ran at every open of every training sample, each epoch."""
    ts = tmp_path / 'clip.ts'
    write_video(ts, moving_bar(), fps=25)
    opened = []
    real_open = av.open

    def counted_open(file, mode='r', **kwargs):
        if mode == 'r':  # the probe's; write_ts writes through av.open too
            opened.append(file)
        return real_open(file, mode, **kwargs)

    monkeypatch.setattr(av, 'open', counted_open)
    for _ in range(3):
        with pytest.raises(BadVideoError):
            open_video(str(ts))
    assert opened == [str(ts)]
    # written anew (another size): probed anew, and a B-frame-free stream is now read
    write_ts(ts, 'libx264', {'bf': '0'})
    for _ in range(3):
        assert len(open_video(str(ts))) == 60
    assert opened == [str(ts)] * 2
    # an in-memory file has no key to keep a verdict by: probed at every open
    copies = [io.BytesIO(ts.read_bytes()) for _ in range(2)]
    assert [len(open_video(data, name='clip.ts')) for data in copies] == [60, 60]
    assert opened[2:] == copies


def test_an_mp4_stays_on_decord_and_a_remuxed_mpeg_ts_reads_right(tmp_path):
    mp4 = tmp_path / 'clip.mp4'
    write_video(mp4, moving_bar(), fps=25)
    assert video_io.decord_misread(str(mp4)) is None
    assert lit_columns(open_video(str(mp4)).get_batch(list(range(60))).asnumpy()) == \
        list(range(60))
    # an in-memory file is left where it stood: decord reads it from there
    data = io.BytesIO(mp4.read_bytes())
    assert video_io.decord_misread(data) is None and data.tell() == 0
    assert len(open_video(data, name='clip.mp4')) == 60
    # not a video: None, and decord's own open says what is wrong
    assert video_io.decord_misread(io.BytesIO(b'\x00' * 4096)) is None
    # the remux the message gives (ffmpeg -c copy: packets copied, nothing re-encoded)
    ts, remuxed = tmp_path / 'clip.ts', tmp_path / 'remuxed.mp4'
    write_video(ts, moving_bar(), fps=25)
    with av.open(str(ts)) as source, av.open(str(remuxed), 'w') as target:
        stream = target.add_stream_from_template(source.streams.video[0])
        for packet in source.demux(source.streams.video[0]):
            if packet.dts is not None:  # the flush packet
                packet.stream = stream
                target.mux(packet)
    assert lit_columns(open_video(str(remuxed)).get_batch(list(range(60))).asnumpy()) == \
        list(range(60))
