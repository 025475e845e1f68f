"""Streaming inference: the window pipeline, agreement with offline testing, several streams,
bad input, alerts with hysteresis, and the command-line tool."""
import json
import socket
import threading

import numpy as np
import pytest
import torch
from mmaction.registry import TRANSFORMS
from mmengine.dataset import Compose

from hyperframes_mm.apis import WindowPipeline, init_recognizer, load_config
from hyperframes_mm.deploy import (AlertRule, Hysteresis, ModelStage, SourceError, StreamEngine,
                                   VideoSource, alert_events, check_score_thresholds)

from ..conftest import load_script


def _stage(api_models, kind='single'):
    return ModelStage.from_config(api_models[kind], api_models[f'{kind}_ckpt'], 'cpu')


def _run(stage, sources, **kwargs):
    kwargs.setdefault('progress', False)
    return StreamEngine(stage, keep_records=True, **kwargs).run([str(s) for s in sources])


def _windows(records, stream=None):
    return [r for r in records if 'scores' in r and (stream is None or r['stream'] == stream)]


# ------------------------------------------------------------------------ window pipeline
def test_window_pipeline_picks_test_clips_of_the_window():
    pipeline = WindowPipeline([
        dict(type='SafeDecordInit'),
        dict(type='HyperframeSampleFrames', num_frames=3, interval=2, num_clips=2),
        dict(type='DecordDecode'), dict(type='HyperframeStack'), dict(type='PackActionInputs')])
    assert pipeline.sampler.test_mode  # forced: a stream samples deterministically
    assert pipeline.span() == 5 and pipeline.default_window() == 10
    # clip_starts(10, 5, 2) = floor((k + 0.5) * 6 / 2) = [1, 4]
    assert pipeline.frame_indices(10).tolist() == [1, 3, 5, 4, 6, 8]
    assert [c['type'] for c in pipeline.transform_cfgs] == ['HyperframeStack', 'PackActionInputs']


def test_window_pipeline_fast_slow_and_time_based_spans():
    pipeline = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=3,
                                    streams=dict(fast=dict(interval=1), slow=dict(interval=3)))])
    # envelope 7: the slow stream 0, 3, 6; the fast one centred on frame 3
    assert pipeline.frame_indices(7).tolist() == [2, 3, 4, 0, 3, 6]
    timed = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=5, interval=0.1,
                                 time_based=True)])
    assert timed.span(30.0) == 13 and timed.span(15.0) == 7
    mm = WindowPipeline([dict(type='SampleFrames', clip_len=5, frame_interval=2)])
    assert mm.span() == 9 and mm.frame_indices(9).tolist() == [0, 2, 4, 6, 8]


def test_window_pipeline_errors():
    with pytest.raises(ValueError, match='exactly one frame sampler'):
        WindowPipeline([dict(type='DecordInit'), dict(type='DecordDecode')])
    with pytest.raises(ValueError, match='come before the sampler'):
        WindowPipeline([dict(type='Resize', scale=(32, 32)),
                        dict(type='HyperframeSampleFrames', num_frames=3)])
    uniform = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=3, mode='uniform')])
    with pytest.raises(ValueError, match='give the window length'):
        uniform.default_window()
    assert uniform.frame_indices(12).tolist() == [2, 6, 10]
    timed = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=3, interval=0.1,
                                 time_based=True)])
    with pytest.raises(ValueError, match='needs the stream\'s fps'):
        timed.span()
    with pytest.raises(ValueError, match='window must be >= 1'):
        timed.layout(0, 25.0)
    with pytest.raises(ValueError, match='2 frames given for 3 picks'):
        timed([np.zeros((8, 8, 3), np.uint8)] * 2, 7, 25.0)


def test_init_recognizer_errors(api_models, tmp_path):
    with pytest.raises(FileNotFoundError, match='config file not found: .*nope.py'):
        init_recognizer(tmp_path / 'nope.py')
    with pytest.raises(FileNotFoundError, match='checkpoint file not found: .*nope.pth'):
        init_recognizer(api_models['single'], tmp_path / 'nope.pth', 'cpu')
    with pytest.raises(TypeError, match='config must be a path'):
        load_config(42)
    with pytest.raises(RuntimeError, match='size mismatch'):  # strict: another model's weights
        init_recognizer(api_models['single'], api_models['fast_slow_ckpt'], 'cpu')


# ------------------------------------------------------------------- offline agreement
def _offline_scores(model, cfg, video, frame_inds, layout):
    """The config's own pipeline from the file: SafeDecordInit, the given frame indices with
    the sampler's layout keys, DecordDecode (random access), the remaining transforms."""
    results = TRANSFORMS.build(dict(type='SafeDecordInit'))(
        dict(filename=str(video), start_index=0, modality='RGB'))
    results.update({k: v for k, v in layout.items() if k != 'frame_inds'})
    results['frame_inds'] = np.asarray(frame_inds)
    results = TRANSFORMS.build(dict(type='DecordDecode'))(results)
    rest = Compose([step for step in cfg.test_pipeline
                    if step['type'] not in ('SafeDecordInit', 'HyperframeSampleFrames',
                                            'DecordDecode')])
    packed = rest(results)
    with torch.no_grad():
        sample = model.test_step(dict(inputs=[packed['inputs']],
                                      data_samples=[packed['data_samples']]))[0]
    return sample.pred_score.numpy()


@pytest.mark.parametrize('kind', ['single', 'fast_slow'])
def test_stream_predictions_equal_offline_testing(api_models, api_videos, kind):
    stage = _stage(api_models, kind)
    cfg = stage.model.cfg
    report = _run(stage, [api_videos['a']], stride=3, batch_size=4)
    windows = _windows(report.records)
    window = stage.window_length(25.0)
    # 40 frames, stride 3: windows end on frames 2, 5, 8, ... once a whole window is in
    assert [w['end_frame'] for w in windows] == [f for f in range(2, 40, 3) if f >= window - 1]
    sampler = TRANSFORMS.build(dict(
        [s for s in cfg.test_pipeline if s['type'] == 'HyperframeSampleFrames'][0],
        test_mode=True))
    layout = sampler(dict(total_frames=window, start_index=0))
    for record in (windows[0], windows[len(windows) // 2], windows[-1]):
        assert record['start_frame'] == record['end_frame'] - window + 1
        offline = _offline_scores(stage.model, cfg, api_videos['a'],
                                  layout['frame_inds'] + record['start_frame'], layout)
        np.testing.assert_allclose(record['scores'], offline, atol=1e-5, rtol=0)
        shifted = _offline_scores(stage.model, cfg, api_videos['a'],
                                  layout['frame_inds'] + record['start_frame'] - 1, layout)
        if record['start_frame'] > 0:  # one frame off must show: the check can fail
            assert np.abs(np.asarray(record['scores']) - shifted).max() > 1e-4
    assert record['t_end'] == pytest.approx(record['end_frame'] / 25.0, abs=1e-3)


def test_several_streams_batched_and_bad_streams_stop_alone(api_models, api_videos):
    stage = _stage(api_models)
    sources = [api_videos['a'], api_videos['truncated_mp4'], api_videos['b'],
               api_videos['a'].parent / 'missing.mp4', 'rtsp://does-not-resolve.invalid/live']
    report = StreamEngine(stage, stride=4, batch_size=8, keep_records=True, progress=False,
                          reconnect=1, reconnect_delay=0.01).run(
        [str(s) for s in sources], names=['a', 'truncated', 'b', 'missing', 'url'])
    stats = {s.name: s for s in report.streams}
    # window 10, stride 4: windows end on frames 11, 15, ..., 39 (8) and 11, ..., 27 (5)
    assert (stats['a'].status, stats['a'].windows, stats['a'].frames) == ('ended', 8, 40)
    assert (stats['b'].status, stats['b'].windows, stats['b'].frames) == ('ended', 5, 31)
    assert stats['truncated'].status == 'failed'
    assert 'cannot open' in stats['truncated'].message and 'truncated.mp4' in \
        stats['truncated'].message
    assert stats['missing'].status == 'failed'
    assert stats['missing'].message.startswith('missing: video file not found:')
    assert stats['url'].status == 'failed' and stats['url'].reconnects == 1
    assert 'does-not-resolve.invalid' in stats['url'].message
    assert 'gave up after 1 reconnection attempt' in stats['url'].message
    assert report.windows == 13 and report.batches < 13  # windows of both streams batched
    # batching does not change a stream's predictions
    alone = _run(stage, [api_videos['b']], stride=4, batch_size=1)
    np.testing.assert_allclose([w['scores'] for w in _windows(report.records, 'b')],
                               [w['scores'] for w in _windows(alone.records)], atol=1e-5)
    assert 'b: ended, 31 frames, 5 windows' in report.summary()


@pytest.mark.parametrize('backend', ['pyav', 'decord'])  # decord hands an MPEG-TS to PyAV
def test_truncated_stream_ends_after_its_intact_frames(api_models, api_videos, backend):
    report = _run(_stage(api_models), [api_videos['truncated_ts']], backend=backend, stride=5)
    stats = report.streams[0]
    assert stats.status == 'ended' and 10 <= stats.frames < 40
    assert stats.windows == stats.frames // 5 - 1  # windows end on frames 9, 14, ...


@pytest.mark.parametrize('video', ['ts', 'truncated_ts'])
def test_an_mpeg_ts_streams_the_video_s_own_frames_with_the_default_backend(api_videos, video,
                                                                          log_lines):
    """decord gives an MPEG-TS's later frames in place of its first ones and then repeats one
    frame; the source reads it with PyAV instead, saying so."""
    import av
    path = str(api_videos[video])
    source = VideoSource(path, name='cam')
    source.open()
    frames = np.stack([frame for _, _, frame in source.frames()])
    source.close()
    assert source.backend == 'pyav'
    assert log_lines == [f'cam: {path} is MPEG-TS, whose frames decord returns out of place '
                         '(later frames first, then one frame repeated); reading it with PyAV']
    # the frames FFmpeg decodes in order, each once
    with av.open(path) as container:
        decoded = [frame.to_ndarray(format='rgb24') for frame in container.decode(video=0)]
    assert len(decoded) == 40 if video == 'ts' else 10 <= len(decoded) < 40
    np.testing.assert_array_equal(frames, np.stack(decoded))
    # an mp4 stays on decord, the decoder of offline testing
    intact = VideoSource(str(api_videos['a']))
    intact.open()
    intact.close()
    assert intact.backend == 'decord'


def test_corrupt_packet_pyav_skips_it_decord_stops(api_models, api_videos):
    stage = _stage(api_models)
    pyav = _run(stage, [api_videos['corrupt_mp4']], backend='pyav', stride=10)
    assert pyav.streams[0].status == 'ended' and pyav.streams[0].skipped_packets >= 1
    assert 50 <= pyav.streams[0].frames < 60
    decord = _run(stage, [api_videos['corrupt_mp4']], backend='decord', stride=10)
    assert decord.streams[0].status == 'failed'
    assert 'decoding stopped at frame' in decord.streams[0].message
    assert decord.streams[0].frames < 60


def test_stalled_url_reconnects_and_resumes(api_models, api_videos):
    """A TCP source that sends half of an MPEG-TS stream and goes silent, then serves it whole
    on the next connection, then refuses: read timeout, reconnect, frames again, give up."""
    data = api_videos['ts'].read_bytes()
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(4)
    release = threading.Event()

    def serve():
        first, _ = server.accept()
        first.sendall(data[:len(data) // 2])
        second, _ = server.accept()
        second.sendall(data)
        second.close()
        server.close()  # further connections are refused
        release.wait(10)
        first.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        report = _run(_stage(api_models), [f'tcp://127.0.0.1:{server.getsockname()[1]}'],
                      stride=5, read_timeout=0.5, open_timeout=2, reconnect=1,
                      reconnect_delay=0.01)
    finally:
        release.set()
        thread.join()
    stats = report.streams[0]
    assert stats.reconnects == 2  # after the stall, after the end of the second connection
    assert stats.status == 'failed' and 'refused' in stats.message.lower()
    assert 40 < stats.frames < 80  # part of the first connection, all of the second
    windows = _windows(report.records)
    assert [w['window'] for w in windows] == list(range(len(windows)))
    # the ring buffer restarts with each connection: no window straddles the two
    first_run = [w for w in windows if w['end_frame'] < stats.frames - 40]
    assert first_run and windows[len(first_run)]['start_frame'] >= stats.frames - 40


def test_source_errors(api_videos, tmp_path):
    with pytest.raises(ValueError, match='backend must be one of'):
        VideoSource('x.mp4', backend='opencv')
    with pytest.raises(ValueError, match='decord reads files only'):
        VideoSource('rtsp://host/live', backend='decord')
    empty = tmp_path / 'empty.mp4'
    empty.write_bytes(b'')
    with pytest.raises(SourceError, match='empty \\(0 bytes\\)'):
        VideoSource(str(empty)).open()
    with pytest.raises(SourceError, match='frames\\(\\) before open\\(\\)'):
        next(VideoSource(str(api_videos['a'])).frames())
    with pytest.raises(SourceError, match='cannot open .*http://127.0.0.1:1/'):
        VideoSource('http://127.0.0.1:1/x.mp4', open_timeout=1).open()


def test_engine_argument_errors(api_models):
    stage = _stage(api_models)
    with pytest.raises(ValueError, match='StreamEngine: stride must be a positive int'):
        StreamEngine(stage, stride=0)
    with pytest.raises(ValueError, match='StreamEngine: batch_size must be a positive int'):
        StreamEngine(stage, batch_size=1.5)
    with pytest.raises(ValueError, match='window must be >= 1'):
        StreamEngine(stage, window=0)
    with pytest.raises(ValueError, match='reconnect must be >= 0'):
        StreamEngine(stage, reconnect=-1)
    with pytest.raises(ValueError, match='needs both confirm and screen_threshold'):
        StreamEngine(stage, screen_threshold=0.5)
    with pytest.raises(ValueError, match='AlertRule with classes'):
        StreamEngine(stage, confirm=stage, screen_threshold=0.5, alert=AlertRule(0.5))
    with pytest.raises(ValueError, match='no sources'):
        StreamEngine(stage).run([])
    with pytest.raises(ValueError, match='2 names for 1 sources'):
        StreamEngine(stage).run(['a.mp4'], names=['a', 'b'])
    with pytest.raises(ValueError, match='window must be >= 1'):
        ModelStage(stage.model, window=0)


def test_engine_joins_its_threads_when_the_model_fails(api_models, api_videos):
    stage = _stage(api_models)
    broken = ModelStage(stage.model, WindowPipeline(load_config(api_models['fast_slow'])
                                                    .test_pipeline))
    before = threading.active_count()
    with pytest.raises(AttributeError, match='shape'):  # Recognizer2D given a dict of streams
        _run(broken, [api_videos['a'], api_videos['b']], stride=2, batch_size=2)
    assert threading.active_count() == before


# ------------------------------------------------------------------------------- alerts
def test_hysteresis_gives_one_alert_per_event():
    rule = AlertRule(0.8, release=0.5, classes=[2])
    scores = [0.1, 0.85, 0.7, 0.6, 0.4, 0.9, 0.3, 0.79]
    assert alert_events(scores, rule) == [dict(event='start', window=1),
                                          dict(event='end', window=4),
                                          dict(event='start', window=5),
                                          dict(event='end', window=6)]
    # without hysteresis the same scores flicker
    assert len(alert_events([0.1, 0.85, 0.7, 0.85, 0.7], AlertRule(0.8))) == 4
    assert rule.score([0.9, 0.0, 0.3, 0.1]) == 0.3  # only the alert classes count
    assert AlertRule(0.5).score([0.2, 0.7]) == 0.7
    state = Hysteresis(rule)
    assert [state.update(s) for s in (0.8, 0.5, 0.49)] == ['start', None, 'end']


def test_alert_rule_errors():
    with pytest.raises(ValueError, match='0 <= release <= threshold'):
        AlertRule(0.5, release=0.6)
    with pytest.raises(ValueError, match='non-negative labels'):
        AlertRule(0.5, classes=[-1])
    with pytest.raises(ValueError, match='class 7 is not among the model\'s 4 classes'):
        AlertRule(0.5, classes=[7]).score([0.1, 0.2, 0.3, 0.4])


def test_alerts_in_stream_records(api_models, api_videos):
    stage = _stage(api_models)
    plain = _run(stage, [api_videos['a']], stride=2)
    top = [w['scores'][0] for w in _windows(plain.records)]
    threshold = float(np.median(top))
    rule = AlertRule(threshold, release=threshold - 0.01, classes=[0])
    report = _run(stage, [api_videos['a']], stride=2, alert=rule)
    expected = alert_events(top, rule)
    got = [(r['event'], r['window']) for r in report.alerts]
    assert got == [(f'alert_{e["event"]}', e['window']) for e in expected] and got


# ---------------------------------------------------------------------------------- tool
def test_stream_infer_tool(api_models, api_videos, tmp_path, capsys):
    tool = load_script('tools/stream_infer.py')
    out = tmp_path / 'preds.jsonl'
    code = tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                      str(api_videos['a']), str(api_videos['b']), str(tmp_path / 'gone.mp4'),
                      '--stride', '4', '--device', 'cpu', '--out', str(out), '--threshold',
                      '0.4', '--release', '0.3', '--alert-classes', '0', '--no-progress',
                      '--threads', '1'])
    assert code == 1  # one stream failed; the others ran to the end
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    windows = [line for line in lines if 'scores' in line]
    assert len(windows) == 8 + 5
    assert {line['stream'] for line in windows} == {str(api_videos['a']), str(api_videos['b'])}
    assert lines[-1]['event'] == 'summary' and lines[-1]['windows'] == 13
    printed = capsys.readouterr()
    assert 'stage timing' in printed.out and 'gone.mp4: video file not found' in printed.out


def test_init_recognizer_refuses_a_checkpoint_of_another_input_encoding(api_models, tmp_path):
    """What tools/test.py refuses, export, quantisation, streaming and the probe refuse too:
    they all build through init_recognizer."""
    from hyperframes_mm.engine import load_verified
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    stem = model.backbone.hyperframe_stem
    other = 'frames' if stem.input_encoding != 'frames' else 'diff'
    loaded = load_verified(str(api_models['single_ckpt']))
    state = loaded.get('state_dict', loaded)
    path = tmp_path / 'other_basis.pth'
    torch.save({'state_dict': state, 'meta': {'cfg': (
        f"model = dict(backbone=dict(type='HyperResNet', input_encoding={other!r}))")}}, path)
    with pytest.raises(ValueError, match=rf"other_basis\.pth: trained with input_encoding="
                       rf"'{other}'.*and the model has input_encoding='{stem.input_encoding}'"):
        init_recognizer(api_models['single'], path, 'cpu')


def test_a_window_shorter_than_one_clip_is_refused():
    """The sampler would loop its picks over it: [0, 2, 4, 1, 3] for 3 picks 2 apart in a
    window of 5, frames out of time order scored as confidently as real ones."""
    pipeline = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=3, interval=3)])
    assert pipeline.span() == 7
    with pytest.raises(ValueError, match=r'a window of 5 frames is shorter than one clip of the '
                       r'sampler \(7 frames from its first pick to its last\); give a window of '
                       r'at least 7 frames \(its default: 7\)'):
        pipeline.layout(5)
    assert pipeline.frame_indices(7).tolist() == [0, 3, 6]
    # a sampler that spreads its picks over any window takes any window
    uniform = WindowPipeline([dict(type='HyperframeSampleFrames', num_frames=3, mode='uniform')])
    assert len(uniform.frame_indices(2)) == 3


_PIXELS_HINT = ('pixels and the model takes uint8 pixels 0..255, as decoders give them: map the '
                'frames to 0..255 the way the training frames were made and convert them to uint8 '
                '(depth in millimetres: the near/far mapping of depth_to_uint8 in '
                'tools/data/utd_mhad/convert_depth.py; float 0..1: np.round(frame * 255))')


def _any_stage(api_models, kind):
    """A stage of each kind, and its name in messages."""
    from hyperframes_mm.deploy.dynamic_frames import DynamicFrameStage
    if kind == 'checkpoint':
        return _stage(api_models), "ModelStage 'model'"
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    return DynamicFrameStage(model, (2, 3, 4)), "DynamicFrameStage 'dynamic'"


@pytest.mark.parametrize('kind', ['checkpoint', 'dynamic'])
@pytest.mark.parametrize('frame, error', [
    (np.full((64, 64, 3), 40000, np.uint16), f'holds uint16 {_PIXELS_HINT}'),
    (np.full((64, 64), 1500, np.uint16), f'holds uint16 {_PIXELS_HINT}'),  # a depth camera
    (np.full((64, 64, 3), 0.5, np.float32), f'holds float32 {_PIXELS_HINT}'),
    (np.full((64, 64, 2), 100, np.uint8), 'is 64 x 64 x 2 (2 channels) and the model takes 3 '
     'channels (H x W x 3): convert them to 3 channels'),
    (np.full((64, 64, 4), 100, np.uint8), 'is 64 x 64 x 4 (4 channels) and the model takes 3 '
     'channels (H x W x 3): drop the alpha channel (frame[..., :3])'),
    (np.full((64, 64, 5), 100, np.uint8), 'is 64 x 64 x 5 (5 channels) and the model takes 3 '
     'channels (H x W x 3): convert them to 3 channels'),
])
def test_frames_the_model_cannot_take_are_refused_at_every_stage_s_entry(api_models, kind,
                                                                         frame, error):
    """A checkpoint scored 16-bit and float 0..1 frames as 0..255 pixels, silently, and RGBA
    frames failed at the model with a message blaming the config; the 16-bit hint was
    ``frame >> 8``, which maps a depth camera's millimetres to 0..17."""
    stage, owner = _any_stage(api_models, kind)
    frames = [np.zeros((64, 64, 3), np.uint8)] * (stage.window_length(25.0) - 1) + [frame]
    last = len(frames) - 1
    with pytest.raises(ValueError) as raised:
        stage.prepare(frames, 25.0, 'cam')
    assert str(raised.value) == f'{owner}: frame {last} of the window {error}'


@pytest.mark.parametrize('kind', ['checkpoint', 'dynamic'])
def test_grey_frames_are_taken_as_rgb_and_logged_once_a_stream(api_models, kind, log_lines):
    """Grey camera frames (H x W, H x W x 1) were refused, where a test pipeline with
    ConsistentClipAugment took them: every stage kind repeats them into 3 channels, as decoders
    do with a grey video, and says so once a stream, not at every window."""
    stage, owner = _any_stage(api_models, kind)
    window = stage.window_length(25.0)
    grey = [np.full((64, 64), 10 * index, np.uint8) for index in range(window)]
    rgb = [np.repeat(frame[..., None], 3, axis=2) for frame in grey]
    mixed = [frame[..., None] if index % 2 else rgb[index] for index, frame in enumerate(grey)]
    key, expected = stage.prepare(rgb, 25.0, 'cam')
    for frames in (grey, mixed):
        got_key, packed = stage.prepare(frames, 25.0, 'cam')
        assert got_key == key
        torch.testing.assert_close(packed['inputs'], expected['inputs'], rtol=0, atol=0)
    stage.prepare(grey, 25.0, 'door')
    logged = [f'{owner}: stream {name!r} gives grey frames; each is repeated into 3 channels, as '
              'decoders turn a grey video into the RGB frames the model was trained on'
              for name in ('cam', 'door')]
    assert [line for line in log_lines if 'grey' in line] == logged


def test_a_model_of_one_channel_frames_takes_them_as_they_are():
    from hyperframes_mm.deploy.stages import model_frames
    frames = [np.zeros((8, 8, 1), np.uint8), np.zeros((8, 8), np.uint8)]
    taken, grey = model_frames(frames, 1, 'stage')
    assert taken is frames and grey is False
    with pytest.raises(ValueError) as raised:
        model_frames([np.zeros((8, 8, 3), np.uint8)], 1, 'stage')
    assert str(raised.value) == ('stage: frame 0 of the window is 8 x 8 x 3 (3 channels) and the '
                                 'model takes 1 channel (H x W x 1): convert them to 1 channel')


def test_a_file_shorter_than_one_window_says_so_in_the_summary(api_models, tmp_path):
    """It ended with status 'ended', 0 windows and no word why: read as a clip with no event."""
    from hyperframes_mm.datasets.video_io import write_video

    from ..conftest import moving_frames
    short = tmp_path / 'short.mp4'
    write_video(short, moving_frames(6, 0), fps=25)
    report = _run(_stage(api_models), [short], stride=4)
    stats = report.streams[0]
    assert (stats.status, stats.frames, stats.windows) == ('ended', 6, 0)
    assert stats.message == '6 frames, fewer than one 10-frame window: no prediction'
    assert (f'{short}: ended, 6 frames, 0 windows: 6 frames, fewer than one 10-frame window: '
            'no prediction') in report.summary()


def test_a_file_that_ends_before_its_first_window_end_is_scored_on_its_last_window(
        api_models, tmp_path):
    """11 frames, a 10-frame window, stride 4: windows end where the frame count is a multiple
    of 4, so none did, and the file ended 'ended, 0 windows' with no word, read as no event."""
    from hyperframes_mm.datasets.video_io import write_video

    from ..conftest import moving_frames
    stage = _stage(api_models)
    cfg = stage.model.cfg
    assert stage.window_length(25.0) == 10
    sampler = TRANSFORMS.build(dict(
        [s for s in cfg.test_pipeline if s['type'] == 'HyperframeSampleFrames'][0],
        test_mode=True))
    layout = sampler(dict(total_frames=10, start_index=0))
    for frames, ends in ((11, [10]), (12, [11]), (17, [11, 15])):
        video = tmp_path / f'{frames}.mp4'
        write_video(video, moving_frames(frames, 0), fps=25)
        report = _run(stage, [video], stride=4)
        windows = _windows(report.records)
        # only a file that would get none gets its last window; the others keep the stride's
        assert [w['end_frame'] for w in windows] == ends
        assert report.streams[0].windows == len(ends) and report.streams[0].message == ''
    record, = _windows(_run(stage, [tmp_path / '11.mp4'], stride=4).records)
    assert (record['start_frame'], record['end_frame']) == (1, 10)
    offline = _offline_scores(stage.model, cfg, tmp_path / '11.mp4', layout['frame_inds'] + 1,
                              layout)
    np.testing.assert_allclose(record['scores'], offline, atol=1e-5, rtol=0)


def test_thresholds_a_probability_never_reaches_are_refused(api_models, api_videos, capsys):
    """The plugin's heads average clips as probabilities: --threshold 1.5 ran every stream to
    its end without an alert, exit 0."""
    cfg = load_config(api_models['single'])
    check_score_thresholds(cfg, {'--threshold': 1.0, '--release': 0.0, '--other': None})
    with pytest.raises(ValueError, match=r"^--release -0\.1: the model's scores are "
                       r"probabilities \(TSNHead average_clips='prob'\), in 0\.\.1"):
        check_score_thresholds(cfg, {'--threshold': 0.5, '--release': -0.1})
    # logits (no clip averaging into probabilities) take any threshold
    cfg.model.cls_head.average_clips = 'score'
    check_score_thresholds(cfg, {'--threshold': 7.5})
    tool = load_script('tools/stream_infer.py')
    assert tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                      str(api_videos['a']), '--device', 'cpu', '--threshold', '1.5',
                      '--no-progress']) == 1
    assert "error: --threshold 1.5: the model's scores are probabilities" in \
        capsys.readouterr().err


def test_alert_options_are_checked_before_the_output_is_emptied(api_models, api_videos,
                                                                 tmp_path, capsys):
    """An alert class past the head's classes, or a names count other than the sources',
    failed at the first window with a traceback, after --out had been emptied; alert classes
    without --threshold were taken and never read."""
    tool = load_script('tools/stream_infer.py')
    out = tmp_path / 'keep.jsonl'
    out.write_text('{"earlier": "run"}\n')
    base = [str(api_models['single']), str(api_models['single_ckpt']), str(api_videos['a']),
            '--device', 'cpu', '--no-progress', '--out', str(out)]
    assert tool.main(base + ['--threshold', '0.5', '--alert-classes', '0', '4']) == 1
    assert capsys.readouterr().err == (f'error: --alert-classes 4: the model of '
                                       f'{api_models["single"]} scores 4 classes (labels '
                                       '0..3)\n')
    for options, message in ((['--alert-classes', '1'], '--alert-classes needs --threshold'),
                             (['--names', 'a', 'b'], '--names: 2 names for 1 sources')):
        with pytest.raises(SystemExit) as exit_info:
            tool.main(base + options)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert out.read_text() == '{"earlier": "run"}\n'
    assert tool.main(base + ['--threshold', '0.5', '--alert-classes', '3']) == 0
    assert out.read_text().count('\n') > 1


@pytest.mark.parametrize('option, value', [('--stride', '0'), ('--batch-size', '0'),
                                           ('--window', '-3'), ('--threads', '0')])
def test_stream_infer_counts_are_checked_by_option(api_models, api_videos, capsys, option,
                                                   value):
    tool = load_script('tools/stream_infer.py')
    with pytest.raises(SystemExit) as exit_info:
        tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                   str(api_videos['a']), option, value])
    assert exit_info.value.code == 2
    assert f'argument {option}: must be an int >= 1, got {value}' in capsys.readouterr().err


def test_a_window_shorter_than_one_clip_is_refused_before_any_stream_opens(api_models,
                                                                          api_videos, tmp_path,
                                                                          capsys):
    """Every stream opened and failed at its first window, one by one."""
    from hyperframes_mm.deploy.dynamic_frames import DynamicFrameStage
    stage = _stage(api_models)
    span = stage.pipeline.span()
    short = span - 1
    refusal = (f'a window of {short} frames is shorter than one clip of stage {{}} ({span} '
               f"frames from its sampler's first pick to its last); give a window of at least "
               f'{span} frames')
    with pytest.raises(ValueError) as raised:
        StreamEngine(stage, window=short)
    assert str(raised.value) == 'StreamEngine: window: ' + refusal.format("'model'")
    # a dynamic-frame stage's longest clip: T'=7 picks at the trained interval
    dynamic = DynamicFrameStage(stage.model, (3, 5, 7), keep_span=False, window=40)
    longest = dynamic.pipelines[7].span()
    assert longest > span
    with pytest.raises(ValueError, match=rf'^StreamEngine: window: a window of {longest - 1} '
                       rf"frames is shorter than one clip of stage 'dynamic' \({longest} "):
        StreamEngine(dynamic, window=longest - 1)
    tool = load_script('tools/stream_infer.py')
    out = tmp_path / 'preds.jsonl'
    out.write_text('{"earlier": "run"}\n')
    # the source does not exist: a stream that opened would fail on it instead
    assert tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                      str(tmp_path / 'gone.mp4'), '--window', str(short), '--out', str(out),
                      '--no-progress']) == 1
    assert capsys.readouterr().err.splitlines()[-1] == \
        'error: --window: ' + refusal.format("'model'")
    assert out.read_text() == '{"earlier": "run"}\n'


def test_a_width_decord_decodes_to_garbage_fails_its_stream_alone(api_models, api_videos,
                                                                  tmp_path):
    """decord 0.6's sequential reader returns 4-channel frames for a 72-pixel-wide video: the
    model refused their channel count, naming no file, and the run ended with every stream's
    windows lost."""
    from hyperframes_mm.datasets.video_io import write_video
    narrow = tmp_path / 'narrow.mp4'
    write_video(narrow, np.zeros((20, 128, 72, 3), np.uint8), fps=25)
    report = StreamEngine(_stage(api_models), stride=4, keep_records=True,
                          progress=False).run([str(api_videos['a']), str(narrow)],
                                              names=['a', 'narrow'])
    stats = {s.name: s for s in report.streams}
    assert (stats['a'].status, stats['a'].windows) == ('ended', 8)
    assert stats['narrow'].status == 'failed' and stats['narrow'].windows == 0
    assert stats['narrow'].message.startswith(
        'narrow: decord decoded frame 0 as (128, 72, 4), not H x W x 3 RGB')
    assert 'read it with backend=\'pyav\'' in stats['narrow'].message
    pyav = _run(_stage(api_models), [narrow], stride=4, backend='pyav')
    assert (pyav.streams[0].status, pyav.streams[0].windows) == ('ended', 3)


def _without_crop(pipeline):
    """``pipeline`` resizing to a short side of 32 with no crop: its samples are as wide as
    each video is."""
    return [dict(step, scale=(-1, 32)) if step['type'] == 'Resize' else step
            for step in pipeline if step['type'] != 'CenterCrop']


def _square_graph_and_wide_video(api_models, tmp_path):
    """The single model exported behind :func:`_without_crop` at 64x64 frames (fixed 32x32
    samples), loaded as a graph, and a 64x96 video whose samples it cannot take."""
    from mmengine.config import Config

    from hyperframes_mm.apis import example_inputs
    from hyperframes_mm.datasets.video_io import write_video
    from hyperframes_mm.deploy.export import export_onnx
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    cfg = Config(model.cfg.to_dict())
    cfg.test_pipeline = _without_crop(cfg.test_pipeline)
    graph = tmp_path / 'square.onnx'
    export_onnx(model, graph, example_inputs(cfg, (64, 64)).float(), dynamic_batch=False)
    wide = tmp_path / 'wide.mp4'
    write_video(wide, np.zeros((40, 64, 96, 3), np.uint8), fps=25)
    return init_recognizer(cfg, str(graph), 'cpu'), wide


def test_streams_of_other_frame_sizes_fail_alone_on_a_fixed_size_graph(api_models, api_videos,
                                                                        tmp_path):
    """A test pipeline without a crop sizes samples by each video: one batch stacked two
    streams' samples of two sizes, and the whole run died with every record lost."""
    graph, wide = _square_graph_and_wide_video(api_models, tmp_path)
    stage = ModelStage(graph)
    report = StreamEngine(stage, stride=4, batch_size=4, keep_records=True,
                          progress=False).run([str(api_videos['a']), str(wide)],
                                              names=['square', 'wide'])
    stats = {s.name: s for s in report.streams}
    assert (stats['square'].status, stats['square'].windows) == ('ended', 8)
    assert (stats['wide'].status, stats['wide'].windows) == ('failed', 0)
    assert stats['wide'].message.startswith(
        "wide: ValueError('graph input imgs takes samples of 2 x 9 x 32 x 32 and this one is "
        "2 x 9 x 32 x 48 (clips x channels x height x width): the test pipeline sized it from "
        "a video of another frame size")


def test_stream_names_must_tell_the_streams_apart(api_models, api_videos, capsys):
    """Records carry their stream's name alone: two streams of one name could not be told
    apart."""
    tool = load_script('tools/stream_infer.py')
    base = [str(api_models['single']), str(api_models['single_ckpt'])]
    for options, message in (
            ([str(api_videos['a']), str(api_videos['b']), '--names', 'cam', 'cam'],
             '--names: cam given more than once; every stream needs a name of its own\n'),
            ([str(api_videos['a'])] * 2,
             f'sources: {api_videos["a"]} given more than once; every stream needs a name of '
             'its own (--names)\n')):
        with pytest.raises(SystemExit) as exit_info:
            tool.main(base + options)
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.endswith(f'error: {message}')


def test_a_cascade_of_two_class_sets_and_a_spread_sampler_without_window_are_refused(
        api_models, api_videos, tmp_path, capsys):
    """A confirmer of other classes gave records whose labels meant the screen's classes on
    some windows and the confirmer's on others, exit 0; a sampler that spreads its picks over
    the whole video failed every stream at its first window, after the output was emptied."""
    five = tmp_path / 'five.py'
    five.write_text(f"_base_ = [{str(api_models['single'])!r}]\n"
                    'model = dict(cls_head=dict(num_classes=5))\n')
    weights = tmp_path / 'five.pth'
    torch.save(dict(state_dict=init_recognizer(str(five), device='cpu').state_dict()), weights)
    tool = load_script('tools/stream_infer.py')
    base = [str(api_models['single']), str(api_models['single_ckpt']), str(api_videos['a']),
            '--device', 'cpu', '--no-progress']
    assert tool.main(base + ['--confirm-config', str(five), '--confirm-checkpoint',
                             str(weights), '--screen-threshold', '0.2', '--threshold', '0.5',
                             '--alert-classes', '0']) == 1
    assert capsys.readouterr().err == (
        f'error: the screening model scores 4 classes and the confirming model ({five}) 5: a '
        'cascade needs two models of the same classes\n')
    uniform = ['--cfg-options', 'test_pipeline.1.mode=uniform', 'test_pipeline.1.interval=None']
    assert tool.main(base + uniform) == 1
    assert capsys.readouterr().err.startswith(
        "error: --window: the sampler of stage 'model' (")
    assert tool.main(base + uniform + ['--window', '20']) == 0


def test_dynamic_frames_score_the_window_given(api_models, api_videos, tmp_path):
    """--window did not reach the dynamic-frame stage: it scored its own default window while
    the records said they covered the window given."""
    from hyperframes_mm.datasets.video_io import open_video
    from hyperframes_mm.deploy import DynamicFrameStage
    tool = load_script('tools/stream_infer.py')
    out = tmp_path / 'dynamic.jsonl'
    assert tool.main([str(api_models['single']), str(api_models['single_ckpt']),
                      str(api_videos['a']), '--device', 'cpu', '--no-progress', '--window',
                      '40', '--stride', '40', '--dynamic-frames', '2', '3', '4', '--out',
                      str(out)]) == 0
    (record, ) = _windows([json.loads(line) for line in out.read_text().splitlines()])
    assert (record['start_frame'], record['end_frame']) == (0, 39)
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    stage = DynamicFrameStage(model, (2, 3, 4), window=40)
    reader = open_video(str(api_videos['a']))
    frames = [reader[index].asnumpy() for index in range(len(reader))]
    key, packed = stage.prepare(frames, 25.0, 'a')
    expected = stage.predict(key, [packed])[0].numpy()
    np.testing.assert_allclose(record['scores'], expected, rtol=1e-5, atol=1e-6)


def test_dynamic_frames_never_batch_two_frame_sizes(api_models, api_videos, tmp_path):
    """Keyed by T alone, windows of two streams' frame sizes were batched together, and the
    data preprocessor padded the smaller: a stream's scores depended on its neighbour."""
    from hyperframes_mm.datasets.video_io import write_video
    from hyperframes_mm.deploy import DynamicFrameStage

    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    model.cfg.test_pipeline = _without_crop(model.cfg.test_pipeline)
    # one T for every window (no motion score reaches the thresholds): only the frame sizes
    # differ
    stage = DynamicFrameStage(model, (2, 3, 4), (1e9, 1e9), window=20)
    wide = tmp_path / 'wide.mp4'
    write_video(wide, np.full((40, 64, 96, 3), 200, np.uint8), fps=25)

    def scores(sources, names):
        report = StreamEngine(stage, stride=4, window=20, batch_size=4, keep_records=True,
                              progress=False).run([str(s) for s in sources], names=names)
        return {(r['stream'], r['window']): (r['num_frames'], r['scores'])
                for r in _windows(report.records)}

    alone = scores([api_videos['a']], ['square'])
    together = scores([api_videos['a'], wide], ['square', 'wide'])
    assert len(alone) == 6 and len(together) == 12
    for window, (num_frames, reference) in alone.items():
        assert together[window][0] == num_frames == 2
        np.testing.assert_allclose(together[window][1], reference, rtol=1e-5, atol=1e-6)


def test_a_stream_a_fixed_size_confirmer_cannot_take_fails_alone(api_models, api_videos,
                                                                 tmp_path):
    """The confirmer prepares flagged windows in the model thread: a stream whose frames make
    another size than its graph's ended every stream there."""
    graph, wide = _square_graph_and_wide_video(api_models, tmp_path)
    confirm = ModelStage(graph, name='confirm')
    # every window flagged: the confirmer scores them all
    report = StreamEngine(_stage(api_models), stride=4, alert=AlertRule(0.5, classes=[0, 1, 2, 3]),
                          confirm=confirm, screen_threshold=0.0, keep_records=True,
                          progress=False).run(
        [str(api_videos['a']), str(wide)], names=['square', 'wide'])
    stats = {s.name: s for s in report.streams}
    assert (stats['square'].status, stats['square'].windows) == ('ended', 8)
    assert all(record['flagged'] for record in _windows(report.records, 'square'))
    assert (stats['wide'].status, stats['wide'].windows) == ('failed', 0)
    assert stats['wide'].message.startswith("wide: ValueError('graph input imgs takes samples "
                                            'of 2 x 9 x 32 x 32 and this one is 2 x 9 x 32 x 48')
