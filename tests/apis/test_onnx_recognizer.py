"""An exported model where a checkpoint goes: ``init_recognizer(config, 'model.onnx')`` answers
``test_step`` as the PyTorch recognizer does, with the same scores."""
import numpy as np
import onnx
import pytest
import torch
from mmaction.structures import ActionDataSample

from hyperframes_mm.apis import init_recognizer, predict_scores
from hyperframes_mm.apis.onnx_recognizer import OnnxRecognizer
from hyperframes_mm.deploy.export import export_onnx
from hyperframes_mm.deploy.quantize import pipeline_samples


def _packed(cfg, videos):
    samples = list(pipeline_samples(cfg, [(video, 0) for video in videos]))
    return [dict(inputs=inputs, data_samples=ActionDataSample()) for inputs, _ in samples]


def _example(inputs):
    """A batch of one of a packed sample's pixels, as export takes them."""
    if isinstance(inputs, dict):
        return {key: value[None].float() for key, value in inputs.items()}
    return inputs[None].float()


@pytest.mark.parametrize('kind', ['single', 'fast_slow'])
def test_onnx_path_gives_the_pytorch_results(kind, api_models, api_videos, tmp_path):
    model = init_recognizer(api_models[kind], str(api_models[f'{kind}_ckpt']), 'cpu')
    videos = [api_videos['a'], api_videos['b'], api_videos['still_then_moving']]
    packed = _packed(model.cfg, videos)
    path = export_onnx(model, tmp_path / 'model.onnx', _example(packed[0]['inputs']))
    onnx_model = init_recognizer(api_models[kind], str(path), 'cpu')
    assert isinstance(onnx_model, OnnxRecognizer)
    reference = predict_scores(model, packed)
    scores = predict_scores(onnx_model, _packed(model.cfg, videos))
    assert scores.dtype == reference.dtype == torch.float32
    assert scores.shape == reference.shape == (3, 4)
    assert torch.equal(scores.argmax(1), reference.argmax(1))
    torch.testing.assert_close(scores, reference, atol=1e-4, rtol=1e-4)
    # test_step's contract: the data samples it was given, each with its pred_score set
    given = [ActionDataSample() for _ in packed]
    data = dict(inputs=[sample['inputs'] for sample in packed], data_samples=given)
    done = onnx_model.test_step(data)
    assert done is given or [id(sample) for sample in done] == [id(sample) for sample in given]
    assert all(sample.pred_score.shape == (4, ) for sample in done)
    if kind == 'fast_slow':
        # a test loader's collate gives the streams as a dict of lists: the temporal probe's
        # batches were refused as "one stream" for a graph of two
        streams = {name: [sample['inputs'][name] for sample in packed]
                   for name in packed[0]['inputs']}
        done = onnx_model.test_step(dict(inputs=streams,
                                         data_samples=[ActionDataSample() for _ in packed]))
        torch.testing.assert_close(torch.stack([sample.pred_score for sample in done]), scores)


def test_onnx_recognizer_errors_name_the_file(api_models, tmp_path):
    missing = tmp_path / 'absent.onnx'
    with pytest.raises(FileNotFoundError, match='absent.onnx'):
        init_recognizer(api_models['single'], str(missing), 'cpu')
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node('Identity', ['x'], ['scores'])], 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info('scores', TensorProto.FLOAT, [1, 4])])
    other = tmp_path / 'other.onnx'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), other)
    with pytest.raises(ValueError, match=r"other.onnx: inputs \['x'\] are not an exported"):
        init_recognizer(api_models['single'], str(other), 'cpu')
    fine = tmp_path / 'imgs.onnx'
    graph.input[0].name = 'imgs'
    graph.node[0].input[0] = 'imgs'
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), fine)
    assert np.allclose(OnnxRecognizer(fine, None).scores([torch.ones(4)]), 1)
    with pytest.raises(ValueError, match='imgs.onnx: the ONNX model runs on the CPU'):
        init_recognizer(api_models['single'], str(fine), 'cuda')


def test_feeds_refuse_pixels_a_uint8_input_would_wrap_and_one_stream_for_two():
    """A cast wraps 300 to 44 and truncates 0.5 to 0, silently; a one-stream sample fed every
    input of a fast/slow graph gave both streams the same clip."""
    from collections import namedtuple

    from hyperframes_mm.apis.onnx_recognizer import onnx_feeds
    meta = namedtuple('Meta', 'name type shape', defaults=([], ))  # shapes not compared
    uint8 = [meta('imgs', 'tensor(uint8)')]
    good = torch.tensor([[0., 17., 255.]])
    assert onnx_feeds(uint8, [good])['imgs'].dtype == np.uint8
    for bad, shown in ((torch.tensor([[0., 300.]]), 'min 0, max 300'),
                       (torch.tensor([[-1., 2.]]), 'min -1, max 2'),
                       (torch.tensor([[0.5, 2.]]), 'min 0.5, max 2')):
        with pytest.raises(ValueError, match=rf'graph input imgs takes uint8 pixels, and these '
                           rf'are not whole numbers in 0\.\.255 \({shown}\)'):
            onnx_feeds(uint8, [bad])
    # float inputs take any pixels
    floats = onnx_feeds([meta('imgs', 'tensor(float)')], [torch.tensor([[0.5, 300.]])])
    assert floats['imgs'].tolist() == [[[0.5, 300.0]]]
    two = [meta('imgs_fast', 'tensor(float)'), meta('imgs_slow', 'tensor(float)')]
    with pytest.raises(ValueError, match=r'the graph takes 2 inputs \(imgs_fast, imgs_slow\), one '
                       r'per stream, and the config\'s pipeline makes one stream'):
        onnx_feeds(two, [good])


def test_a_graph_of_another_config_is_refused_when_loaded(api_models, tmp_path):
    """Its first call failed inside onnxruntime ("Got invalid dimensions for input: imgs"),
    naming neither the file nor the config; a stream's model thread died of it."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    path = tmp_path / 'single.onnx'
    from hyperframes_mm.apis import example_inputs
    example = example_inputs(model.cfg)
    export_onnx(model, path, example.float())
    clips, channels, height, width = example.shape[1:]
    init_recognizer(api_models['single'], str(path), 'cpu')  # its own config
    with pytest.raises(ValueError, match=rf'single\.onnx: input imgs takes a sample of {clips} x '
                       rf'{channels} x {height} x {width} \(clips x channels x height x width\), '
                       rf'and the config\'s test pipeline makes {clips} x {channels - 3} x '
                       rf'{height} x {width}: the graph was exported from another config'):
        init_recognizer(_with_frames(model.cfg, channels // 3 - 1), str(path), 'cpu')
    # another frame size: onnxruntime's "Got invalid dimensions" killed a stream's model thread
    with pytest.raises(ValueError, match=rf'makes {clips} x {channels} x {height + 8} x '
                       rf'{width + 8}: the graph was exported from another config'):
        init_recognizer(_with_size(model.cfg, height + 8), str(path), 'cpu')


def _with_size(cfg, side):
    """``cfg`` whose test pipeline crops frames to ``side`` x ``side``."""
    from mmengine.config import Config
    changed = Config(cfg.to_dict())
    crop, = [step for step in changed.test_pipeline if step['type'] == 'CenterCrop']
    crop['crop_size'] = side
    return changed


def _with_frames(cfg, num_frames):
    """``cfg`` whose test sampler picks ``num_frames`` frames a hyperframe."""
    from mmengine.config import Config
    changed = Config(cfg.to_dict())
    for step in changed.test_pipeline:
        if 'num_frames' in step:
            step['num_frames'] = num_frames
        elif 'clip_len' in step:
            step['clip_len'] = num_frames
    return changed


def test_a_graph_whose_frame_size_follows_the_video_is_not_refused(api_models, tmp_path):
    """A test pipeline without a crop (a keep-ratio resize) makes samples as wide as the video
    is: a graph exported at the cameras' 240x320 was refused when loaded, against a reference
    sample made from 256x340 frames (16:9 cameras). Its clips and channels are still
    compared."""
    from mmengine.config import Config

    from hyperframes_mm.apis import example_inputs
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    cfg = Config(model.cfg.to_dict())
    cfg.test_pipeline = [dict(step, scale=(-1, 32)) if step['type'] == 'Resize' else step
                         for step in cfg.test_pipeline if step['type'] != 'CenterCrop']
    example = example_inputs(cfg, (180, 320))
    assert tuple(example.shape[-2:]) == (32, 57)  # 32 high, as wide as the video's ratio
    assert tuple(example_inputs(cfg).shape[-2:]) == (32, 43)
    path = tmp_path / 'camera.onnx'
    export_onnx(model, path, example.float(), dynamic_batch=False)
    onnx_model = init_recognizer(cfg, str(path), 'cpu')
    assert isinstance(onnx_model, OnnxRecognizer)
    # a dynamic batch leaves the class count open: it is counted on a sample that fits the
    # graph (of the video's shape), not refused for the reference sample that does not
    dynamic = tmp_path / 'camera_dynamic.onnx'
    export_onnx(model, dynamic, example.float())
    assert init_recognizer(cfg, str(dynamic), 'cpu').num_classes == 4
    with pytest.raises(ValueError, match=r'camera\.onnx: input imgs takes a sample of'):
        init_recognizer(_with_frames(cfg, example.shape[2] // 3 - 1), str(path), 'cpu')
    # a video of another shape meets the graph's size at the feed, by name, not in onnxruntime
    wide = example_inputs(cfg, (240, 320))
    assert tuple(wide.shape[-2:]) == (32, 43)
    with pytest.raises(ValueError, match=r'^graph input imgs takes samples of 2 x 9 x 32 x 57 and '
                       r'this one is 2 x 9 x 32 x 43 \(clips x channels x height x width\): the '
                       r'test pipeline sized it from a video of another frame size'):
        onnx_model.scores([wide[0]])
    assert onnx_model.scores([example[0]]).shape == (1, 4)
    # another T is another config, whatever the frame size
    with pytest.raises(ValueError, match=r'this one is 2 x 6 x 32 x 57 \(clips x channels x '
                       r'height x width\): the graph was exported from another config'):
        onnx_model.scores([example[0][:, :6]])
    # a portrait camera's and a 16:9 camera's graphs behind a resize that fits a box: the side
    # the box fixes depends on the frame's shape
    for size, box in (((320, 180), (-1, 32)), ((180, 320), (64, 48))):
        boxed = Config(cfg.to_dict())
        boxed.test_pipeline = [dict(step, scale=box, keep_ratio=True)
                               if step['type'] == 'Resize' else step
                               for step in cfg.test_pipeline]
        sample = example_inputs(boxed, size)
        graph = tmp_path / f'boxed{size[0]}.onnx'
        export_onnx(model, graph, sample.float(), dynamic_batch=False)
        assert isinstance(init_recognizer(boxed, str(graph), 'cpu'), OnnxRecognizer), size


def test_a_graph_is_loaded_with_its_threads_and_its_class_count_checked(api_models, tmp_path):
    """--threads reached torch alone, so an int8 graph ran on onnxruntime's one thread a core;
    a config of another class count ran the graph's scores under its own head's labels;
    a damaged file was onnxruntime's traceback, naming no tool option."""
    model = init_recognizer(api_models['single'], api_models['single_ckpt'], 'cpu')
    path = tmp_path / 'single.onnx'
    from hyperframes_mm.apis import example_inputs
    export_onnx(model, path, example_inputs(model.cfg).float())
    loaded = init_recognizer(api_models['single'], str(path), 'cpu', threads=1)
    assert loaded.session.get_session_options().intra_op_num_threads == 1
    assert loaded.num_classes == 4  # counted by one run: the dynamic export leaves it open
    with pytest.raises(ValueError, match=r'^.*single\.onnx: the graph scores 4 classes and the '
                       r"config's head 5 \(model.cls_head.num_classes\): run it with the config"):
        init_recognizer(api_models['single'], str(path), 'cpu',
                        {'model.cls_head.num_classes': 5})
    damaged = tmp_path / 'damaged.onnx'
    for content in (path.read_bytes()[:path.stat().st_size // 2], b''):
        damaged.write_bytes(content)
        with pytest.raises(ValueError, match=f'^{damaged}: onnxruntime cannot load it as an '
                           r'ONNX graph \(truncated, empty or not a graph\): '):
            init_recognizer(api_models['single'], str(damaged), 'cpu')
