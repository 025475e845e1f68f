"""The doctor's data check decodes a frame of every video: videos that decord opens but cannot
decode passed ``--data`` and then stopped training and testing with ``BadVideoError``."""
import struct

import numpy as np
import pytest
from mmengine.config import Config

from hyperframes_mm.analysis.data_checks import VideoInfo, check_data, probe_video
from hyperframes_mm.datasets.video_io import write_video

#: what the plugin's errors add to decord's message on a width it cannot copy out
NARROW = ('DECORDArrayCopyFromTo: The size must exactly match (decord 0.6 cannot copy out the '
          'frames of some narrow widths, 16, 24, 48 and 72 pixels among them: re-encode the '
          'video at another width)')
#: why decord's pipelines refuse an MPEG-TS with B-frames (what write_video writes)
MISREAD = ('MPEG-TS with B-frames (pictures stored out of display order), whose frames decord '
           '0.6 returns out of place (later frames first, then one frame repeated): remux it into '
           'mp4 without re-encoding (ffmpeg -i IN -c copy OUT.mp4) and list the mp4')


def rotate_90(path) -> None:
    """Give an mp4 written upright a display matrix that turns it by 90 degrees (its track
    header's matrix; the stored frames stay as they are)."""
    data = bytearray(path.read_bytes())
    at = data.find(b'tkhd')
    version = data[at + 4]
    # version/flags, then times, track id, duration, reserved, layer, group, volume, reserved
    offset = at + 8 + (32 if version == 1 else 20) + 16
    data[offset:offset + 36] = struct.pack('>9i', 0, 0x10000, 0, -0x10000, 0, 0, 0, 0,
                                           0x40000000)
    path.write_bytes(bytes(data))


def test_a_width_decord_cannot_copy_out_is_an_unreadable_video(tmp_path):
    """48 pixels wide: decord opens it, and every frame read fails; the doctor reported 0
    errors for it."""
    frames = np.zeros((4, 64, 48, 3), np.uint8)
    write_video(tmp_path / 'narrow.mp4', frames)
    write_video(tmp_path / 'fine.mp4', np.zeros((4, 64, 64, 3), np.uint8))
    (tmp_path / 'train.txt').write_text('narrow.mp4 0\nfine.mp4 1\n')
    pipeline = [dict(type='DecordInit'), dict(type='DecordDecode')]
    cfg = Config(dict(train_dataloader=dict(dataset=dict(
        type='VideoDataset', ann_file=str(tmp_path / 'train.txt'),
        data_prefix=dict(video=str(tmp_path)), pipeline=pipeline))))
    findings = check_data(cfg, progress=False)
    assert [(f.severity, f.code) for f in findings] == [('error', 'unreadable-video')]
    assert findings[0].message.startswith(
        'train_dataloader.dataset: 1 of 2 videos cannot be read (opened and their first frame '
        f'decoded): {tmp_path}/narrow.mp4: DECORDError: ')
    assert findings[0].message.endswith(NARROW)
    fine = str(tmp_path / 'fine.mp4')
    assert probe_video(fine) == VideoInfo(fine, 4, 25.0)


def test_a_video_on_its_side_names_its_display_width(tmp_path):
    """Stored 96 wide, displayed 48 wide: the error blamed a narrow width, and the file's size
    showed none."""
    path = tmp_path / 'rot.mp4'
    write_video(path, np.zeros((4, 48, 96, 3), np.uint8))
    assert probe_video(str(path)).error is None  # upright, 96 wide: decodes
    rotate_90(path)
    info = probe_video(str(path))
    assert (info.frames, info.error.startswith('DECORDError: ')) == (0, True)
    assert info.error.endswith(
        f'{NARROW} (stored 96x48 and rotated by 90 degrees: the display width after rotation '
        'is 48 pixels)')


def narrow_ts_fine(root):
    """A config-less data set: a 48-pixel-wide mp4, an MPEG-TS with B-frames, a fine mp4."""
    write_video(root / 'narrow.mp4', np.zeros((4, 64, 48, 3), np.uint8))
    write_video(root / 'clip.ts', np.zeros((12, 64, 64, 3), np.uint8))
    write_video(root / 'fine.mp4', np.zeros((4, 64, 64, 3), np.uint8))
    (root / 'train.txt').write_text('narrow.mp4 0\nclip.ts 1\nfine.mp4 0\n')


def data_cfg(root, pipeline):
    return Config(dict(train_dataloader=dict(dataset=dict(
        type='VideoDataset', ann_file=str(root / 'train.txt'),
        data_prefix=dict(video=str(root)), pipeline=pipeline))))


@pytest.mark.parametrize('pipeline', [
    [dict(type='PyAVInit'), dict(type='PyAVDecode')],
    [dict(type='mmaction.PyAVInit'), dict(type='mmaction.PyAVDecode')],
    [dict(type='OpenCVInit'), dict(type='OpenCVDecode')]])
def test_videos_only_decord_fails_on_are_readable_under_another_decoder(tmp_path, pipeline):
    """A PyAV pipeline decodes a 48-pixel-wide video and an MPEG-TS right, and the doctor said
    they could not be read (decoding with decord whatever the pipeline used) and to skip
    them."""
    narrow_ts_fine(tmp_path)
    assert check_data(data_cfg(tmp_path, pipeline), progress=False) == []
    # the frame count and rate are decord's still, as for every pipeline
    ts, narrow = str(tmp_path / 'clip.ts'), str(tmp_path / 'narrow.mp4')
    assert probe_video(ts, decord_reads=False) == VideoInfo(ts, 12, 25.0)
    assert probe_video(narrow, decord_reads=False) == VideoInfo(narrow, 4, 25.0)


@pytest.mark.parametrize('pipeline', [
    [dict(type='DecordInit'), dict(type='DecordDecode')],
    [dict(type='SafeDecordInit'), dict(type='DecordDecode')],
    [dict(type='FrameCacheInit'), dict(type='FrameCacheDecode')]])
def test_videos_decord_fails_on_are_unreadable_under_a_decord_pipeline(tmp_path, pipeline):
    """decord (and the frame cache, which its builder fills through decord) cannot copy out a
    48-pixel-wide frame and returns an MPEG-TS's frames out of place."""
    narrow_ts_fine(tmp_path)
    findings = check_data(data_cfg(tmp_path, pipeline), progress=False)
    assert [(f.severity, f.code) for f in findings] == [('error', 'unreadable-video')]
    assert findings[0].message.startswith(
        'train_dataloader.dataset: 2 of 3 videos cannot be read (opened and their first frame '
        f'decoded): {tmp_path}/narrow.mp4: DECORDError: ')
    assert findings[0].message.endswith(f'{NARROW}; {tmp_path}/clip.ts: ValueError: {MISREAD}')
