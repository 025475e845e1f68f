"""Cascade alerting: the confirmer runs only on flagged windows, and agrees with itself alone."""
import json

import numpy as np
import pytest

from hyperframes_mm.deploy import AlertRule, ModelStage, StreamEngine, should_confirm
from hyperframes_mm.deploy.cascade import build_cascade, compare_with_confirmer

from ..conftest import load_script


def _records(report):
    return [r for r in report.records if 'scores' in r]


def test_confirmer_runs_only_on_flagged_windows_and_matches_it_alone(api_models, api_videos):
    videos = [str(api_videos['a']), str(api_videos['b'])]
    screen = ModelStage.from_config(api_models['single'], api_models['single_ckpt'], 'cpu')
    confirm = ModelStage.from_config(api_models['fast_slow'], api_models['fast_slow_ckpt'],
                                     'cpu')
    screen_alone = StreamEngine(screen, stride=2, keep_records=True, progress=False).run(videos)
    event = [1]
    screen_scores = sorted(r['scores'][1] for r in _records(screen_alone))
    # Half-way between two neighbouring scores, so float noise cannot move a window across.
    middle = len(screen_scores) // 2
    screen_threshold = (screen_scores[middle - 1] + screen_scores[middle]) / 2
    confirm_scores = sorted(r['scores'][1] for r in _records(
        StreamEngine(confirm, stride=2, keep_records=True, progress=False).run(videos)))
    rule = AlertRule(float(np.median(confirm_scores)), classes=event)

    cascade = StreamEngine(screen, stride=2, alert=rule, confirm=confirm,
                           screen_threshold=screen_threshold, keep_records=True,
                           progress=False).run(videos)
    alone = StreamEngine(confirm, stride=2, alert=rule, keep_records=True,
                         progress=False).run(videos)
    records = _records(cascade)
    expected_flags = {(r['stream'], r['end_frame']) for r in _records(screen_alone)
                      if r['scores'][1] >= screen_threshold}
    flagged = {(r['stream'], r['end_frame']) for r in records if r['flagged']}
    assert flagged == expected_flags and 0 < len(flagged) < len(records)
    assert cascade.confirm_windows == len(flagged)
    assert 1 <= cascade.confirm_batches <= len(flagged)
    for video in videos:  # deferred confirmation keeps every stream's records in order
        order = [r['window'] for r in records if r['stream'] == video]
        assert order == list(range(len(order)))
    assert all((r['confirm_scores'] is None) != r['flagged'] for r in records)
    comparison = compare_with_confirmer(cascade.records, alone.records, rule)
    assert comparison['flagged'] == len(flagged) and comparison['windows'] == len(records)
    assert comparison['max_score_diff'] <= 1e-5 and comparison['decision_mismatches'] == 0
    # On flagged windows the cascade's decision is the confirmer's; elsewhere it is "no".
    by_key = {(r['stream'], r['end_frame']): r for r in _records(alone)}
    for record in records:
        decision = record['alert_score'] >= rule.threshold
        if record['flagged']:
            assert decision == (rule.score(by_key[record['stream'], record['end_frame']]['scores'])
                                >= rule.threshold)
        else:
            assert record['alert_score'] == 0.0 and not decision
    assert 'confirming on' in cascade.summary()
    assert cascade.confirm_model_s > 0 and cascade.model_s > 0


def test_build_cascade_and_tool(api_models, api_videos, tmp_path):
    engine = build_cascade(api_models['single'], api_models['single_ckpt'],
                           api_models['fast_slow'], api_models['fast_slow_ckpt'], classes=[1],
                           screen_threshold=1.1, threshold=0.5, device='cpu', stride=8,
                           progress=False)
    report = engine.run([str(api_videos['a'])])
    assert report.windows == 4 and report.confirm_windows == 0  # 1.1 flags nothing
    out = tmp_path / 'cascade.jsonl'
    tool = load_script('tools/stream_infer.py')
    code = tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                      str(api_videos['a']), '--device', 'cpu', '--stride', '8', '--out',
                      str(out), '--alert-classes', '1', '--threshold', '0.5',
                      '--confirm-config', str(api_models['fast_slow']),
                      '--confirm-checkpoint', str(api_models['fast_slow_ckpt']),
                      '--screen-threshold', '0.0', '--no-progress'])
    assert code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(line['flagged'] for line in lines if 'scores' in line)  # 0.0 flags everything
    assert lines[-1]['confirm_windows'] == 4
    with pytest.raises(SystemExit):
        tool.parse_args(['c.py', 'k.pth', 'v.mp4', '--confirm-config', 'x.py'])
    with pytest.raises(SystemExit):
        tool.parse_args(['c.py', 'k.pth', 'v.mp4', '--confirm-config', 'x.py',
                         '--confirm-checkpoint', 'y.pth', '--screen-threshold', '0.3'])


def test_confirmer_batches_wait_for_a_full_batch_within_a_bound():
    # (deferred windows, batch size, input queue empty, seconds waited, max wait)
    assert not should_confirm(3, 8, False, 0.2, 1.0)  # more input coming: wait for a batch
    assert should_confirm(8, 8, False, 0.2, 1.0)  # a full batch
    assert should_confirm(1, 8, True, 0.0, 1.0)  # nothing else to screen now
    assert should_confirm(1, 8, False, 1.0, 1.0)  # waited long enough
    with pytest.raises(ValueError, match='confirm_wait must be >= 0'):
        StreamEngine(None, confirm_wait=-1)


def test_compare_with_confirmer_refuses_different_windows():
    record = dict(stream='s', window=0, end_frame=9, scores=[0.5, 0.5], flagged=False,
                  confirm_scores=None)
    with pytest.raises(ValueError, match='scored different windows'):
        compare_with_confirmer([record], [], AlertRule(0.5, classes=[1]))
