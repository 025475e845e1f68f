"""MobileNetV2 weights from torchvision (float, int8 TorchScript) and ONNX int8 into mmaction2's
layout: the converted network computes what the source computes.

The int8 sources are made here: torchvision's quantisable ``mobilenet_v2`` at width 0.25, random
weights and batch-norm statistics, fused and quantised with a fixed calibration batch. Against
the *dequantised* float network (the quantised model's weights, float activations) the converted
one agrees to float rounding; against the int8 model itself it differs by activation
quantisation noise: a relative bound a few times what these models show (a wrong layer mapping
is off by the output's own size).
"""
import copy
import hashlib
import subprocess
import sys
import warnings
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from mmaction.models.backbones import MobileNetV2, MobileNetV2TSM
from torchvision.models import mobilenet_v2
from torchvision.models.quantization import mobilenet_v2 as quantizable_mobilenet_v2

from hyperframes_mm.models.backbones.mobilenet_v2_converters import (
    PACKED_NAME, calibrate_norms, convert_mobilenet_v2, folded_convs, identity_norm,
    mobilenet_v2_state_dict_to_mmaction)

from ...conftest import load_script
from .helpers import randomise_norms

REPO = Path(__file__).parents[3]
WIDTH = 0.25
SIZE = 64


def inputs(count: int = 4, seed: int = 1) -> torch.Tensor:
    return torch.randn(count, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(seed))


def mmaction_model(backbone, activation='ReLU', **kwargs) -> MobileNetV2:
    model = MobileNetV2(widen_factor=WIDTH, act_cfg=dict(type=activation), **kwargs)
    model.load_state_dict(backbone, strict=True)
    model.eval()
    return model


def logits(model: MobileNetV2, classifier, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return torch.nn.functional.linear(model(x).mean((2, 3)), classifier['weight'],
                                          classifier['bias'])


@pytest.fixture(scope='module')
def quantised():
    """(eager int8 model, its dequantised float twin): same weights, float activations."""
    torch.manual_seed(0)
    model = randomise_norms(quantizable_mobilenet_v2(weights=None, quantize=False,
                                                     width_mult=WIDTH)).eval()
    model.fuse_model()
    dequantised = copy.deepcopy(model)
    engine = 'fbgemm' if 'fbgemm' in torch.backends.quantized.supported_engines else 'qnnpack'
    torch.backends.quantized.engine = engine
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # eager quantisation is deprecated in favour of torchao
        torch.ao.quantization.prepare(model, inplace=True)
        with torch.no_grad():
            model(inputs(8, seed=0))
        torch.ao.quantization.convert(model, inplace=True)
    with torch.no_grad():
        for name, module in model.named_modules():
            if not callable(getattr(module, 'weight', None)):
                continue
            target = dequantised.get_submodule(name)
            conv = target[0] if isinstance(target, torch.nn.Sequential) else target
            conv.weight.copy_(module.weight().dequantize())
            conv.bias.copy_(module.bias())
    return model, dequantised


@pytest.fixture(scope='module', params=['script', 'trace'])
def torchscript_file(request, quantised, tmp_path_factory):
    """The int8 model as TorchScript, scripted or traced."""
    model = quantised[0]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if request.param == 'script':
            module = torch.jit.script(model)
        else:
            module = torch.jit.trace(model, inputs(1))
    path = tmp_path_factory.mktemp('ts') / f'mobilenet_v2_{request.param}.pt'
    torch.jit.save(module, str(path))
    return str(path)


def test_folded_convs_cover_mmaction2_mobilenet_v2():
    convs = [name for name, module in MobileNetV2().named_modules()
             if isinstance(module, torch.nn.Conv2d)]
    assert [f'{conv.mmaction}.conv' for conv in folded_convs()] == convs
    assert len(convs) == 52
    assert folded_convs()[1:3] == [
        ('features.1.conv.0.0', 'features.1.conv.0.1', 'layer1.0.conv.0'),
        ('features.1.conv.1', 'features.1.conv.2', 'layer1.0.conv.1')]
    assert folded_convs()[-2:] == [
        ('features.17.conv.2', 'features.17.conv.3', 'layer7.0.conv.2'),
        ('features.18.0', 'features.18.1', 'conv2')]


@pytest.mark.parametrize('name, module', [
    ('features.0.0._packed_params', 'features.0.0'),
    ('classifier.1._packed_params._packed_params', 'classifier.1'),
    # optimize_for_mobile (the PyTorch iOS demo's file; it needs an XNNPACK build to make)
    ('_jit_pass_hoist_conv_packed_params.features.17.conv.2._packed_params.51',
     'features.17.conv.2'),
])
def test_packed_weights_are_named_by_their_module(name, module):
    assert PACKED_NAME.match(name)['module'] == module


def test_identity_norm_is_exactly_the_identity_plus_bias():
    norm = torch.nn.BatchNorm2d(6).eval()
    bias = torch.arange(6.) - 2.5
    norm.load_state_dict(identity_norm(bias, norm.eps))
    x = torch.randn(2, 6, 5, 5, generator=torch.Generator().manual_seed(0)) * 50
    with torch.no_grad():
        assert torch.equal(norm(x), x + bias[:, None, None])


def test_torchscript_int8_equals_dequantised_float(quantised, torchscript_file):
    backbone, classifier = convert_mobilenet_v2(torchscript_file, WIDTH)
    model, dequantised = quantised
    converted = mmaction_model(backbone)
    x = inputs()
    with torch.no_grad():
        reference_features = dequantised.features(x)
        torch.testing.assert_close(converted(x), reference_features, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(logits(converted, classifier, x), dequantised(x),
                                   rtol=1e-5, atol=1e-5)
        # the int8 model: activation rounding at every layer, so a bound, not equality
        quantised_logits = model(x)
    error = (logits(converted, classifier, x) - quantised_logits).norm()
    assert error < 0.1 * quantised_logits.norm()


def test_tsm_loads_the_converted_file_strictly(torchscript_file, tmp_path):
    backbone, _ = convert_mobilenet_v2(torchscript_file, WIDTH)
    path = tmp_path / 'converted.pth'
    torch.save({'state_dict': backbone, 'classifier': {}}, path)
    tsm = MobileNetV2TSM(num_segments=2, pretrained=str(path), widen_factor=WIDTH)
    tsm.init_weights()  # MobileNetV2TSM loads its pretrained file with strict=True
    shifted = 'layer2.1.conv.0.net.conv.weight'
    assert torch.equal(tsm.state_dict()[shifted], backbone['layer2.1.conv.0.conv.weight'])


def test_torchvision_float_state_dict(tmp_path):
    torch.manual_seed(0)
    source = randomise_norms(mobilenet_v2(width_mult=WIDTH)).eval()
    path = tmp_path / 'mobilenet_v2.pth'
    torch.save(source.state_dict(), path)
    backbone, classifier = convert_mobilenet_v2(str(path), WIDTH)
    expected = mobilenet_v2_state_dict_to_mmaction(source.state_dict())
    assert list(backbone) == list(expected)
    assert all(torch.equal(backbone[key], expected[key]) for key in expected)
    converted = mmaction_model(backbone, activation='ReLU6')
    x = inputs()
    with torch.no_grad():
        torch.testing.assert_close(converted(x), source.features(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(logits(converted, classifier, x), source(x),
                                   rtol=1e-5, atol=1e-5)


def test_mmaction_layout_passes_unchanged():
    state_dict = MobileNetV2(widen_factor=WIDTH).state_dict()
    assert mobilenet_v2_state_dict_to_mmaction(state_dict) is state_dict


@pytest.fixture(scope='module')
def onnx_file(tmp_path_factory):
    """An int8 ONNX MobileNetV2 made as the model zoo's was: float export (batch norms folded),
    static QOperator quantisation; the classifier as MatMul + Add, the zoo model's ops.
    Returns (path, the float torchvision model it was made from)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    torch.manual_seed(0)
    source = randomise_norms(mobilenet_v2(width_mult=WIDTH)).eval()

    class MatMulClassifier(torch.nn.Module):

        def __init__(self):
            super().__init__()
            self.net = source

        def forward(self, x):
            linear = self.net.classifier[1]
            return self.net.features(x).mean((2, 3)) @ linear.weight.t() + linear.bias

    folder = tmp_path_factory.mktemp('onnx')
    float_path, int8_path = folder / 'float.onnx', folder / 'int8.onnx'
    torch.onnx.export(MatMulClassifier(), (inputs(1), ), str(float_path), dynamo=False,
                      input_names=['input'], dynamic_axes={'input': {0: 'batch'}}, opset_version=13)

    class Calibration(CalibrationDataReader):

        def __init__(self):
            self.batches = iter([{'input': inputs(8, seed=0).numpy()}])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(float_path), str(int8_path), Calibration(),
                    quant_format=QuantFormat.QOperator, per_channel=True,
                    weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8)
    return str(int8_path), source


def test_onnx_int8_weights_within_half_a_quantisation_step(onnx_file):
    path, source = onnx_file
    backbone, classifier = convert_mobilenet_v2(path, WIDTH)
    folded = torch.nn.utils.fusion.fuse_conv_bn_eval
    float_state = mmaction_model(mobilenet_v2_state_dict_to_mmaction(source.state_dict()))
    for conv in folded_convs():
        module = float_state.get_submodule(conv.mmaction)
        reference = folded(module.conv, module.bn)
        weight = backbone[f'{conv.mmaction}.conv.weight']
        # onnxruntime's symmetric per-channel int8 spans [-127, 127]: step = max|w| / 127
        step = reference.weight.detach().abs().flatten(1).amax(1) / 127
        error = (weight - reference.weight.detach()).abs().flatten(1).amax(1)
        assert torch.all(error <= 0.5 * step + 1e-7), conv.mmaction
        torch.testing.assert_close(backbone[f'{conv.mmaction}.bn.bias'], reference.bias.detach(),
                                   rtol=0, atol=2e-4)
    assert classifier['weight'].shape == source.classifier[1].weight.shape


def test_onnx_int8_outputs_match_onnxruntime(onnx_file):
    import onnxruntime
    path, _ = onnx_file
    backbone, classifier = convert_mobilenet_v2(path, WIDTH)
    x = inputs()
    session = onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
    reference = torch.from_numpy(session.run(None, {'input': x.numpy()})[0])
    error = (logits(mmaction_model(backbone, 'ReLU6'), classifier, x) - reference).norm()
    assert error < 0.1 * reference.norm()


def test_missing_file_is_named(tmp_path):
    path = str(tmp_path / 'absent.pt')
    with pytest.raises(FileNotFoundError, match=f'{path}: no such file'):
        convert_mobilenet_v2(path)


@pytest.mark.parametrize('suffix', ['.pt', '.onnx'])
def test_file_that_is_no_model_is_named(tmp_path, suffix):
    path = tmp_path / f'notes{suffix}'
    path.write_text('not a model')
    with pytest.raises(ValueError, match=str(path)):
        convert_mobilenet_v2(str(path))


def test_state_dict_of_another_model_is_named(tmp_path):
    path = tmp_path / 'resnet.pth'
    torch.save({'state_dict': {'conv1.weight': torch.zeros(1)}}, path)
    with pytest.raises(ValueError, match=f'{path}: not a torchvision mobilenet_v2'):
        convert_mobilenet_v2(str(path))


def test_torchscript_with_other_layers_is_named(tmp_path):
    model = torch.nn.Sequential(torch.ao.nn.quantized.Conv2d(3, 8, 3))
    path = tmp_path / 'other.pt'
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.jit.save(torch.jit.script(model), str(path))
    with pytest.raises(ValueError, match=(rf"{path}: the layers are not torchvision "
                                          r"MobileNetV2's: missing \['features.0.0', .*\(53\), "
                                          r"unexpected \['0'\] \(1\)")):
        convert_mobilenet_v2(str(path))


def test_onnx_with_other_layers_is_named(tmp_path):
    path = tmp_path / 'conv.onnx'
    torch.onnx.export(torch.nn.Conv2d(3, 4, 3), (torch.zeros(1, 3, 8, 8), ), str(path),
                      dynamo=False)
    with pytest.raises(ValueError, match=(f'{path}: a MobileNetV2 has 52 QLinearConv nodes and '
                                          'one QLinearMatMul')):
        convert_mobilenet_v2(str(path))


def test_other_width_is_named(torchscript_file):
    with pytest.raises(RuntimeError, match=(f'{torchscript_file}: does not load into mmaction2 '
                                            r'MobileNetV2\(widen_factor=1.0\)')):
        convert_mobilenet_v2(torchscript_file, 1.0)


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
def test_tool_writes_what_mmaction2_loads(torchscript_file, tmp_path):
    tool = [sys.executable, str(REPO / 'tools/model_converters/mobilenet_v2_to_mmaction.py')]
    out = tmp_path / 'converted.pth'
    subprocess.run(tool + [torchscript_file, str(out), '--widen-factor', str(WIDTH)], check=True,
                   capture_output=True)
    saved = torch.load(out, weights_only=True)
    assert saved['meta']['format'] == 'torchscript'
    digest = hashlib.sha256(Path(torchscript_file).read_bytes()).hexdigest()
    assert saved['meta']['sha256'] == digest
    assert saved['classifier']['weight'].shape == (1000, 1280)
    model = MobileNetV2(widen_factor=WIDTH, pretrained=str(out))
    model.init_weights()
    assert torch.equal(model.conv1.conv.weight, saved['state_dict']['conv1.conv.weight'])


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
@pytest.mark.parametrize('spelling', ['same', 'symlink', 'dotted'])
def test_tool_refuses_to_write_over_its_source(torchscript_file, tmp_path, spelling):
    """The output path naming the source (as written, through a link, or spelt otherwise) is
    refused before anything is written: the source is the only copy of the weights."""
    tool = [sys.executable, str(REPO / 'tools/model_converters/mobilenet_v2_to_mmaction.py')]
    source = Path(torchscript_file)
    before = source.read_bytes()
    out = {'same': source, 'dotted': source.parent / '.' / source.name,
           'symlink': tmp_path / 'link.pth'}[spelling]
    if spelling == 'symlink':
        out.symlink_to(source)
    done = subprocess.run(tool + [str(source), str(out), '--widen-factor', str(WIDTH)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert f'the output {out} is the source {source}' in done.stderr
    assert source.read_bytes() == before


def train_mode(model: MobileNetV2, x: torch.Tensor) -> torch.Tensor:
    """The backbone's output in training mode, the norms on ``x``'s statistics (one batch)."""
    model.train()
    with torch.no_grad():
        return model(x)


@pytest.fixture(params=['int8', 'float'])
def converted_and_source(request, quantised, torchscript_file):
    """(converted backbone, its activation, the source's features): from the int8 TorchScript
    (identity norms) and from a float torchvision state dict (norms of its own)."""
    if request.param == 'int8':
        backbone, _ = convert_mobilenet_v2(torchscript_file, WIDTH)
        return backbone, 'ReLU', quantised[1].features
    torch.manual_seed(0)
    source = randomise_norms(mobilenet_v2(width_mult=WIDTH)).eval()
    return mobilenet_v2_state_dict_to_mmaction(source.state_dict()), 'ReLU6', source.features


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
def test_calibrated_norms_compute_the_source_in_training_mode(converted_and_source):
    """Converted norms are the source network in eval mode only; calibrated norms are it in
    eval mode and, on a batch with the calibration statistics, in training mode too."""
    backbone, activation, features = converted_and_source
    frames = inputs(count=16, seed=3)
    with torch.no_grad():
        source = features(frames)
    converted = mmaction_model(backbone, activation)
    calibrated = mmaction_model(backbone, activation)
    calibrate_norms(calibrated, frames, batch_size=5)
    assert not calibrated.training  # the mode it was in is kept
    with torch.no_grad():
        torch.testing.assert_close(calibrated(frames), source, rtol=1e-4, atol=1e-4)
    scale = source.abs().max()
    # float32 batch statistics against float64 ones: rounding, far below a wrong formula's error
    assert (train_mode(calibrated, frames) - source).abs().max() < 1e-5 * scale
    assert (train_mode(converted, frames) - source).abs().max() > 0.1 * scale


def test_calibration_is_the_same_in_any_batch_size():
    model = mmaction_model(MobileNetV2(widen_factor=WIDTH).state_dict())
    randomise_norms(model)
    frames = inputs(count=6, seed=4)
    whole = calibrate_norms(copy.deepcopy(model), frames, batch_size=6)
    for key, value in calibrate_norms(model, frames, batch_size=4).items():
        torch.testing.assert_close(value, whole[key], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('shape, batch_size, message', [
    ((3, SIZE, SIZE), 4, r'frames: calibration needs a non-empty \[N, 3, H, W\] batch, got '
     r'shape \(3, 64, 64\)'),
    ((0, 3, SIZE, SIZE), 4, r'got shape \(0, 3, 64, 64\)'),
    ((2, 1, SIZE, SIZE), 4, r'got shape \(2, 1, 64, 64\)'),
    ((2, 3, SIZE, SIZE), 0, 'batch_size must be >= 1, got 0'),
])
def test_calibration_refuses_bad_frames(shape, batch_size, message):
    model = mmaction_model(MobileNetV2(widen_factor=WIDTH).state_dict())
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(ValueError, match=message):
        calibrate_norms(model, torch.zeros(shape), batch_size)
    assert all(torch.equal(value, before[key]) for key, value in model.state_dict().items())


@pytest.fixture(scope='module')
def calibration_videos(tmp_path_factory):
    """Two short videos and their VideoDataset list."""
    import numpy as np

    from hyperframes_mm.datasets.video_io import write_video
    root = tmp_path_factory.mktemp('calibration_videos')
    rng = np.random.default_rng(0)
    for name in ('a.mp4', 'b.mp4'):
        write_video(root / name, rng.integers(0, 256, (8, 48, 64, 3), dtype=np.uint8), fps=10)
    (root / 'list.txt').write_text('a.mp4 0\nb.mp4 1\n')
    return root


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
def test_tool_calibrates_norms_on_the_training_videos(torchscript_file, calibration_videos,
                                                       tmp_path, capsys):
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    out = tmp_path / 'calibrated.pth'
    argv = [torchscript_file, str(out), '--widen-factor', str(WIDTH), '--norms', 'calibrated',
            '--calibrate-list', str(calibration_videos / 'list.txt'), '--calibrate-root',
            str(calibration_videos), '--calibrate-frames', '6', '--calibrate-size', str(SIZE),
            '--batch-size', '3', '--verify']
    assert tool.main(argv) == 0
    printed = capsys.readouterr().out
    assert f'calibrated norms (6 frames at {SIZE}px)' in printed
    assert 'calibration frames (6;' in printed and 'held-out frames of the list' in printed
    saved = torch.load(out, weights_only=True)
    assert saved['meta']['norms'] == 'calibrated'
    assert saved['meta']['calibration'] == dict(
        frames=6, size=SIZE, list=str(calibration_videos / 'list.txt'),
        root=str(calibration_videos), images=0)
    # the file is calibrate_norms on the tool's frames: 3 of each video, none of the held ones
    args = tool.parse_args(argv)
    frames = tool.normalised(tool.video_frames(args, held=False), SIZE)
    held = tool.normalised(tool.video_frames(args, held=True), SIZE)
    assert len(frames) == len(held) == 6 and not torch.equal(frames, held)
    identity, _ = convert_mobilenet_v2(torchscript_file, WIDTH)
    expected = calibrate_norms(mmaction_model(identity, 'ReLU6'), frames)
    for key, value in saved['state_dict'].items():
        torch.testing.assert_close(value, expected[key], rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        torch.testing.assert_close(mmaction_model(saved['state_dict'], 'ReLU6')(frames),
                                   mmaction_model(identity, 'ReLU6')(frames),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
def test_tool_calibrates_on_pictures(torchscript_file, tmp_path, capsys):
    import numpy as np
    from PIL import Image
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    rng = np.random.default_rng(0)
    pictures = []
    for index in range(3):
        path = tmp_path / f'frame{index}.png'
        Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(path)
        pictures.append(str(path))
    out = tmp_path / 'calibrated.pth'
    assert tool.main([torchscript_file, str(out), '--widen-factor', str(WIDTH), '--norms',
                      'calibrated', '--calibrate-images', *pictures, '--calibrate-size',
                      str(SIZE)]) == 0
    assert f'calibrated norms (3 frames at {SIZE}px)' in capsys.readouterr().out
    saved = torch.load(out, weights_only=True)
    assert saved['meta']['calibration']['images'] == 3
    frames = tool.normalised(tool.read_pictures(pictures), SIZE)
    identity, _ = convert_mobilenet_v2(torchscript_file, WIDTH)
    expected = calibrate_norms(mmaction_model(identity, 'ReLU6'), frames)
    torch.testing.assert_close(saved['state_dict']['conv1.bn.running_var'],
                               expected['conv1.bn.running_var'])


@pytest.mark.parametrize('extra, message', [
    (['--norms', 'calibrated'], '--norms calibrated needs --calibrate-list or --calibrate-images'),
    (['--calibrate-images', 'a.png'], '--calibrate-list/--calibrate-images are used by --norms '
     'calibrated only'),
    (['--norms', 'calibrated', '--calibrate-images', 'a.png', '--calibrate-frames', '0'],
     '--calibrate-frames must be >= 1, got 0'),
    (['--norms', 'calibrated', '--calibrate-images', 'a.png', '--calibrate-size', '16'],
     '--calibrate-size must be >= 32, got 16'),
    (['--norms', 'calibrated', '--calibrate-images', 'a.png', '--batch-size', '1'],
     '--batch-size must be >= 2, got 1'),
    (['--widen-factor', '0'], '--widen-factor must be a positive number, got 0.0'),
    (['--widen-factor', 'nan'], '--widen-factor must be a positive number, got nan'),
])
def test_tool_refuses_inconsistent_norm_options(extra, message, capsys):
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    with pytest.raises(SystemExit) as exited:
        tool.parse_args(['src.pt', 'out.pth', *extra])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
@pytest.mark.parametrize('problem', ['no list', 'missing video', 'not a video', 'not a picture'])
def test_tool_names_unreadable_calibration_data_and_writes_nothing(torchscript_file, tmp_path,
                                                                    problem, capsys):
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    (tmp_path / 'broken.mp4').write_bytes(b'not a video')
    (tmp_path / 'broken.png').write_bytes(b'not a picture')
    lines = {'missing video': 'absent.mp4 0\n', 'not a video': 'broken.mp4 0\n'}
    if problem in lines:
        (tmp_path / 'list.txt').write_text(lines[problem])
    data = (['--calibrate-images', str(tmp_path / 'broken.png')] if problem == 'not a picture'
            else ['--calibrate-list', str(tmp_path / 'list.txt'), '--calibrate-root',
                  str(tmp_path)])
    out = tmp_path / 'out.pth'
    assert tool.main([torchscript_file, str(out), '--widen-factor', str(WIDTH), '--norms',
                      'calibrated', *data]) == 1
    named = {'no list': 'list.txt', 'missing video': 'absent.mp4',
             'not a video': 'broken.mp4', 'not a picture': 'broken.png'}[problem]
    assert named in capsys.readouterr().err
    assert not out.exists()


def test_a_source_cut_short_is_named_as_such(tmp_path):
    """A .pth cut short is no zip archive any more: the checkpoint checks say what it is,
    where the format check said only that it was of no known format."""
    from hyperframes_mm.models.backbones.mobilenet_v2_converters import source_format
    whole = tmp_path / 'whole.pth'
    torch.save({'w': torch.zeros(1000)}, whole)
    (tmp_path / 'cut.pth').write_bytes(whole.read_bytes()[:whole.stat().st_size // 2])
    (tmp_path / 'empty.pth').write_bytes(b'')
    (tmp_path / 'empty.onnx').write_bytes(b'')
    for name, message in (('cut.pth', 'the file is truncated or damaged'),
                          ('empty.pth', r'the file is empty \(0 bytes\)'),
                          ('empty.onnx', r'the file is empty \(0 bytes\), not an ONNX model')):
        with pytest.raises(ValueError, match=rf'{tmp_path / name}: {message}'):
            source_format(str(tmp_path / name))
    assert source_format(str(whole)) == 'state_dict'


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
@pytest.mark.parametrize('clash', ['--calibrate-images', '--calibrate-list', 'a listed video',
                                   '--images'])
def test_tool_refuses_to_write_over_any_file_it_reads(torchscript_file, tmp_path, clash,
                                                      capsys):
    """Only the source was protected: a picture, the calibration list or one of its videos
    named as the output was overwritten with exit 0 (and --verify then failed re-reading it)."""
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    picture = tmp_path / 'dog.png'
    cv2.imwrite(str(picture), np.full((40, 40, 3), 128, np.uint8))
    video = tmp_path / 'clip.mp4'
    video.write_bytes(b'a video, as far as this check goes')
    listed = tmp_path / 'list.txt'
    listed.write_text('clip.mp4 0\n')
    out = {'--calibrate-images': picture, '--calibrate-list': listed, 'a listed video': video,
           '--images': picture}[clash]
    before = out.read_bytes()
    data = (['--verify', '--images', str(picture)] if clash == '--images' else
            ['--norms', 'calibrated', '--calibrate-images', str(picture), '--calibrate-list',
             str(listed), '--calibrate-root', str(tmp_path)])
    assert tool.main([torchscript_file, str(out), '--widen-factor', str(WIDTH), *data]) == 1
    what = {'--calibrate-images': f'--calibrate-images {picture}',
            '--calibrate-list': '--calibrate-list', 'a listed video': 'video 1 of --calibrate-list',
            '--images': f'--images {picture}'}[clash]
    assert capsys.readouterr().err.rstrip() == (
        f'error: the output {out} is {what} ({out}): writing it would destroy that file; write '
        'to another path')
    assert out.read_bytes() == before


@pytest.mark.parametrize('torchscript_file', ['script'], indirect=True)
def test_tool_reads_the_verify_pictures_before_writing(torchscript_file, tmp_path, capsys):
    """A missing or unreadable --images picture was found after the output was written, as a
    PIL traceback."""
    tool = load_script('tools/model_converters/mobilenet_v2_to_mmaction.py')
    out = tmp_path / 'out.pth'
    assert tool.main([torchscript_file, str(out), '--widen-factor', str(WIDTH), '--verify',
                      '--images', str(tmp_path / 'nope.jpg')]) == 1
    assert capsys.readouterr().err.startswith(
        f'error: {tmp_path / "nope.jpg"}: cannot read it as a picture: ')
    assert not out.exists()
