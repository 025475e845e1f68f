"""Pictures: the augmented frames grid (exact pixels) and the score plot of a stream run."""
import json

import cv2
import numpy as np
import pytest

from hyperframes_mm.analysis.visualize import (augmented_frames, describe_augment, frame_grid,
                                           frame_inds_per_tile, plot_scores, read_score_series)

from ..conftest import load_script


@pytest.mark.parametrize('kind', ['single', 'fast_slow'])
def test_grid_holds_the_pipeline_frames_exactly(api_models, api_videos, tmp_path, kind):
    tool = load_script('tools/visualize_hyperframe.py')
    out = tmp_path / 'grid.png'
    assert tool.main([str(api_models[kind]), str(api_videos['a']), '--out', str(out),
                      '--seed', '3']) == 0
    shown = augmented_frames(api_models[kind], api_videos['a'], 'train', seed=3)
    names = ['fast', 'slow'] if kind == 'fast_slow' else ['imgs']
    assert list(shown['frames']) == names
    assert all(frames.shape == (1, 3, 32, 32, 3) for frames in shown['frames'].values())
    image, layout = frame_grid(shown['frames'], shown['frame_inds'], title='x')
    written = cv2.cvtColor(cv2.imread(str(out)), cv2.COLOR_BGR2RGB)
    assert written.shape == image.shape and layout['scale'] == 3
    for row, name in enumerate(names):
        for column in range(3):
            top, left = layout['tiles'][row, column]
            expected = np.repeat(np.repeat(shown['frames'][name][0, column], 3, 0), 3, 1)
            assert np.array_equal(written[top:top + 96, left:left + 96], expected)
    # one draw per sample: same seed, same frames; another seed, another crop
    again = augmented_frames(api_models[kind], api_videos['a'], 'train', seed=3)
    other = augmented_frames(api_models[kind], api_videos['a'], 'train', seed=4)
    assert all(np.array_equal(again['frames'][n], shown['frames'][n]) for n in names)
    assert not all(np.array_equal(other['frames'][n], shown['frames'][n]) for n in names)


def test_test_pipeline_grid_and_description(api_models, api_videos):
    shown = augmented_frames(api_models['single'], api_videos['a'], 'test')
    assert shown['frames']['imgs'].shape == (2, 3, 32, 32, 3)  # 2 test clips
    assert shown['augment_params'] is None
    # test clips of T=3 at interval 2 over 40 frames: clip_starts(40, 5, 2) = [9, 27]
    assert shown['frame_inds'].tolist() == [9, 11, 13, 27, 29, 31]
    assert describe_augment(dict(crop_bbox=(1, 2, 30, 40), flip=True, brightness=1.2,
                                 color_order=['brightness'])) == \
        'crop [1, 2, 30, 40]; flipped; colour brightness 1.20'


def test_visualize_errors(api_models, api_videos, tmp_path):
    with pytest.raises(ValueError, match='pipeline must be one of'):
        augmented_frames(api_models['single'], api_videos['a'], 'demo')
    with pytest.raises(FileNotFoundError, match='video file not found'):
        augmented_frames(api_models['single'], tmp_path / 'none.mp4')
    config = tmp_path / 'no_stack.py'
    config.write_text("test_pipeline = [dict(type='DecordInit')]\n")
    with pytest.raises(ValueError, match='has no HyperframeStack step'):
        augmented_frames(config, api_videos['a'], 'test')
    with pytest.raises(KeyError, match='has no val_pipeline'):
        augmented_frames(config, api_videos['a'], 'val')
    with pytest.raises(ValueError, match='no frames'):
        frame_grid({})
    for scale in (0, -2):
        with pytest.raises(ValueError, match=f'scale must be an integer >= 1, got {scale}'):
            frame_grid({'imgs': np.zeros((1, 2, 8, 8, 3), np.uint8)}, scale=scale)


def test_a_file_that_is_no_video_is_named(api_models, tmp_path, capsys):
    """An image or an empty file ended in a 30-line traceback through decord whose last line
    named no file; a directory was "not found"."""
    from hyperframes_mm.datasets.video_io import BadVideoError
    image, empty = tmp_path / 'frame.png', tmp_path / 'empty.mp4'
    cv2.imwrite(str(image), np.full((48, 64, 3), 128, np.uint8))
    empty.write_bytes(b'')
    for path in (image, empty):
        with pytest.raises(BadVideoError, match=rf'^{path}: the train pipeline cannot read it: '
                           r'\w+: ') as info:
            augmented_frames(api_models['single'], path)
        assert info.value.filename == str(path)
    with pytest.raises(IsADirectoryError, match=rf'^{tmp_path} is a directory; give one video'):
        augmented_frames(api_models['single'], tmp_path)
    tool = load_script('tools/visualize_hyperframe.py')
    assert tool.main([str(api_models['single']), str(image), '--out',
                      str(tmp_path / 'grid.png')]) == 1
    assert capsys.readouterr().err.startswith(f'error: {image}: the train pipeline cannot read')
    assert not (tmp_path / 'grid.png').exists()


def test_score_plot_from_stream_output(tmp_path):
    lines = [dict(stream='cam', window=i, t_end=0.5 * i, scores=[0.1 * i, 1 - 0.1 * i],
                  alert=False) for i in range(4)]
    lines.insert(2, dict(event='alert_start', stream='cam', window=1, t=0.5, score=0.9))
    lines.append(dict(stream='other', window=0, t_end=0.2, scores=[0.5, 0.5],
                      confirm_scores=[0.9, 0.1], flagged=True))
    lines.append(dict(event='summary', windows=5))
    path = tmp_path / 'preds.jsonl'
    path.write_text('\n'.join(json.dumps(line) for line in lines) + '\n')
    out = tmp_path / 'scores.png'
    series = plot_scores(path, out, classes=[0], class_names=['fall', 'none'])
    assert cv2.imread(str(out)).shape == (480, 900, 3)  # two panels of 9 x 2.4 in at 100 dpi
    assert series['cam']['t'].tolist() == [0.0, 0.5, 1.0, 1.5]
    np.testing.assert_allclose(series['cam']['scores'][:, 0], [0.0, 0.1, 0.2, 0.3])
    assert series['cam']['alerts'] == [(0.5, None)]
    assert series['other']['scores'].tolist() == [[0.9, 0.1]]  # the confirmer's scores
    with pytest.raises(ValueError, match='no window records for streams'):
        read_score_series(path, streams=['nobody'])
    with pytest.raises(ValueError, match='classes \\[5\\] are not among the 2 classes'):
        plot_scores(path, out, classes=[5])
    for names in (['fall'], ['fall', 'none', 'sit']):
        with pytest.raises(ValueError, match=f'{len(names)} class names for the 2 classes of '
                           'the scores in .*preds.jsonl'):
            plot_scores(path, out, classes=[0], class_names=names)
    with pytest.raises(FileNotFoundError, match='stream-inference output not found'):
        read_score_series(tmp_path / 'none.jsonl')
    bad = tmp_path / 'bad.jsonl'
    bad.write_text('{"stream": 1}\nnot json\n')
    with pytest.raises(ValueError, match='bad.jsonl:2: not JSON'):
        read_score_series(bad)


def test_a_class_names_file_of_another_class_count_is_refused(api_models, api_videos,
                                                                tmp_path, capsys):
    """A names file with more lines than the scores' classes was taken, and its first names
    labelled the curves, wrong wherever the file belongs to another data set."""
    tool = load_script('tools/visualize_hyperframe.py')
    scores = tmp_path / 'preds.jsonl'
    scores.write_text(json.dumps(dict(stream='cam', window=0, t_end=0.5, scores=[0.2, 0.8],
                                      alert=False)) + '\n')
    names = tmp_path / 'classes.txt'
    names.write_text('fall\nnone\nsit\n')
    args = [str(api_models['single']), str(api_videos['a']), '--out', str(tmp_path / 'g.png'),
            '--scores', str(scores), '--scores-out', str(tmp_path / 'scores.png'),
            '--class-names', str(names)]
    assert tool.main(args) == 1
    assert capsys.readouterr().err.endswith(
        f'error: 3 class names for the 2 classes of the scores in {scores} '
        f'(--class-names {names})\n')
    assert not (tmp_path / 'scores.png').exists()
    names.write_text('fall\nnone\n')
    assert tool.main(args + ['--classes', '5']) == 1  # not the names file's fault
    assert capsys.readouterr().err.endswith(f'not among the 2 classes in {scores}\n')
    assert tool.main(args) == 0
    assert (tmp_path / 'scores.png').is_file()


@pytest.mark.parametrize('option', ['--out', '--scores-out'])
def test_an_image_name_without_png_is_an_option_error(tmp_path, capsys, option):
    """OpenCV picks its writer by the extension: grid.mp4 failed after decoding, in a cv2
    traceback that named neither the option nor the path."""
    tool = load_script('tools/visualize_hyperframe.py')
    args = ['config.py', 'video.mp4', '--out', str(tmp_path / 'grid.png')]
    args += ['--scores', 'preds.jsonl', '--scores-out', str(tmp_path / 'scores.png')]
    args[args.index(option) + 1] = str(tmp_path / 'grid.mp4')
    with pytest.raises(SystemExit) as exited:
        tool.parse_args(args)
    assert exited.value.code == 2
    assert (f'error: {option} {tmp_path / "grid.mp4"}: writes an image, so the name ends in '
            'one of .png, .jpg, ') in capsys.readouterr().err
    for name in ('GRID.PNG', 'grid.jpg'):
        args[args.index(option) + 1] = str(tmp_path / name)
        assert tool.parse_args(args).config == 'config.py'


def _stacked_configs(api_models, root, crops=False):
    """The api fast/slow config with a uniform slow stream and 2 test clips: ``fused`` stacks
    its streams into one hyperframe (as the synthetic family's fast/slow configs do),
    ``separate`` is the same sampling without stacking. ``crops``: 3 test crops of 32 x 32
    (left, right, centre) from frames resized to 48 x 32."""
    test_size = ("dict(type='Resize', scale=(48, 32), keep_ratio=False), "
                 "dict(type='ThreeCrop', crop_size=32)" if crops else
                 "dict(type='Resize', scale=(32, 32), keep_ratio=False)")
    sampler = ("dict(type='HyperframeSampleFrames', num_frames=3, num_clips={clips}, "
               "streams=dict(fast=dict(interval=1), slow=dict(mode='uniform')){test})")
    paths = {}
    for name, fuse in (('fused', True), ('separate', False)):
        paths[name] = root / f'{name}.py'
        paths[name].write_text(
            f"_base_ = [{str(api_models['fast_slow'])!r}]\n"
            f"train_pipeline = [dict(type='SafeDecordInit'), {sampler.format(clips=1, test='')},"
            " dict(type='DecordDecode'), dict(type='ConsistentClipAugment', size=32),"
            f" dict(type='HyperframeStack', fuse_streams={fuse})]\n"
            "test_pipeline = [dict(type='SafeDecordInit'), "
            f"{sampler.format(clips=2, test=', test_mode=True')}, dict(type='DecordDecode'),"
            f" {test_size}, dict(type='HyperframeStack', fuse_streams={fuse})]\n")
    return paths


def test_streams_stacked_into_one_hyperframe(api_models, api_videos, tmp_path):
    """The synthetic family's fast/slow configs stack both streams into one input: the tool
    failed on them with "error: 'imgs_fast'"."""
    configs = _stacked_configs(api_models, tmp_path)
    fused = augmented_frames(configs['fused'], api_videos['a'], 'test')
    separate = augmented_frames(configs['separate'], api_videos['a'], 'test')
    assert list(fused['frames']) == ['imgs']
    assert fused['frames']['imgs'].shape == (2, 6, 32, 32, 3)
    assert fused['column_streams'] == ['fast'] * 3 + ['slow'] * 3
    # the sampler's picks are stream-major (fast clips 9-11 and 28-30, then the slow picks):
    # a stacked hyperframe holds one clip's fast frames, then the same clip's slow ones
    assert separate['frame_inds'].tolist() == [9, 10, 11, 28, 29, 30, 3, 16, 30, 10, 23, 36]
    assert fused['frame_inds'].tolist() == [9, 10, 11, 3, 16, 30, 28, 29, 30, 10, 23, 36]
    assert separate['column_streams'] is None
    for clip in range(2):
        assert np.array_equal(fused['frames']['imgs'][clip], np.concatenate(
            [separate['frames']['fast'][clip], separate['frames']['slow'][clip]]))

    tool = load_script('tools/visualize_hyperframe.py')
    out = tmp_path / 'grid.png'
    assert tool.main([str(configs['fused']), str(api_videos['a']), '--out', str(out)]) == 0
    shown = augmented_frames(configs['fused'], api_videos['a'], 'train', seed=0)
    image, layout = frame_grid(shown['frames'], shown['frame_inds'], title='x',
                               column_streams=shown['column_streams'])
    written = cv2.cvtColor(cv2.imread(str(out)), cv2.COLOR_BGR2RGB)
    assert written.shape == image.shape and sorted(layout['tiles']) == [
        (0, column) for column in range(6)]
    for column in range(6):
        top, left = layout['tiles'][0, column]
        expected = np.repeat(np.repeat(shown['frames']['imgs'][0, column], 3, 0), 3, 1)
        assert np.array_equal(written[top:top + 96, left:left + 96], expected)
        # the stream's name is written above every column
        assert (written[top - 14:top - 2, left:left + 40] < 128).any()


def test_every_crop_of_every_stream_is_captioned_with_its_own_frames(api_models, api_videos,
                                                                       tmp_path):
    """With test crops, a stream's hyperframes are its clips once per crop; the captions walked
    the sampler's indices (one crop's) straight on: the fast stream's second-crop rows were
    captioned with the slow stream's frames, later rows not at all."""
    configs = _stacked_configs(api_models, tmp_path, crops=True)
    separate = augmented_frames(configs['separate'], api_videos['a'], 'test')
    fused = augmented_frames(configs['fused'], api_videos['a'], 'test')
    fast, slow = [9, 10, 11, 28, 29, 30], [3, 16, 30, 10, 23, 36]  # clips 0 and 1 of each
    assert separate['frame_inds'].tolist() == fast * 3 + slow * 3
    assert fused['frame_inds'].tolist() == (fast[:3] + slow[:3] + fast[3:] + slow[3:]) * 3
    # the rows captioned as clip 0 of crops 1 (right) and 2 (centre) hold clip 0's frames:
    # their columns overlap the left crop's
    frames = separate['frames']['fast']
    assert np.array_equal(frames[2][:, :, :16], frames[0][:, :, 16:])
    assert np.array_equal(frames[4][:, :, :24], frames[0][:, :, 8:])
    assert not np.array_equal(frames[3][:, :, :16], frames[0][:, :, 16:])
    _, layout = frame_grid(separate['frames'], separate['frame_inds'])
    assert [layout['captions'][row, 2] for row in range(12)] == [
        't=2 f=11', 't=2 f=30'] * 3 + ['t=2 f=30', 't=2 f=36'] * 3
    assert [layout['captions'][row, column] for row in (4, 9) for column in range(3)] == [
        't=0 f=9', 't=1 f=10', 't=2 f=11', 't=0 f=10', 't=1 f=23', 't=2 f=36']
    _, layout = frame_grid(fused['frames'], fused['frame_inds'])
    assert [layout['captions'][5, column] for column in range(6)] == [
        't=0 f=28', 't=1 f=29', 't=2 f=30', 't=3 f=10', 't=4 f=23', 't=5 f=36']


def test_frame_inds_per_tile_repeats_each_stream_over_the_crops():
    """Streams of other clip counts and lengths: each repeats its own indices per crop."""
    frames = {'fast': np.zeros((4, 3, 2, 2, 3), np.uint8),   # 2 clips of 3, 2 crops
              'slow': np.zeros((2, 2, 2, 2, 3), np.uint8)}   # 1 clip of 2, 2 crops
    assert frame_inds_per_tile(frames, [1, 2, 3, 7, 8, 9, 0, 5]).tolist() == [
        1, 2, 3, 7, 8, 9, 1, 2, 3, 7, 8, 9, 0, 5, 0, 5]
    assert frame_inds_per_tile(frames, list(range(16))).tolist() == list(range(16))
    for inds in ([1, 2, 3], [], list(range(12))):
        with pytest.raises(ValueError, match=f'{len(inds)} frame indices do not fit the 16 '
                           r"frames of streams \['fast', 'slow'\] as a whole number of crops"):
            frame_inds_per_tile(frames, inds)
    with pytest.raises(ValueError, match='frame_grid: 8 frame indices for 16 frames'):
        frame_grid(frames, [1, 2, 3, 7, 8, 9, 0, 5])
