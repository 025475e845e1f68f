"""Every ImageNet MobileNetV2 config reads the one file configs/_base_/models/
imagenet_mobilenet_v2.py names (HF_IMAGENET_MOBILENET_V2 overrides it): the hyperframe models
inflate its conv1, mmaction2's TSN / TSM-MobileNetV2 load it as it is, and every other layer is
the file's."""
import pytest
import torch
from mmaction.models.backbones.mobilenet_v2 import MobileNetV2
from mmaction.registry import MODELS
from mmengine.config import Config

from hyperframes_mm.models.backbones.encoding import change_kernel_basis
from .conftest import CONFIG_ROOT

CONFIGS = sorted(path for path in CONFIG_ROOT.glob('*/*imagenet-pretrained-mobilenetv2_*.py'))


@pytest.fixture(scope='module')
def imagenet_file(tmp_path_factory):
    """A MobileNetV2 state dict in mmaction2's layout (random weights, made here), saved as the
    converter saves the ImageNet one: under ``state_dict``."""
    torch.manual_seed(0)
    weights = MobileNetV2().state_dict()
    path = tmp_path_factory.mktemp('imagenet') / 'mobilenet_v2.pth'
    torch.save(dict(state_dict=weights), path)
    return path, weights


def test_the_configs_are_the_families_mobilenet_v2_rows():
    families = {path.parent.name for path in CONFIGS}
    assert families == {'utd_mhad_imagenet', 'ucf101', 'hmdb51', 'kinetics400'}
    # 19 UTD-MHAD rows (int8-aware T=5; T=8 at 128 over 30 and 45 epochs and on 0.8-1 crops;
    # shifted: two T=5, two T=8, three T=5, two T=5 at 128, two T=5 on 0.8-1 crops among
    # them), 3 RGB
    assert len(CONFIGS) == 22


@pytest.mark.parametrize('path', CONFIGS, ids=lambda path: path.stem)
def test_every_config_loads_the_one_file(path, imagenet_file, monkeypatch):
    file, weights = imagenet_file
    monkeypatch.setenv('HF_IMAGENET_MOBILENET_V2', str(file))
    cfg = Config.fromfile(str(path))
    assert cfg.model.backbone.pretrained == str(file)
    model = MODELS.build(cfg.model)
    model.init_weights()
    loaded = model.backbone.state_dict()
    for key in ('conv2.conv.weight', 'layer7.0.conv.2.conv.weight', 'conv1.bn.bias'):
        assert torch.equal(loaded[key], weights[key]), key
    backbone = cfg.model.backbone
    if backbone.type != 'HyperMobileNetV2':
        # TSM's shifted blocks keep their weights under the shift wrapper
        first_block = ('layer2.1.conv.0.net.conv.weight' if backbone.type == 'MobileNetV2TSM'
                       else 'layer2.1.conv.0.conv.weight')
        assert torch.equal(loaded[first_block], weights['layer2.1.conv.0.conv.weight'])
        assert torch.equal(loaded['conv1.conv.weight'], weights['conv1.conv.weight'])
        return
    num_frames = backbone.num_frames
    raw = change_kernel_basis(loaded['conv1.conv.weight'], num_frames,
                              backbone.get('input_encoding', 'frames'),
                              backbone.get('diff_gain', 4.0), to_encoded=False)
    torch.testing.assert_close(raw, weights['conv1.conv.weight'].repeat(1, num_frames, 1, 1)
                               / num_frames, rtol=0, atol=1e-6)
