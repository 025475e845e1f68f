"""Bad input: every broken video or annotation names the file (and line), or is skipped and
counted when the config opts in."""
import codecs
import re
import signal
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from mmaction.datasets.transforms import DecordDecode, DecordInit, PyAVDecode, PyAVInit
from mmaction.registry import DATASETS

from hyperframes_mm.datasets.bad_video import (ON_BAD_VIDEO, AnnotationError, BadVideoError,
                                               CheckedVideoDataset, GuardedDataset,
                                               SafeDecordInit, validate_video_annotations)
from hyperframes_mm.datasets.transforms import (ConsistentClipAugment, HyperframeSampleFrames,
                                                HyperframeStack)
from hyperframes_mm.datasets.video_io import write_video
from hyperframes_mm.utils import upstream_tool_path

from ..conftest import REPO, TINY_CONFIG, run_tool

SHARED_VIDEOS = REPO.parent / 'shared' / 'videos'


def frames_of(count, height=48, width=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (count, height, width, 3), np.uint8)


def encode(path, frames, codec, pix_fmt='yuv420p', fmt='rgb24'):
    """Encode with PyAV directly, for pixel formats and codecs write_video does not offer."""
    import av
    with av.open(str(path), 'w') as container:
        stream = container.add_stream(codec, rate=25)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = pix_fmt
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format=fmt)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def size_changing_avi(path, first, second):
    """An MPEG-4 AVI whose frames change size half-way (two encodes, packets concatenated)."""
    import av
    parts = [encode(path.with_name(f'{path.stem}_{i}.avi'), frames, 'mpeg4')
             for i, frames in enumerate((first, second))]
    inputs = [av.open(str(part)) for part in parts]
    with av.open(str(path), 'w') as output:
        stream = output.add_stream_from_template(inputs[0].streams.video[0])
        index = 0
        for container in inputs:
            for packet in container.demux(container.streams.video[0]):
                if packet.size == 0:
                    continue
                packet.stream, packet.time_base = stream, Fraction(1, 25)
                packet.pts = packet.dts = index
                index += 1
                output.mux(packet)
    for container in inputs:
        container.close()
    return path


# What decord says when the damaged file below stops decoding: its threaded decoder reports the
# failed packet, or, when the decoding thread has already stopped on it, a failed state check;
# which of the two a read meets depends on thread timing (seen under a loaded machine)
DECODE_FAILURE = r'(Error sending packet|Check failed: run_\.load\(\))'


@pytest.fixture(scope='module')
def videos(tmp_path_factory):
    """One file per kind of bad input, plus a good one, made from real encodes."""
    import av
    root = tmp_path_factory.mktemp('bad_videos')
    good = root / 'good.mp4'
    write_video(good, frames_of(30))
    data = good.read_bytes()
    (root / 'empty.mp4').write_bytes(b'')
    (root / 'random.mp4').write_bytes(np.random.default_rng(0).integers(0, 256, 5000,
                                                                        np.uint8).tobytes())
    (root / 'truncated.mp4').write_bytes(data[:len(data) // 2])
    # zeros inside the coded frames: the file opens and lists every frame, and decoding stops at
    # the packets they fall in (decord: "Error sending packet", naming no file)
    mdat = data.index(b'mdat')
    (root / 'damaged.mp4').write_bytes(data[:mdat + 1000] + bytes(3000) + data[mdat + 4000:])
    avi = encode(root / 'full.avi', frames_of(40, 64, 80), 'mpeg4')
    (root / 'truncated.avi').write_bytes(avi.read_bytes()[:avi.stat().st_size // 2])
    with av.open(str(root / 'no_frames.avi'), 'w') as container:
        stream = container.add_stream('mpeg4', rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, 'yuv420p'
        container.start_encoding()  # writes the header of a stream that gets no frames
    grey = frames_of(10)[..., 0]
    encode(root / 'grey.mkv', grey, 'ffv1', pix_fmt='gray', fmt='gray')
    rgba = np.concatenate([frames_of(10), np.full((10, 48, 64, 1), 100, np.uint8)], axis=3)
    encode(root / 'rgba.mov', rgba, 'png', pix_fmt='rgba', fmt='rgba')
    write_video(root / 'three_frames.mp4', frames_of(3))
    write_video(root / 'one_frame.mp4', frames_of(1, seed=1))
    size_changing_avi(root / 'resized.avi', np.full((10, 48, 64, 3), 50, np.uint8),
                      np.full((10, 32, 80, 3), 200, np.uint8))
    return dict(root=root, grey=grey, rgba=rgba)


def safe_open(path):
    return SafeDecordInit()(dict(filename=str(path)))


# --- SafeDecordInit: every unreadable file names itself ----------------------------------------

@pytest.mark.parametrize('name, message', [
    ('missing.mp4', 'video file not found'),
    ('empty.mp4', r'video file is empty \(0 bytes\)'),
    ('random.mp4', 'decord cannot read it as a video'),
    ('truncated.mp4', 'decord cannot read it as a video'),
    ('no_frames.avi', 'decord cannot read it as a video'),
])
def test_safe_decord_init_names_the_file(videos, name, message):
    path = videos['root'] / name
    with pytest.raises(BadVideoError, match=rf'{name}: {message}') as info:
        safe_open(path)
    assert info.value.filename == str(path)


def test_truncated_real_videos_name_the_file(tmp_path):
    real = SHARED_VIDEOS / 'kinetics_test_300frames.mp4'
    if not real.is_file():
        pytest.skip('the shared sample videos are not present')
    data = real.read_bytes()
    cut = tmp_path / 'kinetics_half.mp4'
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(BadVideoError, match=r'kinetics_half\.mp4: decord cannot read it'):
        safe_open(cut)


def test_upstream_decord_init_crashes_on_a_truncated_avi(videos):
    """Why SafeDecordInit opens by path: mmaction2's DecordInit passes decord an in-memory copy
    of the file, and decord 0.6.0 dies with SIGSEGV on a truncated AVI (uncatchable, it kills
    the DataLoader worker). If this starts passing cleanly, decord was fixed."""
    path = videos['root'] / 'truncated.avi'
    # exactly what DecordInit._get_video_reader does with a local file (FileClient.get reads it)
    script = textwrap.dedent(f"""
        import io, decord
        with open({str(path)!r}, 'rb') as handle:
            decord.VideoReader(io.BytesIO(handle.read()), num_threads=1)
    """)
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, timeout=120)
    assert result.returncode == -signal.SIGSEGV
    assert safe_open(path)['total_frames'] > 0  # the same file, opened by path


def test_safe_decord_init_reads_the_intact_part_of_a_truncated_avi(videos):
    results = safe_open(videos['root'] / 'truncated.avi')
    assert 0 < results['total_frames'] < 40
    results = HyperframeSampleFrames(num_frames=4, interval=2, test_mode=True)(results)
    results = DecordDecode()(results)
    assert len(results['imgs']) == 4 and results['imgs'][0].shape == (64, 80, 3)


def test_safe_decord_init_gives_what_decord_init_gives(videos):
    paths = [videos['root'] / 'good.mp4'] + [
        SHARED_VIDEOS / name for name in ('short_32frames.mp4',
                                          'ucf101_ApplyEyeMakeup_g01_c01.avi')
        if (SHARED_VIDEOS / name).is_file()]
    for path in paths:
        ours, theirs = safe_open(path), DecordInit()(dict(filename=str(path)))
        assert ours['total_frames'] == theirs['total_frames']
        assert ours['avg_fps'] == theirs['avg_fps']
        inds = np.arange(0, ours['total_frames'], 7)
        ours = DecordDecode()(dict(ours, frame_inds=inds))['imgs']
        theirs = DecordDecode()(dict(theirs, frame_inds=inds))['imgs']
        np.testing.assert_array_equal(np.stack(ours), np.stack(theirs))


def test_safe_decord_init_repr():
    assert repr(SafeDecordInit(num_threads=2)) == \
        "SafeDecordInit(io_backend='disk', num_threads=2)"


# --- sources decord converts, and frames that change size ---------------------------------------

def test_grayscale_and_rgba_sources_arrive_as_rgb(videos):
    grey = DecordDecode()(dict(safe_open(videos['root'] / 'grey.mkv'),
                               frame_inds=np.arange(3)))['imgs']
    for frame, source in zip(grey, videos['grey']):
        assert frame.shape == (48, 64, 3)
        np.testing.assert_array_equal(frame, np.repeat(source[..., None], 3, axis=2))
    rgba = DecordDecode()(dict(safe_open(videos['root'] / 'rgba.mov'),
                               frame_inds=np.arange(3)))['imgs']
    for frame, source in zip(rgba, videos['rgba']):
        np.testing.assert_array_equal(frame, source[..., :3])  # lossless: alpha dropped


def test_changing_frame_size_decord_rescales_to_the_first_size(videos):
    results = DecordDecode()(dict(safe_open(videos['root'] / 'resized.avi'),
                                  frame_inds=np.array([0, 15])))
    assert [img.shape for img in results['imgs']] == [(48, 64, 3), (48, 64, 3)]


def test_changing_frame_size_through_pyav_names_the_file(videos):
    path = str(videos['root'] / 'resized.avi')
    results = PyAVInit()(dict(filename=path))
    results = HyperframeSampleFrames(num_frames=4, interval=5, test_mode=True)(results)
    results = PyAVDecode()(results)
    assert {img.shape for img in results['imgs']} == {(48, 64, 3), (32, 80, 3)}
    with pytest.raises(ValueError, match=r'resized\.avi: frames change size inside the video: '
                                         r'frame 0 is 48x64, frame 2 is 32x80'):
        ConsistentClipAugment(size=32)(dict(results))
    with pytest.raises(ValueError, match=r'resized\.avi: frame 2 has shape \(32, 80, 3\)'):
        HyperframeStack()(dict(results))


# --- short videos: a logged fallback, never an index error -------------------------------------

def pipeline(**sample_kwargs):
    return [SafeDecordInit(), HyperframeSampleFrames(**sample_kwargs), DecordDecode(),
            HyperframeStack()]


def run(transforms, results):
    for transform in transforms:
        results = transform(results)
    return results


def test_video_shorter_than_the_span_loops_and_logs(videos, log_lines):
    path = str(videos['root'] / 'three_frames.mp4')
    decoded = DecordDecode()(dict(safe_open(path), frame_inds=np.arange(3)))['imgs']
    results = run(pipeline(num_frames=5, interval=2, test_mode=True), dict(filename=path))
    np.testing.assert_array_equal(results['frame_inds'], [0, 2, 1, 0, 2])
    assert results['imgs'].shape == (1, 15, 48, 64)
    for t, index in enumerate([0, 2, 1, 0, 2]):
        np.testing.assert_array_equal(results['imgs'][0, 3 * t:3 * t + 3],
                                      decoded[index].transpose(2, 0, 1))
    assert any('three_frames.mp4 has 3 frames, fewer than the 9-frame span' in line
               for line in log_lines)


def test_one_frame_video_repeats_its_frame(videos):
    path = str(videos['root'] / 'one_frame.mp4')
    results = run(pipeline(num_frames=4, interval=3, out_of_bound='repeat_last'),
                  dict(filename=path))
    np.testing.assert_array_equal(results['frame_inds'], [0, 0, 0, 0])
    hyperframe = results['imgs'][0]
    for t in range(1, 4):
        np.testing.assert_array_equal(hyperframe[3 * t:3 * t + 3], hyperframe[:3])


def test_interval_that_cannot_fit_is_an_error_when_asked(videos):
    path = str(videos['root'] / 'three_frames.mp4')
    with pytest.raises(ValueError, match=r'three_frames\.mp4 has 3 frames, too few for a '
                                         r'9-frame span \(stream: num_frames=5, interval=2\)'):
        run(pipeline(num_frames=5, interval=2, out_of_bound='error'), dict(filename=path))


# --- annotations ---------------------------------------------------------------------------------

def write_list(root, name, lines):
    path = root / name
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


@pytest.mark.parametrize('line, kwargs, message', [
    ('good.mp4 one', {}, r":2: label 'one' is not an integer"),
    ('good.mp4', {}, ':2: missing label'),
    ('good.mp4 1 2', {}, ':2: expected "path label", got 3 fields'),
    ('good.mp4 -1', {}, r':2: label -1 is out of range \(>= 0\)'),
    ('good.mp4 4', dict(num_classes=4), r':2: label 4 is out of range \(0..3\)'),
    ('', {}, ':2: empty line'),
    # int() reads these as 10, 2, 7 and 3: no list means them as numbers
    ('good.mp4 1_0', {}, r":2: label '1_0' is not an integer \(ASCII digits\)"),
    ('good.mp4 +2', {}, r":2: label '\+2' is not an integer"),
    ('good.mp4 \uff17', {}, r":2: label '\uff17' is not an integer"),
    ('good.mp4 \u0663', {}, r":2: label '\u0663' is not an integer"),
    # a labelled list that lost a label is not an inference list: -1 would be scored
    ('one_frame.mp4', dict(allow_unlabelled=True),
     r":2: missing label: line 1 of this list has one, so every line needs one"),
    ('good.mp4 3', {}, r":2: good.mp4 is listed with label\(s\) \[0\] on line 1 and \[3\] here"),
    ('./good.mp4 3', {}, r":2: \./good.mp4 is listed with label\(s\) \[0\] on line 1 and \[3\] "
                         r"here"),
    # one field that holds a tab: read as a path with no label, in an inference list too
    ('good.mp4\t1', {}, r":2: the fields are separated by a tab, and the list's delimiter is "
                        r"' ' \(the dataset's delimiter option\)"),
    ('good.mp4\t1', dict(allow_unlabelled=True), r":2: the fields are separated by a tab"),
])
def test_malformed_annotation_lines_name_file_and_line(videos, line, kwargs, message):
    ann = write_list(videos['root'], 'bad_list.txt', ['good.mp4 0', line, 'good.mp4 1'])
    with pytest.raises(AnnotationError, match=r'bad_list\.txt' + message) as info:
        validate_video_annotations(ann, str(videos['root']), **kwargs)
    assert info.value.line == 2 and info.value.ann_file == ann


def test_a_delimiter_that_is_no_string_is_named(videos):
    ann = write_list(videos['root'], 'list.txt', ['good.mp4,0'])
    with pytest.raises(AnnotationError, match=(
            r"list\.txt: the dataset's delimiter is \[\], not a string \(the delimiter option; "
            r"a comma set with --cfg-options arrives as a list: set it in the config file\)")):
        validate_video_annotations(ann, str(videos['root']), delimiter=[])


def test_a_tab_delimiter_that_arrived_as_a_backslash_and_a_t_is_named(videos):
    """--cfg-options "...delimiter='\\t'" passes the two characters, not a tab."""
    ann = write_list(videos['root'], 'tabs.txt', ['good.mp4\t0'])
    with pytest.raises(AnnotationError) as info:
        validate_video_annotations(ann, str(videos['root']), delimiter='\\t')
    assert str(info.value) == (
        f"{ann}:1: the fields are separated by a tab, and the list's delimiter is '\\\\t' (the "
        "dataset's delimiter option: a backslash and a t, as --cfg-options passes '\\t'; set "
        "the tab in the config file): 'good.mp4\\t0'")
    assert validate_video_annotations(ann, str(videos['root']), delimiter='\t') == []


def test_annotation_variants_that_are_valid(videos):
    root = videos['root']
    ann = write_list(root, 'multi.txt', ['good.mp4 0 3', 'one_frame.mp4 2'])
    assert validate_video_annotations(ann, str(root), multi_class=True) == []
    ann = write_list(root, 'unlabelled.txt', ['good.mp4', 'nothere.mp4'])
    assert validate_video_annotations(ann, str(root), allow_unlabelled=True) == \
        [(2, str(root / 'nothere.mp4'))]
    assert validate_video_annotations(ann, str(root), allow_unlabelled=True,
                                      check_paths=False) == []
    # listed again with the same label: a repeated sample, not a contradiction
    ann = write_list(root, 'again.txt', ['good.mp4 1', 'one_frame.mp4 2', 'good.mp4 1'])
    assert validate_video_annotations(ann, str(root)) == []


def test_an_unlabelled_first_line_in_a_labelled_list_is_named(videos):
    ann = write_list(videos['root'], 'lost.txt', ['good.mp4', 'one_frame.mp4 1'])
    with pytest.raises(AnnotationError, match=r"lost\.txt:1: missing label: line 2 of this list "
                                              r"has one.*: 'good\.mp4'$") as info:
        validate_video_annotations(ann, str(videos['root']), allow_unlabelled=True)
    assert info.value.line == 1


def test_missing_or_empty_annotation_file(tmp_path):
    with pytest.raises(AnnotationError, match=r'nothere\.txt: annotation file not found'):
        validate_video_annotations(str(tmp_path / 'nothere.txt'))
    with pytest.raises(AnnotationError, match=rf'^{tmp_path}: a directory, not an annotation '
                       r'file \(name the list file in it\)$'):
        validate_video_annotations(str(tmp_path))
    (tmp_path / 'empty.txt').write_text('')
    with pytest.raises(AnnotationError, match=r'empty\.txt: the annotation file is empty'):
        validate_video_annotations(str(tmp_path / 'empty.txt'))


def video_dataset(root, ann, **kwargs):
    train_pipeline = [dict(type='SafeDecordInit'),
                      dict(type='HyperframeSampleFrames', num_frames=3, interval=2),
                      dict(type='DecordDecode'),
                      dict(type='ConsistentClipAugment', size=32),
                      dict(type='HyperframeStack'), dict(type='PackActionInputs')]
    return dict(type='VideoDataset', ann_file=ann, data_prefix=dict(video=str(root)),
                pipeline=kwargs.pop('pipeline', train_pipeline), **kwargs)


def test_guarded_dataset_refuses_missing_paths_with_file_and_line(videos):
    ann = write_list(videos['root'], 'missing.txt', ['good.mp4 0', 'gone.mp4 1', 'gone2.mp4 2',
                                                     'folder.mp4 3'])
    (videos['root'] / 'folder.mp4').mkdir(exist_ok=True)
    with pytest.raises(AnnotationError, match=r'missing\.txt: 3 video\(s\) do not exist:\n'
                                              r'  .*missing\.txt:2: .*gone\.mp4\n'
                                              r'  .*missing\.txt:3: .*gone2\.mp4\n'
                                              r'  .*missing\.txt:4: .*folder\.mp4 \(a '
                                              r'directory, not a video file\)\n'
                                              r"\(fix the paths or data_prefix, or set "
                                              r"on_bad_video='skip'\)$"):
        GuardedDataset(video_dataset(videos['root'], ann))
    # a test list: skipping would score another sample in their place
    with pytest.raises(AnnotationError, match=r'file\)\n\(fix the paths or data_prefix, or '
                                              r'remove them from the list\)$'):
        GuardedDataset(video_dataset(videos['root'], ann, test_mode=True))
    with pytest.raises(AnnotationError, match=r"missing\.txt:1: label 'x'"):
        GuardedDataset(video_dataset(videos['root'], write_list(videos['root'], 'missing.txt',
                                                                ['good.mp4 x'])))
    (videos['root'] / 'folder.mp4').rmdir()  # the module's other tests list the folder


def test_checked_video_dataset_names_the_bad_line_where_upstream_does_not(videos):
    """The frame-cache families' dataset: a bad label stops the build naming list and line;
    mmaction2's own VideoDataset fails on the same list with int()'s message alone."""
    root = videos['root']
    bad = write_list(root, 'bad_label.txt', ['good.mp4 0', 'good.mp4 two'])
    with pytest.raises(ValueError, match=r"^invalid literal for int\(\) with base 10: 'two'$"):
        DATASETS.build(video_dataset(root, bad))
    with pytest.raises(AnnotationError, match=r"bad_label\.txt:2: label 'two' is not an integer"):
        DATASETS.build(dict(video_dataset(root, bad), type='CheckedVideoDataset'))
    unlabelled = write_list(root, 'unlabelled.txt', ['good.mp4 0', 'three_frames.mp4'])
    with pytest.raises(AnnotationError, match=r'unlabelled\.txt:2: missing label'):
        DATASETS.build(dict(video_dataset(root, unlabelled), type='CheckedVideoDataset'))
    # an inference list: a path alone is label -1, as upstream; missing videos are not looked
    # up here (decoding one names it)
    inference = write_list(root, 'inference.txt', ['good.mp4', 'gone.mp4'])
    tested = DATASETS.build(dict(video_dataset(root, inference), type='CheckedVideoDataset',
                                 test_mode=True))
    assert [tested.get_data_info(i)['label'] for i in range(2)] == [-1, -1]
    good = write_list(root, 'good_and_gone.txt', ['good.mp4 0', 'gone.mp4 3'])
    checked = DATASETS.build(dict(video_dataset(root, good), type='CheckedVideoDataset'))
    plain = DATASETS.build(video_dataset(root, good))
    assert [checked.get_data_info(i) for i in range(2)] == [plain.get_data_info(i)
                                                            for i in range(2)]
    # wrapped, it gets GuardedDataset's look-up of the paths
    with pytest.raises(AnnotationError, match=r'good_and_gone\.txt: 1 video\(s\) do not exist'):
        GuardedDataset(dict(video_dataset(root, good), type='CheckedVideoDataset'))


def test_checked_video_dataset_refuses_labels_past_num_classes(videos):
    """Upstream loads label 12 of a 10-class list without a word; training then stops in the
    loss ("Target 12 is out of bounds"), naming neither list nor line."""
    root = videos['root']
    ann = write_list(root, 'past.txt', ['good.mp4 0', 'three_frames.mp4 12'])
    plain = DATASETS.build(video_dataset(root, ann, num_classes=10))
    assert plain.get_data_info(1)['label'] == 12
    with pytest.raises(AnnotationError, match=r"past\.txt:2: label 12 is out of range \(0\.\.9\): "
                                              r"'three_frames\.mp4 12'$") as info:
        DATASETS.build(dict(video_dataset(root, ann, num_classes=10), type='CheckedVideoDataset'))
    assert (info.value.ann_file, info.value.line) == (ann, 2)
    wider = DATASETS.build(dict(video_dataset(root, ann, num_classes=13),
                                type='CheckedVideoDataset'))
    assert [wider.get_data_info(i)['label'] for i in range(2)] == [0, 12]


def test_guarded_video_dataset_reads_the_list_it_validated(videos):
    """mmaction2's VideoDataset wrapped in GuardedDataset (the RGB families) gets its samples
    from the plugin's reader: upstream keeps a byte-order mark in the first path, which then is
    "not found" each time it is drawn, though the validation found it."""
    root = videos['root']
    bom = root / 'bom_guarded.txt'
    bom.write_bytes(codecs.BOM_UTF8 + b'good.mp4 0\none_frame.mp4 1\n')
    for policy in ON_BAD_VIDEO:
        guarded = GuardedDataset(video_dataset(root, str(bom)), on_bad_video=policy)
        assert type(guarded.dataset) is CheckedVideoDataset
        assert [guarded.get_data_info(i)['filename'] for i in range(2)] == [
            str(root / 'good.mp4'), str(root / 'one_frame.mp4')]
        assert guarded[0]['inputs'].shape == (1, 9, 32, 32) and guarded.num_skipped == 0


def test_checked_video_dataset_reads_its_list_with_the_plugins_reader(videos):
    """A byte-order mark is dropped (upstream glues it to the first path, which then does not
    exist, invisibly); a list that is not UTF-8, or a video given as the list, names its file
    and line (upstream: UnicodeDecodeError, naming neither)."""
    root = videos['root']
    bom = root / 'bom.txt'
    bom.write_bytes(codecs.BOM_UTF8 + b'good.mp4 0\none_frame.mp4 1\n')
    upstream = DATASETS.build(video_dataset(root, str(bom)))
    assert upstream.get_data_info(0)['filename'] == str(root / '\ufeffgood.mp4')
    checked = DATASETS.build(dict(video_dataset(root, str(bom)), type='CheckedVideoDataset'))
    assert [checked.get_data_info(i)['filename'] for i in range(2)] == \
        [str(root / 'good.mp4'), str(root / 'one_frame.mp4')]
    assert validate_video_annotations(str(bom), str(root)) == []
    latin = root / 'latin1.txt'
    latin.write_bytes('good.mp4 0\ncafé.mp4 1\n'.encode('latin-1'))
    with pytest.raises(UnicodeDecodeError):
        DATASETS.build(video_dataset(root, str(latin)))
    not_text = r': not a UTF-8 text list \(a list saved as Latin-1 or UTF-16, or a file'
    builds = [
        lambda ann: DATASETS.build(dict(video_dataset(root, ann), type='CheckedVideoDataset')),
        lambda ann: validate_video_annotations(ann, str(root)),
        lambda ann: GuardedDataset(video_dataset(root, ann)),
    ]
    for build in builds:
        with pytest.raises(AnnotationError, match=r'latin1\.txt:2: byte 0xe9 is not UTF-8 at '
                                                  r'column 4' + not_text) as info:
            build(str(latin))
        assert info.value.line == 2
        with pytest.raises(AnnotationError, match=r'good\.mp4:\d+: .*' + not_text):
            build(str(root / 'good.mp4'))


def test_checked_video_dataset_loads_upstreams_multi_class_samples(videos):
    root = videos['root']
    ann = write_list(root, 'multi_class.txt', ['good.mp4 0 3', 'one_frame.mp4 2'])
    config = video_dataset(root, ann, multi_class=True, num_classes=4)
    checked = DATASETS.build(dict(config, type='CheckedVideoDataset'))
    assert checked.load_data_list() == DATASETS.build(config).load_data_list() == [
        dict(filename=str(root / 'good.mp4'), label=[0, 3]),
        dict(filename=str(root / 'one_frame.mp4'), label=[2])]
    with pytest.raises(ValueError, match=r'multi_class\.txt: multi_class=True needs num_classes'):
        DATASETS.build(dict(config, type='CheckedVideoDataset', num_classes=None))


#: a validation/test pipeline: 3 clips of T=3 picks spread over the video
TEST_PIPELINE = [dict(type='SafeDecordInit'),
                 dict(type='HyperframeSampleFrames', num_frames=3, mode='uniform', num_clips=3,
                      test_mode=True),
                 dict(type='DecordDecode'), dict(type='Resize', scale=(32, 32), keep_ratio=False),
                 dict(type='HyperframeStack'), dict(type='PackActionInputs')]


def test_checked_video_dataset_names_a_video_damaged_mid_stream(videos, log_lines):
    """The frame-cache families validate and test through CheckedVideoDataset without a
    GuardedDataset: a video that opens and then fails to decode stops the test naming file and
    sample, where upstream's DECORDError names neither; wrapped, it is named once."""
    from decord._ffi.base import DECORDError
    root = videos['root']
    damaged = str(root / 'damaged.mp4')
    ann = write_list(root, 'damaged.txt', ['good.mp4 0', 'damaged.mp4 1'])
    config = video_dataset(root, ann, pipeline=TEST_PIPELINE, test_mode=True)
    with pytest.raises(DECORDError, match=DECODE_FAILURE) as upstream:
        DATASETS.build(config)[1]
    assert 'damaged' not in str(upstream.value)
    checked = DATASETS.build(dict(config, type='CheckedVideoDataset'))
    assert checked[0]['inputs'].shape == (3, 9, 32, 32)
    with pytest.raises(BadVideoError, match=rf'^{re.escape(damaged)} \(sample 1\): DECORDError: '
                                            rf'.*{DECODE_FAILURE}') as info:
        checked[1]
    assert (info.value.filename, info.value.index) == (damaged, 1)
    assert isinstance(info.value.__cause__, DECORDError)
    with pytest.raises(BadVideoError, match=rf'^{re.escape(damaged)} \(sample 1\): DECORDError: '
                                            rf'.*{DECODE_FAILURE}') as wrapped:
        GuardedDataset(dict(config, type='CheckedVideoDataset'))[1]
    assert (wrapped.value.filename, wrapped.value.index) == (damaged, 1)
    assert str(wrapped.value).count(damaged) == 1
    skipping = GuardedDataset(dict(config, type='CheckedVideoDataset'), on_bad_video='skip')
    np.random.seed(0)
    assert skipping[1]['inputs'].shape == (3, 9, 32, 32)
    assert skipping.skipped == {damaged: 1}
    warnings = [line for line in log_lines if 'skipped bad video' in line]
    assert len(warnings) == 1 and warnings[0].startswith(
        f'GuardedDataset: skipped bad video {damaged} (sample 1): DECORDError: ')


# --- GuardedDataset at load time ---------------------------------------------------------------

BAD = ['empty.mp4', 'random.mp4', 'truncated.mp4', 'no_frames.avi']


def test_raise_names_file_and_sample(videos):
    ann = write_list(videos['root'], 'mixed.txt', ['good.mp4 0'] + [f'{n} 1' for n in BAD])
    dataset = GuardedDataset(video_dataset(videos['root'], ann))
    assert dataset[0]['inputs'].shape == (1, 9, 32, 32)
    for index, name in enumerate(BAD, start=1):
        with pytest.raises(BadVideoError, match=rf'{name} \(sample {index}\): ') as info:
            dataset[index]
        assert info.value.index == index and info.value.filename.endswith(name)
        assert info.value.__cause__ is not None


def test_upstream_decord_init_errors_are_named_too(videos):
    ann = write_list(videos['root'], 'upstream.txt', ['good.mp4 0', 'empty.mp4 1'])
    upstream = [dict(type='DecordInit'), dict(type='HyperframeSampleFrames', num_frames=3),
                dict(type='DecordDecode'), dict(type='HyperframeStack'),
                dict(type='PackActionInputs')]
    dataset = GuardedDataset(video_dataset(videos['root'], ann, pipeline=upstream))
    with pytest.raises(BadVideoError, match=r'empty\.mp4 \(sample 1\): RuntimeError: Error '
                                            r'reading 0 bytes'):
        dataset[1]


def test_file_deleted_after_start_is_named(videos, tmp_path):
    (tmp_path / 'clip.mp4').write_bytes((videos['root'] / 'good.mp4').read_bytes())
    ann = write_list(tmp_path, 'list.txt', ['clip.mp4 0'])
    dataset = GuardedDataset(video_dataset(tmp_path, ann))
    (tmp_path / 'clip.mp4').unlink()
    with pytest.raises(BadVideoError, match=r'clip\.mp4 \(sample 0\): BadVideoError: .*clip\.mp4: '
                                            r'video file not found'):
        dataset[0]


def test_configuration_errors_propagate_with_the_file_named(videos):
    ann = write_list(videos['root'], 'noinit.txt', ['good.mp4 0'])
    no_init = [dict(type='HyperframeSampleFrames', num_frames=3), dict(type='PackActionInputs')]
    dataset = GuardedDataset(video_dataset(videos['root'], ann, pipeline=no_init),
                             on_bad_video='skip')
    with pytest.raises(KeyError, match='total_frames') as info:
        dataset[0]
    assert any('good.mp4 (sample 0)' in note for note in getattr(info.value, '__notes__', []))
    assert dataset.num_skipped == 0


def test_skip_replaces_counts_and_warns(videos, log_lines):
    goods = ['good.mp4 0'] * 6
    ann = write_list(videos['root'], 'skip.txt', goods[:3] + [f'{n} 1' for n in BAD] + goods[3:]
                     + ['gone.mp4 2'])
    dataset = GuardedDataset(video_dataset(videos['root'], ann), on_bad_video='skip')
    assert any('skip.txt: 1 video(s) do not exist; they will be skipped' in line
               for line in log_lines)
    np.random.seed(0)
    samples = [dataset[i] for i in range(len(dataset))]
    assert len(samples) == len(dataset) == 11
    assert all(sample['inputs'].shape == (1, 9, 32, 32) for sample in samples)
    # each of the 5 bad samples was replaced when asked for (and again whenever a random
    # replacement drew it)
    first_epoch = dataset.num_skipped
    assert first_epoch >= 5
    assert sorted(Path(name).name for name in dataset.skipped) == sorted(BAD + ['gone.mp4'])
    for name in BAD + ['gone.mp4']:
        assert sum(f'skipped bad video {videos["root"] / name}' in line
                   for line in log_lines) == 1
    # a second epoch skips the known bad samples without decoding or warning again; known bad
    # samples are never drawn as replacements
    warnings = len(log_lines)
    for i in range(len(dataset)):
        dataset[i]
    assert dataset.num_skipped == first_epoch + 5 and len(log_lines) == warnings
    assert f'num_skipped={first_epoch + 5}' in repr(dataset)


def test_skip_gives_up_past_max_skips_or_when_everything_is_bad(videos):
    ann = write_list(videos['root'], 'many_bad.txt', ['good.mp4 0'] + [f'{n} 1' for n in BAD])
    dataset = GuardedDataset(video_dataset(videos['root'], ann), on_bad_video='skip',
                             max_skips=2)
    np.random.seed(0)
    with pytest.raises(BadVideoError, match='more than max_skips=2 bad samples'):
        for i in range(len(dataset)):
            dataset[i]
    ann = write_list(videos['root'], 'all_bad.txt', [f'{n} 1' for n in BAD])
    dataset = GuardedDataset(video_dataset(videos['root'], ann), on_bad_video='skip')
    with pytest.raises(BadVideoError, match='all 4 samples are bad videos'):
        dataset[0]


def test_wrapper_passes_the_dataset_through(videos):
    ann = write_list(videos['root'], 'meta.txt', ['good.mp4 0', 'one_frame.mp4 3'])
    dataset = GuardedDataset(video_dataset(videos['root'], ann), lazy_init=True)
    assert len(dataset) == 2
    assert dataset.get_data_info(1)['label'] == 3
    assert dataset.metainfo == dataset.dataset.metainfo
    built = GuardedDataset(dataset.dataset)
    assert built.dataset is dataset.dataset


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(on_bad_video='ignore'), ValueError, "on_bad_video must be one of .* got 'ignore'"),
    (dict(max_skips=-1), ValueError, 'max_skips must be an int >= 0 or None, got -1'),
    (dict(dataset=[1, 2]), TypeError, 'dataset must be a config dict or a BaseDataset'),
])
def test_guarded_dataset_parameters(videos, kwargs, error, message):
    ann = write_list(videos['root'], 'params.txt', ['good.mp4 0'])
    kwargs.setdefault('dataset', video_dataset(videos['root'], ann))
    with pytest.raises(error, match=message):
        GuardedDataset(**kwargs)


def test_an_epoch_with_bad_videos_completes_under_mmaction_train(tiny_dataset, videos, tmp_path):
    """mmaction2's own tools/train.py, 2 data-loader workers, a list with broken files."""
    root = tmp_path / 'data'
    (root / 'broken').mkdir(parents=True)
    (root / 'train').symlink_to(tiny_dataset / 'train')
    lines = (tiny_dataset / 'train.txt').read_text().splitlines()
    for name in BAD:
        (root / 'broken' / name).write_bytes((videos['root'] / name).read_bytes())
        lines.insert(len(lines) // 2, f'broken/{name} 1')
    ann = tmp_path / 'train_with_bad.txt'
    ann.write_text('\n'.join(lines) + '\n')
    config = tmp_path / 'guarded.py'
    config.write_text(textwrap.dedent(f"""
        _base_ = [{str(TINY_CONFIG)!r}]
        train_pipeline = [
            dict(type='SafeDecordInit'),
            dict(type='HyperframeSampleFrames', num_frames=5, interval=2),
            dict(type='DecordDecode'),
            dict(type='ConsistentClipAugment', size=56, brightness=0.2),
            dict(type='HyperframeStack'),
            dict(type='PackActionInputs')]
        train_dataloader = dict(
            num_workers=2,
            dataset=dict(_delete_=True, type='GuardedDataset', on_bad_video='skip',
                         dataset=dict(type='VideoDataset', ann_file={str(ann)!r},
                                      data_prefix=dict(video={str(root)!r}),
                                      pipeline=train_pipeline)))
        train_cfg = dict(max_epochs=1, val_interval=2)
    """))
    result = run_tool([upstream_tool_path('train'), config, '--work-dir', tmp_path / 'work'],
                      tiny_dataset)
    output = result.stdout + result.stderr
    for name in BAD:
        assert f'skipped bad video {root / "broken" / name}' in output
    assert (tmp_path / 'work' / 'epoch_1.pth').is_file()


def test_a_width_decord_cannot_copy_out_is_named_as_such(videos, tmp_path):
    """decord 0.6 opens a 48-pixel-wide H.264 video and fails every decode with a buffer-size
    check that says nothing of the width."""
    root = tmp_path / 'narrow'
    write_video(root / 'narrow.mp4', np.zeros((12, 48, 48, 3), np.uint8), fps=25)
    ann = write_list(root, 'list.txt', ['narrow.mp4 0'])
    dataset = DATASETS.build(dict(video_dataset(root, ann), type='CheckedVideoDataset'))
    with pytest.raises(BadVideoError, match=r'narrow\.mp4 \(sample 0\): DECORDError: .*The size '
                       r'must exactly match \(decord 0\.6 cannot copy out the frames of some '
                       r'narrow widths, 16, 24, 48 and 72 pixels among them'):
        dataset[0]


def test_a_list_without_extensions_is_looked_up_as_decord_reads_it(tmp_path):
    """mmaction2's DecordInit (and SafeDecordInit) read ``clip`` as ``clip.mp4``; the checks
    that a listed video exists looked up ``clip`` and refused the list (MissingVideosHook,
    the doctor), or warned that every video would be skipped and then loaded them all
    (GuardedDataset). The frame cache, PyAV and OpenCV read the name as listed, and the checks
    still refuse it for them, saying so."""
    from hyperframes_mm.analysis.data_checks import annotation_videos
    from hyperframes_mm.datasets.bad_video import (decodes_with_decord, decord_path,
                                                   not_a_file_note)
    from hyperframes_mm.datasets.transforms.cache_loading import FrameCacheInit
    from hyperframes_mm.engine.cache_hook import unreadable_videos
    root = tmp_path / 'noext'
    write_video(root / 'clip.mp4', np.zeros((12, 32, 32, 3), np.uint8), fps=25)
    ann = write_list(root, 'list.txt', ['clip 0', 'gone 1'])
    assert decord_path(str(root / 'clip')) == str(root / 'clip.mp4')
    assert decord_path(str(root / 'clip.avi')) == str(root / 'clip.avi')
    assert decodes_with_decord([dict(type='mmaction.DecordInit'), dict(type='DecordDecode')])
    assert decodes_with_decord([SafeDecordInit()])
    assert not decodes_with_decord([dict(type='PyAVInit')]) and not decodes_with_decord(None)
    assert validate_video_annotations(ann, str(root), decord_names=True) == [
        (2, str(root / 'gone'))]
    assert validate_video_annotations(ann, str(root)) == [(1, str(root / 'clip')),
                                                          (2, str(root / 'gone'))]
    names = [str(root / 'clip'), str(root / 'gone')]
    assert unreadable_videos(None, names, decord_names=True) == [str(root / 'gone')]
    assert unreadable_videos(None, names) == names
    step = FrameCacheInit(cache_root=str(tmp_path / 'cache'), video_root=str(root))
    assert unreadable_videos(step, names, decord_names=True) == names
    assert not_a_file_note(str(root / 'clip')) == (
        f' (the file is {root / "clip.mp4"}: this pipeline reads a video by the name the list '
        'gives; list it with its extension)')
    dataset = video_dataset(root, ann)
    assert annotation_videos(dataset) == ([str(root / 'clip.mp4'), str(root / 'gone.mp4')],
                                          None)
    assert annotation_videos(dict(dataset, pipeline=[dict(type='PyAVInit')]))[0] == names
    guarded = DATASETS.build(dict(type='GuardedDataset', dataset=dict(
        video_dataset(root, write_list(root, 'found.txt', ['clip 0'])),
        type='CheckedVideoDataset')))
    assert guarded[0]['inputs'].shape[-2:] == (32, 32)  # the pipeline reads clip.mp4


# --- SafeDecordInit: its arguments are checked when it is built ----------------------------------

@pytest.mark.parametrize('kwargs, error, message', [
    (dict(num_thread=4), TypeError,
     "SafeDecordInit: unknown argument(s) ['num_thread']; it takes io_backend, num_threads and "
     "the file backend's arguments (for io_backend='disk': none)"),
    (dict(io_backend='petrel', path_maping={}), TypeError,
     "SafeDecordInit: unknown argument(s) ['path_maping']; it takes io_backend, num_threads and "
     "the file backend's arguments (for io_backend='petrel': "
     "['path_mapping', 'enable_mc', 'conf_path'])"),
    (dict(num_threads='2'), ValueError, "SafeDecordInit: num_threads must be an int >= 0, got '2'"),
    (dict(num_threads=2.5), ValueError, 'SafeDecordInit: num_threads must be an int >= 0, got 2.5'),
])
def test_safe_decord_init_refuses_bad_arguments(kwargs, error, message):
    with pytest.raises(error) as info:
        SafeDecordInit(**kwargs)
    assert str(info.value) == message


def test_safe_decord_init_names_the_io_backends():
    """'dsik' built and failed at the first sample with a bare KeyError. The choices are read
    from mmengine's registry, which the plugin adds to."""
    from mmengine.fileio.backends import backends
    with pytest.raises(ValueError) as info:
        SafeDecordInit(io_backend='dsik')
    assert str(info.value) == ("SafeDecordInit: io_backend must be one of "
                               f"{['disk', *sorted(backends)]}, got 'dsik'")
    assert {'local', 'petrel', 'http'} <= set(backends)


def test_safe_decord_init_takes_automatic_threads(videos):
    # decord's 0 is its automatic thread count.
    results = SafeDecordInit(num_threads=0)(dict(filename=str(videos['root'] / 'three_frames.mp4')))
    assert results['total_frames'] == 3


def test_an_mpeg_ts_is_refused_in_training_by_the_doctor_and_by_the_cache_builder(tmp_path):
    """decord read an MPEG-TS (named .ts or not) without an error, its later frames in place of
    its first ones: a .ts data set trained, tested and was cached on the wrong frames."""
    from hyperframes_mm.analysis.data_checks import probe_video
    from hyperframes_mm.datasets.frame_cache import build_frame_cache
    root = tmp_path / 'ts'
    write_video(root / 'clip.ts', frames_of(12), fps=25)
    (root / 'ts_named.mp4').write_bytes((root / 'clip.ts').read_bytes())
    write_video(root / 'good.mp4', frames_of(12), fps=25)
    misread = ('MPEG-TS with B-frames (pictures stored out of display order), whose frames '
               'decord 0.6 returns out of place (later frames first, then one frame repeated): '
               'remux it into mp4 without re-encoding (ffmpeg -i IN -c copy OUT.mp4) and list '
               'the mp4')
    ann = write_list(root, 'list.txt', ['clip.ts 0', 'ts_named.mp4 1', 'good.mp4 0'])
    dataset = DATASETS.build(dict(video_dataset(root, ann), type='CheckedVideoDataset'))
    for index, name in enumerate(['clip.ts', 'ts_named.mp4']):
        with pytest.raises(BadVideoError) as info:
            dataset[index]
        path = root / name
        assert str(info.value) == f'{path} (sample {index}): BadVideoError: {path}: {misread}'
        assert probe_video(str(path)).error == f'ValueError: {misread}'
    assert dataset[2]['inputs'].shape[-2:] == (32, 32)
    assert probe_video(str(root / 'good.mp4')).error is None
    summary = build_frame_cache(['clip.ts', 'ts_named.mp4', 'good.mp4'], root, tmp_path / 'cache',
                                progress=False)
    assert summary.failed == {name: f'{root / name}: cannot open the video: {misread}'
                              for name in ('clip.ts', 'ts_named.mp4')}
    assert (summary.built, sorted(summary.undecodable), summary.frames) == (
        1, ['clip.ts', 'ts_named.mp4'], 12)
