"""InflatedBackbone and the shared loader: which 2D files load, and how they are refused."""
import re
import sys

import pytest
import timm
import torch
from mmaction.registry import MODELS
from safetensors.torch import save_file

from hyperframes_mm.engine.checkpoint import CheckpointNotFiniteError

from .helpers import save_checkpoint

T = 5


def timm_file(tmp_path, name: str, **kwargs) -> str:
    """A timm classifier's state dict (with its head), saved as a user would."""
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, **kwargs)
    return save_checkpoint(tmp_path / f'{name}.pth', model.state_dict())


def inflated_timm(name: str, first_conv: str, **kwargs):
    model = MODELS.build(dict(type='InflatedBackbone', backbone=dict(type=f'timm.{name}'),
                              first_conv=first_conv, num_frames=T, **kwargs))
    model.init_weights()
    return model


def test_another_networks_file_is_an_error_not_a_dropped_block(tmp_path):
    # SE-ResNet-18 is ResNet-18 plus an SE block per residual block: dropping those weights
    # would load a network that is neither
    path = timm_file(tmp_path, 'seresnet18')
    message = (f"{path} is another network's checkpoint, not InflatedBackbone's: it holds 32 "
               "weights InflatedBackbone has no place for, which are not its classifier head "
               "['model.fc.']: ['model.layer1.0.se.fc1.weight', 'model.layer1.0.se.fc1.bias', "
               "'model.layer1.0.se.fc2.weight', 'model.layer1.0.se.fc2.bias', "
               "'model.layer1.1.se.fc1.weight']")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        inflated_timm('resnet18', 'conv1', pretrained=path)
    with pytest.raises(RuntimeError, match=re.escape(
            f"{path} is another network's checkpoint, not HyperResNet's: it holds 32 weights "
            "HyperResNet has no place for, which are not its classifier head []: "
            "['layer1.0.se.fc1.weight',")):
        MODELS.build(dict(type='HyperResNet', depth=18, num_frames=T,
                          pretrained=path)).init_weights()


def test_the_classifier_head_alone_is_ignored(tmp_path, mm_logs):
    path = timm_file(tmp_path, 'resnet18', num_classes=7)
    inflated_timm('resnet18', 'conv1', pretrained=path)
    assert any(f"InflatedBackbone: {path} holds 2 weights InflatedBackbone has no place for, "
               "ignored: ['model.fc.weight', 'model.fc.bias'] (the 2D classifier head)" in message
               for message in mm_logs)


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_a_half_precision_file_is_inflated_in_float32(tmp_path, dtype):
    # T=5 is not a power of two: W / 5 rounded to half precision no longer sums back to W
    torch.manual_seed(0)
    state = {key: value.to(dtype) if value.is_floating_point() else value
             for key, value in timm.create_model('resnet18').state_dict().items()}
    path = save_checkpoint(tmp_path / 'half.pth', state)
    kernel = inflated_timm('resnet18', 'conv1', pretrained=path).model.conv1.weight
    assert kernel.dtype == torch.float32
    assert torch.equal(kernel, state['conv1.weight'].float().repeat(1, T, 1, 1) / T)


def test_a_weight_standardised_first_conv_is_refused():
    # NF-RegNet's stem is timm's ScaledStdConv2d: it would standardise the T frames' kernels
    # together, so no inflation keeps the 2D output
    with pytest.raises(TypeError, match=re.escape(
            'InflatedBackbone: timm.nf_regnet_b0.stem.conv is a ScaledStdConv2d, which '
            'standardises its kernel over its input channels in every forward: inflated to C*T '
            'channels, T identical frames would no longer give the 2D output. A network with a '
            'weight-standardised first conv (NFNet, BiT ResNetV2) cannot be inflated: pick one '
            'whose first conv is a plain Conv2d')):
        inflated_timm('nf_regnet_b0', 'stem.conv')


@pytest.mark.parametrize('name', ['model.safetensors', 'pytorch_model.bin'])
def test_a_safetensors_file_loads_whatever_its_extension(tmp_path, name):
    torch.manual_seed(0)
    state = timm.create_model('resnet18', num_classes=0).state_dict()
    path = str(tmp_path / name)
    save_file(state, path)
    model = inflated_timm('resnet18', 'conv1', pretrained=path).model
    assert torch.equal(model.conv1.weight, state['conv1.weight'].repeat(1, T, 1, 1) / T)
    assert torch.equal(model.layer4[1].bn2.running_var, state['layer4.1.bn2.running_var'])


def test_a_safetensors_file_with_nan_is_refused(tmp_path):
    state = timm.create_model('resnet18', num_classes=0).state_dict()
    state['layer1.0.conv1.weight'][0, 0, 0, 0] = float('nan')
    path = str(tmp_path / 'diverged.safetensors')
    save_file(state, path)
    with pytest.raises(CheckpointNotFiniteError, match=re.escape(
            f'{path}: 1 tensor(s) hold NaN or Inf (layer1.0.conv1.weight)')):
        inflated_timm('resnet18', 'conv1', pretrained=path)


def test_a_hyperframe_safetensors_file_loads_as_is(tmp_path):
    torch.manual_seed(0)
    trained = inflated_timm('resnet18', 'conv1')
    path = str(tmp_path / 'hyperframe.safetensors')
    save_file(trained.state_dict(), path)
    loaded = inflated_timm('resnet18', 'conv1', pretrained=path)
    assert torch.equal(loaded.model.conv1.weight, trained.model.conv1.weight)


def test_a_safetensors_file_without_safetensors_says_how_to_convert(tmp_path, monkeypatch):
    path = str(tmp_path / 'model.safetensors')
    save_file({'conv1.weight': torch.zeros(64, 3, 7, 7)}, path)
    monkeypatch.setitem(sys.modules, 'safetensors.torch', None)  # as if not installed
    with pytest.raises(ImportError, match=re.escape(
            f'{path}: a safetensors file, and the safetensors package is not installed: pip '
            'install safetensors, or convert it where it is with '
            'torch.save(safetensors.torch.load_file(path), "model.pth")')):
        inflated_timm('resnet18', 'conv1', pretrained=path)
