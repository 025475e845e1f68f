"""FLOP counting and latency of configs, single-stream and fast/slow (dict inputs)."""
import pytest
import torch

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


def test_an_onnx_checkpoint_is_timed_as_deployment_runs_it(api_models, tmp_path, capsys,
                                                            monkeypatch):
    """An exported graph (float or int8) ended in "'OnnxRecognizer' object has no attribute
    'parameters'". It is timed in onnxruntime: the graph's scores of the uint8 samples the test
    pipeline packs, ``--batch`` of them a call, in a session of ``--threads`` threads."""
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    from hyperframes_mm.deploy.export import export_onnx, random_pixels
    from hyperframes_mm.deploy.quantize import quantize_int8
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    float_path = export_onnx(model, tmp_path / 'float.onnx', random_pixels((1, 2, 9, 32, 32), 1),
                             'uint8')
    quantize_int8(float_path, tmp_path / 'int8.onnx', [random_pixels((1, 2, 9, 32, 32), 1)[0]])
    calls = []
    scores = OnnxRecognizer.scores

    def spy(self, inputs):
        calls.append((self.path, len(inputs), {tensor.dtype for sample in inputs for tensor in
                                               (sample.values() if isinstance(sample, dict)
                                                else [sample])},
                      self.session.get_session_options().intra_op_num_threads))
        return scores(self, inputs)
    monkeypatch.setattr(OnnxRecognizer, 'scores', spy)
    capsys.readouterr()
    latency = load_script('tools/analysis/benchmark_latency.py')
    threads = torch.get_num_threads()
    try:
        assert latency.main([str(api_models['single']), str(tmp_path / 'int8.onnx'), '--device',
                             'cpu', '--repeats', '2', '--warmup', '1', '--batch', '3',
                             '--threads', '2', '--video-size', '48', '64']) == 0
    finally:
        torch.set_num_threads(threads)
    assert capsys.readouterr().out.startswith(
        'onnxruntime on cpu (2 threads), inputs imgs [3, 2, 9, 32, 32]: median ')
    assert calls == [(tmp_path / 'int8.onnx', 3, {torch.uint8}, 2)] * 3
    # two streams: one uint8 sample per stream, named as the graph's inputs
    fast_slow = init_recognizer(api_models['fast_slow'], api_models['fast_slow_ckpt'], 'cpu')
    shape = (1, 1, 9, 32, 32)
    export_onnx(fast_slow, tmp_path / 'fs.onnx',
                random_pixels(dict(imgs_fast=shape, imgs_slow=shape), 1))
    result = measure_latency(api_models['fast_slow'], str(tmp_path / 'fs.onnx'), repeats=1,
                             warmup=0, video_size=(32, 32))
    assert (result['runtime'], result['device']) == ('onnxruntime', 'cpu')
    assert result['inputs'] == {'imgs_fast': shape, 'imgs_slow': shape}
    assert calls[-1] == (tmp_path / 'fs.onnx', 1, {torch.uint8}, torch.get_num_threads())
    # a static-batch graph is timed at its own batch: another would time padded chunks
    export_onnx(model, tmp_path / 'fixed.onnx', random_pixels((1, 2, 9, 32, 32), 2),
                dynamic_batch=False)
    with pytest.raises(ValueError, match=r"fixed\.onnx: the graph takes batches of 2 \(a static "
                       r"batch export\); time it at that batch, not 3"):
        measure_latency(api_models['single'], str(tmp_path / 'fixed.onnx'), batch=3, repeats=1,
                        warmup=0, video_size=(48, 64))


def _no_gpu(monkeypatch, count=0):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: count > 0)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: count)


@pytest.mark.parametrize('option, value, message', [
    ('--batch', '0', 'must be an int >= 1, got 0'),
    ('--repeats', '0', 'must be an int >= 1, got 0'),
    ('--warmup', '-1', 'must be an int >= 0, got -1'),
    ('--threads', '-2', 'must be an int >= 1, got -2'),
    ('--device', 'cuda', 'cuda: no CUDA device is visible (use cpu)'),
    ('--device', 'gpu', "'gpu' is not a device (cpu, cuda, cuda:1...)")])
def test_bad_latency_options_are_usage_errors(option, value, message, capsys, monkeypatch):
    """They ended in a ValueError from the timing loop, set_num_threads' RuntimeError, or
    (no GPU) a traceback from moving the model to CUDA."""
    _no_gpu(monkeypatch)
    latency = load_script('tools/analysis/benchmark_latency.py')
    with pytest.raises(SystemExit) as exited:
        latency.main(['config.py', option, value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(f'error: argument {option}: {message}')


def test_a_gpu_index_past_the_visible_ones_is_a_usage_error(capsys, monkeypatch):
    _no_gpu(monkeypatch, count=1)
    latency = load_script('tools/analysis/benchmark_latency.py')
    assert latency.parse_args(['config.py', '--device', 'cuda:0']).device == 'cuda:0'
    with pytest.raises(SystemExit) as exited:
        latency.main(['config.py', '--device', 'cuda:1'])
    assert exited.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(
        'error: argument --device: cuda:1: only 1 CUDA device(s) are visible')


def test_bad_latency_files_are_errors_not_tracebacks(api_models, tmp_path, capsys,
                                                     monkeypatch):
    """A missing config or checkpoint, a checkpoint of another model, and a graph sent to a GPU
    ended in tracebacks; each is now ``error: ...`` naming the file, exit 1 (a checkpoint of
    another model goes on to list the weights that differ, as export_onnx.py lists them)."""
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.deploy.export import export_onnx, random_pixels
    latency = load_script('tools/analysis/benchmark_latency.py')
    single = str(api_models['single'])
    cases = [([str(tmp_path / 'missing.py')], f'config file not found: {tmp_path}/missing.py'),
             ([single, str(tmp_path / 'missing.pth')],
              f'checkpoint file not found: {tmp_path}/missing.pth'),
             ([single, str(api_models['fast_slow_ckpt'])],
              f'{api_models["fast_slow_ckpt"]} does not fit the model of the config')]
    for argv, message in cases:
        assert latency.main(argv + ['--device', 'cpu', '--repeats', '1']) == 1
        err = capsys.readouterr().err
        assert err.startswith(f'error: {message}') and 'Traceback' not in err, message
    graph = export_onnx(init_recognizer(single, api_models['single_ckpt'], 'cpu'),
                        tmp_path / 'single.onnx', random_pixels((1, 2, 9, 32, 32), 1))
    _no_gpu(monkeypatch, count=1)
    assert latency.main([single, str(graph), '--device', 'cuda', '--repeats', '1']) == 1
    assert capsys.readouterr().err == (
        f'error: {graph}: the ONNX model runs on the CPU (onnxruntime), not cuda\n')
