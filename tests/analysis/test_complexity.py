"""FLOP counting and latency of configs, single-stream and fast/slow (dict inputs)."""
import pytest

from hyperframes_mm.analysis.complexity import measure_latency, model_complexity

from ..conftest import load_script


def test_flops_grow_by_exactly_the_inflated_conv1(api_models):
    three = model_complexity(api_models['single'], (48, 64))
    one = model_complexity(api_models['single'], (48, 64), cfg_options={
        'model.backbone.num_frames': 1, 'test_pipeline.1.num_frames': 1})
    assert three['inputs'] == {'imgs': (1, 2, 9, 32, 32)} and three['clips'] == 2
    assert one['inputs'] == {'imgs': (1, 2, 3, 32, 32)}
    # conv1: 64 filters x (9 - 3) more input channels x 7 x 7 taps x 16 x 16 outputs x 2 clips
    assert three['flops'] - one['flops'] == 64 * 6 * 49 * 16 * 16 * 2
    assert three['params'] - one['params'] == 64 * 6 * 49


def test_fast_slow_flops_count_both_streams(api_models):
    single = model_complexity(api_models['single'], (32, 32),
                              cfg_options={'test_pipeline.1.num_clips': 1})
    fast_slow = model_complexity(api_models['fast_slow'], (32, 32))
    assert fast_slow['inputs'] == {'imgs_fast': (1, 1, 9, 32, 32),
                                   'imgs_slow': (1, 1, 9, 32, 32)}
    # two passes of the shared backbone and one 1024 x 4 classifier, against one pass and a
    # 512 x 4 classifier: exactly twice the single-stream cost
    assert fast_slow['flops'] - 2 * single['flops'] == 1024 * 4 - 2 * 512 * 4
    assert fast_slow['params'] - single['params'] == (1024 - 512) * 4


def test_tools_and_latency(api_models, capsys):
    flops = load_script('tools/analysis/get_flops.py')
    assert flops.main([str(api_models['fast_slow']), '--video-size', '32', '32']) == 0
    assert 'GFLOPs: ' in capsys.readouterr().out
    latency = load_script('tools/analysis/benchmark_latency.py')
    assert latency.main([str(api_models['single']), '--device', 'cpu', '--repeats', '2',
                         '--warmup', '0', '--batch', '2', '--video-size', '32', '32']) == 0
    assert 'ms per call' in capsys.readouterr().out
    result = measure_latency(api_models['fast_slow'], device='cpu', repeats=3, warmup=1,
                             video_size=(32, 32))
    assert result['q1_ms'] <= result['median_ms'] <= result['q3_ms']
    assert result['inputs'] == {'imgs_fast': (1, 1, 9, 32, 32), 'imgs_slow': (1, 1, 9, 32, 32)}
    with pytest.raises(ValueError, match='need batch >= 1'):
        measure_latency(api_models['single'], batch=0)


@pytest.mark.parametrize('tool, option, args', [
    ('analysis/get_flops', '--video-size', ['config.py']),
    ('analysis/benchmark_latency', '--video-size', ['config.py']),
    ('deployment/export_onnx', '--video-size', ['config.py', 'ckpt.pth', '--out', 'x.onnx']),
    ('doctor', '--input-size', ['config.py']),
    ('visualize_hyperframe', '--scale', ['config.py', 'video.mp4', '--out', 'grid.png'])])
def test_a_size_below_one_is_an_option_error(tool, option, args, capsys):
    """0 reached mmcv's Resize as a ZeroDivisionError (the doctor's memory estimate as a note,
    the picture's scale as the default), a negative side numpy as 'negative dimensions are not
    allowed', naming neither the option nor the value."""
    script = load_script(f'tools/{tool}.py')
    values = ['0', '32'] if option != '--scale' else ['0']
    with pytest.raises(SystemExit) as exited:
        script.main(args + [option, *values])
    assert exited.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(
        f'error: argument {option}: must be an int >= 1, got 0')
