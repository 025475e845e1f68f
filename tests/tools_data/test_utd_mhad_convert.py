"""tools/data/utd_mhad/convert_depth.py on small generated .mat files (scipy writes them)."""
import json
import os
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
    # another depth set in UTD-MHAD's layout: more actions and subjects
    assert convert_depth.parse_name('a28_s1_t1_depth.mat') == (28, 1, 1)
    assert convert_depth.parse_name('a1_s10_t1_depth.mat') == (1, 10, 1)
    assert convert_depth.parse_name('a0_s1_t1_depth.mat') is None
    assert convert_depth.parse_name('a1_s0_t1_depth.mat') is None
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
    assert (out / 'classes.txt').read_text().splitlines() == [
        'right_arm_swipe_to_the_left', 'right_arm_swipe_to_the_right']
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


def test_an_action_or_subject_numbered_0_is_named_and_the_run_exits_1(mat_folder, tmp_path,
                                                                     capsys):
    """A file named as a sequence that is none was left out of the lists and of the record
    without a word, and the run exited 0."""
    for name in ('a1_s0_t1_depth.mat', 'a0_s1_t1_depth.mat'):
        _write_mat(mat_folder / name, _depth(0))
    out = tmp_path / 'out'
    assert convert_depth.main([str(mat_folder), str(out), '--no-crop', '--size', '32',
                               '--workers', '1']) == 1
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert meta['failed'] == {
        'a0_s1_t1_depth.mat': f'{mat_folder / "a0_s1_t1_depth.mat"}: action 0, subject 1: '
                              'actions and subjects are numbered from 1: not converted',
        'a1_s0_t1_depth.mat': f'{mat_folder / "a1_s0_t1_depth.mat"}: action 1, subject 0: '
                              'actions and subjects are numbered from 1: not converted'}
    assert meta['sequences'] == 4
    printed = capsys.readouterr()
    assert f'skipped a0_s1_t1_depth.mat: {mat_folder / "a0_s1_t1_depth.mat"}: action 0' in \
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
    # a replaced file is another blob: the stamp records the one converted
    blob = subprocess.run(['git', 'hash-object', str(mat_folder / 'a1_s1_t1_depth.mat')],
                          check=True, capture_output=True, text=True, env=env).stdout.strip()
    stamp = json.loads((out_git / 'videos/a1_s1_t1_depth.json').read_text())
    assert stamp['source_identity'] == {'blob': blob}


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


#: the 27 UTD-MHAD actions in label order, as its readme names them
UTD_MHAD_CLASSES = [
    'right_arm_swipe_to_the_left', 'right_arm_swipe_to_the_right', 'right_hand_wave',
    'two_hand_front_clap', 'right_arm_throw', 'cross_arms_in_the_chest', 'basketball_shoot',
    'right_hand_draw_x', 'right_hand_draw_circle_clockwise',
    'right_hand_draw_circle_counter_clockwise', 'draw_triangle', 'bowling', 'front_boxing',
    'baseball_swing_from_right', 'tennis_right_hand_forehand_swing', 'arm_curl', 'tennis_serve',
    'two_hand_push', 'right_hand_knock_on_door', 'right_hand_catch_an_object',
    'right_hand_pick_up_and_throw', 'jogging_in_place', 'walking_in_place', 'sit_to_stand',
    'stand_to_sit', 'forward_lunge_left_foot_forward', 'squat_two_arms_stretch_out']


def _lines(out, relative):
    return (out / relative).read_text().splitlines()


def test_classes_are_the_actions_up_to_the_highest_converted(mat_folder, tmp_path):
    """All 27 UTD-MHAD names were written whatever was converted: a 2-action set was trained
    with a 27-class head by tools that count the meta's classes."""
    out = tmp_path / 'out'
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert meta['classes'] == _lines(out, 'classes.txt') == UTD_MHAD_CLASSES[:2]
    _write_mat(mat_folder / 'a29_s1_t1_depth.mat', _depth(3))
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert meta['classes'] == _lines(out, 'classes.txt') == UTD_MHAD_CLASSES + [
        'action_28', 'action_29']
    assert _lines(out, 'cross_subject_train.txt') == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a2_s1_t1_depth.mp4 1',
        'videos/a29_s1_t1_depth.mp4 28']


def test_the_full_utd_mhad_layout_keeps_its_lists_and_classes(tmp_path):
    """The data set's benchmark records depend on its lists: 27 actions x 8 subjects (3 of the
    864 sequences absent, as in the data set) give the cross-subject split 1, 3, 5, 7 / 2, 4,
    6, 8, its 4 validation folds, 8 leave-one-subject-out folds and the 27 names."""
    absent = {(8, 1, 4), (23, 6, 4), (27, 8, 4)}
    ids = [(a, s, t) for a in range(1, 28) for s in range(1, 9) for t in range(1, 5)
           if (a, s, t) not in absent]
    counts = convert_depth.write_lists(tmp_path, [f'a{a}_s{s}_t{t}_depth.mat'
                                                  for a, s, t in reversed(ids)])

    def text(keep):
        return ''.join(f'videos/a{a}_s{s}_t{t}_depth.mp4 {a - 1}\n' for a, s, t in ids
                       if keep(s))

    expected = {'cross_subject_train.txt': text(lambda s: s in (1, 3, 5, 7)),
                'cross_subject_test.txt': text(lambda s: s in (2, 4, 6, 8))}
    for subject in (1, 3, 5, 7):
        expected[f'cross_subject_val/s{subject}_train.txt'] = text(
            lambda s, subject=subject: s in (1, 3, 5, 7) and s != subject)
        expected[f'cross_subject_val/s{subject}_val.txt'] = text(
            lambda s, subject=subject: s == subject)
    for subject in range(1, 9):
        expected[f'loso/s{subject}_train.txt'] = text(lambda s, subject=subject: s != subject)
        expected[f'loso/s{subject}_test.txt'] = text(lambda s, subject=subject: s == subject)
    expected['classes.txt'] = ''.join(f'{name}\n' for name in UTD_MHAD_CLASSES)
    written = {path.relative_to(tmp_path).as_posix(): path.read_text()
               for path in tmp_path.rglob('*.txt')}
    assert written == expected
    assert list(counts) == list(expected)
    assert counts['cross_subject_train.txt'] == 431 and counts['cross_subject_test.txt'] == 430
    assert convert_depth.class_names(27) == UTD_MHAD_CLASSES


def test_subjects_beyond_eight_split_odd_and_even(mat_folder, tmp_path):
    """Subject 9 or action 28 was refused as "not a UTD-MHAD sequence": a 10-subject set in
    the same layout could not be converted."""
    for subject in (9, 10):
        _write_mat(mat_folder / f'a1_s{subject}_t1_depth.mat', _depth(subject))
    out = tmp_path / 'out'
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert meta['failed'] == {} and meta['sequences'] == 6
    assert (meta['train_subjects'], meta['test_subjects']) == ([1, 9], [2, 10])
    assert _lines(out, 'cross_subject_train.txt') == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a1_s9_t1_depth.mp4 0',
        'videos/a2_s1_t1_depth.mp4 1']
    assert _lines(out, 'cross_subject_test.txt') == [
        'videos/a1_s2_t1_depth.mp4 0', 'videos/a1_s10_t1_depth.mp4 0',
        'videos/a2_s2_t1_depth.mp4 1']
    assert _lines(out, 'cross_subject_val/s9_train.txt') == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a2_s1_t1_depth.mp4 1']
    assert _lines(out, 'loso/s10_test.txt') == ['videos/a1_s10_t1_depth.mp4 0']


def test_train_subjects_chooses_the_split_and_names_a_subject_without_sequences(
        mat_folder, tmp_path, capsys):
    _write_mat(mat_folder / 'a1_s9_t1_depth.mat', _depth(9))
    out = tmp_path / 'out'
    command = [str(mat_folder), str(out), '--crop', '2', '4', '16', '--size', '32',
               '--workers', '1', '--train-subjects']
    assert convert_depth.main(command + ['2', '9']) == 0
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert (meta['train_subjects'], meta['test_subjects']) == ([2, 9], [1])
    train = ['videos/a1_s2_t1_depth.mp4 0', 'videos/a1_s9_t1_depth.mp4 0',
             'videos/a2_s2_t1_depth.mp4 1']
    assert _lines(out, 'cross_subject_train.txt') == train
    assert _lines(out, 'cross_subject_test.txt') == [
        'videos/a1_s1_t1_depth.mp4 0', 'videos/a2_s1_t1_depth.mp4 1']
    assert sorted(path.name for path in (out / 'cross_subject_val').iterdir()) == [
        's2_train.txt', 's2_val.txt', 's9_train.txt', 's9_val.txt']
    # --lists-only keeps the recorded split
    assert convert_depth.main([str(out), '--lists-only']) == 0
    assert _lines(out, 'cross_subject_train.txt') == train
    capsys.readouterr()
    assert convert_depth.main(command + ['1', '3', '4']) == 1
    assert capsys.readouterr().err == (
        f'error: {mat_folder}: --train-subjects names subject(s) 3, 4 without a sequence '
        '(subjects found: 1, 2, 9)\n')
    assert convert_depth.main(command + ['1', '2', '9']) == 1
    assert capsys.readouterr().err == (
        f'error: {mat_folder}: --train-subjects names every subject found; leave at least one '
        'to test on\n')


def test_lists_are_written_for_the_subjects_converted_and_stale_ones_removed(mat_folder,
                                                                              tmp_path):
    """A 2-subject set got lists of one empty line for subjects 3-8, which the datasets' reader
    refuses; a list left by an earlier conversion of another set stayed."""
    out = tmp_path / 'out'
    for stale in ('loso/s5_train.txt', 'loso/s5_test.txt', 'cross_subject_val/s3_train.txt',
                  'cross_subject_val/s3_val.txt', 'cross_subject_val/s1_train.txt'):
        (out / stale).parent.mkdir(parents=True, exist_ok=True)
        (out / stale).write_text('videos/a1_s5_t1_depth.mp4 0\n')
    for other in ('loso/notes.txt', 'loso/s5_test.txt.bak', 'my_list.txt'):
        (out / other).write_text('not the converter\'s\n')
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert sorted(path.relative_to(out).as_posix() for path in out.rglob('*.txt*')) == [
        'classes.txt', 'cross_subject_test.txt', 'cross_subject_train.txt',
        'cross_subject_val/s1_val.txt', 'loso/notes.txt', 'loso/s1_test.txt',
        'loso/s1_train.txt', 'loso/s2_test.txt', 'loso/s2_train.txt', 'loso/s5_test.txt.bak',
        'my_list.txt']
    assert meta['lists'] == {
        'cross_subject_train.txt': 2, 'cross_subject_test.txt': 2,
        'cross_subject_val/s1_val.txt': 2, 'loso/s1_train.txt': 2, 'loso/s1_test.txt': 2,
        'loso/s2_train.txt': 2, 'loso/s2_test.txt': 2, 'classes.txt': 2}
    assert _lines(out, 'loso/s2_test.txt') == [
        'videos/a1_s2_t1_depth.mp4 0', 'videos/a2_s2_t1_depth.mp4 1']


def test_the_default_crop_refuses_frames_of_another_size(mat_folder, tmp_path):
    """UTD-MHAD's box applied to another frame size (a Kinect v2's 424x512) cut most of the
    subject away, and the run exited 0."""
    out = tmp_path / 'out'
    assert convert_depth.main([str(mat_folder), str(out), '--size', '32', '--workers', '1']) == 1
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert sorted(meta['failed']) == ['a1_s1_t1_depth.mat', 'a1_s2_t1_depth.mat',
                                      'a2_s1_t1_depth.mat', 'a2_s2_t1_depth.mat']
    assert meta['failed']['a1_s1_t1_depth.mat'] == (
        f'{mat_folder / "a1_s1_t1_depth.mat"}: frames of 20x24, and the default crop box '
        "(24, 52, 216) is for UTD-MHAD's 240x320 frames; give --crop TOP LEFT SIDE or "
        '--no-crop')
    # a box the user chose is applied as given
    assert convert_depth.main([str(mat_folder), str(out), '--size', '32', '--workers', '1',
                               '--crop', '2', '4', '16']) == 0
    # UTD-MHAD's own frame size passes the default box
    frame = tmp_path / 'frame'
    frame.mkdir()
    depth = np.zeros((240, 320, 1), np.uint16)
    depth[100:200, 120:200] = 2000
    _write_mat(frame / 'a1_s1_t1_depth.mat', depth)
    meta = convert_depth.convert(str(frame), str(tmp_path / 'out_frame'),
                                 convert_depth.Mapping(size=32), progress=False)
    assert meta['failed'] == {} and meta['converted'] == 1


def test_a_sequence_with_readings_outside_the_crop_is_warned_by_name(mat_folder, tmp_path,
                                                                      capsys):
    """Readings cut away by the box were only summed up as one number at the end."""
    depth = np.zeros((20, 24, 2), np.uint16)
    depth[2:18, 4:20] = 1000
    depth[0] = 1000  # 48 readings outside the box, 512 inside
    cut = mat_folder / 'a3_s1_t1_depth.mat'
    _write_mat(cut, depth)
    warning = (f'warning: {cut}: 8.6% of its depth readings fall outside the crop box '
               '(2, 4, 16) (give another --crop TOP LEFT SIDE, or --no-crop)')
    out = tmp_path / 'out'
    for converted in (5, 0):  # a kept video is warned about too
        meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
        assert meta['converted'] == converted
        assert meta['max_lost_outside_crop'] == pytest.approx(48 / 560)
        assert [line for line in capsys.readouterr().err.splitlines()
                if 'warning' in line] == [warning]


def test_a_sequence_without_depth_readings_is_named_and_skipped(mat_folder, tmp_path):
    """It became a black video, reported as "1.0 outside the crop"."""
    empty = mat_folder / 'a3_s1_t1_depth.mat'
    _write_mat(empty, np.zeros((20, 24, 3), np.uint16))
    out = tmp_path / 'out'
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert meta['failed'] == {'a3_s1_t1_depth.mat': f'{empty}: holds no depth readings '
                                                    '(d_depth is 0, no reading, everywhere)'}
    assert meta['max_lost_outside_crop'] == 0.0
    assert not (out / 'videos/a3_s1_t1_depth.mp4').exists()


def test_a_replaced_mat_file_is_converted_again(mat_folder, tmp_path):
    """The stamp recorded only the mapping: a replaced file kept its old video."""
    out = tmp_path / 'out'
    convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    path = mat_folder / 'a1_s1_t1_depth.mat'
    _write_mat(path, _depth(11, frames=6))
    info = path.stat()
    meta = convert_depth.convert(str(mat_folder), str(out), SMALL, progress=False)
    assert meta['converted'] == 1 and meta['frames']['a1_s1_t1_depth.mat'] == 6
    stamp = json.loads((out / 'videos/a1_s1_t1_depth.json').read_text())
    assert stamp['source_identity'] == {'size': info.st_size, 'mtime_ns': info.st_mtime_ns}
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    assert convert_depth.convert(str(mat_folder), str(out), SMALL,
                                 progress=False)['converted'] == 1
    # a stamp written before the identity was recorded is kept, and learns it
    old = out / 'videos/a2_s2_t1_depth.json'
    recorded = json.loads(old.read_text())
    identity = recorded.pop('source_identity')
    old.write_text(json.dumps(recorded))
    assert convert_depth.convert(str(mat_folder), str(out), SMALL,
                                 progress=False)['converted'] == 0
    assert json.loads(old.read_text())['source_identity'] == identity


def test_near_miss_names_are_named_and_other_modalities_are_not(mat_folder, tmp_path):
    """Another case, a .MAT suffix or no _depth: the file was passed over without a word."""
    near = ('A1_S1_T3_depth.mat', 'a1_s1_t3_depth.MAT', 'a1_s1_t3.mat')
    for name in near + ('a1_s1_t1_skeleton.mat', 'a1_s1_t1_inertial.mat'):
        _write_mat(mat_folder / name, _depth(0))
    out = tmp_path / 'out'
    assert convert_depth.main([str(mat_folder), str(out), '--crop', '2', '4', '16', '--size',
                               '32', '--workers', '1']) == 1
    meta = json.loads((out / 'convert_meta.json').read_text())
    assert meta['failed'] == {
        name: f'{mat_folder / name}: not named a{{A}}_s{{S}}_t{{T}}_depth.mat (lower case, '
              'ending in _depth.mat): not converted' for name in near}
    assert meta['sequences'] == 4
