"""Int8 export: calibrated on training clips, run where a checkpoint runs, errors that name the
file, and the operators kept in float."""
import json

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
import torch
from mmaction.structures import ActionDataSample

from hyperframes_mm.apis import init_recognizer, predict_scores
from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
from hyperframes_mm.deploy import ModelStage, StreamEngine
from hyperframes_mm.deploy.quantize import (dataset_list, float_operators, labelled_videos,
                                            parity_report, pipeline_samples, quantize_int8,
                                            spread)

from ..conftest import REPO, TINY_CONFIG, load_script


@pytest.fixture(scope='module')
def int8_model(tiny_work_dir, tiny_dataset, tmp_path_factory):
    """The tiny config's trained model, quantised by the tool on 8 training clips."""
    import os
    os.environ['HF_SYNTHETIC_TINY'] = str(tiny_dataset)
    out = tmp_path_factory.mktemp('int8') / 'tiny_int8.onnx'
    tool = load_script('tools/deployment/quantize_int8.py')
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '8']) == 0
    return out


def test_tool_writes_an_int8_graph_and_its_report(int8_model, tiny_work_dir):
    graph = onnx.load(str(int8_model)).graph
    types = {node.op_type for node in graph.node}
    assert {'QuantizeLinear', 'DequantizeLinear'} <= types
    int8_weights = [init for init in graph.initializer if init.data_type == onnx.TensorProto.INT8]
    assert int8_weights, 'weights stored as int8'
    # 7-bit weights, so that no x86 CPU's uint8 x int8 kernel can saturate (docs/deployment.md);
    # (|w| <= 64: two uint8 x int8 products add to at most 2 * 255 * 64 = 32640 < 2**15), and
    # they use that range, not less
    values = np.concatenate([onnx.numpy_helper.to_array(init).ravel() for init in int8_weights])
    assert np.abs(values.astype(np.int32)).max() == 64
    report = json.loads(int8_model.with_suffix('.json').read_text())
    assert report['clips'] == 8 and report['calibration_clips'] == 8  # tiny val: 4 x 2 clips
    assert 0 <= report['top1_int8'] <= 1 and 0 <= report['agreement'] <= 1
    # the graphs are named as the report's folder holds them
    assert (report['float_model'], report['int8_model']) == ('tiny_int8.float.onnx',
                                                             'tiny_int8.onnx')
    float_graph = int8_model.parent / report['float_model']
    assert set(report['float_operators']) <= set(float_operators(float_graph, 'QDQ'))
    assert 'Conv' not in report['float_operators']
    # the input is folded into the stem conv (export.fold_input_into_stem): every conv is int8,
    # only the head's tail is kept out, and the raw pixels are quantised exactly (scale 1, zero
    # point 0)
    assert report['excluded'] == ['/ReduceMean', '/Softmax', '/Reshape_1']
    # the tail runs in float from the classifier's float output: no logits clipped to the
    # calibration's range, no softmax rounded to 1/255 before the clips are averaged; the
    # classifier's weights stay int8 (as int8-aware fine-tuning rounds them)
    producers = {out: node for node in graph.node for out in node.output}
    tail = [producers['scores']]
    while tail[-1].op_type != 'Gemm':
        tail.append(producers[tail[-1].input[0]])
    assert [node.op_type for node in tail] == ['ReduceMean', 'Softmax', 'Reshape', 'Gemm']
    gemm = tail[-1]
    int8 = {init.name for init in graph.initializer if init.data_type == onnx.TensorProto.INT8}
    assert producers[gemm.input[1]].op_type == 'DequantizeLinear'
    assert producers[gemm.input[1]].input[0] in int8
    feature = producers[gemm.input[0]]
    while feature.op_type in ('Reshape', 'Flatten', 'Squeeze', 'ReduceMean'):
        feature = producers[feature.input[0]]
    assert feature.op_type == 'DequantizeLinear'  # fed from the int8 features
    weights = {init.name: init.data_type for init in graph.initializer}
    convs = [node for node in graph.node if node.op_type == 'Conv']
    assert convs and not [node.name for node in convs
                          if weights.get(node.input[1]) == onnx.TensorProto.FLOAT]
    # the tool exports uint8 pixels, and the first conv's int8 kernel reads them as they come:
    # no cast to float and no QuantizeLinear pass over them, scale 1 and zero point 0
    arrays = {init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer}
    assert [meta.type.tensor_type.elem_type for meta in graph.input] == [onnx.TensorProto.UINT8]
    assert report['uint8_inputs'] == ['imgs'] and 'Cast' not in types
    # the float graph casts its pixels; the int8 file does not, and the report says so
    assert 'Cast' in float_operators(float_graph, 'QDQ')
    assert 'Cast' not in report['float_operators']
    quantised = producers[convs[0].input[0]]
    assert quantised.op_type == 'DequantizeLinear'
    assert (arrays[quantised.input[1]], arrays[quantised.input[2]]) == (1.0, 0)
    moves = []
    tensor = quantised.input[0]
    while tensor in producers:
        moves.append(producers[tensor].op_type)
        tensor = producers[tensor].input[0]
    assert tensor == 'imgs' and set(moves) <= {'Reshape', 'Transpose'}


def test_int8_scores_stay_close_to_float_and_run_where_a_checkpoint_runs(int8_model,
                                                                       tiny_dataset):
    from mmengine.config import Config
    cfg = Config.fromfile(str(TINY_CONFIG))
    float_model = OnnxRecognizer(int8_model.with_suffix('.float.onnx'), cfg)
    int8 = init_recognizer(cfg, str(int8_model))
    assert isinstance(int8, OnnxRecognizer)
    samples = list(pipeline_samples(cfg, labelled_videos(tiny_dataset / 'val.txt',
                                                         tiny_dataset)))
    packed = [dict(inputs=inputs, data_samples=ActionDataSample()) for inputs, _ in samples]
    scores = predict_scores(int8, packed).numpy()
    reference = np.concatenate([float_model.scores([inputs]) for inputs, _ in samples])
    assert scores.shape == reference.shape == (8, 4)
    # probabilities (softmax in the graph): int8 rounding moves them, not by a class's worth.
    # The first conv reads raw pixels through its folded, 7-bit kernel (export.
    # fold_input_into_stem); on this barely trained 4-class model that moved a probability by
    # up to about 0.3, depending on which tiny model the session's fixtures trained; a broken
    # graph moves them by half or more
    assert np.abs(scores - reference).max() < 0.4
    # top-1 must agree wherever float's lead over its runner-up exceeds twice the largest
    # int8 deviation (no class can overtake it then), and on most clips overall
    ordered = np.sort(reference, axis=1)
    decided = ordered[:, -1] - ordered[:, -2] > 2 * np.abs(scores - reference).max()
    assert np.array_equal(scores.argmax(1)[decided], reference.argmax(1)[decided])
    # the report reads both models clip by clip on the same clips: exactly these shares. Its
    # agreement covers every decided clip; on the undecided ones of this barely trained model
    # int8 rounding may change the top-1, and how many there are depends on which tiny model the
    # session's fixtures trained, so no share beyond the decided ones is promised
    report = parity_report(float_model, int8, samples)
    labels = np.array([label for _, label in samples])
    clip_by_clip = np.concatenate([int8.scores([inputs]) for inputs, _ in samples]).argmax(1)
    assert report == dict(clips=8, top1_float=float((reference.argmax(1) == labels).mean()),
                          top1_int8=float((clip_by_clip == labels).mean()),
                          agreement=float((clip_by_clip == reference.argmax(1)).mean()))
    assert report['agreement'] >= decided.mean()
    # the streaming engine takes the .onnx path as it takes a checkpoint
    stage = ModelStage.from_config(cfg, str(int8_model))
    video = str(labelled_videos(tiny_dataset / 'val.txt', tiny_dataset)[0][0])
    records = [record for record in StreamEngine(stage, stride=4, keep_records=True,
                                                 progress=False).run([video]).records
               if 'scores' in record]
    assert records and len(records[0]['scores']) == 4


def test_a_two_stream_model_is_calibrated_and_run_per_stream(api_models, api_videos, tmp_path):
    model = init_recognizer(api_models['fast_slow'], str(api_models['fast_slow_ckpt']), 'cpu')
    samples = [inputs for inputs, _ in pipeline_samples(
        model.cfg, [(api_videos[key], 0) for key in ('a', 'b', 'still_then_moving')])]
    assert set(samples[0]) == {'imgs_fast', 'imgs_slow'}
    from hyperframes_mm.deploy.export import export_onnx
    float_path = export_onnx(model, tmp_path / 'fs.onnx',
                             {key: value[None].float() for key, value in samples[0].items()})
    done = quantize_int8(float_path, tmp_path / 'fs_int8.onnx', samples)
    assert done['calibration_clips'] == 3
    scores = OnnxRecognizer(tmp_path / 'fs_int8.onnx', model.cfg).scores(samples)
    assert scores.shape == (3, 4) and np.allclose(scores.sum(1), 1, atol=1e-2)


@pytest.fixture(scope='module')
def tiny_graphs(tiny_work_dir, tmp_path_factory):
    """The tiny trained model exported with float32 and with uint8 pixels, and a calibration
    set whose pixels span only 0..99."""
    import torch

    from hyperframes_mm.deploy.export import export_onnx
    model = init_recognizer(str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), 'cpu')
    folder = tmp_path_factory.mktemp('pixels')
    generator = torch.Generator().manual_seed(0)
    calibration = [torch.randint(0, 100, (2, 15, 56, 56), generator=generator).to(torch.uint8)
                   for _ in range(4)]
    example = calibration[0][None].float()
    return dict(cfg=model.cfg, calibration=calibration,
                **{dtype: export_onnx(model, folder / f'{dtype}.onnx', example, dtype)
                   for dtype in ('float32', 'uint8')})


@pytest.mark.parametrize('quant_format', ['QDQ', 'QOperator'])
def test_uint8_pixels_skip_the_input_quantisation_and_score_the_same(tiny_graphs, tmp_path,
                                                                      quant_format):
    from hyperframes_mm.deploy.quantize import unit_quantize
    done = {dtype: quantize_int8(tiny_graphs[dtype], tmp_path / f'{dtype}.onnx',
                                 tiny_graphs['calibration'], quant_format)
            for dtype in ('float32', 'uint8')}
    assert done['uint8']['uint8_inputs'] == ['imgs'] and done['float32']['uint8_inputs'] == []
    graphs = {dtype: onnx.load(str(tmp_path / f'{dtype}.onnx')).graph
              for dtype in ('float32', 'uint8')}
    initializers = {init.name: init for init in graphs['float32'].initializer}
    # the float graph's pixels are quantised with scale 1 and zero point 0 although the
    # calibration clips reached only 99 (the range is fixed, not calibrated), so uint8 pixels
    # can skip that pass; the uint8 graph has one QuantizeLinear fewer and no cast
    first = [node for node in graphs['float32'].node if node.op_type == 'QuantizeLinear'][0]
    assert unit_quantize(first, initializers)
    counts = {dtype: [node.op_type for node in graph.node].count('QuantizeLinear')
              for dtype, graph in graphs.items()}
    assert counts['uint8'] == counts['float32'] - 1
    assert 'Cast' not in {node.op_type for node in graphs['uint8'].node}
    # full-range pixels, beyond the calibration range: the same scores, bit for bit
    pixels = torch.randint(0, 256, (3, 2, 15, 56, 56), generator=torch.Generator().manual_seed(1))
    scores = {dtype: OnnxRecognizer(tmp_path / f'{dtype}.onnx', tiny_graphs['cfg']).scores(
        list(pixels.to(torch.uint8))) for dtype in ('float32', 'uint8')}
    assert np.array_equal(scores['float32'], scores['uint8'])


def test_pixels_that_reach_a_float_operator_keep_their_cast():
    """A uint8 input whose float cast feeds anything but a QuantizeLinear with scale 1 and zero
    point 0 (here a float normalisation, or a scale of 2) keeps its cast: skipping it would
    change what that operator reads."""
    from onnx import TensorProto, helper

    from hyperframes_mm.deploy.quantize import feed_uint8_pixels

    def model(nodes, first_scale=1.0):
        inits = [helper.make_tensor('mean', TensorProto.FLOAT, [], [3.0]),
                 helper.make_tensor('first', TensorProto.FLOAT, [], [first_scale]),
                 helper.make_tensor('one', TensorProto.FLOAT, [], [1.0]),
                 helper.make_tensor('zero', TensorProto.UINT8, [], [0]),
                 helper.make_tensor('shape', TensorProto.INT64, [2], [1, 4])]
        return helper.make_model(helper.make_graph(
            [helper.make_node('Cast', ['imgs'], ['f'], to=TensorProto.FLOAT)] + nodes, 'g',
            [helper.make_tensor_value_info('imgs', TensorProto.UINT8, [1, 4])],
            [helper.make_tensor_value_info('scores', TensorProto.FLOAT, [1, 4])], inits))

    quantised = [helper.make_node('Reshape', ['f', 'shape'], ['r']),
                 helper.make_node('Shape', ['f'], ['s']),
                 helper.make_node('QuantizeLinear', ['r', 'first', 'zero'], ['q']),
                 helper.make_node('DequantizeLinear', ['q', 'one', 'zero'], ['d']),
                 helper.make_node('Sub', ['d', 'mean'], ['scores'])]
    skipped = model(quantised)
    assert [cast.input[0] for cast in feed_uint8_pixels(skipped)] == ['imgs']
    assert [(node.op_type, node.input[0]) for node in skipped.graph.node] == [
        ('Reshape', 'imgs'), ('Shape', 'imgs'), ('DequantizeLinear', 'r'), ('Sub', 'd')]
    for kept in (model(quantised, first_scale=2.0),
                 model([helper.make_node('Sub', ['f', 'mean'], ['scores'])])):
        before = [node.op_type for node in kept.graph.node]
        assert feed_uint8_pixels(kept) == []
        assert [node.op_type for node in kept.graph.node] == before


def test_missing_calibration_videos_are_named(tmp_path):
    (tmp_path / 'a.mp4').write_bytes(b'')
    (tmp_path / 'list.txt').write_text('a.mp4 0\nb.mp4 1\nsub/c.mp4 2\n')
    with pytest.raises(FileNotFoundError, match=r'list.txt: 2 of 3 listed videos are missing: '
                       r'\S*/b\.mp4 \(line 2\), \S*/sub/c\.mp4 \(line 3\)$'):
        labelled_videos(tmp_path / 'list.txt', tmp_path)


@pytest.mark.parametrize('lines, num_classes, error', [
    ('a.mp4 0\na.mp4\n', None, r'bad.txt:2: missing label: expected "path label": \'a.mp4\''),
    ('a.mp4 0\na.mp4 one\n', None, r"bad.txt:2: label 'one' is not an integer"),
    ('a.mp4 -1\n', None, r'bad.txt:1: label -1 is out of range \(>= 0\)'),
    ('a.mp4 0\nb.mp4 2\nc.mp4 3\n', 3, r'bad.txt:3: label 3 is out of range \(0\.\.2\)'),
    # one video, two labels
    ('a.mp4 0\na.mp4 2\n', 3, r'bad.txt:2: a.mp4 is listed with label\(s\) \[0\] on line 1'),
    ('a.mp4 0\n\na.mp4 1\n', None, r'bad.txt:2: empty line'),
    ('', None, r'bad.txt: the annotation file is empty'),
])
def test_list_errors_name_the_file_and_line(tmp_path, lines, num_classes, error):
    from hyperframes_mm.datasets import AnnotationError
    (tmp_path / 'a.mp4').write_bytes(b'')
    (tmp_path / 'bad.txt').write_text(lines)
    with pytest.raises(AnnotationError, match=error):
        labelled_videos(tmp_path / 'bad.txt', tmp_path, num_classes=num_classes)


def test_labels_below_the_class_count_are_read_as_listed(tmp_path):
    (tmp_path / 'a.mp4').write_bytes(b'')
    (tmp_path / 'b.mp4').write_bytes(b'')
    (tmp_path / 'list.txt').write_text('a.mp4 2\nb.mp4 0\n')
    assert labelled_videos(tmp_path / 'list.txt', tmp_path, num_classes=3) == [
        (tmp_path / 'a.mp4', 2), (tmp_path / 'b.mp4', 0)]
    # the dataset's delimiter, as the dataset reads the list
    (tmp_path / 'comma.txt').write_text('a.mp4,1\n')
    assert labelled_videos(tmp_path / 'comma.txt', tmp_path, ',') == [(tmp_path / 'a.mp4', 1)]


@pytest.mark.parametrize('config, train, test', [
    ('ucf101/hyperframe_imagenet-pretrained-mobilenetv2_8xb32-5x2x1-50e_ucf101-split1-rgb.py',
     ('data/ucf101/ucf101_train_split_1_videos.txt', 'data/ucf101/videos'),
     ('data/ucf101/ucf101_val_split_1_videos.txt', 'data/ucf101/videos')),
    ('hmdb51/hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-50e_hmdb51-split1-rgb.py',
     ('data/hmdb51/hmdb51_train_split_1_videos.txt', 'data/hmdb51/videos'),
     ('data/hmdb51/hmdb51_val_split_1_videos.txt', 'data/hmdb51/videos')),
    ('kinetics400/fastslow_imagenet-pretrained-r18_8xb32-5x1x1-5x4x1-100e_kinetics400-rgb.py',
     ('data/kinetics400/kinetics400_train_list_videos.txt', 'data/kinetics400/videos_train'),
     ('data/kinetics400/kinetics400_val_list_videos.txt', 'data/kinetics400/videos_val')),
])
def test_dataset_list_reads_the_list_inside_a_family_config_guarded_dataset(config, train, test):
    from mmengine.config import Config
    cfg = Config.fromfile(str(REPO / 'configs/hyperframes' / config))
    assert cfg.train_dataloader.dataset.type == 'GuardedDataset'
    assert dataset_list(cfg.train_dataloader) == (*train, ' ')
    assert dataset_list(cfg.test_dataloader) == (*test, ' ')


def test_a_family_config_without_its_data_names_the_missing_list(tmp_path, monkeypatch):
    from mmengine.config import Config

    from hyperframes_mm.datasets import AnnotationError
    cfg = Config.fromfile(str(REPO / 'configs/hyperframes/ucf101/hyperframe_imagenet-pretrained-'
                                     'mobilenetv2_8xb32-5x2x1-50e_ucf101-split1-rgb.py'))
    monkeypatch.chdir(tmp_path)  # the config's relative data/ paths lead nowhere here
    with pytest.raises(AnnotationError, match=r'^data/ucf101/ucf101_train_split_1_videos\.txt: '
                       'annotation file not found$'):
        labelled_videos(*dataset_list(cfg.train_dataloader), num_classes=101)


def test_dataset_list_unwraps_list_wrappers_and_names_the_others():
    from mmengine.dataset import RepeatDataset
    video = dict(type='VideoDataset', ann_file='l.txt', data_prefix=dict(video='v'))
    for wrapped in (dict(type='GuardedDataset', dataset=video),
                    dict(type='RepeatDataset', times=3,
                         dataset=dict(type='GuardedDataset', dataset=video)),
                    dict(type=RepeatDataset, times=2, dataset=video),
                    dict(type='ClassBalancedDataset', oversample_thr=0.5, dataset=video)):
        assert dataset_list(dict(dataset=wrapped)) == ('l.txt', 'v', ' ')
    assert dataset_list(dict(dataset=dict(type='VideoDataset', ann_file='l.txt'))) == (
        'l.txt', '', ' ')
    # VideoDataset's video=None: the paths as listed, not under a folder named 'None'
    assert dataset_list(dict(dataset=dict(type='VideoDataset', ann_file='l.txt', delimiter=',',
                                          data_prefix=dict(video=None)))) == ('l.txt', '', ',')
    with pytest.raises(ValueError, match=r'^dataloader\.dataset: a multi_class list'):
        dataset_list(dict(dataset=dict(video, multi_class=True, num_classes=3)))
    concat = dict(type='ConcatDataset', datasets=[video, video])
    with pytest.raises(ValueError, match=r'^x\.py: train_dataloader\.dataset\.dataset: '
                       r'ConcatDataset holds no ann_file; .* unwrapping only GuardedDataset, '
                       r'RepeatDataset, ClassBalancedDataset'):
        dataset_list(dict(dataset=dict(type='GuardedDataset', dataset=concat)),
                     'x.py: train_dataloader')
    with pytest.raises(ValueError, match=r'^dataloader\.dataset: SubsetDataset holds no ann_file'):
        dataset_list(dict(dataset=dict(type='SubsetDataset', dataset=video)))


def test_tool_refuses_a_label_the_model_has_no_class_for(tiny_work_dir, tiny_dataset, tmp_path,
                                                         capsys, monkeypatch):
    import shutil
    data = tmp_path / 'data'
    shutil.copytree(tiny_dataset, data)
    lines = (data / 'train.txt').read_text().splitlines()
    lines[2] = f'{lines[2].split()[0]} 4'  # the tiny model has 4 classes: 0..3
    (data / 'train.txt').write_text('\n'.join(lines) + '\n')
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(data))
    tool = load_script('tools/deployment/quantize_int8.py')
    out = tmp_path / 'm.onnx'
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out',
                      str(out)]) == 1
    assert (f'error: {data}/train.txt:3: label 4 is out of range (0..3)'
            in capsys.readouterr().err)
    assert not out.exists()


def test_tool_reports_a_missing_video_and_writes_nothing(tiny_work_dir, tiny_dataset, tmp_path,
                                                         capsys, monkeypatch):
    import shutil
    data = tmp_path / 'data'
    shutil.copytree(tiny_dataset, data)
    victim = (data / 'train.txt').read_text().split()[0]
    (data / victim).unlink()
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(data))
    tool = load_script('tools/deployment/quantize_int8.py')
    out = tmp_path / 'm.onnx'
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out',
                      str(out)]) == 1
    assert f'1 of 16 listed videos are missing: {data / victim}' in capsys.readouterr().err
    assert not out.exists()


def test_operators_without_int8_kernels_are_named_and_kept_in_float(tmp_path):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info('imgs', TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info('scores', TensorProto.FLOAT, [1, 4])
    weight = helper.make_tensor('w', TensorProto.FLOAT, [4, 4], np.eye(4).ravel().tolist())
    graph = helper.make_graph([helper.make_node('MatMul', ['imgs', 'w'], ['h']),
                               helper.make_node('Erf', ['h'], ['scores'])], 'g', [x], [y],
                              [weight])
    path = tmp_path / 'erf.onnx'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)
    assert float_operators(path, 'QDQ') == {'Erf': ['#1']}
    import torch
    calibration = [torch.rand(4) for _ in range(4)]
    done = quantize_int8(path, tmp_path / 'erf_int8.onnx', calibration)
    assert list(done['float_operators']) == ['Erf'] and len(done['float_operators']['Erf']) == 1
    kept = [node for node in onnx.load(str(tmp_path / 'erf_int8.onnx')).graph.node
            if node.op_type == 'Erf']
    assert kept, 'Erf stays in the graph, in float'
    with pytest.raises(ValueError, match='is the float model'):
        quantize_int8(path, path, calibration)


def test_the_head_tail_is_the_chain_from_the_last_linear_layer_to_the_output(tmp_path):
    from onnx import TensorProto, helper

    from hyperframes_mm.deploy.quantize import head_tail

    def graph(*nodes):
        path = tmp_path / f'{len(list(tmp_path.iterdir()))}.onnx'
        onnx.save(helper.make_model(helper.make_graph(
            list(nodes), 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4])],
            [helper.make_tensor_value_info('scores', TensorProto.FLOAT, None)])), str(path))
        return path
    shape = helper.make_node('Shape', ['x'], ['shape'], name='shape')
    linear = helper.make_node('MatMul', ['x', 'x'], ['logits'], name='fc')
    reshape = helper.make_node('Reshape', ['logits', 'shape'], ['clips'], name='to_clips')
    softmax = helper.make_node('Softmax', ['clips'], ['scores'], name='softmax')
    # the reshape's target shape, computed from the input on the side, is not followed
    assert head_tail(graph(shape, linear, reshape, softmax)) == ('MatMul',
                                                                 ['softmax', 'to_clips'])
    # no linear layer before a conv, the input or an unnamed node: no head to delimit
    conv = helper.make_node('Conv', ['x', 'x'], ['logits'], name='conv')
    assert head_tail(graph(shape, conv, reshape, softmax)) == (None, [])
    assert head_tail(graph(helper.make_node('Softmax', ['x'], ['scores'], name='s'))) == (
        None, [])
    assert head_tail(graph(linear, helper.make_node('Softmax', ['logits'], ['scores']))) == (
        None, [])


def test_spread_reaches_both_ends():
    assert spread(list(range(10)), 3) == [0, 4, 9]  # numpy rounds 4.5 to even
    assert spread(list(range(10)), 4) == [0, 3, 6, 9]
    assert spread([1, 2], None) == [1, 2] and spread([1, 2], 5) == [1, 2]
    with pytest.raises(ValueError, match='count must be >= 1'):
        spread([1, 2, 3], 0)


def test_an_exclude_name_the_graph_does_not_have_is_refused(int8_model, tiny_work_dir, capsys):
    """onnxruntime ignores it: the node "kept in float" was quantised, and the report said
    otherwise."""
    out = int8_model.parent / 'typo.onnx'
    tool = load_script('tools/deployment/quantize_int8.py')
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '2', '--exclude', '/backbone/conv1/Conv_TYPO']) == 1
    assert ("quantize_int8: --exclude names node(s) the graph does not have: "
            "['/backbone/conv1/Conv_TYPO']") in capsys.readouterr().err
    # nor the float graph exported for it: alone it passed for a finished run's
    assert not out.exists() and not out.with_suffix('.float.onnx').exists()


def test_quantize_tool_options_are_checked_before_any_work(tiny_work_dir, tmp_path, capsys):
    """A count of 0 said "count must be >= 1" from deep in the run, naming no option; an --out
    ending in a separator wrote a file where the user meant a folder."""
    tool = load_script('tools/deployment/quantize_int8.py')
    checkpoint = str(tiny_work_dir / 'epoch_1.pth')
    for option in ('--calib-clips', '--max-test'):
        with pytest.raises(SystemExit) as exit_info:
            tool.main([str(TINY_CONFIG), checkpoint, '--out', str(tmp_path / 'q.onnx'), option,
                       '0'])
        assert exit_info.value.code == 2
        assert f'argument {option}: must be an int >= 1, got 0' in capsys.readouterr().err
    assert tool.main([str(TINY_CONFIG), checkpoint, '--out', f'{tmp_path}/newdir/']) == 1
    assert f'error: --out {tmp_path}/newdir/ is a directory' in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_video_that_cannot_be_read_is_named_before_anything_is_written(
        tiny_work_dir, tiny_dataset, tmp_path, capsys, monkeypatch):
    """decord's own error named neither the file nor the list; one in the test list stopped
    the run after both graphs were written, without their report."""
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    empty = tmp_path / 'zero.mp4'
    empty.write_bytes(b'')
    first = (tiny_dataset / 'val.txt').read_text().splitlines()[0]
    (tmp_path / 'test.txt').write_text(f'{first}\n{empty} 1\n')
    out = tmp_path / 'int8.onnx'
    tool = load_script('tools/deployment/quantize_int8.py')
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '2', '--cfg-options',
                      f'test_dataloader.dataset.ann_file={tmp_path / "test.txt"}']) == 1
    assert f'error: {empty} (sample 1): ' in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ['test.txt', 'zero.mp4']


def earlier_run(int8_model, folder, name):
    """The files of the fixture's run, copied to ``folder`` under ``name``: an earlier run's
    output for a re-run to the same --out."""
    import shutil
    out = folder / f'{name}.onnx'
    for suffix in ('.onnx', '.float.onnx', '.json'):
        shutil.copyfile(int8_model.with_suffix(suffix), out.with_suffix(suffix))
    return out, {path.name: path.read_bytes() for path in folder.iterdir()}


def test_a_failed_rerun_leaves_the_earlier_output_as_it_was(int8_model, tiny_work_dir,
                                                           tiny_dataset, tmp_path, capsys,
                                                           monkeypatch):
    """A re-run that failed in the quantiser overwrote the earlier float graph, then removed
    it: the earlier int8 graph and report stayed, the report naming a graph that was gone."""
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    out, before = earlier_run(int8_model, tmp_path, 'r')
    tool = load_script('tools/deployment/quantize_int8.py')
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '2', '--max-test', '2', '--no-progress',
                      '--exclude', 'bogus']) == 1
    assert ("error: quantize_int8: --exclude names node(s) the graph does not have: ['bogus']"
            in capsys.readouterr().err)
    # the earlier run's three files, byte for byte, and no temporary beside them
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_killed_run_never_leaves_a_report_beside_graphs_it_was_not_written_for(
        int8_model, tiny_work_dir, tiny_dataset, tmp_path, monkeypatch):
    """The int8 graph was moved into place before the parity report was computed: a kill
    then left the new graphs beside the earlier run's report (or none)."""
    import os

    from hyperframes_mm.deploy import quantize
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    out, before = earlier_run(int8_model, tmp_path, 'k')
    tool = load_script('tools/deployment/quantize_int8.py')
    argv = [str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
            '--calib-clips', '2', '--max-test', '2', '--no-progress']

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # a kill while the report is computed
        patch.setattr(quantize, 'parity_report', killed)
        with pytest.raises(KeyboardInterrupt):
            tool.main(argv)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    # the files are moved into place at the end, the report last, and the earlier report is
    # gone before the first graph is replaced: no moment shows a report beside other graphs
    moves, replace = [], os.replace

    def recorded(source, target):
        if os.path.dirname(target) == str(tmp_path) and not os.path.basename(
                target).startswith('.'):
            moves.append((os.path.basename(target), out.with_suffix('.json').exists()))
        replace(source, target)
    monkeypatch.setattr(os, 'replace', recorded)
    assert tool.main(argv) == 0
    assert moves == [('k.float.onnx', False), ('k.onnx', False), ('k.json', False)]
    assert sorted(path.name for path in tmp_path.iterdir()) == ['k.float.onnx', 'k.json',
                                                                'k.onnx']
    assert json.loads(out.with_suffix('.json').read_text())['calibration_clips'] == 2


@pytest.mark.parametrize('target,written,what', [
    ('val/swipe_left_0001.mp4', '--out', 'video 2 of the test list'),
    ('train/swipe_right_0000.mp4', '--out', 'video 5 of the training list'),
    ('train.txt', '--out', 'the training list'),
    ('clip.onnx', 'the report', 'video 9 of the test list')])
def test_an_out_that_is_an_input_of_the_run_is_refused(tiny_work_dir, tiny_dataset, tmp_path,
                                                        capsys, monkeypatch, target, written,
                                                        what):
    """--out was checked against the config and the checkpoint only: it overwrote a video of
    the lists the run reads (the float graph or the report, their names derived from it,
    too)."""
    import shutil
    data = tmp_path / 'data'
    shutil.copytree(tiny_dataset, data)
    # a video whose name is that of the report of --out clip.onnx
    shutil.copyfile(data / 'val/swipe_left_0000.mp4', data / 'clip.json')
    (data / 'val.txt').write_text((data / 'val.txt').read_text() + 'clip.json 3\n')
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(data))
    before = {path: path.read_bytes() for path in data.rglob('*') if path.is_file()}
    tool = load_script('tools/deployment/quantize_int8.py')
    out = data / target
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '1', '--max-test', '1', '--no-progress']) == 1
    path = {'--out': out, 'the report': out.with_suffix('.json')}[written]
    assert capsys.readouterr().err == (
        f'error: {written} {path} is {what} ({path}): writing it would destroy that file; '
        'write to another path\n')
    assert {path: path.read_bytes() for path in data.rglob('*') if path.is_file()} == before


def test_the_long_loops_show_their_progress_on_stderr(int8_model, tiny_work_dir, tiny_dataset,
                                                      tmp_path, capsys, monkeypatch):
    """Reading the clips, calibrating and scoring them ran silently, for minutes on a full
    list."""
    import re
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    tool = load_script('tools/deployment/quantize_int8.py')
    argv = [str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out',
            str(tmp_path / 'p.onnx'), '--calib-clips', '2', '--max-test', '3']
    assert tool.main(argv) == 0
    captured = capsys.readouterr()
    for bar, count in (('calibration clips', 2), ('test clips', 3), ('calibrating', 2),
                       ('parity: float and int8', 3)):
        assert re.search(rf'{re.escape(bar)}: 100%\|[^|\n]*\| {count}/{count} \[',
                         captured.err), bar
    assert '100%' not in captured.out
    assert tool.main(argv + ['--no-progress']) == 0
    assert '100%' not in capsys.readouterr().err


def test_the_report_names_the_graphs_from_its_own_folder(tiny_work_dir, tiny_dataset, tmp_path,
                                                         monkeypatch):
    """A relative --out run from elsewhere wrote the paths as seen from the working directory
    ("sweep/rel/t8.float.onnx"), which a reader of the report cannot open."""
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    monkeypatch.chdir(tmp_path)
    tool = load_script('tools/deployment/quantize_int8.py')
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out',
                      'sweep/rel/t8.onnx', '--calib-clips', '2', '--max-test', '2',
                      '--no-progress']) == 0
    folder = tmp_path / 'sweep/rel'
    report = json.loads((folder / 't8.json').read_text())
    assert (report['float_model'], report['int8_model']) == ('t8.float.onnx', 't8.onnx')
    assert sorted(path.name for path in folder.iterdir()) == ['t8.float.onnx', 't8.json',
                                                              't8.onnx']
    monkeypatch.chdir(REPO)
    assert 'Cast' in float_operators(folder / report['float_model'], 'QDQ')


def test_tool_refuses_an_out_folder_it_cannot_make_before_loading_anything(tmp_path, capsys):
    tool = load_script('tools/deployment/quantize_int8.py')
    (tmp_path / 'afile').write_text('')
    out = tmp_path / 'afile' / 'm.onnx'
    # a checkpoint that does not exist: the --out check comes before the model is loaded
    assert tool.main([str(TINY_CONFIG), str(tmp_path / 'missing.pth'), '--out', str(out)]) == 1
    assert capsys.readouterr().err == (f'error: --out {out}: its folder {out.parent} cannot be '
                                       f'made: {out.parent} is a file\n')


def test_tool_names_out_when_its_folder_refuses_the_files(tiny_work_dir, tiny_dataset, tmp_path,
                                                          capsys, monkeypatch):
    """A folder that passes the up-front check and refuses the files anyway (root in a folder
    its file system refuses) ended in a traceback naming a temporary file."""
    import hyperframes_mm.deploy.export as export

    def refuse(model, path, *args, **kwargs):
        raise PermissionError(13, 'Permission denied', str(path))

    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    monkeypatch.setattr(export, 'export_onnx', refuse)
    tool = load_script('tools/deployment/quantize_int8.py')
    out = tmp_path / 'm.onnx'
    assert tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '1', '--max-test', '1', '--no-progress']) == 1
    assert capsys.readouterr().err == f'error: --out {out}: Permission denied\n'
    assert sorted(tmp_path.iterdir()) == []



def _quantize_failing(error, out, tiny_work_dir, tiny_dataset, monkeypatch):
    """quantize_int8.py's exit status, its int8 step raising ``error``."""
    import hyperframes_mm.deploy.quantize as quantize

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    monkeypatch.setattr(quantize, 'quantize_int8', fail)
    tool = load_script('tools/deployment/quantize_int8.py')
    return tool.main([str(TINY_CONFIG), str(tiny_work_dir / 'epoch_1.pth'), '--out', str(out),
                      '--calib-clips', '1', '--max-test', '1', '--no-progress'])


def test_tool_keeps_the_message_of_an_error_outside_the_out_folder(
        tiny_work_dir, tiny_dataset, tmp_path, capsys, monkeypatch):
    """Any OSError of the export, the calibration or the parity check (a file onnxruntime
    misses in its temporary folder) was reported as --out's, without its own path."""
    missing = FileNotFoundError(2, 'No such file or directory', '/tmp/ort.calib/augmented.onnx')
    assert _quantize_failing(missing, tmp_path / 'm.onnx', tiny_work_dir, tiny_dataset,
                             monkeypatch) == 1
    assert capsys.readouterr().err == ("error: [Errno 2] No such file or directory: "
                                       "'/tmp/ort.calib/augmented.onnx'\n")
    assert list(tmp_path.iterdir()) == []


def test_tool_keeps_the_traceback_of_a_full_temporary_folder(tiny_work_dir, tiny_dataset,
                                                             tmp_path, monkeypatch):
    """A full /tmp under onnxruntime's calibration ended as '--out X: No space left on
    device', sending the user to a folder with room to spare."""
    full = OSError(28, 'No space left on device', '/tmp/ort.calib/augmented.onnx')
    with pytest.raises(OSError) as raised:
        _quantize_failing(full, tmp_path / 'm.onnx', tiny_work_dir, tiny_dataset, monkeypatch)
    assert raised.value is full
    assert list(tmp_path.iterdir()) == []


def test_tool_names_out_when_a_folder_made_for_it_refuses(tiny_work_dir, tiny_dataset, tmp_path,
                                                          capsys, monkeypatch):
    out = tmp_path / 'made' / 'm.onnx'
    refused = PermissionError(13, 'Permission denied', str(tmp_path / 'made'))
    assert _quantize_failing(refused, out, tiny_work_dir, tiny_dataset, monkeypatch) == 1
    assert capsys.readouterr().err == f'error: --out {out}: Permission denied\n'
