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

import pytest
import torch
from mmaction.models.backbones import MobileNetV2, MobileNetV2TSM
from torchvision.models import mobilenet_v2
from torchvision.models.quantization import mobilenet_v2 as quantizable_mobilenet_v2

from hyperframes_mm.models.backbones.mobilenet_v2_converters import (
    PACKED_NAME, convert_mobilenet_v2, folded_convs, identity_norm,
    mobilenet_v2_state_dict_to_mmaction)

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
