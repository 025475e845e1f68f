"""EfficientNet-Lite0 from efficientnet_pytorch's names into timm's: the converted network computes
what the source definition computes, and inflates to a hyperframe backbone that gives the 2D
output on T identical frames.

Nothing is fetched: the source state dict is made here, from a random timm model (random batch
norm statistics) renamed to efficientnet_pytorch's keys through the inverse of the converter's
map, and the source definition is re-expressed below (:func:`source_forward`) from the source
package's model code: TensorFlow 'SAME' padding, batch-norm eps 1e-3, ReLU6, a residual where
the stride is 1 and the width unchanged. It shares no code with timm, so it checks both the key
mapping and the choice of timm model.
"""
import hashlib
import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from hyperframes_mm.models.backbones import InflatedBackbone
from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
    TIMM_MODEL, build_timm_efficientnet_lite, convert_efficientnet_lite,
    efficientnet_pytorch_to_timm, read_efficientnet_pytorch, timm_module_map)

from ...conftest import REPO, load_script
from .helpers import randomise_norms, repeat_frames

NUM_CLASSES = 10
#: (blocks, stride of the first) of EfficientNet-Lite0's seven stages
STAGES = ((1, 1), (2, 2), (2, 2), (3, 2), (3, 1), (4, 2), (1, 1))


@pytest.fixture(scope='module')
def timm_weights():
    torch.manual_seed(0)
    model = build_timm_efficientnet_lite(NUM_CLASSES)
    return randomise_norms(model).state_dict()


@pytest.fixture(scope='module')
def source_weights(timm_weights):
    """The timm weights under efficientnet_pytorch's names, in its order (stem, blocks, head)."""
    inverse = {target: source for source, target in timm_module_map(
        build_timm_efficientnet_lite(NUM_CLASSES)).items()}
    renamed = {}
    for key, value in timm_weights.items():
        module, param = key.rsplit('.', 1)
        renamed[f'{inverse[module]}.{param}'] = value
    return renamed


@pytest.fixture(scope='module')
def source_file(source_weights, tmp_path_factory):
    path = tmp_path_factory.mktemp('effl0') / 'efficientnet-lite0.pth'
    torch.save(source_weights, path)
    return str(path)


def same_conv(x, weight, stride, groups=1):
    """A bias-free conv with TensorFlow's 'SAME' padding: output side ceil(side / stride), the
    odd pixel of padding after the image."""
    pads = []
    for side, kernel in zip(reversed(x.shape[2:]), reversed(weight.shape[2:])):
        total = max((math.ceil(side / stride) - 1) * stride + kernel - side, 0)
        pads += [total // 2, total - total // 2]
    return F.conv2d(F.pad(x, pads), weight, stride=stride, groups=groups)


def source_forward(weights, x):
    """efficientnet-lite-pytorch's ``EfficientNet('efficientnet-lite0')`` in eval mode, on its
    own key names."""
    def bn_relu6(x, name, act=True):
        x = F.batch_norm(x, weights[f'{name}.running_mean'], weights[f'{name}.running_var'],
                         weights[f'{name}.weight'], weights[f'{name}.bias'], eps=1e-3)
        return F.relu6(x) if act else x

    x = bn_relu6(same_conv(x, weights['_conv_stem.weight'], 2), '_bn0')
    index = 0
    for blocks, first_stride in STAGES:
        for block in range(blocks):
            name, stride, inputs = f'_blocks.{index}', first_stride if block == 0 else 1, x
            if f'{name}._expand_conv.weight' in weights:
                x = bn_relu6(same_conv(x, weights[f'{name}._expand_conv.weight'], 1),
                             f'{name}._bn0')
            depthwise = weights[f'{name}._depthwise_conv.weight']
            x = bn_relu6(same_conv(x, depthwise, stride, groups=depthwise.shape[0]),
                         f'{name}._bn1')
            x = bn_relu6(same_conv(x, weights[f'{name}._project_conv.weight'], 1),
                         f'{name}._bn2', act=False)
            if stride == 1 and x.shape == inputs.shape:
                x = x + inputs
            index += 1
    x = bn_relu6(same_conv(x, weights['_conv_head.weight'], 1), '_bn1')
    return F.linear(x.mean((2, 3)), weights['_fc.weight'], weights['_fc.bias'])


def inputs(size, count=2):
    return torch.randn(count, 3, size, size, generator=torch.Generator().manual_seed(1))


def test_the_map_names_every_module_once():
    mapping = timm_module_map(build_timm_efficientnet_lite())
    assert len(mapping) == 5 + 4 + 15 * 6
    assert len(set(mapping.values())) == len(mapping)
    assert mapping['_blocks.0._project_conv'] == 'blocks.0.0.conv_pw'
    assert mapping['_blocks.1._expand_conv'] == 'blocks.1.0.conv_pw'
    assert mapping['_blocks.15._project_conv'] == 'blocks.6.0.conv_pwl'
    assert mapping['_bn1'] == 'bn2'


def test_round_trip_is_exact(source_weights, timm_weights):
    converted = efficientnet_pytorch_to_timm(source_weights, 'made here')
    assert list(converted) == list(timm_weights)
    for key, value in timm_weights.items():
        assert torch.equal(converted[key], value), key


@pytest.mark.parametrize('size', [224, 112, 96])
def test_converted_logits_equal_the_source_definition(source_file, source_weights, size):
    _, model = convert_efficientnet_lite(source_file)
    x = inputs(size)
    with torch.no_grad():
        reference = source_forward(source_weights, x)
        torch.testing.assert_close(model(x), reference, rtol=1e-4, atol=1e-4)
        # timm's efficientnet_lite0 (symmetric padding, norm eps 1e-5) is another function of
        # the same weights: this is what the choice of timm model is about
        symmetric = build_timm_efficientnet_lite(NUM_CLASSES, 'efficientnet_lite0').eval()
        symmetric.load_state_dict(efficientnet_pytorch_to_timm(source_weights, 'made here',
                                                               'efficientnet_lite0'))
        assert (symmetric(x) - reference).abs().max() > 100 * 1e-4


def test_unknown_key_is_named(source_weights):
    extra = dict(source_weights, **{'_blocks.16._bn0.weight': torch.ones(3)})
    with pytest.raises(KeyError, match=r"src.pth: key '_blocks.16._bn0.weight' belongs to no "
                                       'module of timm tf_efficientnet_lite0'):
        efficientnet_pytorch_to_timm(extra, 'src.pth')


def test_key_without_a_timm_parameter_is_named(source_weights):
    extra = dict(source_weights, **{'_conv_stem.bias': torch.zeros(32)})
    with pytest.raises(KeyError, match=r"key '_conv_stem.bias' maps to 'conv_stem.bias', which "
                                       'timm tf_efficientnet_lite0 does not have'):
        efficientnet_pytorch_to_timm(extra, 'src.pth')


def test_wrong_shape_is_named(source_weights):
    wrong = dict(source_weights, **{'_blocks.3._depthwise_conv.weight': torch.zeros(144, 1, 3, 3)})
    with pytest.raises(ValueError, match=r"src.pth: key '_blocks.3._depthwise_conv.weight' has "
                                         r"shape \(144, 1, 3, 3\), timm tf_efficientnet_lite0's "
                                         r"'blocks.2.0.conv_dw.weight' \(144, 1, 5, 5\)"):
        efficientnet_pytorch_to_timm(wrong, 'src.pth')


def test_missing_weights_are_named(source_weights):
    partial = {key: value for key, value in source_weights.items()
               if not key.startswith('_conv_head.')}
    with pytest.raises(KeyError, match=r"src.pth: leaves 1 weights of timm tf_efficientnet_lite0 "
                                       r"unset: \['conv_head.weight'\]"):
        efficientnet_pytorch_to_timm(partial, 'src.pth')


def test_a_state_dict_without_classifier_is_refused(source_weights):
    headless = {key: value for key, value in source_weights.items() if key != '_fc.weight'}
    with pytest.raises(ValueError, match='src.pth: not an efficientnet_pytorch state dict'):
        efficientnet_pytorch_to_timm(headless, 'src.pth')


def test_other_files_are_refused(tmp_path):
    path = tmp_path / 'other.pth'
    torch.save({'state_dict': {'conv1.weight': torch.zeros(1)}}, path)
    with pytest.raises(ValueError, match=f'{path}: not an efficientnet_pytorch state dict'):
        read_efficientnet_pytorch(str(path))
    with pytest.raises(FileNotFoundError):
        read_efficientnet_pytorch(str(tmp_path / 'absent.pth'))


@pytest.fixture
def tool(monkeypatch):
    # the tool shares sha256, same_file and its verify inputs with the MobileNetV2 converter
    monkeypatch.syspath_prepend(str(REPO / 'tools/model_converters'))
    return load_script('tools/model_converters/efficientnet_lite0_to_timm.py')


def test_tool_writes_what_timm_and_the_plugin_load(tool, source_file, timm_weights, tmp_path):
    out = tmp_path / 'converted.pth'
    assert tool.main([source_file, str(out)]) == 0
    saved = torch.load(out, weights_only=True)
    assert saved['meta']['sha256'] == hashlib.sha256(Path(source_file).read_bytes()).hexdigest()
    assert saved['meta']['timm_model'] == TIMM_MODEL
    assert saved['meta']['mean'] == saved['meta']['std'] == [127.5] * 3
    for key, value in timm_weights.items():
        assert torch.equal(saved['state_dict'][key], value), key
    # timm's own file loading (as mmaction2's TSN over timm.* builds it) reads it
    import timm
    model = timm.create_model(TIMM_MODEL, pretrained=True, num_classes=0,
                              pretrained_cfg_overlay=dict(file=str(out)))
    assert torch.equal(model.conv_head.weight, timm_weights['conv_head.weight'])


def test_tool_refuses_to_write_over_its_source(tool, source_file, capsys):
    before = Path(source_file).read_bytes()
    assert tool.main([source_file, str(Path(source_file).parent / '.' / Path(source_file).name)]
                     ) == 1
    assert 'is the source' in capsys.readouterr().err
    assert Path(source_file).read_bytes() == before


def test_tool_refuses_a_directory_as_output_and_names_a_write_that_fails(
        tool, source_file, tmp_path, capsys, monkeypatch):
    """A directory is refused before the conversion runs; a write the disk refuses names the
    output and leaves the file there as it was."""
    assert tool.main([source_file, str(tmp_path)]) == 1
    assert capsys.readouterr().err == (f'error: the output {tmp_path} is a directory; name the '
                                       'file to write in it\n')
    out = tmp_path / 'kept.pth'
    out.write_bytes(b'old')

    def full(data, path):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr('hyperframes_mm.engine.atomic_write_bytes', full)
    assert tool.main([source_file, str(out)]) == 1
    assert capsys.readouterr().err == (f'error: writing {out} failed, nothing written: [Errno 28] '
                                       'No space left on device\n')
    assert out.read_bytes() == b'old'


def test_tool_names_a_file_it_cannot_convert(tool, tmp_path, capsys):
    path = tmp_path / 'other.pth'
    torch.save({'conv1.weight': torch.zeros(1)}, path)
    assert tool.main([str(path), str(tmp_path / 'out.pth')]) == 1
    assert f'error: {path}: not an efficientnet_pytorch state dict' in capsys.readouterr().err
    assert not (tmp_path / 'out.pth').exists()


@pytest.mark.parametrize('content, problem', [
    (b'hello\n', "not a PyTorch checkpoint: the file is text, starting 'hello' (an error page "
                 'saved by a failed download, or a file of another kind).'),
    (bytes(64), 'not a PyTorch checkpoint: the file starts with zero bytes only: its space was '
                'allocated but the data never written (a power loss or a crash while saving). '
                'Use another copy of it (a training run resumes from an earlier checkpoint).'),
], ids=['text', 'zeros'])
def test_tool_says_in_one_line_that_a_file_is_not_a_checkpoint(tool, tmp_path, capsys, content,
                                                               problem):
    path = tmp_path / 'efficientnet-lite0.pth'
    path.write_bytes(content)
    assert tool.main([str(path), str(tmp_path / 'out.pth')]) == 1
    assert capsys.readouterr().err == f'error: {path}: {problem}\n'
    assert not (tmp_path / 'out.pth').exists()


@pytest.mark.parametrize('encoding', ['frames', 'diff'])
def test_identical_frames_give_the_2d_output_after_inflation(source_file, tool, tmp_path,
                                                             encoding):
    out = tmp_path / 'converted.pth'
    assert tool.main([source_file, str(out)]) == 0
    num_frames = 5
    hyper = InflatedBackbone(backbone=dict(type=f'timm.{TIMM_MODEL}'), first_conv='conv_stem',
                             num_frames=num_frames, pretrained=str(out), input_encoding=encoding)
    hyper.init_weights()
    flat = build_timm_efficientnet_lite(0).eval()
    flat.load_state_dict({key: value for key, value in torch.load(
        out, weights_only=True)['state_dict'].items() if not key.startswith('classifier.')})
    frame = inputs(64)
    with torch.no_grad():
        expected = flat(frame)[:, :, None, None]
        # the diff basis moves the kernel through a change of basis: float rounding only
        torch.testing.assert_close(hyper.eval()(repeat_frames(frame, num_frames)), expected,
                                   rtol=1e-4, atol=1e-4)
        # distinct frames do change the output: the inflated stem sees every frame
        assert not torch.allclose(hyper(torch.cat([frame, -frame, frame, frame, frame], 1)),
                                  expected, atol=1e-3)


class SourceDefinition(torch.nn.Module):
    """Stands in for ``efficientnet_lite_pytorch.EfficientNet`` (not installed in tests): the
    re-expressed source definition on the weights it is given."""

    @classmethod
    def from_name(cls, name, num_classes):
        assert (name, num_classes) == ('efficientnet-lite0', NUM_CLASSES)
        return cls()

    def load_state_dict(self, state_dict, strict):
        self.weights = state_dict

    def forward(self, x):
        return source_forward(self.weights, x)


def test_verify_compares_with_the_source_definition(tool, source_file, tmp_path, monkeypatch,
                                                    capsys):
    package = type(sys)('efficientnet_lite_pytorch')
    package.EfficientNet = SourceDefinition
    monkeypatch.setitem(sys.modules, 'efficientnet_lite_pytorch', package)
    assert tool.main([source_file, str(tmp_path / 'out.pth'), '--verify']) == 0
    out = capsys.readouterr().out
    # mmengine logs the checkpoint loads to stdout too
    lines = out[out.index('verify on'):].splitlines()
    assert lines[0].startswith('verify on 8 inputs at 224 (4 random, 4 structured, 0 images)')
    assert lines[1].startswith('  timm tf_efficientnet_lite0: top-1 agrees on 8/8')
    assert float(lines[1].split('max |logit diff| ')[1].split()[0]) < 1e-4
    assert lines[2].startswith('  timm efficientnet_lite0: ')
    assert float(lines[2].split('max |logit diff| ')[1].split()[0]) > 1e-2


def test_verify_without_the_source_package_says_how_to_get_it(tool, source_file, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'efficientnet_lite_pytorch', None)  # import fails
    assert tool.main([source_file, str(tmp_path / 'out.pth'), '--verify']) == 1
    assert 'install efficientnet-lite-pytorch==0.1.0' in capsys.readouterr().err
