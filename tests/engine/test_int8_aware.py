"""Int8-aware fine-tuning: the rounding trained through is the one the int8 file stores, the
model and its checkpoints stay float, and the hook refuses to fine-tune nothing."""
import numpy as np
import onnx
import onnx.numpy_helper
import pytest
import torch
from torch import nn

from hyperframes_mm.engine.int8_aware import (Int8AwareHook, Int8Rounding, fake_quantize_weight,
                                              freeze_norms, weight_scale)


def small_net() -> nn.Module:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1),
                        nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))
    with torch.no_grad():
        net[2].weight[1] = 0  # an all-zero channel: scale 1, codes 0
    return net.eval()


def test_weights_round_to_the_codes_and_scales_the_int8_file_stores(tmp_path):
    from hyperframes_mm.deploy.quantize import quantize_int8
    net = small_net()
    float_path, int8_path = tmp_path / 'net.onnx', tmp_path / 'net_int8.onnx'
    torch.onnx.export(net, (torch.rand(1, 6, 5, 5), ), str(float_path), input_names=['x'],
                      dynamo=False)
    quantize_int8(float_path, int8_path, [torch.rand(6, 5, 5) for _ in range(4)])
    graph = onnx.load(str(int8_path)).graph
    arrays = {init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer}
    consumers = {name: node.name for node in graph.node for name in node.input}
    # each int8 initializer's DequantizeLinear, by the layer it feeds ('/0/Conv': net[0])
    stored = {consumers[node.output[0]].split('/')[1]: (arrays[node.input[0]],
                                                        arrays[node.input[1]])
              for node in graph.node if node.op_type == 'DequantizeLinear'
              and node.input[0] in arrays and arrays[node.input[0]].dtype == np.int8}
    # the batch norm's conv is left out: the quantiser rounds it folded (equal to this rounding
    # up to float rounding, not bit for bit)
    assert sorted(stored) == ['0', '2', '5']
    for index in (0, 5):
        codes, scale = stored[str(index)]
        layer = net[index]
        ours = weight_scale(layer.weight)
        np.testing.assert_array_equal(ours.numpy(), scale)
        rounded = fake_quantize_weight(layer.weight).detach()
        ours_codes = torch.round(rounded / ours.view(-1, *[1] * (rounded.dim() - 1)))
        np.testing.assert_array_equal(ours_codes.numpy().astype(np.int8).reshape(codes.shape),
                                      codes)
    assert weight_scale(net[2].weight)[1] == 1
    assert np.abs(stored['0'][0]).max() == 64  # the 7-bit range, used in full


def test_rounding_changes_the_output_not_the_model_and_comes_off_exactly():
    net = small_net()
    x = torch.rand(2, 6, 5, 5)
    before = net(x)
    state = {key: value.clone() for key, value in net.state_dict().items()}
    rounding = Int8Rounding(net)
    assert [name for name, _ in rounding.layers] == ['0', '2', '5']
    rounded = net(x)
    assert not torch.equal(rounded, before)
    assert (rounded - before).abs().max() < 0.05 * before.abs().max()
    assert list(net.state_dict()) == list(state)
    assert all(torch.equal(net.state_dict()[key], value) for key, value in state.items())
    assert all('weight' not in module.__dict__ for _, module in rounding.layers)
    rounding.remove()
    assert torch.equal(net(x), before)
    with pytest.raises(ValueError, match='ReLU has no convolution or linear layer'):
        Int8Rounding(nn.ReLU())


def test_gradients_pass_the_rounding_and_the_layer_computes_with_rounded_weights():
    conv = nn.Conv2d(3, 4, 3)
    rounding = Int8Rounding(conv)
    x = torch.rand(1, 3, 6, 6)
    out = conv(x)
    rounding.observe(False)  # the range stays the one the forward above used
    quantizer = rounding.inputs['']
    expected = nn.functional.conv2d(quantizer(x), fake_quantize_weight(conv.weight), conv.bias)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    out.sum().backward()
    reference = fake_quantize_weight(conv.weight.detach()).requires_grad_()
    nn.functional.conv2d(quantizer(x), reference, conv.bias).sum().backward()
    # straight through: the float weight gets the rounded weight's gradient
    torch.testing.assert_close(conv.weight.grad, reference.grad)


def test_observed_input_range_is_the_uint8_range_of_what_the_layer_saw():
    conv = nn.Conv2d(1, 1, 1, bias=False)
    rounding = Int8Rounding(conv)
    quantizer = rounding.inputs['']
    conv(torch.tensor([-1.0, 0.5, 2.0]).view(1, 1, 1, 3))
    scale, zero = quantizer.calculate_qparams()
    assert scale.item() == pytest.approx(3.0 / 255) and zero.item() == 85
    rounding.observe(False)
    conv(torch.full((1, 1, 1, 1), 100.0))
    assert quantizer.calculate_qparams()[0].item() == pytest.approx(3.0 / 255)


def test_freeze_norms_puts_only_batch_norms_in_eval():
    net = small_net().train()
    assert freeze_norms(net) == 1
    assert not net[3].training and net[0].training


class FakeRunner:

    def __init__(self, model, load_from=None, resume=False):
        self.model, self._load_from, self._resume = model, load_from, resume


def test_hook_refuses_to_start_without_a_trained_model_and_cleans_up():
    net = small_net()
    with pytest.raises(ValueError, match='load_from'):
        Int8AwareHook().before_train(FakeRunner(net))
    hook = Int8AwareHook()
    hook.before_train(FakeRunner(net, load_from='float.pth'))
    assert len(net[0]._forward_pre_hooks) == 1
    net.train()
    hook.before_train_iter(FakeRunner(net), 0)
    assert not net[3].training
    hook.after_train(FakeRunner(net))
    assert not net[0]._forward_pre_hooks and not net[0]._forward_hooks
    Int8AwareHook(require_load_from=False).before_train(FakeRunner(small_net()))


def test_mmaction2_train_tool_fine_tunes_a_checkpoint_int8_aware(tiny_work_dir, tiny_dataset,
                                                                 tmp_path):
    """Through mmaction2's own tools/train.py: the hook refuses a run without load_from, and
    with one it trains through the rounding and writes a checkpoint with the float model's
    names that loads strictly."""
    from hyperframes_mm.utils import upstream_tool_path

    from ..conftest import TINY_CONFIG, run_tool
    config = tmp_path / 'int8aware.py'
    config.write_text(f"_base_ = ['{TINY_CONFIG}']\ncustom_hooks = [dict(type='Int8AwareHook')]\n")
    train = upstream_tool_path('train')
    refused = run_tool([train, config, '--work-dir', tmp_path / 'refused'], tiny_dataset,
                       check=False)
    assert refused.returncode != 0
    assert 'Int8AwareHook fine-tunes a trained float model' in refused.stdout + refused.stderr
    float_path = tiny_work_dir / 'epoch_1.pth'
    work = tmp_path / 'run'
    run_tool([train, config, '--work-dir', work, '--cfg-options', f'load_from={float_path}',
              'train_cfg.max_epochs=1'], tiny_dataset)
    log = next(work.glob('*/*.log')).read_text()
    # ResNet-18: 20 convolutions (3 of them shortcuts) and the head's linear layer
    assert 'Int8AwareHook: 21 layers train through int8 rounding, 20 batch norms frozen' in log
    tuned = torch.load(work / 'epoch_1.pth', map_location='cpu', weights_only=False)
    before = torch.load(float_path, map_location='cpu', weights_only=False)
    assert list(tuned['state_dict']) == list(before['state_dict'])
    # frozen norms: their statistics are the loaded ones; the weights moved
    stats = [key for key in before['state_dict'] if key.endswith('running_mean')]
    assert stats and all(torch.equal(tuned['state_dict'][key], before['state_dict'][key])
                         for key in stats)
    assert not torch.equal(tuned['state_dict']['backbone.conv1.conv.weight'],
                           before['state_dict']['backbone.conv1.conv.weight'])


def test_the_stem_conv_rounds_as_the_int8_file_folds_it(api_models):
    """Where the export folds normalisation and encoding into the stem conv, the int8 file
    holds that folded kernel, rounded, and reads exact pixels: the hooked stem computes what
    such a file computes, float bias and border included, and its input is not rounded."""
    from hyperframes_mm.apis import init_recognizer
    from hyperframes_mm.deploy.export import fold_input_into_stem, random_pixels
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu',
                            {'model.backbone.input_encoding': 'diff'}).eval()
    with torch.no_grad():  # frames weighted unequally, as training leaves them
        model.backbone.conv1.conv.weight.add_(
            torch.randn(model.backbone.conv1.conv.weight.shape,
                        generator=torch.Generator().manual_seed(0)) * 0.05)
    pixels = random_pixels((1, 9, 32, 32), 2)
    deployed = fold_input_into_stem(model, (32, 32))
    stem = deployed.backbone.conv1
    with torch.no_grad():
        stem.conv.weight.copy_(fake_quantize_weight(stem.conv.weight))
        expected = stem(pixels)
        rounding = Int8Rounding(model)
        assert 'backbone.conv1.conv' not in rounding.inputs
        assert 'backbone.layer1.0.conv1.conv' in rounding.inputs
        encoded = model.data_preprocessor._normalise(pixels)
        hooked = model.backbone.hyperframe_stem(encoded, model.backbone.conv1)
        rounding.remove()
        unrounded = model.backbone.hyperframe_stem(encoded, model.backbone.conv1)
    assert (hooked - unrounded).abs().max() > 1e-3  # the rounding is there...
    torch.testing.assert_close(hooked, expected, rtol=0, atol=1e-4)  # ...and it is the file's
