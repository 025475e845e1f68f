"""benchmarks/bench_streaming.py: the synthetic event streams its cascade benchmark runs on."""
import json

import pytest

from benchmarks import bench_streaming as bench


def test_an_event_stream_marks_every_event_clip_and_its_windows(tmp_path):
    info = bench.make_event_stream(tmp_path / 'stream.mp4', num_clips=4, event_every=2, size=32,
                             fps=5.0, duration=1.2, seed=3)
    # clips 1 and 3 (i % 2 == 1) are events, 6 frames each; 'fall' is label 2
    assert info['segments'] == [[6, 12, 2], [18, 24, 2]] and info['num_frames'] == 24
    line = json.loads((tmp_path / 'stream.jsonl').read_text())
    assert line == dict(video='stream.mp4', num_frames=24, fps=5.0,
                        segments=[[6, 12, 2], [18, 24, 2]])
    import decord
    assert len(decord.VideoReader(info['video'])) == 24
    records = [dict(stream='s', window=i, start_frame=s, end_frame=s + 3, scores=[0])
               for i, s in enumerate(range(0, 21, 3))]
    # windows [0,3] [3,6] [6,9] [9,12] [12,15] [15,18] [18,21]: frame 6 is in window 1
    assert bench.windows_with_event(records, info['segments']) == [('s', 1), ('s', 2), ('s', 3),
                                                             ('s', 5), ('s', 6)]
    with pytest.raises(ValueError, match='class \'jump\' is not in'):
        bench.make_event_stream(tmp_path / 'x.mp4', event='jump')
    with pytest.raises(ValueError, match='must be >= 1'):
        bench.make_event_stream(tmp_path / 'x.mp4', num_clips=0)


def test_the_screen_threshold_for_a_rate_flags_at_most_that_share():
    scores = [0.9, 0.1, 0.5, 0.7, 0.3, 0.5, 0.2, 0.8, 0.4, 0.6]
    threshold = bench.threshold_for_rate(scores, 0.3)
    assert sorted(score for score in scores if score >= threshold) == [0.7, 0.8, 0.9]
    assert 0.6 < threshold < 0.7
    # a tie at the boundary stays unflagged: fewer, never more, than the share
    tied = bench.threshold_for_rate(scores, 0.5)
    assert sorted(score for score in scores if score >= tied) == [0.6, 0.7, 0.8, 0.9]
    assert bench.threshold_for_rate([0.4] * 4, 0.5) > 0.4  # all tied: none flagged
    for rate in (0, 1, 1.5):
        with pytest.raises(ValueError, match='the share of windows must be in'):
            bench.threshold_for_rate(scores, rate)
    with pytest.raises(ValueError, match='no window was scored'):
        bench.threshold_for_rate([], 0.1)


@pytest.mark.parametrize('extra,error', [
    (['--screen-rate', '1.5'], '--screen-rate must be in'),
    (['--screen-rate', '0.1', '--screen-threshold', '0.5'], 'not allowed with argument'),
])
def test_cascade_arguments_are_refused_before_any_model_loads(extra, error, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(['cascade', 'a.py', 'a.pth', 'b.py', 'b.pth', *extra])
    assert error in capsys.readouterr().err


def test_every_stream_index_runs_once_in_a_thread_of_its_own():
    import threading
    seen = []
    seconds = bench.seconds_in_threads(
        lambda index: seen.append((index, threading.get_ident())), 4)
    assert sorted(index for index, _ in seen) == [0, 1, 2, 3]
    assert threading.get_ident() not in {ident for _, ident in seen} and seconds >= 0
