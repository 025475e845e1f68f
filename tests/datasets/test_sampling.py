"""HyperframeSampleFrames: exact frame indices for every sampling mode, and its error paths."""

import numpy as np
import pytest

from hyperframes_mm.datasets.transforms.sampling import (HyperframeSampleFrames, clip_starts,
                                                          pick_offsets, resolve_out_of_bound,
                                                          stream_indices, uniform_indices)


def sample(total_frames, **kwargs):
    extra = kwargs.pop('results', {})
    return HyperframeSampleFrames(**kwargs)(dict(total_frames=total_frames, **extra))


# --- pure functions ---------------------------------------------------------------------------

def test_pick_offsets_in_frames_and_seconds():
    np.testing.assert_array_equal(pick_offsets(5, 3), [0, 3, 6, 9, 12])
    np.testing.assert_array_equal(pick_offsets(1, 7), [0])
    # 0.1 s at 25 fps is 2.5 frames: picks are the frames shown at 0, 0.1, 0.2 s.
    np.testing.assert_array_equal(pick_offsets(3, 0.1, fps=25.0), [0, 3, 5])
    np.testing.assert_array_equal(pick_offsets(4, 0.1, fps=29.97), [0, 3, 6, 9])
    np.testing.assert_array_equal(pick_offsets(3, 0.1, fps=10.0), [0, 1, 2])
    assert pick_offsets(3, 0.1, fps=25.0).dtype == np.int64


def test_clip_starts_test_and_train():
    # 20 frames, span 7: starts 0..13 (14 positions) in 3 segments; middles 2.33, 7, 11.67.
    np.testing.assert_array_equal(clip_starts(20, 7, 3), [2, 7, 11])
    np.testing.assert_array_equal(clip_starts(20, 7, 1), [7])
    np.testing.assert_array_equal(clip_starts(20, 7, 3, jitter=np.array([0.0, 0.0, 0.0])),
                                  [0, 4, 9])
    np.testing.assert_array_equal(clip_starts(20, 7, 3, jitter=np.array([0.999, 0.5, 0.999])),
                                  [4, 7, 13])
    np.testing.assert_array_equal(clip_starts(5, 7, 2), [0, 0])  # shorter than the span


def test_uniform_indices():
    np.testing.assert_array_equal(uniform_indices(20, 4, 1), [[2, 7, 12, 17]])
    np.testing.assert_array_equal(uniform_indices(20, 4, 2), [[1, 6, 11, 16], [3, 8, 13, 18]])
    np.testing.assert_array_equal(
        uniform_indices(20, 4, 1, jitter=np.array([[0.0, 0.2, 0.6, 0.999]])), [[0, 6, 13, 19]])
    # fewer frames than picks: frames repeat, nothing leaves the video
    np.testing.assert_array_equal(uniform_indices(3, 5, 1), [[0, 0, 1, 2, 2]])


def test_stream_indices_center_and_start():
    fast, slow = np.arange(4), np.arange(4) * 4      # spans 4 and 13
    centred = stream_indices(np.array([14]), 13, [fast, slow], 'center')
    np.testing.assert_array_equal(centred[0], [[19, 20, 21, 22]])
    np.testing.assert_array_equal(centred[1], [[14, 18, 22, 26]])
    started = stream_indices(np.array([14, 30]), 13, [fast, slow], 'start')
    np.testing.assert_array_equal(started[0], [[14, 15, 16, 17], [30, 31, 32, 33]])
    np.testing.assert_array_equal(started[1], [[14, 18, 22, 26], [30, 34, 38, 42]])


def test_resolve_out_of_bound():
    indices = np.array([-3, -1, 0, 4, 5, 7])
    np.testing.assert_array_equal(resolve_out_of_bound(indices, 5, 'loop'), [2, 4, 0, 4, 0, 2])
    np.testing.assert_array_equal(resolve_out_of_bound(indices, 5, 'repeat_last'),
                                  [0, 0, 0, 4, 4, 4])
    np.testing.assert_array_equal(resolve_out_of_bound(indices, 5, 'error'), indices)


# --- the transform ----------------------------------------------------------------------------

def test_interval_test_mode_exact():
    results = sample(20, num_frames=4, interval=2, test_mode=True)
    np.testing.assert_array_equal(results['frame_inds'], [7, 9, 11, 13])
    assert results['frame_inds'].dtype == np.int64
    assert (results['clip_len'], results['num_clips'], results['frame_interval']) == (4, 1, 2)
    assert 'hyperframe_streams' not in results


def test_test_clips_are_clip_major_and_evenly_spaced():
    results = sample(20, num_frames=4, interval=2, num_clips=3, test_mode=True)
    np.testing.assert_array_equal(results['frame_inds'], [2, 4, 6, 8, 7, 9, 11, 13,
                                                          11, 13, 15, 17])
    assert results['num_clips'] == 3


def test_uniform_mode_exact():
    results = sample(20, num_frames=4, mode='uniform', num_clips=2, test_mode=True)
    np.testing.assert_array_equal(results['frame_inds'], [1, 6, 11, 16, 3, 8, 13, 18])
    assert results['frame_interval'] == 5.0


def test_time_based_gives_the_same_time_span_at_any_frame_rate():
    at_25 = sample(100, num_frames=5, interval=0.2, time_based=True, test_mode=True,
                   results=dict(avg_fps=25.0))
    at_50 = sample(200, num_frames=5, interval=0.2, time_based=True, test_mode=True,
                   results=dict(avg_fps=50.0))
    np.testing.assert_array_equal(at_25['frame_inds'], [40, 45, 50, 55, 60])
    np.testing.assert_array_equal(at_50['frame_inds'], [80, 90, 100, 110, 120])
    np.testing.assert_allclose(at_25['frame_inds'] / 25.0, at_50['frame_inds'] / 50.0)
    assert at_25['frame_interval'] == pytest.approx(5.0)
    assert at_50['frame_interval'] == pytest.approx(10.0)


def test_start_index_is_added():
    results = sample(20, num_frames=4, interval=2, test_mode=True, results=dict(start_index=1))
    np.testing.assert_array_equal(results['frame_inds'], [8, 10, 12, 14])


def test_short_clip_loop_and_repeat_last(log_lines):
    looped = sample(5, num_frames=4, interval=2, test_mode=True,
                    results=dict(filename='short.mp4'))
    np.testing.assert_array_equal(looped['frame_inds'], [0, 2, 4, 1])
    clamped = sample(5, num_frames=4, interval=2, out_of_bound='repeat_last', test_mode=True,
                     results=dict(filename='short.mp4'))
    np.testing.assert_array_equal(clamped['frame_inds'], [0, 2, 4, 4])
    warnings = [line for line in log_lines if 'short.mp4' in line]
    assert len(warnings) == 2 and 'fewer than the 7-frame span' in warnings[0]
    assert "out_of_bound='repeat_last'" in warnings[1]


def test_uniform_picks_in_a_shorter_video_are_logged_or_refused(log_lines):
    """Five uniform picks of a 1-frame video passed silently as five copies of one frame, even
    under out_of_bound='error' (no pick leaves the video, so the span check never fired)."""
    sampler = HyperframeSampleFrames(num_frames=5, mode='uniform', test_mode=True)
    for _ in range(2):
        picked = sampler(dict(total_frames=3, filename='three.mp4'))
    np.testing.assert_array_equal(picked['frame_inds'], [0, 0, 1, 2, 2])
    assert [line for line in log_lines if 'three.mp4' in line] == [
        'HyperframeSampleFrames: three.mp4 has 3 frames, fewer than the 5 uniform picks '
        '(stream: num_frames=5, uniform): picks share frames, so the hyperframe holds still '
        'steps']
    sampler(dict(total_frames=5, filename='five.mp4'))
    assert not any('five.mp4' in line for line in log_lines)
    strict = HyperframeSampleFrames(num_frames=5, mode='uniform', out_of_bound='error')
    with pytest.raises(ValueError, match=r"^HyperframeSampleFrames: one.mp4 has 1 frames, "
                       r"fewer than the 5 uniform picks .* and out_of_bound='error'"):
        strict(dict(total_frames=1, filename='one.mp4'))
    # a uniform stream beside an interval one: its own T counts
    mixed = HyperframeSampleFrames(num_frames=2, out_of_bound='error',
                                   streams=dict(fast=dict(interval=1),
                                                slow=dict(num_frames=8, mode='uniform')))
    with pytest.raises(ValueError, match='has 6 frames, fewer than the 8 uniform picks'):
        mixed(dict(total_frames=6, filename='six.mp4'))
    # a file too short for both streams is told of both
    mixed = HyperframeSampleFrames(num_frames=4, streams=dict(
        fast=dict(interval=3), slow=dict(num_frames=8, mode='uniform')))
    mixed(dict(total_frames=6, filename='both.mp4'))
    told = [line for line in log_lines if 'both.mp4' in line]
    assert len(told) == 2 and 'fewer than the 10-frame span' in told[0]
    assert 'fewer than the 8 uniform picks' in told[1]


def test_time_based_picks_rounding_onto_one_frame_are_logged(log_lines):
    """0.01 s apart at 25 fps is a quarter frame: picks repeated frames without a word."""
    sampler = HyperframeSampleFrames(num_frames=4, interval=0.01, time_based=True,
                                     test_mode=True)
    for _ in range(2):
        picked = sampler(dict(total_frames=100, avg_fps=25.0, filename='fine.mp4'))
    np.testing.assert_array_equal(picked['frame_inds'], [49, 49, 50, 50])
    assert [line for line in log_lines if 'fine.mp4' in line] == [
        'HyperframeSampleFrames: fine.mp4 at 25 fps rounds time-based picks onto the same '
        'frame (stream: num_frames=4, interval=0.01 s): picks share frames, so the hyperframe '
        'holds still steps']
    sampler(dict(total_frames=100, avg_fps=200.0, filename='fast.mp4'))
    assert not any('fast.mp4' in line for line in log_lines)


def test_interval_past_int64_is_refused():
    """1e30 s apart wrapped past int64 into negative, non-monotonic picks."""
    sampler = HyperframeSampleFrames(num_frames=4, interval=1e30, time_based=True)
    with pytest.raises(ValueError) as info:
        sampler(dict(total_frames=100, avg_fps=25.0, filename='a.mp4'))
    assert str(info.value) == ('HyperframeSampleFrames: 4 picks 1e+30 s apart reach frame '
                               '7.5e+31, past any video; use a smaller interval')


@pytest.mark.parametrize('kwargs, message', [
    (dict(test_mode='False'), "test_mode must be True or False, got 'False'"),
    (dict(time_based='False'), "time_based must be True or False, got 'False'"),
    (dict(time_based=True, interval=float('inf')),
     'interval (seconds, time_based=True) must be a finite number > 0, got inf'),
    (dict(streams=dict(fast=5)),
     "streams.fast must be a dict of ['interval', 'mode', 'num_frames'] (e.g. "
     'streams=dict(fast=dict(num_frames=..., interval=...))) or None, got 5'),
])
def test_unusable_parameters_are_refused_at_build(kwargs, message):
    """Each built before: the string 'False' turned the switch on, an infinite interval
    repeated frames silently, and streams=dict(fast=5) failed with a bare TypeError."""
    with pytest.raises(ValueError) as info:
        HyperframeSampleFrames(num_frames=5, **kwargs)
    assert str(info.value) == f'HyperframeSampleFrames: {message}'


def test_short_clip_is_logged_once_per_file(log_lines):
    sampler = HyperframeSampleFrames(num_frames=4, interval=2)
    for _ in range(3):
        sampler(dict(total_frames=5, filename='once.mp4'))
    sampler(dict(total_frames=50, filename='long.mp4'))
    assert sum('once.mp4' in line for line in log_lines) == 1
    assert not any('long.mp4' in line for line in log_lines)


def test_one_frame_video():
    for policy in ('loop', 'repeat_last'):
        results = sample(1, num_frames=4, interval=3, out_of_bound=policy, num_clips=2)
        np.testing.assert_array_equal(results['frame_inds'], [0] * 8)
    np.testing.assert_array_equal(sample(1, num_frames=3, mode='uniform')['frame_inds'],
                                  [0, 0, 0])


def test_out_of_bound_error_names_the_file_and_parameters():
    with pytest.raises(ValueError, match=r"tiny\.mp4 has 5 frames.*7-frame span.*interval=2"):
        sample(5, num_frames=4, interval=2, out_of_bound='error',
               results=dict(filename='tiny.mp4'))
    results = sample(7, num_frames=4, interval=2, out_of_bound='error')  # exactly fits
    np.testing.assert_array_equal(results['frame_inds'], [0, 2, 4, 6])


def test_two_streams_share_a_centre():
    results = sample(40, num_frames=4, test_mode=True,
                     streams=dict(fast=dict(interval=1), slow=dict(interval=4)))
    np.testing.assert_array_equal(results['frame_inds'], [19, 20, 21, 22, 14, 18, 22, 26])
    assert results['hyperframe_streams'] == [dict(name='fast', clip_len=4, num_clips=1),
                                             dict(name='slow', clip_len=4, num_clips=1)]
    assert results['clip_len'] == 4 and results['frame_interval'] == 1


def test_streams_aligned_at_start_with_their_own_lengths_and_clips():
    results = sample(40, num_frames=4, num_clips=2, test_mode=True, stream_align='start',
                     streams=dict(slow=dict(num_frames=2, interval=6), fast=dict(interval=2)))
    # envelope 7 frames (slow: 0, 6), starts 0..33 in 2 segments -> middles 8 and 25
    np.testing.assert_array_equal(results['frame_inds'],
                                  [8, 14, 25, 31, 8, 10, 12, 14, 25, 27, 29, 31])
    assert results['hyperframe_streams'] == [dict(name='slow', clip_len=2, num_clips=2),
                                             dict(name='fast', clip_len=4, num_clips=2)]
    assert (results['clip_len'], results['frame_interval']) == (2, 6)


def test_streams_share_one_random_draw():
    sampler = HyperframeSampleFrames(num_frames=3, streams=dict(fast=dict(interval=1),
                                                                 slow=dict(interval=5)))
    np.random.seed(0)
    for _ in range(50):
        inds = sampler(dict(total_frames=100))['frame_inds']
        assert inds[1] == inds[4]            # both centred on the same frame
        np.testing.assert_array_equal(np.diff(inds[:3]), [1, 1])
        np.testing.assert_array_equal(np.diff(inds[3:]), [5, 5])


def test_uniform_streams():
    results = sample(24, num_frames=4, mode='uniform', test_mode=True,
                     streams=dict(a=dict(), b=dict(num_frames=2)))
    np.testing.assert_array_equal(results['frame_inds'], [3, 9, 15, 21, 6, 18])


def test_interval_and_uniform_streams_mixed():
    results = sample(40, num_frames=4, test_mode=True,
                     streams=dict(fast=dict(interval=2), slow=dict(mode='uniform')))
    # fast: span 7, starts 0..33, middle 17; slow: 4 segments of 10 frames, middles
    np.testing.assert_array_equal(results['frame_inds'], [17, 19, 21, 23, 5, 15, 25, 35])
    assert results['frame_interval'] == 2
    slow_first = sample(40, num_frames=4, test_mode=True,
                        streams=dict(slow=dict(mode='uniform'), fast=dict(interval=2)))
    np.testing.assert_array_equal(slow_first['frame_inds'], [5, 15, 25, 35, 17, 19, 21, 23])
    assert slow_first['frame_interval'] == 10
    sampler = HyperframeSampleFrames(num_frames=4, num_clips=2, streams=dict(
        fast=dict(interval=1), slow=dict(mode='uniform')))
    np.random.seed(0)
    for _ in range(50):
        inds = sampler(dict(total_frames=40))['frame_inds']
        fast, slow = inds[:8].reshape(2, 4), inds[8:].reshape(2, 4)
        assert (np.diff(fast, axis=1) == 1).all()
        assert all((slow[k] // 10 == np.arange(4)).all() for k in range(2))  # one per segment
    assert "'slow': {'num_frames': 4, 'mode': 'uniform'}" in repr(sampler)


def test_time_based_streams():
    results = sample(300, num_frames=3, time_based=True, test_mode=True,
                     results=dict(avg_fps=30.0),
                     streams=dict(fast=dict(interval=0.1), slow=dict(interval=0.5)))
    # slow span: 0, 15, 30 -> 31 frames; starts 0..269, middle 135; centre 150
    np.testing.assert_array_equal(results['frame_inds'], [147, 150, 153, 135, 150, 165])
    assert results['frame_interval'] == pytest.approx(3.0)


def test_center_frame_in_train_and_test_mode():
    for test_mode in (False, True):
        results = sample(100, num_frames=5, interval=2, test_mode=test_mode,
                         results=dict(center_frame=10))
        np.testing.assert_array_equal(results['frame_inds'], [6, 8, 10, 12, 14])
    results = sample(100, num_frames=4, interval=1, results=dict(center_frame=10))
    np.testing.assert_array_equal(results['frame_inds'], [9, 10, 11, 12])
    results = sample(100, num_frames=3, results=dict(center_frame=50),
                     streams=dict(fast=dict(interval=1), slow=dict(interval=10)))
    np.testing.assert_array_equal(results['frame_inds'], [49, 50, 51, 40, 50, 60])


def test_center_frame_near_the_edges():
    near_start = dict(center_frame=1)
    np.testing.assert_array_equal(
        sample(100, num_frames=5, interval=2, out_of_bound='repeat_last',
               results=near_start)['frame_inds'], [0, 0, 1, 3, 5])
    np.testing.assert_array_equal(
        sample(100, num_frames=5, interval=2, results=near_start)['frame_inds'],
        [97, 99, 1, 3, 5])
    np.testing.assert_array_equal(
        sample(100, num_frames=5, interval=2, out_of_bound='repeat_last',
               results=dict(center_frame=98))['frame_inds'], [94, 96, 98, 99, 99])


def test_train_mode_stays_in_the_video_and_covers_every_start():
    sampler = HyperframeSampleFrames(num_frames=4, interval=2, num_clips=3)
    np.random.seed(1)
    starts = np.array([sampler(dict(total_frames=20))['frame_inds'][::4] for _ in range(600)])
    assert starts.min() == 0 and starts.max() == 13  # every start 0..13 is reachable
    # clip k stays in its third of the 14 possible starts
    assert starts[:, 0].max() <= 4 and 4 <= starts[:, 1].min() and starts[:, 1].max() <= 9
    assert starts[:, 2].min() >= 9
    assert len(np.unique(starts[:, 0])) == 5


def test_train_mode_uniform_picks_stay_in_their_segments():
    sampler = HyperframeSampleFrames(num_frames=4, mode='uniform')
    np.random.seed(2)
    picks = np.array([sampler(dict(total_frames=20))['frame_inds'] for _ in range(300)])
    np.testing.assert_array_equal(picks.min(0), [0, 5, 10, 15])
    np.testing.assert_array_equal(picks.max(0), [4, 9, 14, 19])


def test_seeded_randomness_is_reproducible_and_drawn_per_call():
    sampler = HyperframeSampleFrames(num_frames=4, interval=2)
    np.random.seed(123)
    first = [sampler(dict(total_frames=200))['frame_inds'][0] for _ in range(20)]
    np.random.seed(123)
    second = [sampler(dict(total_frames=200))['frame_inds'][0] for _ in range(20)]
    assert first == second
    assert len(set(first)) > 10


def test_stream_modes_are_checked():
    with pytest.raises(ValueError, match=r"streams\.slow\.mode must be one of"):
        HyperframeSampleFrames(num_frames=4, streams=dict(slow=dict(mode='dense')))
    with pytest.raises(ValueError, match=r"streams\.fast\.mode='interval' needs the top-level"):
        HyperframeSampleFrames(num_frames=4, mode='uniform',
                               streams=dict(fast=dict(mode='interval')))
    with pytest.raises(ValueError, match=r"streams\.slow\.interval has no meaning"):
        HyperframeSampleFrames(num_frames=4, streams=dict(slow=dict(mode='uniform', interval=2)))


@pytest.mark.parametrize('kwargs, message', [
    (dict(num_frames=0), 'num_frames must be an integer >= 1, got 0'),
    (dict(num_frames=-2), 'num_frames must be an integer >= 1, got -2'),
    (dict(num_frames=2.5), 'num_frames must be an integer >= 1, got 2.5'),
    (dict(num_frames=True), 'num_frames must be an integer >= 1, got True'),
    (dict(num_frames=4, num_clips=0), 'num_clips must be an integer >= 1'),
    (dict(num_frames=4, interval=0), 'interval must be an integer >= 1, got 0'),
    (dict(num_frames=4, interval=-1), 'interval must be an integer >= 1, got -1'),
    (dict(num_frames=4, interval=1.5), 'interval must be an integer >= 1, got 1.5'),
    (dict(num_frames=4, interval=0, time_based=True),
     r'interval \(seconds, time_based=True\) must be a finite number > 0, got 0'),
    (dict(num_frames=4, mode='dense'), "mode must be one of .* got 'dense'"),
    (dict(num_frames=4, out_of_bound='wrap'), "out_of_bound must be one of .* got 'wrap'"),
    (dict(num_frames=4, stream_align='end'), "stream_align must be one of .* got 'end'"),
    (dict(num_frames=4, mode='uniform', time_based=True), 'time_based=True needs mode'),
    (dict(num_frames=4, mode='uniform', interval=2), "interval=2 has no meaning"),
    (dict(num_frames=4, streams={}), 'streams must be a non-empty dict'),
    (dict(num_frames=4, streams={'fast-1': {}}), "stream name 'fast-1' must be an identifier"),
    (dict(num_frames=4, streams=dict(fast=dict(stride=2))), r"unknown keys \['stride'\]"),
    (dict(num_frames=4, streams=dict(fast=dict(interval=0))),
     'streams.fast.interval must be an integer >= 1, got 0'),
    (dict(num_frames=4, streams=dict(fast=dict(num_frames=0))),
     'streams.fast.num_frames must be an integer >= 1, got 0'),
    (dict(num_frames=4, mode='uniform', streams=dict(fast=dict(interval=2))),
     'streams.fast.interval has no meaning'),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HyperframeSampleFrames(**kwargs)


def test_bad_results_name_the_file():
    sampler = HyperframeSampleFrames(num_frames=4)
    with pytest.raises(KeyError, match='total_frames.*DecordInit'):
        sampler(dict(filename='a.mp4'))
    with pytest.raises(ValueError, match=r'empty\.mp4 has total_frames=0'):
        sampler(dict(filename='empty.mp4', total_frames=0))
    with pytest.raises(ValueError, match=r'a\.mp4: center_frame=30 is not a frame of this '
                                         r'30-frame video'):
        sampler(dict(filename='a.mp4', total_frames=30, center_frame=30))
    with pytest.raises(ValueError, match=r'a\.mp4: center_frame=-1'):
        sampler(dict(filename='a.mp4', total_frames=30, center_frame=-1))
    # an annotation of a longer copy: the window past the end stopped an epoch midway, naming
    # neither the annotation line nor the two frame counts
    with pytest.raises(ValueError) as error:
        sampler(dict(filename='a.mp4', total_frames=40, center_frame=45, annotated_frames=80,
                     annotation='ann.jsonl:2'))
    assert str(error.value) == (
        'HyperframeSampleFrames: a.mp4: center_frame=45 is not a frame of this 40-frame video: '
        'its annotation (ann.jsonl:2) gives 80 frames and the video decodes to 40; annotate '
        'this copy of the video, or list the copy the annotation was made on')
    timed = HyperframeSampleFrames(num_frames=4, interval=0.5, time_based=True)
    with pytest.raises(ValueError, match=r'nofps\.mp4 has no usable frame rate \(avg_fps=None\)'):
        timed(dict(filename='nofps.mp4', total_frames=30))
    with pytest.raises(ValueError, match=r'avg_fps=0\.0'):
        timed(dict(filename='nofps.mp4', total_frames=30, avg_fps=0.0))


def test_repr_lists_the_settings():
    text = repr(HyperframeSampleFrames(num_frames=4, streams=dict(fast=dict(interval=2))))
    assert text.startswith('HyperframeSampleFrames(num_frames=4')
    assert "streams={'fast': {'num_frames': 4, 'interval': 2}}" in text
