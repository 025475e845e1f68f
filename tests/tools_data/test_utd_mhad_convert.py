"""tools/data/utd_mhad/convert_depth.py on small generated .mat files (scipy writes them)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import REPO, load_script

TOOL = REPO / 'tools/data/utd_mhad/convert_depth.py'


convert_depth = load_script('tools/data/utd_mhad/convert_depth.py')
SMALL = convert_depth.Mapping(crop=(2, 4, 16), size=32)


def _depth(seed: int, frames: int = 4) -> np.ndarray:
    """20x24xT uint16 depth: no reading (0) around a 'subject' box, a depth ramp that moves."""
    rows, cols, times = np.meshgrid(np.arange(12), np.arange(12), np.arange(frames),
                                    indexing='ij')
    depth = np.zeros((20, 24, frames), np.uint16)
    depth[4:16, 6:18] = 1000 + 100 * seed + 80 * rows + 40 * cols + 30 * times
    return depth


def _write_mat(path, depth, name='d_depth'):
    import scipy.io
    scipy.io.savemat(str(path), {name: depth})


@pytest.fixture()
def mat_folder(tmp_path):
    """Sequences of actions 1 and 2 for subjects 1 and 2 (trial 1), plus one non-sequence."""
    source = tmp_path / 'Depth'
    source.mkdir()
    for action in (1, 2):
        for subject in (1, 2):
            _write_mat(source / f'a{action}_s{subject}_t1_depth.mat',
                       _depth(10 * action + subject))
    (source / 'notes.mat').write_bytes(b'not a sequence')
    return source


def test_depth_to_uint8_fixed_mapping():
    depth = np.array([0, 500, 800, 2400, 4000, 6000], np.uint16)
    assert convert_depth.depth_to_uint8(depth, 800, 4000).tolist() == [0, 255, 255, 128, 1, 1]


def test_parse_name_accepts_only_sequences():
    assert convert_depth.parse_name('a27_s8_t3_depth.mat') == (27, 8, 3)
    assert convert_depth.parse_name('a28_s1_t1_depth.mat') is None
    assert convert_depth.parse_name('a1_s9_t1_depth.mat') is None
    assert convert_depth.parse_name('a1_s1_t1_inertial.mat') is None


def test_depth_frames_crop_resize_and_lost_share():
    depth = np.zeros((20, 24, 2), np.uint16)
    depth[2:18, 4:20] = 800  # the whole crop box is nearest: 255 everywhere inside
    depth[0, 0] = 800        # one reading outside the box
    frames, lost = convert_depth.depth_frames(depth, SMALL)
    assert frames.shape == (2, 32, 32, 3) and frames.dtype == np.uint8
    assert (frames == 255).all()
    assert lost == pytest.approx(1 / (16 * 16 + 1))
    with pytest.raises(ValueError, match=r'^d_depth: crop \(10, 10, 16\) leaves the 20x24 frame'):
        convert_depth.depth_frames(depth, convert_depth.Mapping(crop=(10, 10, 16), size=32))


def test_mapping_check_names_the_parameter():
    with pytest.raises(ValueError, match='near_mm < far_mm'):
        convert_depth.Mapping(near_mm=5000).check()
    with pytest.raises(ValueError, match='size must be an even'):
        convert_depth.Mapping(size=7).check()


def test_convert_folder_writes_videos_and_lists(mat_folder, tmp_path):
    import decord
    out = tmp_path / 'out'
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, workers=2, progress=False)
    assert meta['sequences'] == 4 and meta['failed'] == {}
    assert (out / 'cross_subject_train.txt').read_text().splitlines() == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a2_s1_t1_depth.mp4 1']
    assert (out / 'cross_subject_test.txt').read_text().splitlines() == [
        'videos/a1_s2_t1_depth.mp4 0', 'videos/a2_s2_t1_depth.mp4 1']
    assert (out / 'loso/s2_train.txt').read_text() == (out / 'cross_subject_train.txt').read_text()
    assert (out / 'loso/s1_test.txt').read_text() == (out / 'cross_subject_train.txt').read_text()
    assert len((out / 'classes.txt').read_text().splitlines()) == 27
    reader = decord.VideoReader(str(out / 'videos/a1_s1_t1_depth.mp4'))
    frames = reader.get_batch(list(range(len(reader)))).asnumpy()
    expected, _ = convert_depth.depth_frames(_depth(11), SMALL)
    assert frames.shape == expected.shape
    assert reader.get_avg_fps() == pytest.approx(30.0)
    # H.264 is lossy: the grey levels agree to a few steps, the channels stay equal
    assert np.abs(frames.astype(int) - expected).mean() < 2
    assert json.loads((out / 'convert_meta.json').read_text())['frames']['a1_s1_t1_depth.mat'] == 4


def test_bad_files_are_named_skipped_and_never_written(mat_folder, tmp_path):
    good = (mat_folder / 'a1_s1_t1_depth.mat').read_bytes()
    (mat_folder / 'a1_s3_t1_depth.mat').write_bytes(good[:len(good) // 2])  # truncated
    _write_mat(mat_folder / 'a1_s4_t1_depth.mat', _depth(0), name='other')
    _write_mat(mat_folder / 'a1_s5_t1_depth.mat', np.zeros((4, 4), np.uint16))
    out = tmp_path / 'out'
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert sorted(meta['failed']) == ['a1_s3_t1_depth.mat', 'a1_s4_t1_depth.mat',
                                      'a1_s5_t1_depth.mat']
    assert 'a1_s3_t1_depth.mat: not a readable .mat file' in meta['failed']['a1_s3_t1_depth.mat']
    assert "has no variable 'd_depth'" in meta['failed']['a1_s4_t1_depth.mat']
    assert 'integer [H, W, T]' in meta['failed']['a1_s5_t1_depth.mat']
    assert sorted(p.name for p in (out / 'videos').iterdir() if p.suffix == '.mp4') == [
        'a1_s1_t1_depth.mp4', 'a1_s2_t1_depth.mp4', 'a2_s1_t1_depth.mp4', 'a2_s2_t1_depth.mp4']
    assert 's3' not in (out / 'cross_subject_train.txt').read_text()


def test_empty_or_negative_depth_is_skipped_and_the_run_exits_1(mat_folder, tmp_path, capsys):
    """An empty array stopped a --no-crop run inside OpenCV (no file named, no lists); negative
    depth was mapped to the nearest grey, a sequence of false frames; and a run that skipped
    sequences exited 0 with lists that read as the whole data set."""
    empty, negative = mat_folder / 'a1_s3_t1_depth.mat', mat_folder / 'a1_s5_t1_depth.mat'
    _write_mat(empty, np.zeros((0, 0, 3), np.uint16))
    _write_mat(negative, -_depth(0).astype(np.int32))
    out = tmp_path / 'out'
    assert convert_depth.main([str(mat_folder), str(out), '--no-crop', '--size', '32',
                               '--workers', '1']) == 1
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert meta['failed'] == {
        'a1_s3_t1_depth.mat': f"{empty}: d_depth must be a non-empty integer [H, W, T] array, "
                              'got uint16 (0, 0, 3)',
        'a1_s5_t1_depth.mat': f'{negative}: d_depth holds negative depth (min -2410); depth is '
                              'a distance in millimetres, 0 where the sensor has no reading'}
    assert (out / 'cross_subject_train.txt').read_text().count('\n') == 2  # a1 and a2 of s1
    assert ('error: 2 sequence(s) skipped (above); the lists hold the other sequences only'
            in capsys.readouterr().err)


def test_a_file_of_an_action_or_subject_the_set_lacks_is_named_and_the_run_exits_1(
        mat_folder, tmp_path, capsys):
    """Subject 9 or action 28 was left out of the lists and of the record without a word, and
    the run exited 0: a copy with another numbering read as the whole data set."""
    for name in ('a1_s9_t1_depth.mat', 'a28_s1_t1_depth.mat'):
        _write_mat(mat_folder / name, _depth(0))
    out = tmp_path / 'out'
    assert convert_depth.main([str(mat_folder), str(out), '--no-crop', '--size', '32',
                               '--workers', '1']) == 1
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert meta['failed'] == {
        'a1_s9_t1_depth.mat': f'{mat_folder / "a1_s9_t1_depth.mat"}: action 1, subject 9 is '
                              'not a UTD-MHAD sequence (actions 1-27, subjects 1-8): not '
                              'converted',
        'a28_s1_t1_depth.mat': f'{mat_folder / "a28_s1_t1_depth.mat"}: action 28, subject 1 is '
                               'not a UTD-MHAD sequence (actions 1-27, subjects 1-8): not '
                               'converted'}
    assert meta['sequences'] == 4
    printed = capsys.readouterr()
    assert f'skipped a28_s1_t1_depth.mat: {mat_folder / "a28_s1_t1_depth.mat"}: action 28' in \
        printed.out
    assert 'error: 2 sequence(s) skipped (above)' in printed.err


def test_two_files_of_one_sequence_are_refused_naming_both(mat_folder, tmp_path, capsys):
    """One was taken and the other dropped without a word."""
    (mat_folder / 'copy').mkdir()
    _write_mat(mat_folder / 'copy/a1_s1_t1_depth.mat', _depth(5, frames=5))
    (mat_folder / 'copy/notes.mat').write_bytes(b'a second non-sequence is no conflict')
    assert convert_depth.main([str(mat_folder), str(tmp_path / 'out')]) == 1
    assert capsys.readouterr().err == (
        f'error: {mat_folder}: two files for sequence a1_s1_t1_depth.mat: '
        f'{mat_folder / "a1_s1_t1_depth.mat"} and {mat_folder / "copy/a1_s1_t1_depth.mat"}; '
        'keep one\n')
    assert not (tmp_path / 'out').exists()


def test_a_frame_smaller_than_the_crop_is_named_where_it_is_skipped(mat_folder, tmp_path,
                                                                     capsys):
    small = mat_folder / 'a1_s3_t1_depth.mat'
    _write_mat(small, np.full((10, 12, 2), 1000, np.uint16))
    meta = convert_depth.convert(str(mat_folder), str(tmp_path / 'out'), SMALL, progress=False)
    message = (f'{small}: crop (2, 4, 16) leaves the 10x12 frame (choose another --crop, or '
               '--no-crop)')
    assert meta['failed'] == {'a1_s3_t1_depth.mat': message}
    assert f'skipped {message}' in capsys.readouterr().err.splitlines()


def test_second_run_keeps_videos_and_a_new_mapping_converts_again(mat_folder, tmp_path):
    out = tmp_path / 'out'
    assert convert_depth.convert(str(mat_folder), str(out), SMALL,
                                 progress=False)['converted'] == 4
    video = out / 'videos/a1_s1_t1_depth.mp4'
    stamp = video.stat().st_mtime_ns
    assert convert_depth.convert(str(mat_folder), str(out), SMALL,
                                 progress=False)['converted'] == 0
    assert video.stat().st_mtime_ns == stamp
    # a video without its stamp (a run killed between the two) is not trusted
    (out / 'videos/a2_s2_t1_depth.json').unlink()
    assert convert_depth.convert(str(mat_folder), str(out), SMALL,
                                 progress=False)['converted'] == 1
    other = convert_depth.Mapping(near_mm=500, crop=(2, 4, 16), size=32)
    assert convert_depth.convert(str(mat_folder), str(out), other,
                                 progress=False)['converted'] == 4


def test_reads_a_bare_git_directory(mat_folder, tmp_path):
    work = tmp_path / 'work'
    bare = tmp_path / 'repo.git'
    env = dict(GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t', HOME=str(tmp_path), PATH='/usr/bin:/bin')
    subprocess.run(['git', 'init', '-q', str(work)], check=True, env=env)
    (work / 'data/Depth').mkdir(parents=True)
    for path in mat_folder.glob('a*_depth.mat'):
        (work / 'data/Depth' / path.name).write_bytes(path.read_bytes())
    subprocess.run(['git', '-C', str(work), 'add', '.'], check=True, env=env)
    subprocess.run(['git', '-C', str(work), 'commit', '-qm', 'data'], check=True, env=env)
    subprocess.run(['git', 'clone', '-q', '--bare', str(work), str(bare)], check=True, env=env)
    out_git, out_folder = tmp_path / 'from_git', tmp_path / 'from_folder'
    assert convert_depth.convert(str(bare), str(out_git), SMALL, progress=False)['sequences'] == 4
    convert_depth.convert(str(mat_folder), str(out_folder), SMALL, progress=False)
    for name in ('a1_s1_t1_depth.mp4', 'a2_s2_t1_depth.mp4'):
        assert (out_git / 'videos' / name).read_bytes() == \
            (out_folder / 'videos' / name).read_bytes()


def test_command_line(mat_folder, tmp_path):
    result = subprocess.run(
        [sys.executable, str(TOOL), str(mat_folder), str(tmp_path / 'out'), '--workers', '1',
         '--crop', '2', '4', '16', '--size', '32'], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert '4 sequences in' in result.stdout and '2 train / 2 test clips' in result.stdout
    missing = subprocess.run([sys.executable, str(TOOL), str(tmp_path / 'nowhere'),
                              str(tmp_path / 'out2')], capture_output=True, text=True, cwd=REPO)
    assert missing.returncode != 0 and 'nowhere' in missing.stderr


def test_validation_lists_hold_out_one_training_subject_each(tmp_path):
    """Every choice is read on training subjects: fold s{S} validates on subject S and trains on
    the other three training subjects, so each training clip is validated exactly once and no
    test subject appears in any fold."""
    names = [f'a{a}_s{s}_t1_depth.mat' for s in range(1, 9) for a in (1, 2)]
    convert_depth.write_lists(tmp_path, names)
    validated = []
    for subject in (1, 3, 5, 7):
        train = (tmp_path / f'cross_subject_val/s{subject}_train.txt').read_text().splitlines()
        val = (tmp_path / f'cross_subject_val/s{subject}_val.txt').read_text().splitlines()
        assert val == [f'videos/a1_s{subject}_t1_depth.mp4 0',
                       f'videos/a2_s{subject}_t1_depth.mp4 1']
        assert sorted({int(line.split('_s')[1][0]) for line in train}) == sorted(
            {1, 3, 5, 7} - {subject})
        validated += val
    assert sorted(validated) == sorted(
        (tmp_path / 'cross_subject_train.txt').read_text().splitlines())
    assert not (tmp_path / 'cross_subject_val/s2_val.txt').exists()


def test_lists_only_rewrites_from_the_record_and_names_a_missing_video(mat_folder, tmp_path):
    out = tmp_path / 'out'
    convert_depth.convert(str(mat_folder), str(out), SMALL, workers=1, progress=False)
    (out / 'cross_subject_val').rename(tmp_path / 'old_lists')
    assert convert_depth.main([str(out), '--lists-only']) == 0
    assert (out / 'cross_subject_val/s1_val.txt').read_text().splitlines() == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a2_s1_t1_depth.mp4 1']
    (out / 'videos/a2_s1_t1_depth.mp4').unlink()
    with pytest.raises(FileNotFoundError, match='a2_s1_t1_depth.mp4'):
        convert_depth.rewrite_lists(str(out))
    with pytest.raises(FileNotFoundError, match='convert_meta.json'):
        convert_depth.rewrite_lists(str(tmp_path / 'empty'))


@pytest.mark.parametrize('record, reason', [
    ('{"dataset": "UTD', 'not JSON: Unterminated string'),
    ('{"dataset": "x"}', 'no "frames" object naming the converted sequences'),
    ('[1, 2]', 'no "frames" object naming the converted sequences'),
    ('{"frames": {"a1_s1_t1_depth.mat": 4, "notes.mat": 1}}',
     '"frames" lists \'notes.mat\', not an a{A}_s{S}_t{T}_depth.mat sequence'),
])
def test_lists_only_names_a_damaged_record_and_changes_nothing(mat_folder, tmp_path, capsys,
                                                               record, reason):
    out = tmp_path / 'out'
    convert_depth.convert(str(mat_folder), str(out), SMALL, workers=1, progress=False)
    meta_path = out / 'convert_meta.json'
    meta_path.write_text(record)
    lists = {path: path.read_text() for path in out.rglob('*.txt')}
    with pytest.raises(ValueError) as error:
        convert_depth.rewrite_lists(str(out))
    # the JSON error's own position text sits between the reason and the advice
    assert str(error.value).startswith(f'{meta_path}: damaged record of the conversion '
                                       f'({reason}')
    assert str(error.value).endswith('run the full conversion again (convert_depth.py SOURCE '
                                     f'{out}), which keeps the videos already converted')
    assert convert_depth.main([str(out), '--lists-only']) == 1
    assert capsys.readouterr().err == f'error: {error.value}\n'
    assert meta_path.read_text() == record
    assert {path: path.read_text() for path in out.rglob('*.txt')} == lists
