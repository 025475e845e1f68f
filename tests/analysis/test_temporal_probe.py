"""The temporal probe: frame orders, interval scaling, verdicts, and real models that do and do
not use time."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from hyperframes_mm.analysis.temporal_probe import (ORDER_CONDITIONS, ConditionResult,
                                                    frame_order, judge, perturb_inputs,
                                                    reorder_frames, run_temporal_probe,
                                                    scale_sampling_interval,
                                                    write_probe_outputs)

from ..conftest import REPO, run_tool
from .conftest import FAST_SLOW_CONFIG, PROBE_CONFIG, probe_config


# ------------------------------------------------------------------------------ frame orders
def test_frame_orders_exact():
    assert frame_order('original', 5).tolist() == [0, 1, 2, 3, 4]
    assert frame_order('reversed', 5).tolist() == [4, 3, 2, 1, 0]
    assert frame_order('static', 5).tolist() == [2, 2, 2, 2, 2]
    assert frame_order('reversed', 4).tolist() == [3, 2, 1, 0]
    assert frame_order('static', 4).tolist() == [2, 2, 2, 2]
    # T=3: the only way to move both non-centre frames is to swap them.
    assert frame_order('shuffled', 3).tolist() == [2, 1, 0]
    for condition in ORDER_CONDITIONS:
        assert frame_order(condition, 1).tolist() == [0]
    assert frame_order('shuffled', 2).tolist() == [0, 1]


@pytest.mark.parametrize('num_frames', [5, 7, 8])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_shuffle_keeps_centre_and_moves_every_other_frame(num_frames, seed):
    order = frame_order('shuffled', num_frames, seed)
    centre = num_frames // 2
    assert sorted(order.tolist()) == list(range(num_frames))
    assert order[centre] == centre
    others = [t for t in range(num_frames) if t != centre]
    assert all(order[t] != t for t in others)
    assert np.array_equal(order, frame_order('shuffled', num_frames, seed))


def test_shuffle_depends_on_seed():
    draws = {tuple(frame_order('shuffled', 7, seed)) for seed in range(5)}
    assert len(draws) > 1


def test_frame_order_errors():
    with pytest.raises(ValueError, match='unknown condition'):
        frame_order('backwards', 5)
    with pytest.raises(ValueError, match='num_frames'):
        frame_order('reversed', 0)


def test_reorder_frames_moves_channel_groups():
    hyperframes = torch.arange(9.).view(1, 9, 1, 1).expand(2, 9, 2, 2)
    out = reorder_frames(hyperframes, [2, 1, 0])
    assert out[0, :, 0, 0].tolist() == [6, 7, 8, 3, 4, 5, 0, 1, 2]
    assert out.shape == hyperframes.shape
    static = reorder_frames(hyperframes, [1, 1, 1])
    assert static[1, :, 1, 1].tolist() == [3, 4, 5] * 3


def test_reorder_frames_refuses_wrong_channels():
    with pytest.raises(ValueError, match=r'expected hyperframes \[\.\.\., 3\*4, H, W\]'):
        reorder_frames(torch.zeros(1, 9, 2, 2), [0, 1, 2, 3])


def test_perturb_inputs_uses_each_streams_own_T():
    sample = dict(imgs_fast=torch.arange(9.).view(1, 9, 1, 1),
                  imgs_slow=torch.arange(15.).view(1, 15, 1, 1))
    perturbed, orders = perturb_inputs([sample, sample], 'reversed')
    assert orders == dict(imgs_fast=[2, 1, 0], imgs_slow=[4, 3, 2, 1, 0])
    assert perturbed[1]['imgs_fast'].flatten().tolist() == [6, 7, 8, 3, 4, 5, 0, 1, 2]
    assert perturbed[0]['imgs_slow'].flatten()[:3].tolist() == [12, 13, 14]
    single, orders = perturb_inputs([torch.arange(6.).view(1, 6, 1, 1)], 'static')
    assert orders == dict(imgs=[1, 1])
    assert single[0].flatten().tolist() == [3, 4, 5, 3, 4, 5]


def test_perturb_inputs_errors():
    with pytest.raises(ValueError, match='imgs: expected hyperframes'):
        perturb_inputs([torch.zeros(1, 7, 2, 2)], 'reversed')
    with pytest.raises(TypeError, match='cannot reorder frames of a str'):
        perturb_inputs(['clip.mp4'], 'reversed')


# ---------------------------------------------------------------------------- interval scale
def _sampler(**kwargs):
    return [dict(type='DecordInit'), dict(type='HyperframeSampleFrames', **kwargs),
            dict(type='DecordDecode')]


@pytest.mark.parametrize('interval,scale,expected', [
    (2, 0.5, 1), (2, 2.0, 4), (3, 0.5, 2), (2, 0.25, 1), (5, 0.5, 3), (4, 1.5, 6)])
def test_scale_frame_interval_rounds_to_whole_frames(interval, scale, expected):
    pipeline = _sampler(num_frames=5, interval=interval)
    scaled = scale_sampling_interval(pipeline, scale)
    assert scaled[1]['interval'] == expected
    assert pipeline[1]['interval'] == interval  # the input is left alone


def test_scale_default_interval_and_time_based():
    assert scale_sampling_interval(_sampler(num_frames=5), 3.0)[1]['interval'] == 3
    scaled = scale_sampling_interval(_sampler(num_frames=5, interval=0.1, time_based=True), 2.5)
    assert scaled[1]['interval'] == pytest.approx(0.25)


def test_scale_every_stream():
    pipeline = _sampler(num_frames=5, interval=2,
                        streams=dict(fast=dict(interval=1), slow=dict(interval=4), mid=None))
    scaled = scale_sampling_interval(pipeline, 2.0)[1]
    assert scaled['interval'] == 4
    assert scaled['streams']['fast'] == dict(interval=2)
    assert scaled['streams']['slow'] == dict(interval=8)
    assert scaled['streams']['mid'] is None  # inherits the scaled top-level interval


def test_scale_mmaction_sample_frames():
    pipeline = [dict(type='mmaction.SampleFrames', clip_len=5, frame_interval=2, num_clips=1)]
    assert scale_sampling_interval(pipeline, 2.0)[0]['frame_interval'] == 4
    assert scale_sampling_interval([dict(type='SampleFrames', clip_len=5)], 2.0)[0][
        'frame_interval'] == 2


def test_scale_errors():
    with pytest.raises(ValueError, match='scale must be > 0'):
        scale_sampling_interval(_sampler(num_frames=5), 0)
    with pytest.raises(ValueError, match='no HyperframeSampleFrames or SampleFrames'):
        scale_sampling_interval([dict(type='DecordInit')], 2.0)
    with pytest.raises(ValueError, match='no interval to scale'):
        scale_sampling_interval(_sampler(num_frames=5, mode='uniform'), 2.0)


# ----------------------------------------------------------------------------------- verdict
def _conditions(accuracies, agreements, interval=None, scores=None):
    """Results with the given accuracies and agreements; by default the original predictions
    cover every class."""
    scores = np.eye(4)[np.arange(8) % 4] if scores is None else scores
    results = []
    for name, accuracy, agreement in zip(ORDER_CONDITIONS, accuracies, agreements):
        results.append(ConditionResult(name, 'order', '', accuracy, accuracies[0] - accuracy,
                                       agreement, {}, scores))
    if interval is not None:
        results.append(ConditionResult('interval x2', 'interval', '', interval,
                                       accuracies[0] - interval, 0.5, {}, scores))
    return results


def test_judge_identical_predictions_ignore_time():
    uses_time, text = judge(_conditions([0.8] * 4, [1.0] * 4), {'imgs': 5}, 4, 0.02)
    assert uses_time is False
    assert text.startswith('The model ignores time: its predictions are identical')


def test_judge_small_drops_ignore_time():
    uses_time, text = judge(_conditions([0.8, 0.79, 0.8, 0.78], [1, .9, .95, .9]),
                            {'imgs': 5}, 4, 0.05)
    assert uses_time is False
    assert 'accuracy drops by at most 2.0% (tolerance 5.0%)' in text


def test_judge_drops_use_time():
    uses_time, text = judge(_conditions([0.9, 0.1, 0.5, 0.3], [1, .1, .5, .3], interval=0.6),
                            {'imgs': 5}, 4, 0.02)
    assert uses_time is True
    assert ('accuracy drops by 80.0% with the frames reversed, 40.0% shuffled and 60.0% on a '
            'static clip') in text
    assert 'At interval x2 accuracy drops by 30.0%' in text


def test_judge_motion_without_order():
    uses_time, text = judge(_conditions([0.9, 0.9, 0.89, 0.3], [1, .9, .9, .3]),
                            {'imgs': 5}, 4, 0.02)
    assert uses_time is True
    assert text.endswith('It needs motion to be present but not its order or direction.')


def test_judge_single_frame_and_chance():
    assert judge(_conditions([0.8] * 4, [1.0] * 4), {'imgs': 1}, 4, 0.02)[0] is None
    _, text = judge(_conditions([0.26] * 4, [1.0] * 4), {'imgs': 5}, 4, 0.02)
    assert text.startswith('Accuracy as sampled (26.0%) is at chance level (1/4 = 25.0%)')
    assert 'for every clip' not in text
    _, text = judge(_conditions([0.25] * 4, [1.0] * 4, scores=np.eye(4)[[2] * 8]),
                    {'imgs': 5}, 4, 0.02)
    assert 'It predicts class 2 for every clip: it has learned nothing yet' in text


def test_judge_gives_no_verdict_on_a_model_that_learned_nothing():
    """One clip of 8 less on a static clip, of a model that predicts one class for every
    clip, read as "the model uses time" (uses_time true) beside "it has learned nothing"."""
    one_class = np.eye(4)[[2] * 8]
    results = _conditions([0.25, 0.25, 0.25, 0.125], [1, 1, 1, 0.875], scores=one_class)
    results[3] = replace(results[3], scores=np.eye(4)[[2] * 7 + [1]])
    uses_time, text = judge(results, {'imgs': 5}, 4, 0.02)
    assert uses_time is None
    assert text.endswith('So the probe cannot tell whether the model uses time: accuracy moves '
                         'by 0.0% with the frames reversed, 0.0% shuffled and 12.5% on a static '
                         'clip, which at this accuracy is noise.')
    # at chance with every class predicted: a drop is noise too
    assert judge(_conditions([0.26, 0.1, 0.26, 0.26], [1, .5, 1, 1]), {'imgs': 5}, 4,
                 0.02)[0] is None
    # the same predictions under every order decide nothing for one class, but scores that
    # no frame order changes do, at any accuracy
    changed = _conditions([0.25] * 4, [1.0] * 4, scores=one_class)
    changed[1] = replace(changed[1], scores=one_class * 0.9)
    assert judge(changed, {'imgs': 5}, 4, 0.02)[0] is None
    assert judge(_conditions([0.25] * 4, [1.0] * 4, scores=one_class), {'imgs': 5}, 4,
                 0.02)[0] is False


def test_clips_whose_frames_are_identical_give_no_verdict():
    """Videos shorter than one sampler step (or still) repeat one frame: every order gives the
    same input, and the probe said "the model ignores time" of any model."""
    uses_time, text = judge(_conditions([0.8] * 4, [1.0] * 4), {'imgs': 5}, 4, 0.02,
                            still_clips=8)
    assert uses_time is None
    assert text.startswith("Every clip's frames are identical (8 of 8: videos shorter than one "
                           'step of the sampler, or still)')
    uses_time, text = judge(_conditions([0.9, 0.1, 0.5, 0.3], [1, .1, .5, .3]), {'imgs': 5}, 4,
                            0.02, still_clips=3)
    assert uses_time is True
    assert text.startswith('3 of 8 clips have identical frames (short or still videos)')


def test_unchanged_compares_each_sample_of_every_input_structure():
    from hyperframes_mm.analysis.temporal_probe import _unchanged, perturb_inputs
    still = torch.full((1, 15, 4, 4), 7.0)
    moving = torch.arange(15 * 16, dtype=torch.float32).reshape(1, 15, 4, 4)
    for batch in ([still, moving], torch.stack([still, moving]),
                  [dict(imgs_fast=still, imgs_slow=still), dict(imgs_fast=still,
                                                               imgs_slow=moving)],
                  dict(imgs_fast=torch.stack([still, still]),
                       imgs_slow=torch.stack([still, moving]))):
        static, _ = perturb_inputs(batch, 'static')
        assert _unchanged(batch, static) == [True, False]


# ------------------------------------------------------------------------------ real models
@pytest.fixture(scope='module')
def trained_report(trained_checkpoint):
    return run_temporal_probe(probe_config(), str(trained_checkpoint), scales=(0.5, 2.0),
                              progress=False)


@pytest.mark.trained
def test_trained_model_uses_time(trained_report):
    """What the probe must say of a model that learnt direction, on any CPU's kernels. After 20
    short epochs the model's accuracy moves with the kernels and the seed by several clips, so
    the accuracy is bounded well above chance only, and the claim is relative: reversing the
    frames or freezing them on the centre frame takes much of it away, and the verdict says the
    model uses time. benchmarks/bench_test_margins.py measures these quantities over seeds and
    kernel settings (benchmarks/results/test_margins.md): every bound keeps several clips of
    margin to every measured run."""
    report = trained_report
    original = report.condition('original')
    assert original.accuracy >= 0.4  # chance is 0.25
    # accuracies are fractions of the probe's clips: a drop of exactly the bound (6 of 24 clips
    # for 0.25) meets it, though float subtraction can leave it a rounding error short
    exact = 1e-9
    assert report.condition('reversed').accuracy <= original.accuracy - 0.3 + exact
    assert report.condition('static').accuracy <= original.accuracy - 0.25 + exact
    assert report.uses_time is True
    assert report.verdict.startswith('The model uses time')
    assert report.num_frames == dict(imgs=5)
    assert report.condition('reversed').detail == dict(imgs=[4, 3, 2, 1, 0])
    assert report.condition('interval x0.5').detail == dict(imgs=1)
    assert report.condition('interval x2').detail == dict(imgs=4)
    assert len(report.labels) == 24 and report.skipped == {}


def test_centre_frame_model_ignores_time_exactly(centre_model):
    report = run_temporal_probe(probe_config(), str(centre_model), scales=(), progress=False)
    original = report.condition('original').scores
    assert not np.allclose(original, original[:1])  # its output does depend on the clip
    for name in ORDER_CONDITIONS[1:]:
        assert np.array_equal(report.condition(name).scores, original), name
        assert report.condition(name).agreement == 1.0
    assert report.uses_time is False
    assert 'predictions are identical' in report.verdict
    assert report.still_clips == 0


def test_fast_slow_model_every_stream(centre_fast_slow_model):
    report = run_temporal_probe(probe_config(FAST_SLOW_CONFIG), str(centre_fast_slow_model),
                                scales=(0.5, 2.0), progress=False)
    assert report.num_frames == dict(imgs_fast=5, imgs_slow=5)
    assert report.condition('reversed').detail == dict(imgs_fast=[4, 3, 2, 1, 0],
                                                       imgs_slow=[4, 3, 2, 1, 0])
    original = report.condition('original').scores
    for name in ORDER_CONDITIONS[1:]:
        assert np.array_equal(report.condition(name).scores, original), name
    assert report.uses_time is False
    assert report.condition('interval x2').detail == dict(fast=2, slow=6)
    assert report.condition('interval x0.5').detail == dict(fast=1, slow=2)


def test_unchanged_interval_is_skipped(centre_model):
    report = run_temporal_probe(probe_config(), str(centre_model), scales=(1.2, ),
                                progress=False)
    assert report.skipped == {
        'interval x1.2': "the intervals {'imgs': 2} stay the same after rounding to whole "
                         'frames'}
    assert [c.name for c in report.conditions] == list(ORDER_CONDITIONS)


def test_probe_errors(centre_model, tmp_path):
    with pytest.raises(FileNotFoundError, match='checkpoint file not found: .*missing.pth'):
        run_temporal_probe(probe_config(), str(tmp_path / 'missing.pth'), progress=False)
    with pytest.raises(RuntimeError, match='resnet_2d.pth does not fit the model of the config'):
        run_temporal_probe(probe_config(), str(centre_model.parent / 'resnet_2d.pth'),
                           progress=False)
    with pytest.raises(ValueError, match="split must be one of"):
        run_temporal_probe(probe_config(), str(centre_model), split='train', progress=False)
    with pytest.raises(ValueError, match='tolerance must be in'):
        run_temporal_probe(probe_config(), str(centre_model), tolerance=1.5, progress=False)


def test_outputs_json_and_chart(centre_model, tmp_path):
    report = run_temporal_probe(probe_config(), str(centre_model), scales=(2.0, ),
                                progress=False)
    json_path, png_path = write_probe_outputs(report, tmp_path, dict(config='probe.py'))
    written = json.loads(json_path.read_text())
    assert written['config'] == 'probe.py'
    assert written['num_samples'] == 24 and written['num_classes'] == 4
    assert [c['name'] for c in written['conditions']] == list(ORDER_CONDITIONS) + ['interval x2']
    assert written['uses_time'] is False
    assert png_path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


@pytest.mark.trained
def test_command_line_tool(trained_checkpoint, trained_report, tmp_path, monkeypatch):
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    result = run_tool([REPO / 'tools/analysis/temporal_probe.py', PROBE_CONFIG,
                       trained_checkpoint, '--out-dir', tmp_path, '--scales', '0.5', '2',
                       '--no-progress'], tmp_path)
    assert f'verdict: {trained_report.verdict}' in result.stdout
    written = json.loads((tmp_path / 'temporal_probe.json').read_text())
    assert [(c['name'], c['accuracy']) for c in written['conditions']] == \
        [(c.name, c.accuracy) for c in trained_report.conditions]
    assert written['checkpoint'] == str(trained_checkpoint)
    assert (tmp_path / 'temporal_probe.png').is_file()


def test_an_out_dir_that_is_a_file_is_refused_before_any_pass(tmp_path):
    """It was found after every evaluation pass had run, losing their results."""
    taken = tmp_path / 'out'
    taken.write_text('a file')
    result = run_tool([REPO / 'tools/analysis/temporal_probe.py', PROBE_CONFIG,
                       tmp_path / 'never_read.pth', '--out-dir', taken], tmp_path, check=False)
    assert result.returncode == 2
    assert result.stderr.rstrip().endswith(f'error: --out-dir {taken}: a file, not a folder')


# ------------------------------------------------------- stacked streams and uniform streams
def test_perturb_inputs_reorders_stacked_streams_each_in_its_own_block():
    """Streams stacked into one hyperframe (fuse_streams) were reordered as one T=5 stream:
    reversal swapped the fast and slow blocks and "static" froze every frame on a slow one."""
    fused = torch.arange(15.).view(1, 15, 1, 1)
    perturbed, orders = perturb_inputs([fused], 'reversed', fused=[('fast', 3), ('slow', 2)])
    assert orders == dict(imgs_fast=[2, 1, 0], imgs_slow=[1, 0])
    assert perturbed[0].flatten().tolist() == [6, 7, 8, 3, 4, 5, 0, 1, 2,
                                               12, 13, 14, 9, 10, 11]
    static, orders = perturb_inputs(fused, 'static', fused=[('fast', 3), ('slow', 2)])
    assert orders == dict(imgs_fast=[1, 1, 1], imgs_slow=[1, 1])
    assert static.flatten().tolist() == [3, 4, 5] * 3 + [12, 13, 14] * 2
    with pytest.raises(ValueError, match=r"imgs: 5 frames a hyperframe, but the fused streams "
                                         r"\[\('fast', 3\), \('slow', 3\)\] stack 6"):
        perturb_inputs(fused, 'static', fused=[('fast', 3), ('slow', 3)])


def test_a_uniform_stream_is_described_as_such():
    from hyperframes_mm.analysis.temporal_probe import describe_intervals
    assert describe_intervals(dict(fast=4 / 30, slow=None), dict(fast=8 / 30, slow=None)) == \
        'interval fast 0.133333 -> 0.266667, slow uniform over the clip'
    assert describe_intervals(dict(imgs=2), dict(imgs=4)) == 'interval imgs 2 -> 4'


def _fused_uniform_config():
    """The probe config as the synthetic family's main fast/slow model: a fast stream by
    interval and a slow one spread over the clip, stacked into one T=10 hyperframe."""
    cfg = probe_config()
    cfg.model.backbone.num_frames = 10
    test_pipeline = cfg.test_dataloader.dataset.pipeline
    test_pipeline[1] = dict(type='HyperframeSampleFrames', num_frames=5, num_clips=2,
                            test_mode=True,
                            streams=dict(fast=dict(interval=1), slow=dict(mode='uniform')))
    test_pipeline[3] = dict(type='HyperframeStack', fuse_streams=True)
    return cfg


def test_stacked_streams_with_a_uniform_one(moving_disc_dataset, tmp_path):
    """tools/analysis/temporal_probe.py on the main job's fast/slow config ended in "TypeError:
    unsupported format string passed to NoneType.__format__" after every pass, writing
    nothing: the uniform stream has no interval to describe."""
    from mmaction.registry import MODELS
    cfg = _fused_uniform_config()
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    torch.save(dict(state_dict=model.state_dict()), tmp_path / 'fused.pth')
    report = run_temporal_probe(cfg, str(tmp_path / 'fused.pth'), scales=(2.0, ),
                                progress=False)
    assert report.num_frames == dict(imgs_fast=5, imgs_slow=5)
    assert report.condition('reversed').detail == dict(imgs_fast=[4, 3, 2, 1, 0],
                                                       imgs_slow=[4, 3, 2, 1, 0])
    assert report.condition('static').detail == dict(imgs_fast=[2] * 5, imgs_slow=[2] * 5)
    scaled = report.condition('interval x2')
    assert scaled.description == 'interval fast 1 -> 2, slow uniform over the clip'
    assert scaled.detail == dict(fast=2, slow=None)
    written = json.loads(write_probe_outputs(report, tmp_path)[0].read_text())
    assert written['conditions'][-1]['detail'] == dict(fast=2, slow=None)
