"""ONNX export: parity with the PyTorch test step on real stream windows, dynamic batch, errors."""
import numpy as np
import pytest
import torch

from hyperframes_mm.apis import example_inputs, init_recognizer
from hyperframes_mm.deploy import ModelStage, StreamEngine
from hyperframes_mm.deploy.export import (ExportWrapper, FoldedStemConv, check_parity,
                                        export_onnx, fold_input_into_stem,
                                        fold_input_projection, onnx_session, pytorch_scores,
                                        random_pixels, run_onnx)

from ..conftest import load_script


def _stream_inputs(stage, video, stride=3):
    """The packed inputs of a video's stream windows (ending on frames 2, 5, 8, ...), stacked
    into one batch (per stream)."""
    import decord
    frames = list(decord.VideoReader(str(video))[:].asnumpy())
    window = stage.window_length(25.0)
    packed = [stage.prepare(frames[end - window + 1:end + 1], 25.0)[1]['inputs']
              for end in range(stride - 1, len(frames), stride) if end >= window - 1]
    if isinstance(packed[0], dict):
        return {key: torch.stack([p[key] for p in packed]).float() for key in packed[0]}
    return torch.stack(packed).float()


@pytest.mark.parametrize('kind', ['single', 'fast_slow'])
@pytest.mark.parametrize('dtype', ['float32', 'uint8'])
def test_onnx_matches_pytorch_on_stream_windows(api_models, api_videos, tmp_path, kind, dtype):
    stage = ModelStage.from_config(api_models[kind], api_models[f'{kind}_ckpt'], 'cpu')
    windows = _stream_inputs(stage, api_videos['a'])
    path = export_onnx(stage.model, tmp_path / f'{kind}.onnx', random_pixels(
        {k: v.shape for k, v in windows.items()} if isinstance(windows, dict) else
        windows.shape, 2), input_dtype=dtype)
    session = onnx_session(path)
    assert [i.name for i in session.get_inputs()] == (
        ['imgs_fast', 'imgs_slow'] if kind == 'fast_slow' else ['imgs'])
    assert session.get_inputs()[0].type == dict(float32='tensor(float)',
                                                uint8='tensor(uint8)')[dtype]
    expected = pytorch_scores(stage.model, windows)
    for batch in (1, 3, 7):  # dynamic batch: none of these is the export batch of 2
        part = ({k: v[:batch] for k, v in windows.items()} if isinstance(windows, dict)
                else windows[:batch])
        got = run_onnx(session, stage.model, part)
        assert got.shape == (batch, 4)
        assert np.abs(got - expected[:batch]).max() <= 1e-4
    # the reference is the stream's own prediction: one pipeline, three runtimes
    records = [r for r in StreamEngine(stage, stride=3, keep_records=True, progress=False)
               .run([str(api_videos['a'])]).records if 'scores' in r]
    np.testing.assert_allclose(expected, [r['scores'] for r in records], atol=1e-5)
    assert check_parity(stage.model, path, windows) <= 1e-4


def test_export_tool_verifies(api_models, tmp_path, capsys):
    tool = load_script('tools/deployment/export_onnx.py')
    out = tmp_path / 'fs.onnx'
    assert tool.main([str(api_models['fast_slow']), str(api_models['fast_slow_ckpt']), '--out',
                      str(out), '--video-size', '48', '64', '--verify']) == 0
    printed = capsys.readouterr().out
    assert 'parity at batch 1' in printed and 'parity at batch 3' in printed
    assert f'wrote {out}: inputs imgs_fast [batch, 1, 9, 32, 32], imgs_slow [batch, 1, 9, 32, ' \
        '32] (dynamic batch), float32 pixels 0..255; output scores [batch, 4]\n' \
        in printed
    assert [meta.shape for meta in onnx_session(out).get_inputs()] == [['batch', 1, 9, 32, 32]] * 2


def test_a_static_batch_export_reports_its_fixed_batch(api_models, tmp_path, capsys):
    """--static-batch --batch 4 reported inputs of batch 1 ("(1, 2, 9, 32, 32) (batch dynamic:
    False)"), the example's, while the graph's batch is fixed at 4."""
    tool = load_script('tools/deployment/export_onnx.py')
    out = tmp_path / 'fixed.onnx'
    capsys.readouterr()
    assert tool.main([str(api_models['single']), str(api_models['single_ckpt']), '--out',
                      str(out), '--video-size', '48', '64', '--static-batch', '--batch', '4',
                      '--input-dtype', 'uint8', '--verify']) == 0
    *_, wrote, parity = capsys.readouterr().out.splitlines()
    assert wrote == (f'wrote {out}: inputs imgs [4, 2, 9, 32, 32] (fixed batch), uint8 pixels '
                     '0..255; output scores [4, 4]')
    assert parity.startswith('parity at batch 4: ')
    session = onnx_session(out)
    assert [(meta.name, meta.shape) for meta in session.get_inputs()] == [
        ('imgs', [4, 2, 9, 32, 32])]
    assert session.get_outputs()[0].shape == [4, 4]


def test_example_inputs_follow_the_test_pipeline(api_models):
    single = example_inputs(api_models['single'], (48, 64))
    # Resize(-1, 40) then CenterCrop(32); 2 clips of T=3
    assert single.shape == (1, 2, 9, 32, 32) and single.dtype == torch.uint8


def test_example_inputs_of_mmaction2_baselines():
    from ..conftest import REPO
    tsn = REPO / 'configs/hyperframes/synthetic/tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py'
    assert example_inputs(tsn, (40, 48)).shape == (1, 5, 3, 32, 32)
    # uniform picks over the whole video, 3 test clips of 8 frames, 96x96 crops
    i3d = REPO / 'configs/hyperframes/utd_mhad/i3d_scratch-r18_1xb16-1x1x8-60e_utd-mhad-depth.py'
    assert example_inputs(i3d, (128, 128)).shape == (1, 3, 3, 8, 96, 96)


def test_example_inputs_of_uniform_picks(api_models, tmp_path):
    # picks spread over the whole video have no window of their own; the shape needs none
    uniform = tmp_path / 'uniform.py'
    uniform.write_text(api_models['single'].read_text() + (
        "\ntest_pipeline[1] = dict(type='HyperframeSampleFrames', num_frames=3, "
        "mode='uniform', num_clips=2, test_mode=True)\n"))
    assert example_inputs(uniform, (48, 64)).shape == (1, 2, 9, 32, 32)
    assert example_inputs(uniform, (48, 64), window=7).shape == (1, 2, 9, 32, 32)


def test_a_session_for_side_by_side_timing_does_not_spin(api_models, tmp_path):
    """spin=False sets onnxruntime's allow_spinning to 0 (its pool threads would otherwise hold
    the cores into the next timed call); by default the session keeps onnxruntime's own."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    path = export_onnx(model, tmp_path / 'single.onnx', random_pixels(
        example_inputs(model.cfg).shape, 1))
    options = onnx_session(path, threads=2, spin=False).get_session_options()
    assert options.get_session_config_entry('session.intra_op.allow_spinning') == '0'
    assert options.intra_op_num_threads == 2
    with pytest.raises(RuntimeError, match='allow_spinning'):  # not set: onnxruntime's default
        onnx_session(path, threads=2).get_session_options().get_session_config_entry(
            'session.intra_op.allow_spinning')


def test_export_errors(api_models, tmp_path):
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    pixels = random_pixels((1, 2, 9, 32, 32), 1)
    with pytest.raises(ValueError, match='input_dtype must be one of'):
        export_onnx(model, tmp_path / 'x.onnx', pixels, input_dtype='float16')
    with pytest.raises(FileNotFoundError, match='ONNX file not found'):
        onnx_session(tmp_path / 'missing.onnx')
    with pytest.raises(TypeError, match='one input per stream'):
        fast_slow = init_recognizer(api_models['fast_slow'], api_models['fast_slow_ckpt'],
                                    'cpu')
        pytorch_scores(fast_slow, pixels)
    with pytest.raises(KeyError, match='inputs lack'):
        pytorch_scores(fast_slow, dict(imgs_fast=pixels))
    model.data_preprocessor = torch.nn.Identity()
    with pytest.raises(TypeError, match='needs HyperframeDataPreprocessor'):
        ExportWrapper(model)


def test_check_parity_fails_on_another_model(api_models, tmp_path):
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    pixels = random_pixels((1, 2, 9, 32, 32), 2)
    path = export_onnx(model, tmp_path / 'a.onnx', pixels)
    with torch.no_grad():
        model.cls_head.fc_cls.bias[0] += 1.0  # (a shift of every class is softmax-invariant)
    with pytest.raises(AssertionError, match='differ by'):
        check_parity(model, path, pixels)


def test_export_moves_the_graph_into_place_only_once_checked(api_models, tmp_path, log_lines):
    """The library's export wrote straight to ``path``: a failed check left the failing graph
    there for the next user to load, and the tool that wrote beside it logged the temporary
    file's name as the one written."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    pixels = random_pixels((1, 2, 9, 32, 32), 1)
    out = tmp_path / 'model.onnx'
    out.write_bytes(b'an earlier graph')
    seen = []

    def fails(graph):
        seen.append(graph)
        assert graph != out and graph.is_file()
        raise AssertionError(f'{graph}: onnxruntime and PyTorch differ by 0.5 (> 0.0001)')

    with pytest.raises(AssertionError, match=rf'^{out}: onnxruntime and PyTorch differ'):
        export_onnx(model, out, pixels, check=fails)
    assert out.read_bytes() == b'an earlier graph'
    assert sorted(path.name for path in tmp_path.iterdir()) == ['model.onnx']
    path = export_onnx(model, out, pixels, check=lambda graph: check_parity(model, graph, pixels))
    assert path == out and check_parity(model, out, pixels) <= 1e-4
    assert sorted(path.name for path in tmp_path.iterdir()) == ['model.onnx']
    assert [line.split(' (')[0] for line in log_lines if 'export_onnx' in line] == [
        f'export_onnx: wrote {out}']


@pytest.mark.parametrize('config, shape', [
    ('synthetic/tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py', (2, 5, 3, 32, 32)),
    ('synthetic/tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py', (2, 5, 3, 32, 32)),
    # 3D: one clip of 8 frames, [B, K, 3, T, H, W]
    ('utd_mhad/i3d_scratch-r18_1xb16-1x1x8-60e_utd-mhad-depth.py', (2, 1, 3, 8, 32, 32))])
def test_wrapper_runs_mmaction2_baselines_as_their_test_step(config, shape):
    """TSN/TSM/I3D with mmaction2's ActionDataPreprocessor: the wrapper (used for FLOPs and
    latency side by side with hyperframe models) gives the test step's scores."""
    from mmaction.structures import ActionDataSample

    from ..conftest import REPO
    config = REPO / 'configs/hyperframes' / config
    torch.manual_seed(0)
    model = init_recognizer(config, None, 'cpu').eval()
    model.data_preprocessor.to_rgb = True  # exercised too: BGR -> RGB before normalising
    pixels = torch.randint(0, 256, shape, dtype=torch.uint8)
    with torch.no_grad():
        wrapped = ExportWrapper(model)(pixels.float())
        expected = torch.stack([
            sample.pred_score for sample in model.test_step(dict(
                inputs=list(pixels), data_samples=[ActionDataSample() for _ in range(2)]))])
    torch.testing.assert_close(wrapped, expected, rtol=1e-5, atol=1e-6)


DIFF_BGR = {'model.backbone.input_encoding': 'diff', 'model.backbone.diff_gain': 4.0,
            'model.data_preprocessor.to_rgb': True}


def test_input_projection_is_the_normalisation_then_the_encoding(api_models, tmp_path):
    """One 1x1 conv computes the preprocessor's BGR->RGB, mean and std, then the stem's diff
    encoding: every exported value stays the model's, the model itself is left as it was."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu', DIFF_BGR)
    wrapper = ExportWrapper(model).eval()
    projection = wrapper.input_projection
    assert (projection.in_channels, projection.out_channels, projection.kernel_size) == (9, 9,
                                                                                       (1, 1))
    assert model.backbone.input_encoding == 'diff'  # the folded copy is the wrapper's own
    assert wrapper.model.backbone.input_encoding == 'frames'
    # encoded slot 1, red = 4 * (frame 1 - frame 0) of the normalised red, which BGR input
    # holds in channel 2 of each frame: +4/std on channel 5, -4/std on channel 2, 0 elsewhere
    std_red = 58.395
    row = projection.weight[3, :, 0, 0]
    assert row[5].item() == pytest.approx(4 / std_red, rel=1e-6)
    assert row[2].item() == pytest.approx(-4 / std_red, rel=1e-6)
    assert torch.count_nonzero(row) == 2
    # the centre frame's red: raw channel 5 (frame 1, BGR), (x - 123.675) / 58.395
    assert projection.weight[0, 5, 0, 0].item() == pytest.approx(1 / std_red, rel=1e-6)
    assert projection.bias[0].item() == pytest.approx(-123.675 / std_red, rel=1e-6)
    assert projection.bias[3].item() == pytest.approx(0.0, abs=1e-6)  # differences: no mean
    pixels = random_pixels(tuple(example_inputs(model.cfg, (48, 64)).shape), 3)
    with torch.no_grad():
        unfolded = ExportWrapper(model, fold_input=False).eval()(pixels)
        assert torch.allclose(wrapper(pixels), unfolded, atol=1e-6)
    path = export_onnx(model, tmp_path / 'diff_bgr.onnx', pixels)
    assert check_parity(model, path, pixels) <= 1e-5
    # the passes the projection replaces: mean (Sub), per-frame differences (Sub), gain (Mul),
    # mean and std tiled over the frames (Tile)
    passes = {'Sub', 'Mul', 'Tile'}
    assert not _op_types(path) & passes
    projection_path = tmp_path / 'projection.onnx'
    torch.onnx.export(wrapper, (pixels, ), str(projection_path), dynamo=False)
    assert not _op_types(projection_path) & passes
    unfolded_path = tmp_path / 'unfolded.onnx'
    torch.onnx.export(ExportWrapper(model, fold_input=False).eval(), (pixels, ),
                      str(unfolded_path), dynamo=False)
    assert _op_types(unfolded_path) >= passes


def test_input_folds_into_the_stem_conv_which_then_reads_raw_pixels(api_models, tmp_path):
    """With the input size known, normalisation, encoding and the stem's eval-mode norm become
    the first conv's kernel and bias, and a border term makes the raw pixels' zero padding act
    as the encoded input's: every score stays the model's."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu', DIFF_BGR)
    with torch.no_grad():  # a stem norm that is not the identity, so its fold is exercised
        model.backbone.conv1.bn.running_mean.uniform_(-1, 1)
        model.backbone.conv1.bn.running_var.uniform_(0.5, 2)
    pixels = random_pixels(tuple(example_inputs(model.cfg, (48, 64)).shape), 3)
    wrapper = ExportWrapper(model, input_size=(32, 32)).eval()
    assert wrapper.input_in_stem and wrapper.input_projection is None
    assert model.backbone.input_encoding == 'diff'  # the model itself is left as it was
    conv = wrapper.model.backbone.conv1.conv
    assert isinstance(conv, FoldedStemConv) and conv.weight.shape == (64, 9, 7, 7)
    assert isinstance(wrapper.model.backbone.conv1.bn, torch.nn.Identity)
    # ResNet's 7x7 stride-2 conv, padding 3, on 32x32: output rows/columns 0, 1 and 15 read
    # the padding, the others lie inside, where the border term is exactly zero
    border = conv.border[0]
    assert border.shape == (64, 16, 16)
    assert torch.count_nonzero(border[:, 2:15, 2:15]) == 0
    for edge in (border[:, 0], border[:, 1], border[:, 15], border[:, :, 0], border[:, :, 15]):
        assert edge.abs().amax() > 0
    with torch.no_grad():
        unfolded = ExportWrapper(model, fold_input=False).eval()(pixels)
        assert torch.allclose(wrapper(pixels), unfolded, atol=1e-6)
        with pytest.raises(ValueError, match=r'folded for a \(16, 16\) output, got input'):
            wrapper(random_pixels((1, 2, 9, 48, 48), 1))
    # export folds for the example's size: the graph's first conv reads the pixels
    path = export_onnx(model, tmp_path / 'in_stem.onnx', pixels)
    assert check_parity(model, path, pixels) <= 1e-5
    import onnx
    graph = onnx.load(str(path)).graph
    assert not [node.name for node in graph.node if 'input_projection' in node.name]
    assert sum(node.op_type == 'Conv' for node in graph.node) == 20  # ResNet-18's 20 convs


def test_input_is_not_folded_into_a_stem_with_extra_bn(api_models):
    """extra_bn sits between the conv and its norm: the stem is not a conv -> norm pair, so
    only the 1x1 projection folds."""
    model = init_recognizer(api_models['single'], None, 'cpu', {'model.backbone.extra_bn': True})
    assert fold_input_into_stem(model, (32, 32)) is None
    wrapper = ExportWrapper(model, input_size=(32, 32))
    assert not wrapper.input_in_stem and wrapper.input_projection is not None


def _op_types(path):
    import onnx
    return {node.op_type for node in onnx.load(str(path)).graph.node}


def test_input_is_not_folded_where_the_stem_reads_the_frames_themselves(api_models):
    """Frame attention and motion products read the normalised frames, two streams have two
    stems' inputs, mmaction2's preprocessor has no affine form: the graph keeps the passes."""
    single, ckpt = api_models['single'], api_models['single_ckpt']
    for option in ('frame_attention', 'motion_products'):
        model = init_recognizer(single, None, 'cpu', {f'model.backbone.{option}': True})
        assert fold_input_projection(model) is None
        assert ExportWrapper(model).input_projection is None
    two_streams = init_recognizer(api_models['fast_slow'], api_models['fast_slow_ckpt'], 'cpu')
    assert fold_input_projection(two_streams) is None
    assert fold_input_projection(init_recognizer(single, ckpt, 'cpu')) is not None


def test_the_headline_pair_exports_as_its_test_step_and_quantises(tmp_path):
    """The UTD-MHAD family's headline, the config users start from (two T=5 hyperframes a clip,
    mmaction2's TemporalShift between them in the blocks, 2 test clips), is deployed int8 next to
    cameras: its ONNX graph reads the test sample's 4 passes as one input and gives the test
    step's scores, and its int8 graph quantises every conv."""
    from mmaction.structures import ActionDataSample

    from hyperframes_mm.deploy.quantize import quantize_int8

    from ..conftest import REPO
    config = REPO / ('configs/hyperframes/utd_mhad_imagenet/hyperframe-shift_imagenet-pretrained-'
                     'mobilenetv2_1xb16-1x1x10-30e_utd-mhad-depth.py')
    torch.manual_seed(0)
    model = init_recognizer(config, None, 'cpu', init_weights=False).eval()
    shape = tuple(example_inputs(model.cfg, (128, 128)).shape)
    assert shape == (1, 4, 15, 112, 112)  # 2 clips x 2 hyperframes, 5 picks x 3 channels
    pixels = random_pixels(shape, 2)
    with torch.no_grad():
        expected = torch.stack([
            sample.pred_score for sample in model.test_step(dict(
                inputs=list(pixels.to(torch.uint8)),
                data_samples=[ActionDataSample() for _ in range(2)]))])
    path = export_onnx(model, tmp_path / 'float.onnx', pixels, 'uint8')
    got = run_onnx(onnx_session(path), model, pixels)
    assert np.abs(got - expected.numpy()).max() <= 1e-4
    report = quantize_int8(path, tmp_path / 'int8.onnx',
                           [random_pixels(shape, 1, seed=seed)[0] for seed in (1, 2)], 'QDQ')
    assert 'Conv' not in report['float_operators']
    assert report['uint8_inputs'] == ['imgs']


def test_the_deployment_tools_never_write_over_what_they_read(api_models, api_videos, tmp_path,
                                                              capsys):
    """An output path naming the checkpoint, the config, a source video or another output of
    the run is refused before anything is written (exit 1, the file untouched): the export
    replaced the checkpoint with its graph, the stream's --out emptied the checkpoint before
    loading it, and an int8 --out ending in .json was replaced by its own report."""
    import shutil
    checkpoint = tmp_path / 'model.pth'
    shutil.copy(api_models['single_ckpt'], checkpoint)
    before = checkpoint.read_bytes()
    video = next(iter(api_videos.values()))
    cases = [
        ('tools/deployment/export_onnx.py',
         [str(api_models['single']), str(checkpoint), '--out', str(checkpoint)],
         f'--out {checkpoint} is the checkpoint ({checkpoint})'),
        ('tools/deployment/quantize_int8.py',
         [str(api_models['single']), str(checkpoint), '--out', str(tmp_path / 'q.json')],
         f'the report {tmp_path / "q.json"} is --out'),
        ('tools/stream_infer.py',
         [str(api_models['single']), str(checkpoint), str(video), '--out', str(checkpoint)],
         f'--out {checkpoint} is the checkpoint'),
        ('tools/deployment/export_onnx.py',
         [str(api_models['single']), str(checkpoint), '--out', str(tmp_path)],
         f'--out {tmp_path} is a directory'),
    ]
    for script, argv, message in cases:
        assert load_script(script).main(argv) == 1, script
        assert message in capsys.readouterr().err, script
        assert checkpoint.read_bytes() == before
    assert not (tmp_path / 'q.json').exists()


def test_an_export_that_fails_its_check_or_its_write_leaves_out_as_it_was(
        api_models, api_videos, tmp_path, capsys, monkeypatch):
    """--verify failed with a traceback and left the failing graph at --out; an --out that
    could not be written ended in a traceback after the model was loaded and exported."""
    tool = load_script('tools/deployment/export_onnx.py')
    out = tmp_path / 'model.onnx'
    out.write_bytes(b'the graph of an earlier export')

    def fails(model, path, inputs, tolerance=1e-4):
        raise AssertionError(f'{path}: onnxruntime and PyTorch differ by 0.002 (> 0.0001)')
    monkeypatch.setattr('hyperframes_mm.deploy.export.check_parity', fails)
    argv = [str(api_models['single']), str(api_models['single_ckpt']), '--video-size', '48',
            '64']
    assert tool.main(argv + ['--out', str(out), '--verify']) == 1
    assert capsys.readouterr().err == (
        f'error: {out}: onnxruntime and PyTorch differ by 0.002 (> 0.0001): the graph fails '
        'the parity check and is not written\n')
    assert out.read_bytes() == b'the graph of an earlier export'
    assert sorted(path.name for path in tmp_path.iterdir()) == ['model.onnx']
    # a folder that cannot be made (a file stands where it would be): refused before loading
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    for script, extra in (('tools/deployment/export_onnx.py', []),
                          ('tools/stream_infer.py', [str(api_videos['a']), '--no-progress'])):
        code = load_script(script).main([str(api_models['single']),
                                         str(api_models['single_ckpt']), *extra, '--out',
                                         str(blocker / 'sub' / 'x.out')])
        assert code == 1, script
        assert capsys.readouterr().err == (
            f'error: --out {blocker / "sub" / "x.out"}: its folder {blocker / "sub"} cannot be '
            f'made: {blocker} is a file\n'), script
    # a run refused for another reason leaves no folder behind
    assert tool.main([str(api_models['single']), str(tmp_path / 'missing.pth'), '--out',
                      str(tmp_path / 'a' / 'b' / 'model.onnx')]) == 1
    capsys.readouterr()
    assert not (tmp_path / 'a').exists()
    # a stream's --out in a folder that does not exist yet: made, as export makes its own
    records = tmp_path / 'new' / 'records.jsonl'
    assert load_script('tools/stream_infer.py').main(
        [str(api_models['single']), str(api_models['single_ckpt']), str(api_videos['a']),
         '--out', str(records), '--no-progress']) == 0
    assert records.read_text().count('"event": "summary"') == 1


def test_refuse_overwrite_names_the_file_an_output_would_replace(tmp_path):
    from hyperframes_mm.utils import refuse_overwrite
    source = tmp_path / 'a.mp4'
    source.write_bytes(b'x')
    (tmp_path / 'link.mp4').symlink_to(source)
    with pytest.raises(ValueError, match=rf'^--out {tmp_path / "link.mp4"} is the source '
                       rf'\({source}\): writing it would destroy that file'):
        refuse_overwrite({'--out': tmp_path / 'link.mp4'}, {'the source': source})
    refuse_overwrite({'--out': tmp_path / 'new.json'}, {'the source': source, 'unset': None})
    # a directory that does not exist yet: the tools wrote a file of that name
    with pytest.raises(ValueError, match=rf'^--out {tmp_path}/newdir/ is a directory'):
        refuse_overwrite({'--out': f'{tmp_path}/newdir/'}, {})


def test_tools_that_need_the_pytorch_model_name_a_graph_given_for_it(api_models, api_videos,
                                                                     tmp_path, capsys):
    """Export, quantisation and the dynamic frame counts read the PyTorch model: given an
    exported graph they failed with "'OnnxRecognizer' object has no attribute 'cpu'" (or
    'cls_head'), naming no file. Everything else runs a graph where a checkpoint runs, an
    upper-case suffix included."""
    import shutil

    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    graph = tmp_path / 'single.onnx'
    assert load_script('tools/deployment/export_onnx.py').main(
        [str(api_models['single']), str(api_models['single_ckpt']), '--out', str(graph),
         '--video-size', '48', '64']) == 0
    capsys.readouterr()
    refused = f'error: {graph} is an exported ONNX graph; this needs the PyTorch checkpoint'
    cases = [('tools/deployment/export_onnx.py', ['--out', str(tmp_path / 'again.onnx')]),
             ('tools/deployment/quantize_int8.py', ['--out', str(tmp_path / 'q.onnx')]),
             ('tools/stream_infer.py', [str(api_videos['a']), '--dynamic-frames', '2', '3', '4',
                                        '--device', 'cpu', '--no-progress'])]
    for script, extra in cases:
        assert load_script(script).main([str(api_models['single']), str(graph), *extra]) == 1
        assert refused in capsys.readouterr().err, script
    assert sorted(path.name for path in tmp_path.iterdir()) == ['single.onnx']
    upper = tmp_path / 'SINGLE.ONNX'
    shutil.copy(graph, upper)
    assert isinstance(init_recognizer(api_models['single'], str(upper)), OnnxRecognizer)


def test_a_fixed_batch_graph_scores_any_number_of_samples(api_models, tmp_path):
    """A --static-batch export ran only at its own batch: a stream's or a test loader's batch
    of another size failed inside onnxruntime. It now runs in chunks of its batch."""
    from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
    tool = load_script('tools/deployment/export_onnx.py')
    paths = {}
    for name, extra in (('fixed', ['--static-batch', '--batch', '2']), ('dynamic', [])):
        paths[name] = tmp_path / f'{name}.onnx'
        assert tool.main([str(api_models['single']), str(api_models['single_ckpt']), '--out',
                          str(paths[name]), '--video-size', '48', '64', *extra]) == 0
    cfg = init_recognizer(api_models['single'], str(paths['dynamic'])).cfg
    fixed, dynamic = (OnnxRecognizer(paths[name], cfg) for name in ('fixed', 'dynamic'))
    assert (fixed.batch, dynamic.batch) == (2, None)
    shape = example_inputs(cfg, (48, 64)).shape[1:]
    samples = [torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed))
               .float() for seed in range(5)]
    for count in (1, 2, 3, 5):
        scores = fixed.scores(samples[:count])
        assert scores.shape == (count, 4)
        np.testing.assert_allclose(scores, dynamic.scores(samples[:count]), atol=1e-5)


def test_frame_attention_exports_with_a_dynamic_batch_at_any_size(api_models, tmp_path):
    """The exporter could not write frame attention's adaptive pooling with a dynamic batch
    ("input size not accessible"), nor, with a fixed one, at sides that are not multiples of
    its pooled size: every frame-attention model failed to export with a traceback."""
    model = init_recognizer(api_models['single'], None, 'cpu',
                            {'model.backbone.frame_attention': True})
    attention = model.backbone.hyperframe_stem.frame_attention
    torch.nn.init.normal_(attention.fc2.weight, std=0.5)  # weights that differ between frames
    inputs = random_pixels((1, 1, 9, 56, 40), 2)
    path = export_onnx(model, tmp_path / 'attention.onnx', inputs)
    expected = pytorch_scores(model, random_pixels((1, 1, 9, 56, 40), 3))
    got = run_onnx(onnx_session(path), model, random_pixels((1, 1, 9, 56, 40), 3))
    assert got.shape == (3, 4) and np.abs(got - expected).max() <= 1e-5
