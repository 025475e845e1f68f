"""The frame cache holds decord's frames bit for bit, refuses stale or damaged entries, and is
written atomically."""
import multiprocessing
import os
import shutil
import socket
import time
from pathlib import Path

import decord
import numpy as np
import pytest
from mmaction.registry import TRANSFORMS
from mmengine.dataset import Compose

from hyperframes_mm.datasets.annotations import AnnotationError
from hyperframes_mm.datasets.frame_cache import (
    CorruptFrameCacheError, FrameCacheError, FrameCacheHeader, MissingFrameCacheError,
    StaleFrameCacheError, build_frame_cache, entry_path, open_entry, read_frames, read_header,
    read_video_list, resize_short_side, verify_data, write_entry)
from hyperframes_mm.datasets.transforms import FrameCacheDecode, FrameCacheInit
from hyperframes_mm.datasets.video_io import BadVideoError, write_video
from hyperframes_mm.utils.paths import remove_orphan_temps

from ..conftest import REPO, load_script

SHARED_VIDEOS = REPO.parent / 'shared' / 'videos'


def _frames(num_frames, height, width, seed):
    """A textured square moving over a gradient, with noise: real motion for the encoder."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) * 127 // (width + height)], -1)
    frames = np.repeat(base[None].astype(np.uint8), num_frames, axis=0)
    patch = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    for t in range(num_frames):
        top, left = (2 * t) % (height - 16), (3 * t) % (width - 16)
        frames[t, top:top + 16, left:left + 16] = patch
    noise = rng.integers(-6, 7, frames.shape)
    return np.clip(frames.astype(np.int16) + noise, 0, 255).astype(np.uint8)


@pytest.fixture(scope='module')
def video_root(tmp_path_factory):
    """Generated videos: an H.264 mp4, an AVI, and a second mp4 in a sub-folder."""
    root = tmp_path_factory.mktemp('videos')
    write_video(root / 'a.mp4', _frames(40, 64, 96, 0), fps=25)
    write_video(root / 'b.avi', _frames(30, 48, 64, 1), fps=15)
    write_video(root / 'sub' / 'c.mp4', _frames(24, 64, 64, 2), fps=30)
    (root / 'list.txt').write_text('a.mp4 0\nb.avi 1\nsub/c.mp4 2\n')
    return root


@pytest.fixture()
def videos(video_root, tmp_path):
    """A private copy of the generated videos (tests modify them)."""
    root = tmp_path / 'videos'
    shutil.copytree(video_root, root)
    return root


def _decord_all(path):
    """Every frame, decoded by decord in order from frame 0.

    The reference for "decord's frames": decord's random access (what DecordDecode does) into
    AVI files returns a wrong frame now and then (dmlc/decord#195; here the last frame of the
    UCF101 clip came back as its predecessor in about 1 read in 10 under CPU load), while
    decoding in order from frame 0, as the cache builder does, gives the same frames every time.
    """
    reader = decord.VideoReader(str(path), num_threads=1)
    return reader.get_batch(list(range(len(reader)))).asnumpy()


def _run(pipeline, results):
    return Compose([TRANSFORMS.build(t) if isinstance(t, dict) else t for t in pipeline])(
        dict(results))


def _cached_clips(cache_root, video_root, filename, short_side=None):
    """FrameCacheInit -> SampleFrames (3 test clips of 5 frames, interval 3) -> FrameCacheDecode."""
    return _run([
        dict(type='FrameCacheInit', cache_root=str(cache_root), video_root=str(video_root),
             short_side=short_side),
        dict(type='SampleFrames', clip_len=5, frame_interval=3, num_clips=3, test_mode=True),
        dict(type='FrameCacheDecode')
    ], dict(filename=str(filename), start_index=0, modality='RGB'))


def test_entries_hold_decord_frames_bit_for_bit(videos, tmp_path):
    cache = tmp_path / 'cache'
    summary = build_frame_cache(read_video_list(videos / 'list.txt'), videos, cache,
                                progress=False)
    assert (summary.videos, summary.built, summary.rebuilt, summary.fresh) == (3, 3, 0, 0)
    assert summary.failed == {}
    assert summary.frames == 40 + 30 + 24
    sizes = [4096 + 40 * 64 * 96 * 3, 4096 + 30 * 48 * 64 * 3, 4096 + 24 * 64 * 64 * 3]
    assert summary.bytes == summary.bytes_written == sum(sizes)
    for name, size, fps in [('a.mp4', sizes[0], 25.0), ('b.avi', sizes[1], 15.0),
                            ('sub/c.mp4', sizes[2], 30.0)]:
        entry = cache / (name + '.hfc')
        assert entry.stat().st_size == size
        header, frames = open_entry(entry, videos / name, short_side=None)
        assert (header.source, header.fps, header.data_offset) == (name, fps, 4096)
        assert (header.source_size, header.source_mtime_ns) == (
            (videos / name).stat().st_size, (videos / name).stat().st_mtime_ns)
        expected = _decord_all(videos / name)
        assert header.shape == expected.shape
        assert list(header.source_shape) == list(expected.shape[1:3])
        np.testing.assert_array_equal(frames, expected)
        verify_data(entry)


@pytest.mark.parametrize('name', ['short_32frames.mp4', 'ucf101_ApplyEyeMakeup_g01_c01.avi'])
def test_real_videos_cached_clips_equal_decord_frames(name, tmp_path):
    if not (SHARED_VIDEOS / name).is_file():
        pytest.skip(f'real sample video {name} not present')
    cache = tmp_path / 'cache'
    summary = build_frame_cache([name], SHARED_VIDEOS, cache, progress=False)
    assert summary.built == 1 and summary.failed == {}
    from_cache = _cached_clips(cache, SHARED_VIDEOS, SHARED_VIDEOS / name)
    from_video = _run([dict(type='DecordInit')], dict(filename=str(SHARED_VIDEOS / name)))
    assert from_cache['total_frames'] == from_video['total_frames']
    assert from_cache['avg_fps'] == from_video['avg_fps']
    assert len(from_cache['imgs']) == 15
    expected = _decord_all(SHARED_VIDEOS / name)[from_cache['frame_inds']]
    np.testing.assert_array_equal(np.stack(from_cache['imgs']), expected)
    assert from_cache['img_shape'] == from_cache['original_shape'] == expected.shape[1:3]
    assert 'frame_cache' not in from_cache


def test_short_side_entries_equal_decode_then_resize(videos, tmp_path):
    cache = tmp_path / 'cache'
    build_frame_cache(['a.mp4'], videos, cache, short_side=32, progress=False)
    header = read_header(cache / 'a.mp4.hfc')
    assert (header.height, header.width, header.short_side) == (32, 48, 32)
    assert list(header.source_shape) == [64, 96]
    from_cache = _cached_clips(cache, videos, videos / 'a.mp4', short_side=32)
    frames = _decord_all(videos / 'a.mp4')[from_cache['frame_inds']]
    resized = _run([dict(type='Resize', scale=(-1, 32))],
                   dict(imgs=list(frames), img_shape=frames.shape[1:3]))
    np.testing.assert_array_equal(np.stack(from_cache['imgs']), np.stack(resized['imgs']))
    assert from_cache['original_shape'] == resized['img_shape'] == (32, 48)
    with pytest.raises(StaleFrameCacheError, match=r'a\.mp4\.hfc.*short_side=32'):
        _cached_clips(cache, videos, videos / 'a.mp4')


def test_resize_short_side_exact_sizes():
    frames = np.zeros((2, 240, 320, 3), np.uint8)
    assert resize_short_side(frames, 120).shape == (2, 120, 160, 3)
    assert resize_short_side(frames, 256).shape == (2, 256, 341, 3)
    assert resize_short_side(frames, 240) is frames


def test_decode_reads_requested_frames_in_order():
    frames = np.arange(6 * 2 * 2 * 3, dtype=np.uint8).reshape(6, 2, 2, 3)
    results = FrameCacheDecode()(dict(frame_cache=frames, frame_inds=np.array([[5, 0], [0, 3]]),
                                      filename='v.mp4'))
    assert [int(img[0, 0, 0]) for img in results['imgs']] == [60, 0, 0, 36]
    assert results['img_shape'] == results['original_shape'] == (2, 2)
    assert 'frame_cache' not in results
    assert repr(FrameCacheDecode()) == 'FrameCacheDecode()'


@pytest.mark.parametrize('inds, error, message', [
    (np.array([0, 6]), IndexError, r'v\.mp4: frame index 6 out of range for 6 frames'),
    (np.array([-1, 2]), IndexError, r'v\.mp4: frame index -1 out of range'),
    (np.array([], dtype=np.int64), IndexError, r'v\.mp4: no frame indices'),
    (np.array([0.0, 1.0]), TypeError, r'v\.mp4: frame indices must be integers'),
])
def test_read_frames_refuses_bad_indices(inds, error, message):
    with pytest.raises(error, match=message):
        read_frames(np.zeros((6, 2, 2, 3), np.uint8), inds, name='v.mp4')


@pytest.fixture()
def built(videos, tmp_path):
    """videos, cache root and the entry of a.mp4, built."""
    cache = tmp_path / 'cache'
    write_entry(videos / 'a.mp4', entry_path(cache, 'a.mp4'), 'a.mp4')
    return videos, cache, cache / 'a.mp4.hfc'


def _init(cache, videos, **kwargs):
    return FrameCacheInit(cache_root=str(cache), video_root=str(videos), **kwargs)


def test_init_sets_the_decordinit_keys(built):
    videos, cache, entry = built
    results = _init(cache, videos)(dict(filename=str(videos / 'a.mp4')))
    assert (results['total_frames'], results['avg_fps'], results['original_shape']) == (
        40, 25.0, (64, 96))
    assert isinstance(results['frame_cache'].frames, np.memmap)
    assert not results['frame_cache'].frames.flags.writeable
    relative = FrameCacheInit(cache_root=str(cache))
    assert relative(dict(filename='a.mp4'))['total_frames'] == 40
    assert repr(relative) == (f"FrameCacheInit(cache_root={str(cache)!r}, video_root=None, "
                              "short_side=None, on_stale='error')")


def test_truncated_entry_is_refused_naming_the_file(built):
    videos, cache, entry = built
    size = entry.stat().st_size
    os.truncate(entry, size - 1)
    with pytest.raises(CorruptFrameCacheError,
                       match=rf'{entry}: truncated: {size - 1} bytes, its header says {size}'):
        _init(cache, videos)(dict(filename=str(videos / 'a.mp4')))
    os.truncate(entry, 100)
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: truncated header'):
        read_header(entry)
    os.truncate(entry, 5)
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: not a frame cache entry'):
        read_header(entry)


def test_damaged_entries_are_refused(built):
    videos, cache, entry = built
    good = entry.read_bytes()
    entry.write_bytes(good + b'\0')
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: {len(good) + 1} bytes, more'):
        read_header(entry)
    entry.write_bytes(good[:12] + b'x' + good[13:])
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: unreadable header'):
        read_header(entry)
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF
    entry.write_bytes(bytes(flipped))
    read_header(entry)
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: frame data checksum'):
        verify_data(entry)


def test_other_format_version_is_stale(built):
    videos, cache, entry = built
    data = bytearray(entry.read_bytes())
    at = data.index(b'"version": 3')
    data[at:at + 12] = b'"version": 9'
    entry.write_bytes(bytes(data))
    with pytest.raises(StaleFrameCacheError, match=rf'{entry}: format version 9'):
        read_header(entry)


def _header(**changes):
    fields = dict(num_frames=2, height=2, width=2, fps=1.0, source='v.mp4', source_size=1,
                  source_mtime_ns=1, source_probe_crc32='00000000', source_shape=[2, 2],
                  short_side=None, data_offset=4096,
                  frame_crc32=['00000000', '00000000'])
    fields.update(changes)
    return FrameCacheHeader(**fields)


@pytest.mark.parametrize('payload, message', [
    (b'{"version": 3, "num_frames": 3}', 'header lacks'),
    (b'[1]', 'header is not a JSON object'),
    (_header(num_frames=0).payload(), 'header field num_frames=0 is not a positive int'),
    (_header(width='2').payload(), "header field width='2' is not a positive int"),
    (_header(data_offset=20).payload(), 'data_offset=20 lies inside the header'),
    (_header(frame_crc32=['00000000']).payload(), 'header field frame_crc32 is not one 8-digit'),
    (_header(frame_crc32=['0000000g', '00000000']).payload(), 'header field frame_crc32 is not one'),
])
def test_bad_headers_are_corrupt(tmp_path, payload, message):
    entry = tmp_path / 'v.mp4.hfc'
    entry.write_bytes(b'HFCACHE\0' + len(payload).to_bytes(4, 'little') + payload + b' ' * 9000)
    with pytest.raises(CorruptFrameCacheError, match=rf'{entry}: {message}'):
        read_header(entry)


def test_header_that_does_not_fit():
    with pytest.raises(ValueError, match='does not fit before data_offset=16'):
        _header(data_offset=16).encode()
    assert len(_header().encode()) == 4096


@pytest.mark.parametrize('change', ['mtime', 'size'])
def test_stale_entry_is_refused_naming_the_file(built, change):
    videos, cache, entry = built
    source = videos / 'a.mp4'
    if change == 'mtime':
        stat = source.stat()
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    else:
        with open(source, 'ab') as handle:
            handle.write(b'\0' * 8)
    with pytest.raises(StaleFrameCacheError, match=rf'{entry}: stale: its source {source} '
                       'changed'):
        _init(cache, videos)(dict(filename=str(source)))


def test_a_source_replaced_keeping_size_and_time_is_stale(built, tmp_path):
    """cp -p, rsync -a and tar keep a file's modification time: another video of the same
    size copied so over the source leaves size and time as the entry recorded them."""
    videos, cache, entry = built
    source = videos / 'a.mp4'
    other = tmp_path / 'other.mp4'
    write_video(other, np.full((40, 64, 96, 3), 200, np.uint8), fps=25)
    data = other.read_bytes()
    size, stat = source.stat().st_size, source.stat()
    # the same length: cut or padded at the end (decoders stop at the container's end)
    source.write_bytes(data[:size] + b'\0' * max(0, size - len(data)))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (source.stat().st_size, source.stat().st_mtime_ns) == (size, stat.st_mtime_ns)
    with pytest.raises(StaleFrameCacheError, match=rf'{entry}: stale: its source {source} has '
                       'other contents of the same size and modification time'):
        _init(cache, videos)(dict(filename=str(source)))
    summary = build_frame_cache(['a.mp4'], videos, cache, progress=False, verify=True)
    assert (summary.rebuilt, summary.fresh) == (1, 0)


@pytest.mark.parametrize('edit', [(b'"height": 64', b'"height": 96', b'"width": 96', b'"width": 64'),
                                  (b'"fps": 25.0', b'"fps": 35.0')])
def test_a_header_edited_in_place_is_corrupt(built, edit):
    """The frames' checksums cover the same bytes whatever the header says their shape or
    frame rate is: height and width swapped would hand out scrambled frames."""
    videos, cache, entry = built
    data = entry.read_bytes()
    for old, new in zip(edit[::2], edit[1::2]):
        assert data.count(old) == 1 and len(old) == len(new)
        data = data.replace(old, new)
    entry.write_bytes(data)
    with pytest.raises(CorruptFrameCacheError, match=rf"{entry}: the header's checksum b'[0-9a-f]{{8}}' "
                       r"is not its CRC-32 [0-9a-f]{8}: the header was changed"):
        read_header(entry)
    with pytest.raises(CorruptFrameCacheError):
        _init(cache, videos)(dict(filename=str(videos / 'a.mp4')))


def test_an_entry_path_that_is_not_a_readable_file(videos, tmp_path):
    """A directory where an entry goes: the reader decodes instead (on_stale='decode') or names
    it; a build reports that entry failed and builds the others."""
    cache = tmp_path / 'cache'
    (cache / 'a.mp4.hfc').mkdir(parents=True)
    with pytest.raises(FrameCacheError, match=rf'{cache / "a.mp4.hfc"}: cannot open the frame '
                       'cache entry'):
        _init(cache, videos)(dict(filename=str(videos / 'a.mp4')))
    decoded = _init(cache, videos, on_stale='decode')(dict(filename=str(videos / 'a.mp4')))
    assert decoded['total_frames'] == 40
    summary = build_frame_cache(['a.mp4', 'b.avi'], videos, cache, progress=False)
    assert list(summary.failed) == ['a.mp4'] and summary.undecodable == []
    assert summary.built == 1 and (cache / 'b.avi.hfc').is_file()


def _flip_middle(entry, count=64):
    """Flip ``count`` bytes in the middle of an entry's frame data (size and header intact);
    returns the frame they fall in."""
    header = read_header(entry)
    data = bytearray(entry.read_bytes())
    middle = header.data_offset + (len(data) - header.data_offset) // 2
    for at in range(middle, middle + count):
        data[at] ^= 0xFF
    entry.write_bytes(bytes(data))
    return (middle - header.data_offset) // header.frame_bytes


@pytest.mark.parametrize('on_stale', ['error', 'decode'])
def test_bytes_flipped_inside_the_frames_never_reach_a_read(built, on_stale):
    videos, cache, entry = built
    source = videos / 'a.mp4'
    damaged = _flip_middle(entry)
    init = _init(cache, videos, on_stale=on_stale)
    results = init(dict(filename=str(source)))  # size and header are intact: the entry opens
    results['frame_inds'] = np.array([0, damaged, damaged + 1])
    if on_stale == 'error':
        with pytest.raises(CorruptFrameCacheError,
                           match=rf'{entry}: frame {damaged} of a.mp4 is damaged'):
            FrameCacheDecode()(results)
    else:
        frames = np.stack(FrameCacheDecode()(results)['imgs'])
        assert np.array_equal(frames, _decord_all(source)[[0, damaged, damaged + 1]])
    # frames away from the damage still come from the entry, checked
    results = init(dict(filename=str(source)))
    results['frame_inds'] = np.array([0, 1])
    assert np.array_equal(np.stack(FrameCacheDecode()(results)['imgs']),
                          _decord_all(source)[[0, 1]])


def test_every_frame_has_its_checksum(built):
    import zlib
    videos, cache, entry = built
    header, frames = open_entry(entry)
    assert header.frame_crc32 == [f'{zlib.crc32(frame.tobytes()):08x}' for frame in frames]


def _decode_all(init, source):
    """Every frame of ``source`` through FrameCacheInit then FrameCacheDecode."""
    results = init(dict(filename=str(source)))
    results['frame_inds'] = np.arange(results['total_frames'])
    return results, np.stack(FrameCacheDecode()(results)['imgs'])


def _tree(root):
    return sorted((path.relative_to(root), path.stat().st_mtime_ns) for path in
                  Path(root).rglob('*'))


def test_stale_entry_is_decoded_from_its_video_when_configured_and_left_alone(built):
    videos, cache, entry = built
    source = videos / 'a.mp4'
    write_video(source, _frames(20, 48, 64, 7), fps=10)
    before = entry.read_bytes()
    results, frames = _decode_all(_init(cache, videos, on_stale='decode'), source)
    assert (results['total_frames'], results['avg_fps'], results['original_shape']) == (
        20, 10.0, (48, 64))
    np.testing.assert_array_equal(frames, _decord_all(source))
    assert entry.read_bytes() == before and list(entry.parent.glob('.*.tmp')) == []


def test_decoded_frames_are_the_entry_frames_in_any_order_and_size(videos, tmp_path):
    """What 'decode' reads is what an entry built at the same short side holds, bit for bit,
    for indices in any order with repeats; nothing is written."""
    source = videos / 'b.avi'
    inds = np.array([29, 0, 7, 7, 3, 29, 12])
    for short_side in (None, 32):
        entry = tmp_path / f'{short_side}.hfc'
        write_entry(source, entry, short_side=short_side)
        header, mapped = open_entry(entry)
        init = _init(tmp_path / 'empty', videos, short_side=short_side, on_stale='decode')
        results = init(dict(filename=str(source)))
        assert results['original_shape'] == (header.height, header.width)
        assert results['total_frames'] == header.num_frames == 30
        results['frame_inds'] = inds
        decoded = np.stack(FrameCacheDecode()(results)['imgs'])
        np.testing.assert_array_equal(decoded, np.asarray(mapped)[inds])
    assert not (tmp_path / 'empty').exists()


def test_missing_entry(built, tmp_path):
    videos, cache, entry = built
    source = videos / 'b.avi'
    with pytest.raises(MissingFrameCacheError, match=rf'{cache / "b.avi.hfc"}: no frame cache'):
        _init(cache, videos)(dict(filename=str(source)))
    results, frames = _decode_all(_init(cache, videos, on_stale='decode'), source)
    assert results['total_frames'] == 30
    np.testing.assert_array_equal(frames, _decord_all(source))
    assert not (cache / 'b.avi.hfc').exists()
    # no entry and no video: the video is the error, not raised while handling the entry's
    # (whose advice, build the cache, cannot help)
    with pytest.raises(BadVideoError) as caught:
        _init(cache, videos, on_stale='decode')(dict(filename=str(videos / 'nope.mp4')))
    assert str(caught.value) == f'{videos / "nope.mp4"}: video file not found'
    assert caught.value.__context__ is None


def test_decode_logs_missing_entries_once_and_unusable_ones_each(built, log_lines):
    videos, cache, entry = built
    before = _tree(cache)
    init = _init(cache, videos, on_stale='decode')
    for name in ('b.avi', 'sub/c.mp4'):  # never built: one line for both
        assert init(dict(filename=str(videos / name)))['total_frames'] in (30, 24)
    write_video(videos / 'a.mp4', _frames(20, 48, 64, 7), fps=10)  # stale: its own line
    init(dict(filename=str(videos / 'a.mp4')))
    messages = [line for line in log_lines if line.startswith('FrameCacheInit')]
    assert len(messages) == 2
    assert messages[0].startswith(f'FrameCacheInit: no frame cache entries under {cache} for '
                                  f'some videos (first: {cache / "b.avi.hfc"}); decoding them')
    assert messages[1].startswith(f'FrameCacheInit: decoding {videos / "a.mp4"}, its entry is '
                                  f'unusable: {entry}: stale')
    assert _tree(cache) == before


def test_a_training_sample_of_a_video_that_does_not_exist_names_file_and_sample(videos):
    """The frame-cache families' training read: CheckedVideoDataset, no entry, decoded."""
    from mmaction.registry import DATASETS
    (videos / 'gone.txt').write_text('a.mp4 0\ngone.mp4 1\n')
    dataset = DATASETS.build(dict(type='CheckedVideoDataset', ann_file=str(videos / 'gone.txt'),
                                  data_prefix=dict(video=str(videos)),
                                  pipeline=[dict(type='FrameCacheInit', on_stale='decode')]))
    gone = str(videos / 'gone.mp4')
    with pytest.raises(BadVideoError) as caught:
        dataset[1]
    assert str(caught.value) == f'{gone} (sample 1): BadVideoError: {gone}: video file not found'
    assert (caught.value.filename, caught.value.index) == (gone, 1)
    assert caught.value.__cause__.__context__ is None


def test_entry_outlives_its_source(built):
    videos, cache, entry = built
    (videos / 'a.mp4').unlink()
    assert _init(cache, videos)(dict(filename=str(videos / 'a.mp4')))['total_frames'] == 40


@pytest.mark.parametrize('kwargs, message', [
    (dict(on_stale='ignore'), r"on_stale must be one of \('error', 'decode'\), got 'ignore'"),
    (dict(on_stale='rebuild'), r"on_stale='rebuild' is gone: loading transforms no longer "
                               r"write entries. Use on_stale='decode' and build the entries "
                               r"before the run with custom_hooks=\[dict\(type="
                               r"'BuildFrameCacheHook'\)\]"),
    (dict(short_side=0), r'short_side must be a positive int or None, got 0'),
])
def test_init_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FrameCacheInit(cache_root='cache', **kwargs)
    with pytest.raises(ValueError, match="video_root='videos' needs a cache_root"):
        FrameCacheInit(video_root='videos')


def test_entries_beside_their_videos(videos):
    """Without cache_root the entry of x.mp4 is x.mp4.hfc: what the builder writes with the
    video root as cache root, found wherever the dataset is."""
    summary = build_frame_cache(['a.mp4', 'sub/c.mp4'], videos, videos, progress=False)
    assert summary.built == 2 and (videos / 'sub' / 'c.mp4.hfc').is_file()
    init = FrameCacheInit()
    results = init(dict(filename=str(videos / 'sub' / 'c.mp4')))
    np.testing.assert_array_equal(results['frame_cache'], _decord_all(videos / 'sub' / 'c.mp4'))
    with pytest.raises(MissingFrameCacheError, match=rf'{videos / "b.avi.hfc"}: no frame cache'):
        init(dict(filename=str(videos / 'b.avi')))
    decoded = FrameCacheInit(on_stale='decode')(dict(filename=str(videos / 'b.avi')))
    assert decoded['total_frames'] == 30 and not (videos / 'b.avi.hfc').exists()


def test_init_refuses_paths_outside_the_cache():
    with pytest.raises(ValueError, match=r'/elsewhere/v\.mp4 is not under video_root videos'):
        FrameCacheInit('cache', video_root='videos')(dict(filename='/elsewhere/v.mp4'))
    with pytest.raises(ValueError, match=r'/abs/v\.mp4 is absolute; set video_root'):
        FrameCacheInit('cache')(dict(filename='/abs/v.mp4'))
    for bad in ['../v.mp4', '/abs/v.mp4', '.']:
        with pytest.raises(ValueError, match='must name a file inside the video root'):
            entry_path('cache', bad)


def test_builder_is_idempotent_and_rebuilds_what_changed(videos, tmp_path):
    cache = tmp_path / 'cache'
    names = read_video_list(videos / 'list.txt')
    build_frame_cache(names, videos, cache, progress=False)
    stamps = {name: entry_path(cache, name).stat().st_mtime_ns for name in names}
    again = build_frame_cache(names + ['a.mp4'], videos, cache, workers=2, progress=False)
    assert (again.videos, again.built, again.rebuilt, again.fresh, again.bytes_written) == (
        3, 0, 0, 3, 0)
    assert {name: entry_path(cache, name).stat().st_mtime_ns for name in names} == stamps
    os.utime(videos / 'b.avi')
    os.truncate(entry_path(cache, 'sub/c.mp4'), 5000)
    data = bytearray(entry_path(cache, 'a.mp4').read_bytes())
    data[-1] ^= 0xFF
    entry_path(cache, 'a.mp4').write_bytes(bytes(data))
    plain = build_frame_cache(names, videos, cache, progress=False)
    assert (plain.built, plain.rebuilt, plain.fresh) == (0, 2, 1)
    # which entries were written again, and why: counts alone did not tell a video changed
    # from a cache rewritten each run by a config of another short side
    assert sorted(plain.why_rebuilt) == ['b.avi', 'sub/c.mp4']
    assert plain.why_rebuilt['b.avi'].startswith(f'stale: its source {videos / "b.avi"} '
                                                 'changed (size')
    assert not any('rebuild' in why or str(cache) in why for why in plain.why_rebuilt.values())
    assert plain.rebuilt_lines() == [f'rebuilt {name}: {plain.why_rebuilt[name]}'
                                     for name in ('b.avi', 'sub/c.mp4')]
    assert plain.rebuilt_lines(shown=1)[1] == '... and 1 more entries rebuilt'
    verified = build_frame_cache(names, videos, cache, verify=True, progress=False)
    assert (verified.built, verified.rebuilt, verified.fresh) == (0, 1, 2)
    assert list(verified.why_rebuilt) == ['a.mp4']
    resized = build_frame_cache(['a.mp4'], videos, cache, short_side=32, progress=False)
    assert resized.why_rebuilt == {'a.mp4': 'built with short_side=None, expected '
                                            'short_side=32'}
    for name in names:
        verify_data(entry_path(cache, name))


def test_parallel_build_writes_the_same_bytes(videos, tmp_path):
    names = read_video_list(videos / 'list.txt')
    serial = build_frame_cache(names, videos, tmp_path / 'serial', progress=False)
    parallel = build_frame_cache(names, videos, tmp_path / 'parallel', workers=2, progress=False)
    assert (parallel.built, parallel.bytes) == (3, serial.bytes)
    for name in names:
        assert (entry_path(tmp_path / 'serial', name).read_bytes()
                == entry_path(tmp_path / 'parallel', name).read_bytes())


def _build_with_file_size_limit(limit, *args):
    """Build in this (forked) process; writes beyond ``limit`` bytes fail, as on a full disk."""
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    summary = build_frame_cache(*args, progress=False)
    os._exit(0 if list(summary.failed) == ['a.mp4'] and 'File too large' in summary.failed['a.mp4']
             and summary.failed['a.mp4'].startswith(str(args[2] / 'a.mp4.hfc')) else 1)


def test_failure_mid_write_leaves_the_old_entry(videos, tmp_path):
    cache = tmp_path / 'cache'
    build_frame_cache(['a.mp4'], videos, cache, progress=False)
    entry = entry_path(cache, 'a.mp4')
    before = entry.read_bytes()
    os.utime(videos / 'a.mp4', ns=(0, 10**18))
    # The rebuild's writes fail after 300 kB of its 741 kB entry: header and frames are written.
    child = multiprocessing.get_context('fork').Process(
        target=_build_with_file_size_limit, args=(300_000, ['a.mp4'], videos, cache))
    child.start()
    child.join()
    assert child.exitcode == 0
    assert entry.read_bytes() == before
    assert [p.name for p in cache.iterdir()] == ['a.mp4.hfc']
    with pytest.raises(StaleFrameCacheError, match=rf'{entry}: stale'):
        open_entry(entry, videos / 'a.mp4')


def test_failed_first_build_leaves_no_entry(videos, tmp_path):
    cache = tmp_path / 'cache'
    # decord 0.6 pads 48-pixel rows to 64 and then fails to copy the frame out.
    write_video(videos / 'narrow.mp4', _frames(5, 48, 48, 3), fps=25)
    (videos / 'junk.mp4').write_bytes(b'not a video')
    summary = build_frame_cache(['narrow.mp4', 'junk.mp4', 'gone.mp4'], videos, cache,
                                progress=False)
    assert sorted(summary.failed) == ['gone.mp4', 'junk.mp4', 'narrow.mp4']
    assert summary.failed['narrow.mp4'].startswith(
        f'{videos / "narrow.mp4"}: decoding frames 0..0 of 5 failed')
    assert summary.failed['junk.mp4'].startswith(f'{videos / "junk.mp4"}: cannot open')
    assert summary.failed['gone.mp4'].startswith(f'{videos / "gone.mp4"}: source video not found')
    # the two whose video is bad (a missing one is the missing-video check's)
    assert summary.undecodable == ['narrow.mp4', 'junk.mp4']
    assert list(cache.rglob('*')) == []
    with pytest.raises(FrameCacheError, match=r'narrow\.mp4: decoding frames 0\.\.0'):
        write_entry(videos / 'narrow.mp4', entry_path(cache, 'narrow.mp4'))
    with pytest.raises(ValueError, match='short_side must be a positive int or None, got 0'):
        write_entry(videos / 'a.mp4', entry_path(cache, 'a.mp4'), short_side=0)


def _build_in_child(source, entry):
    write_entry(source, entry, 'long.mp4')


def test_killed_build_leaves_no_entry_and_its_orphan_is_removed(tmp_path):
    source, entry = tmp_path / 'long.mp4', tmp_path / 'cache' / 'long.mp4.hfc'
    write_video(source, _frames(400, 128, 160, 5), fps=25)
    context = multiprocessing.get_context('fork')
    for _ in range(3):
        child = context.Process(target=_build_in_child, args=(source, entry))
        child.start()
        deadline = time.monotonic() + 30
        temps = []
        while not temps and child.is_alive() and time.monotonic() < deadline:
            temps = [p for p in entry.parent.glob('.*.tmp')] if entry.parent.exists() else []
        child.kill()
        child.join()
        if temps and not entry.exists():
            break
        entry.unlink(missing_ok=True)
    else:
        pytest.fail('the child build finished before it could be killed mid-write')
    assert [p.name for p in entry.parent.iterdir()] == [temps[0].name]
    assert temps[0].name.endswith(f'.{child.pid}.tmp')
    assert remove_orphan_temps(entry.parent, entry.name) == temps
    write_entry(source, entry, 'long.mp4')
    assert read_header(entry).num_frames == 400


def test_orphan_cleanup_spares_live_and_foreign_builds(tmp_path):
    entry = tmp_path / 'v.mp4.hfc'
    live = tmp_path / f'.v.mp4.hfc.{socket.gethostname()}.{os.getpid()}.tmp'
    foreign = tmp_path / '.v.mp4.hfc.otherhost.1.tmp'
    live.write_bytes(b'x')
    foreign.write_bytes(b'x')
    assert remove_orphan_temps(entry.parent, entry.name) == []
    assert live.exists() and foreign.exists()


def test_frame_cache_in_dataloader_workers(videos, tmp_path):
    import torch
    from mmaction.datasets import VideoDataset
    cache = tmp_path / 'cache'
    build_frame_cache(read_video_list(videos / 'list.txt'), videos, cache, progress=False)
    pipeline = [dict(type='FrameCacheInit', cache_root=str(cache), video_root=str(videos)),
                dict(type='SampleFrames', clip_len=4, frame_interval=2, num_clips=1,
                     test_mode=True),
                dict(type='FrameCacheDecode')]
    dataset = VideoDataset(str(videos / 'list.txt'), pipeline, data_prefix=dict(video=str(videos)),
                           test_mode=True)

    def stacked(num_workers):
        loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=num_workers,
                                             collate_fn=lambda sample: np.stack(sample['imgs']))
        return list(loader)

    serial, forked = stacked(0), stacked(2)
    assert [batch.shape for batch in serial] == [(4, 64, 96, 3), (4, 48, 64, 3), (4, 64, 64, 3)]
    for one, other in zip(serial, forked):
        np.testing.assert_array_equal(one, other)
    # SampleFrames(test_mode) centres the 8-frame span of 40 frames: offset (40 - 8) // 2.
    expected = _decord_all(videos / 'a.mp4')[[16, 18, 20, 22]]
    np.testing.assert_array_equal(serial[0], expected)


def _load_tool():
    return load_script('tools/build_frame_cache.py')


def test_command_line_tool(videos, tmp_path, capsys):
    tool = _load_tool()
    with pytest.raises(SystemExit, match=r'^build_frame_cache\.py: .*gone\.txt: no such list '
                       r'file$'):
        tool.main([str(tmp_path / 'gone.txt'), str(videos), str(tmp_path / 'cache')])
    cache = tmp_path / 'cache'
    args = [str(videos / 'list.txt'), str(videos), str(cache), '--workers', '2',
            '--short-side', '32']
    assert tool.main(args) == 0
    out = capsys.readouterr()
    mib = (3 * 4096 + (40 * 32 * 48 + 30 * 32 * 43 + 24 * 32 * 32) * 3) / 2**20
    assert out.out.startswith(f'3 videos: 3 built, 0 rebuilt, 0 fresh, 0 failed; 94 frames, '
                              f'{mib:.1f} MiB cached ({mib:.1f} MiB written) in ')
    assert 'frame cache' in out.err
    # a list that stops training at its blank last line: refused here too, without a traceback
    (videos / 'list.txt').write_text('a.mp4 0\nb.mp4 1\n\n')
    with pytest.raises(SystemExit) as info:
        tool.main(args)
    assert info.value.code == (
        f'build_frame_cache.py: {videos}/list.txt:3: empty line (mmaction2 would turn it into '
        "a sample with no video; remove the blank line at the end of the list): ''")
    (videos / 'list.txt').write_text('a.mp4 0\nmissing.mp4 1\n')
    assert tool.main(args) == 1
    out = capsys.readouterr()
    assert 'FAILED missing.mp4: ' in out.err
    assert '2 videos: 0 built, 0 rebuilt, 1 fresh, 1 failed' in out.out


def test_video_lists(tmp_path):
    listing = tmp_path / 'list.txt'
    listing.write_text('x/a.mp4 3\nb.mp4\n')
    assert read_video_list(listing) == ['x/a.mp4', 'b.mp4']
    listing.write_text('x/a.mp4,3\n')
    assert read_video_list(listing, delimiter=',') == ['x/a.mp4']
    listing.write_text('a.mp4 1\n/abs/b.mp4 2\n')
    with pytest.raises(ValueError, match=rf'{listing}:2: video path .*/abs/b\.mp4'):
        read_video_list(listing)
    listing.write_text('\n')
    with pytest.raises(ValueError, match=rf'{listing}: lists no videos'):
        read_video_list(listing)
    with pytest.raises(ValueError, match='workers must be a positive int, got 0'):
        build_frame_cache(['a.mp4'], tmp_path, tmp_path, workers=0)
    # a blank line: the datasets refuse the list, so the cache built for it trained nothing
    listing.write_text('x/a.mp4 3\n\nb.mp4\n')
    with pytest.raises(AnnotationError, match=rf'^{listing}:2: empty line \(mmaction2 would '
                       r"turn it into a sample with no video; remove the line\): ''$"):
        read_video_list(listing)
    with pytest.raises(ValueError, match='short_side must be a positive int or None'):
        build_frame_cache(['a.mp4'], tmp_path, tmp_path, short_side=-2)
    with pytest.raises(ValueError, match='must name a file inside the video root'):
        build_frame_cache(['../a.mp4'], tmp_path, tmp_path)


def test_a_short_side_past_memory_fails_that_entry_only(videos, tmp_path, monkeypatch):
    """OpenCV's allocation error ended the whole build; it is now that video's failure."""
    import cv2

    from hyperframes_mm.datasets import frame_cache

    def too_large(frames, short_side):
        raise cv2.error('OpenCV(4) alloc.cpp:73: error: (-4:Insufficient memory) Failed to '
                        'allocate 37500000000 bytes in function OutOfMemoryError')

    monkeypatch.setattr(frame_cache, 'resize_short_side', too_large)
    cache = tmp_path / 'cache'
    summary = build_frame_cache(['a.mp4', 'b.avi'], videos, cache, short_side=100000,
                                progress=False)
    assert sorted(summary.failed) == ['a.mp4', 'b.avi'] and summary.undecodable == []
    assert summary.failed['a.mp4'].startswith(
        f'{videos / "a.mp4"}: resizing its frames to short side 100000 failed: ')
    assert list(cache.rglob('*.hfc')) == []


def test_the_tools_refuse_counts_below_their_minimum(capsys):
    from hyperframes_mm.utils import int_argument
    import argparse
    parser = argparse.ArgumentParser(prog='tool')
    parser.add_argument('--train', type=int_argument(1))
    parser.add_argument('--seed', type=int_argument(0))
    assert parser.parse_args(['--train', '3', '--seed', '0']).train == 3
    for argv, message in ((['--train', '0'], 'argument --train: must be an int >= 1, got 0'),
                          (['--seed', '-1'], 'argument --seed: must be an int >= 0, got -1'),
                          (['--train', 'x'], "argument --train: 'x' is not an integer")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert message in capsys.readouterr().err


def test_a_video_whose_worker_was_killed_gets_the_advice_for_that(videos, tmp_path,
                                                                   monkeypatch):
    """A video whose entry's worker was killed (alone: map_unordered runs it again so) was
    counted as an entry that could not be written, and the run was told only to give the cache
    a folder it can write. The worker may have died of the machine's memory, not the video, so
    it is not called undecodable: with on_stale='decode' the pipeline decodes it."""
    from hyperframes_mm.datasets import frame_cache
    from hyperframes_mm.engine.cache_hook import VideoRead, refuse_unwritten_entries
    from hyperframes_mm.utils.processes import WorkerLost

    def killed_on_b(function, tasks, workers, **kwargs):
        for task in tasks:
            if task[0] == 'b.avi':
                yield task, None, WorkerLost('the worker process stopped before it finished '
                                             '(killed, or out of memory): pool broken')
            else:
                yield task, function(task), None
    monkeypatch.setattr(frame_cache, 'map_unordered', killed_on_b)
    summary = build_frame_cache(['a.mp4', 'b.avi'], videos, tmp_path / 'cache', workers=2,
                                progress=False)
    assert summary.failed == {'b.avi': 'the worker process stopped before it finished '
                                       '(killed, or out of memory): pool broken'}
    assert summary.lost == ['b.avi'] and summary.undecodable == [] and summary.built == 1
    for on_stale in ('error', 'decode'):
        read = VideoRead('train', FrameCacheInit(cache_root=str(tmp_path / 'cache'),
                                                 video_root=str(videos), on_stale=on_stale),
                         'list.txt', ['a.mp4', 'b.avi'], False)
        if on_stale == 'decode':
            refuse_unwritten_entries(read, summary.failed, summary.lost)  # decoded: no refusal
            continue
        with pytest.raises(FrameCacheError) as refused:
            refuse_unwritten_entries(read, summary.failed, summary.lost)
        assert str(refused.value).endswith(
            '(build it again with fewer workers or more free memory (a process building an '
            "entry was killed), or on_stale='decode' to decode those videos)")
