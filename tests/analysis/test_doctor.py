"""The doctor: one small config per finding triggers exactly that finding; a sound one is clean."""
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from mmaction.registry import MODELS
from mmengine.config import Config

from hyperframes_mm.analysis.config_utils import load_config, unique_pipelines
from hyperframes_mm.analysis.data_checks import annotation_videos
from hyperframes_mm.analysis.doctor import (ClassNames, Finding, check_augmentation,
                                            check_flip_labels, check_labels, diagnose,
                                            find_class_names, mirror_name, name_words,
                                            suggest_flip_label_map)
from hyperframes_mm.analysis.memory import (BACKWARD_FACTOR, GIB, MIB, MemoryEstimate,
                                            estimate_memory, forward_activation_bytes,
                                            pipeline_input_size)

from hyperframes_mm.apis.inference import init_recognizer

from ..conftest import REPO, load_script, run_tool

CONFIGS = REPO / 'tests/analysis/configs/doctor'
TINY_CLASSES = {0: 'swipe_left', 1: 'swipe_right', 2: 'drift_left', 3: 'drift_right'}


@pytest.fixture
def tiny_root(tiny_dataset, monkeypatch) -> Path:
    """The shared tiny synthetic set, named by HF_SYNTHETIC_TINY as the doctor configs expect."""
    monkeypatch.setenv('HF_SYNTHETIC_TINY', str(tiny_dataset))
    return tiny_dataset


def config(name: str, **cfg_options):
    return load_config(str(CONFIGS / f'{name}.py'), cfg_options)


def bare_model(cfg):
    """The config's model as the doctor builds it: no weights read."""
    return init_recognizer(cfg, device='cpu', init_weights=False)


def problems(findings):
    """``(severity, code)`` of every error and warning, in order."""
    return [(f.severity, f.code) for f in findings if f.severity != 'info']


def run(name: str, data: bool = False, gpu_mem_gib=None, **cfg_options):
    return diagnose(config(name, **cfg_options), data=data, gpu_mem_gib=gpu_mem_gib,
                    progress=False)


# -------------------------------------------------------------------- one config, one finding
def test_good_config_is_clean(tiny_root):
    findings = run('good', data=True, gpu_mem_gib=24)
    assert problems(findings) == []
    memory = [f for f in findings if f.code == 'memory']
    assert len(memory) == 1 and 'from a real sample' in memory[0].message
    assert 'the largest batch is about' in memory[0].message


@pytest.mark.parametrize('name,expected,text', [
    ('independent_augment', [('error', 'per-frame-augment')],
     'ConsistentClipAugment(independent=True) draws a crop, flip and colour per frame'),
    ('color_jitter', [('error', 'color-jitter')], 'OverflowError: Python integer -6'),
    ('flip_without_map', [('error', 'flip-label-map')],
     'flip_label_map={0: 1, 1: 0, 2: 3, 3: 2}'),
    ('num_frames_mismatch', [('error', 'num-frames')],
     'samples T=3 frames but the backbone takes num_frames=5 (15 channels)'),
    ('fast_slow_num_frames', [('error', 'num-frames')] * 2,
     "samples T=5 frames for stream 'slow' but the backbone for stream 'slow' takes "
     'num_frames=3'),
    ('early_fusion_num_frames', [('error', 'num-frames')] * 2,
     "samples T=5 (fast) + 5 (slow) = 10 frames, stacked into one hyperframe "
     "(HyperframeStack(fuse_streams=True)), but the backbone takes num_frames=5 (15 channels)"),
    ('mean_std', [('error', 'mean-std')], 'mean/std have [6] values'),
])
def test_config_triggers_exactly_its_finding(tiny_root, name, expected, text):
    findings = run(name)
    assert problems(findings) == expected
    assert all(f.fix for f in findings if f.severity == 'error')
    assert any(text in f.message + f.fix for f in findings)


def test_a_top_level_override_that_reaches_no_setting_is_named(tiny_root, tmp_path):
    """--cfg-options data_root=OTHER changes that variable alone (the lists were made from the
    file's when it was read): the doctor checked the file's data, found it clean and exited 0,
    where tools/train.py warns."""
    findings = run('good', data_root=str(tmp_path))
    assert problems(findings) == [('warning', 'override')]
    override = findings[0]
    assert override.message == (
        f"data_root = {str(tmp_path)!r} differs from the {str(tiny_root)!r} of "
        f"{CONFIGS / 'good.py'}: the config's other settings were computed from data_root when "
        'the file was read, so this override changes that value alone')
    assert override.fix == 'override the keys that use it, or set it in a config of your own'


def test_a_clip_split_into_segments_reads_t_per_segment(tiny_root):
    """HyperframeStack(segments=2) makes two hyperframes of a clip's 10 picks: the backbone's T
    is 5, so the sound config stays clean, and without the split the 10 picks are an error."""
    ten = {'train_dataloader.dataset.pipeline.1.num_frames': 10}
    split = dict(ten, **{'train_dataloader.dataset.pipeline.4.segments': 2})
    assert problems(run('good', **split)) == []
    findings = run('good', **ten)
    assert problems(findings) == [('error', 'num-frames')]
    error = next(f for f in findings if f.code == 'num-frames')
    assert 'samples T=10 frames but the backbone takes num_frames=5 (15 channels)' in \
        error.message


@pytest.mark.parametrize('name,expected,text', [
    ('span', [('warning', 'span')],
     'has 30 frames for a 31-frame span; picks past its end loop back to the start'),
    ('frame_rate', [('warning', 'frame-rate')],
     'frame rates range from 15 to 30 fps (3 distinct) while HyperframeSampleFrames counts'),
])
def test_data_config_triggers_exactly_its_finding(tiny_root, name, expected, text):
    assert problems(run(name)) == []  # only the videos tell
    findings = run(name, data=True)
    assert problems(findings) == expected
    assert any(text in f.message for f in findings)


def test_span_is_an_error_when_the_sampler_refuses_short_videos(tiny_root):
    findings = run('span', data=True,
                   **{'train_dataloader.dataset.pipeline.1.out_of_bound': 'error'})
    assert problems(findings) == [('error', 'span')]
    assert 'raise an error: training stops' in findings[0].message


def test_videos_with_fewer_frames_than_uniform_picks_are_found():
    """The span check skipped uniform samplers, so 1- and 3-frame clips under T=5 uniform
    picks (still hyperframes, refused by the sampler under out_of_bound='error') passed."""
    from hyperframes_mm.analysis.config_utils import SamplerSpec, StreamSpec
    from hyperframes_mm.analysis.data_checks import VideoInfo, check_uniform_picks
    videos = [VideoInfo('a.mp4', 30, 30.0), VideoInfo('b.mp4', 3, 30.0),
              VideoInfo('c.mp4', 1, 30.0)]
    spec = SamplerSpec(1, 'HyperframeSampleFrames', (StreamSpec(None, 5, None), ), 'uniform',
                       False, 1, 'loop')
    [finding] = check_uniform_picks('train_dataloader.dataset', spec, videos)
    assert (finding.severity, finding.code) == ('warning', 'span')
    assert finding.message == (
        'train_dataloader.dataset.pipeline[1]: 2 of 3 videos have fewer frames than the 5 '
        'uniform picks (T=5 uniform); the shortest, c.mp4, has 1: picks share frames, so its '
        'hyperframes hold still steps')
    [finding] = check_uniform_picks('x', replace(spec, out_of_bound='error'), videos)
    assert finding.severity == 'error' and finding.message.endswith(
        'the sampler raises an error: training stops')
    assert check_uniform_picks('x', spec, videos[:1]) == []


def test_frame_rate_fix_names_the_time_based_interval(tiny_root):
    from statistics import median

    from hyperframes_mm.datasets.synthetic import load_meta
    videos = load_meta(tiny_root)['videos']
    typical = median(info['fps'] for path, info in videos.items() if path.startswith('train/'))
    finding = next(f for f in run('frame_rate', data=True) if f.code == 'frame-rate')
    assert finding.fix.startswith('sample by time: HyperframeSampleFrames(time_based=True, '
                                  f'interval={2 / typical:.4g}) keeps 2 frames at the median '
                                  f'{typical:g} fps')


def test_unreadable_videos(tiny_root, tmp_path):
    (tmp_path / 'broken.mp4').write_bytes(b'not a video at all')
    ann_file = tmp_path / 'train.txt'
    ann_file.write_text('missing.mp4 0\nbroken.mp4 1\n')
    findings = run('good', data=True,
                   **{'train_dataloader.dataset.ann_file': str(ann_file),
                      'train_dataloader.dataset.data_prefix.video': str(tmp_path)})
    assert problems(findings) == [('error', 'unreadable-video')]
    assert '2 of 2 videos cannot be read' in findings[0].message
    assert 'missing.mp4: file not found' in findings[0].message
    memory = next(f for f in findings if f.code == 'memory')
    assert memory.message.startswith('memory not estimated')


def test_labels_outside_the_heads_classes(tiny_root, tmp_path):
    """The audit's case: a list label the 4-class head has no class for. Training stops in the
    loss ("Target 7 is out of bounds") naming no file or line; the doctor names both."""
    lines = (tiny_root / 'train.txt').read_text().splitlines()
    lines[1] = lines[1].split()[0] + ' 7'
    lines[3] = lines[3].split()[0] + ' -1'
    ann_file = tmp_path / 'train.txt'
    ann_file.write_text('\n'.join(lines) + '\n')
    options = {'train_dataloader.dataset.ann_file': str(ann_file),
               'train_dataloader.dataset.data_prefix.video': str(tiny_root)}
    assert problems(run('good', **options)) == []  # only the lists tell
    findings = run('good', data=True, **options)
    assert problems(findings) == [('error', 'label-range')]
    assert findings[0] == Finding(
        'error', 'label-range',
        f'train_dataloader.dataset: 2 label(s) of {ann_file} are outside 0..3, the classes of '
        "the model's head (num_classes=4); a run that reads the list stops before its first "
        "step: "
        f'{ann_file}:2: 7, {ann_file}:4: -1',
        "correct those labels, or, if the list is right, give the model's head 8 classes")


def test_label_check_lists_five_lines_and_reads_only_video_lists(tmp_path):
    ann_file = tmp_path / 'train.txt'
    ann_file.write_text(''.join(f'v{i}.mp4 {label}\n' for i, label in
                                enumerate([0, -1, -2, 1, -3, -4, -5, -6, -7])))
    video_list = dict(type='VideoDataset', ann_file=str(ann_file))
    finding, = check_labels(_cfg([], **video_list), 2)
    assert finding.message.endswith(f'{ann_file}:2: -1, {ann_file}:3: -2, {ann_file}:5: -3, '
                                    f'{ann_file}:6: -4, {ann_file}:7: -5, and 2 more')
    assert finding.message.startswith('train_dataloader.dataset: 7 label(s) of')
    assert finding.fix == 'correct those labels'  # no head is too small for negative labels
    # the plugin's datasets read the same lists; a frame list's second number is a frame count
    assert len(check_labels(_cfg([], **dict(video_list, type='CheckedVideoDataset')), 2)) == 1
    assert check_labels(_cfg([], **dict(video_list, type='RawframeDataset')), 2) == []
    in_range = tmp_path / 'in_range.txt'
    in_range.write_text('v.mp4 0\nw.mp4 1\n')
    assert check_labels(_cfg([], **dict(video_list, ann_file=str(in_range))), 2) == []
    assert check_labels(_cfg([], **dict(video_list, ann_file=str(tmp_path / 'absent'))), 2) == []


def test_what_the_datasets_refuse_in_a_list_is_found_before_a_run(tmp_path):
    """A blank line, a label that is not an integer, and a video listed twice in a test list:
    the datasets (or the runner) stop a run on each, and the doctor said '0 errors'."""
    def findings(text, split='train', **dataset):
        ann_file = tmp_path / f'{split}.txt'
        ann_file.write_text(text)
        cfg = Config(dict(model=dict(), **{f'{split}_dataloader': dict(dataset=dict(
            type='VideoDataset', ann_file=str(ann_file), pipeline=[], **dataset))}))
        return [(f.code, f.message) for f in check_labels(cfg, 4)]

    ann_file = tmp_path / 'train.txt'
    assert findings('a.mp4 0\nb.mp4 1\n') == []
    assert findings('a.mp4 0\nb.mp4 1\n\n') == [('annotation', (
        f"train_dataloader.dataset: {ann_file}:3: empty line (mmaction2 would turn it into a "
        "sample with no video; remove the blank line at the end of the list): ''"))]
    assert findings('a.mp4 0\nb.mp4 1.0\n') == [('annotation', (
        f"train_dataloader.dataset: {ann_file}:2: label '1.0' is not an integer (ASCII "
        "digits): 'b.mp4 1.0'"))]
    # a negative label is the range finding alone (the reader stops there), a malformed line
    # after a label past the head's classes is a finding of its own
    assert [code for code, _ in findings('a.mp4 -1\nb.mp4 x\n')] == ['label-range']
    assert [code for code, _ in findings('a.mp4 9\nb.mp4 x\n')] == ['annotation', 'label-range']
    assert findings('a.mp4 0\na.mp4 0\n') == []  # training may repeat a video
    test_list = tmp_path / 'test.txt'
    assert findings('a.mp4 0\nb.mp4 1\n./a.mp4 0\nb.mp4 1\n', 'test', test_mode=True) == [
        ('annotation', f'test_dataloader.dataset: 2 video(s) of {test_list} listed again '
         '(./a.mp4 (lines 1 and 3); b.mp4 (lines 2 and 4)): the loop scores each line, so '
         'such a video counts twice, and a run stops before its first step')]
    assert findings('a.mp4\nb.mp4\n', 'test', test_mode=True) == []  # an inference list
    # a test scored only by a dump of its predictions reads no labels: repeats are allowed
    ann_file = tmp_path / 'test.txt'
    ann_file.write_text('a.mp4 0\na.mp4 0\n')
    cfg = Config(dict(model=dict(), test_evaluator=[dict(type='DumpResults', out_file='p.pkl')],
                      test_dataloader=dict(dataset=dict(type='VideoDataset', test_mode=True,
                                                        ann_file=str(ann_file), pipeline=[]))))
    assert check_labels(cfg, 4) == []
    cfg.test_evaluator.append(dict(type='AccMetric'))
    assert [f.code for f in check_labels(cfg, 4)] == ['annotation']


def test_a_list_that_is_not_utf8_text(tmp_path):
    ann_file = tmp_path / 'train.txt'
    ann_file.write_bytes('a.mp4 0\ncafé.mp4 1\n'.encode('latin-1'))
    dataset = dict(type='VideoDataset', ann_file=str(ann_file))
    assert check_labels(_cfg([], **dataset), 2) == [Finding(
        'error', 'annotation',
        f'train_dataloader.dataset: {ann_file}:2: byte 0xe9 is not UTF-8 at column 4: not a '
        'UTF-8 text list (a list saved as Latin-1 or UTF-16, or a file that is not a list, such '
        'as a video; save it as UTF-8)',
        'save the list as UTF-8 text (or name the list, not a video, as ann_file)')]
    # the class-name guess from the list's paths does without it; check_labels reports it
    assert find_class_names(dataset) is None


def test_the_videos_a_list_names_are_read_as_the_datasets_read_it(tmp_path):
    """doctor --data probes the listed videos: a byte-order mark is not part of the first path,
    and a list that is not UTF-8 text, or a JSON line without a video, is a reason naming
    file:line (it crashed doctor with UnicodeDecodeError / KeyError)."""
    ann_file = tmp_path / 'train.txt'
    ann_file.write_bytes(b'\xef\xbb\xbfa.mp4 0\n\nb.mp4 1\na.mp4 0\n')
    assert annotation_videos(dict(ann_file=str(ann_file), data_prefix=dict(video='v'))) == (
        ['v/a.mp4', 'v/b.mp4'], None)
    ann_file.write_bytes('a.mp4 0\ncafé.mp4 1\n'.encode('latin-1'))
    paths, reason = annotation_videos(dict(ann_file=str(ann_file)))
    assert paths == [] and reason.startswith(f'{ann_file}:2: byte 0xe9 is not UTF-8 at column 4')
    frames = tmp_path / 'labels.jsonl'
    frames.write_text('{"video": "a.mp4"}\n{"clip": "b.mp4"}\n')
    assert annotation_videos(dict(ann_file=str(frames))) == (
        [], f"{frames}:2: not a JSON object with a \"video\" key (KeyError: 'video')")


def test_mmaction_preprocessor_cannot_tile_the_mean(tiny_root):
    findings = run('good', **{'model.data_preprocessor.type': 'ActionDataPreprocessor'})
    assert problems(findings) == [('error', 'mean-std')]
    assert findings[0].fix.startswith('use HyperframeDataPreprocessor with the 3-value image')


def test_sampler_streams_the_model_does_not_have(tiny_root):
    findings = run('good', **{'train_dataloader.dataset.pipeline.1.streams':
                              dict(fast=dict(interval=0.05), slow=dict(interval=0.2))})
    assert problems(findings) == [('error', 'num-frames')]
    assert "samples streams ['fast', 'slow'] but the model takes ['None']" in findings[0].message
    # a Recognizer2D given separate streams failed with "'dict' object has no attribute 'shape'"
    assert findings[0].fix == (
        "give the sampler streams=dict(...) named like the recognizer's streams (or none for a "
        "single-stream model); or keep the streams: FastSlowRecognizer with streams named like "
        "the sampler's, or HyperframeStack(fuse_streams=True) to stack them into one hyperframe "
        "of their total T for this backbone")


def test_model_without_hyperframe_backbone(tiny_root):
    findings = run('good', **{'model.backbone': dict(_delete_=True, type='ResNet', depth=18)})
    notes = [f.message for f in findings if f.code == 'num-frames']
    assert notes == ['the model has no hyperframe backbone: T checks skipped']
    assert problems(findings) == []


def test_model_that_cannot_be_built(tiny_root):
    findings = run('good', **{'model.backbone.depth': 19})
    assert problems(findings) == [('error', 'model-build')]
    assert 'invalid depth 19' in findings[0].message


# -------------------------------------------------------------------- pretrained checkpoints
@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    """ResNet-18 state dicts whose conv1 takes 3, 12 and 15 channels."""
    root = tmp_path_factory.mktemp('doctor_checkpoints')
    paths = {}
    for frames in (1, 4, 5):
        backbone = MODELS.build(dict(type='HyperResNet', depth=18, num_frames=frames))
        paths[3 * frames] = root / f'resnet18_{3 * frames}ch.pth'
        torch.save(dict(state_dict=backbone.state_dict()), paths[3 * frames])
    return paths


@pytest.mark.parametrize('channels', [3, 15])
def test_pretrained_2d_or_hyperframe_checkpoint_is_fine(tiny_root, checkpoints, channels):
    findings = run('good', **{'model.backbone.pretrained': str(checkpoints[channels])})
    assert problems(findings) == []


def test_pretrained_with_other_frame_count(tiny_root, checkpoints):
    findings = run('good', **{'model.backbone.pretrained': str(checkpoints[12])})
    assert problems(findings) == [('error', 'pretrained')]
    assert 'takes 12 channels, neither 3 (a 2D checkpoint, inflated) nor 15' in \
        findings[0].message
    assert findings[0].fix == ('use a 2D checkpoint, or build with num_frames=4, load it, then '
                               'call reinflate_backbone(model, 5)')


def test_pretrained_missing_or_not_plain_weights(tiny_root, tmp_path):
    from ..test_compat import _write_malicious_checkpoint
    findings = run('good', **{'model.backbone.pretrained': str(tmp_path / 'none.pth')})
    assert problems(findings) == [('error', 'pretrained')]
    assert 'none.pth: checkpoint not found' in findings[0].message
    evil, marker = tmp_path / 'evil.pth', tmp_path / 'pwned.txt'
    _write_malicious_checkpoint(evil, marker)
    findings = run('good', **{'model.backbone.pretrained': str(evil)})
    assert problems(findings) == [('error', 'pretrained')]
    assert 'evil.pth cannot be read as weights' in findings[0].message
    assert not marker.exists()


TIMM_TSN = (REPO / 'configs/hyperframes/utd_mhad_imagenet/'
            'tsn_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py')


def test_timm_pretrained_file_is_a_pretrained_finding_not_a_failed_build(tmp_path, monkeypatch):
    from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
        build_timm_efficientnet_lite)
    missing = tmp_path / 'efficientnet_lite0_timm.pth'
    monkeypatch.setenv('HF_IMAGENET_EFFICIENTNET_LITE0', str(missing))
    cfg = load_config(str(TIMM_TSN))
    findings = diagnose(cfg, progress=False)
    assert problems(findings) == [('error', 'pretrained')]
    assert findings[0].message == (f'model.backbone (timm.tf_efficientnet_lite0): {missing}: '
                                   'checkpoint not found')
    # the caller's config is untouched: only the doctor's copy is built without weights
    assert cfg.model.backbone.pretrained is True
    findings = diagnose(load_config(str(TIMM_TSN), {'model.backbone.pretrained_cfg_overlay': None}),
                        progress=False)
    assert problems(findings) == [('error', 'pretrained')]
    assert 'names no pretrained_cfg_overlay.file: timm would download' in findings[0].message
    # tools/test.py's checkpoint, or a fine-tuning's, replaces what the file would give: the
    # runner builds the backbone without it, so the doctor only notes its absence
    from hyperframes_mm.apis import init_recognizer
    trained = tmp_path / 'epoch_30.pth'
    offline = load_config(str(TIMM_TSN), {'model.backbone.pretrained': False})
    torch.save(dict(state_dict=init_recognizer(offline, device='cpu').state_dict()), trained)
    findings = diagnose(load_config(str(TIMM_TSN), {'load_from': str(trained)}), progress=False)
    assert problems(findings) == []
    assert [f.message for f in findings if f.code == 'pretrained'] == [
        f'model.backbone (timm.tf_efficientnet_lite0): {missing}: checkpoint not found; the '
        f'weights come from {trained}, so the backbone is built without it']
    torch.save(dict(state_dict=build_timm_efficientnet_lite().state_dict()), missing)
    assert problems(diagnose(load_config(str(TIMM_TSN)), progress=False)) == []


def test_pretrained_with_non_finite_weights(tiny_root, checkpoints, tmp_path):
    state = torch.load(checkpoints[3], weights_only=True)
    state['state_dict']['conv1.conv.weight'][0, 0, 0, 0] = float('inf')
    path = tmp_path / 'diverged.pth'
    torch.save(state, path)
    findings = run('good', **{'model.backbone.pretrained': str(path)})
    assert problems(findings) == [('error', 'pretrained')]
    assert 'diverged.pth: 1 tensor(s) hold NaN or Inf (state_dict.conv1.conv.weight)' in \
        findings[0].message
    assert findings[0].fix == 'use a checkpoint saved before the run diverged'


# ----------------------------------------------------------------------------------- memory
def test_batch_that_does_not_fit(tiny_root):
    cfg = config('good', **{'train_dataloader.batch_size': 100000})
    estimate, _ = estimate_memory(cfg, bare_model(cfg))
    largest = estimate.max_batch(2 * GIB)
    assert largest >= 1
    findings = diagnose(cfg, gpu_mem_gib=2, progress=False)
    assert problems(findings) == [('error', 'memory')]
    assert findings[0].fix.startswith(f'first the batch: train_dataloader.batch_size={largest} '
                                      f'(optim_wrapper accumulative_counts=')
    assert findings[0].fix.endswith('then the resolution; T last')


def test_sample_that_does_not_fit(tiny_root):
    cfg = config('good')
    estimate, _ = estimate_memory(cfg, bare_model(cfg), input_size=(224, 224))
    gpu_mem_gib = (estimate.fixed_bytes + estimate.training_bytes_per_sample / 4) / GIB
    findings = diagnose(cfg, gpu_mem_gib=gpu_mem_gib, input_size=(224, 224), progress=False)
    assert problems(findings) == [('error', 'memory')]
    # A quarter of a sample's memory is left: half the side length.
    assert findings[0].fix.startswith('batch 1 does not fit: lower the resolution to about '
                                      '112x112 (activations grow with H x W); T comes last')
    findings = diagnose(cfg, gpu_mem_gib=estimate.fixed_bytes / GIB, input_size=(224, 224),
                        progress=False)
    assert findings[0].fix.startswith(f'the model alone takes {estimate.fixed_bytes / GIB:.2f} '
                                      'GiB')


def test_memory_of_an_early_fusion_model_feeds_it_the_streams_total_t(tiny_root):
    cfg = config('early_fusion_num_frames', **{'model.backbone.num_frames': 10})
    estimate, how = estimate_memory(cfg, bare_model(cfg), input_size=(32, 32))
    assert estimate.input_shapes == {'imgs': (1, 30, 32, 32)}
    assert estimate.activation_bytes > 0
    assert problems(diagnose(cfg, gpu_mem_gib=24, progress=False)) == []


def test_memory_estimate_arithmetic():
    estimate = MemoryEstimate({'imgs': (1, 15, 8, 8)}, input_bytes=3840,
                              activation_bytes=10 * MIB, parameter_bytes=100 * MIB,
                              optimizer_slots=1)
    assert estimate.training_bytes_per_sample == BACKWARD_FACTOR * 10 * MIB
    assert estimate.fixed_bytes == 300 * MIB + GIB
    assert estimate.max_batch(2 * GIB) == (2048 - 1024 - 300) // 30
    assert estimate.max_batch(GIB) == 0


class _ConvRelu(torch.nn.Module):
    """conv (3 -> 4 channels) and an in-place ReLU, with a recognizer's ``extract_feat``."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.relu = torch.nn.ReLU(inplace=True)

    def extract_feat(self, inputs, stage):
        return self.relu(self.conv(inputs)).flatten(1)


def test_forward_activation_bytes_counts_each_storage_once():
    model = _ConvRelu().train()
    # input 3x8x8 and conv output 4x8x8 float32; the in-place ReLU and the view add nothing.
    assert forward_activation_bytes(model, torch.zeros(1, 3, 8, 8)) == (3 + 4) * 64 * 4
    assert model.training


def test_amp_halves_activations(tiny_root):
    cfg = config('good')
    plain, _ = estimate_memory(cfg, bare_model(cfg))
    amp_cfg = config('good', **{'optim_wrapper.type': 'AmpOptimWrapper'})
    amp, how = estimate_memory(amp_cfg, bare_model(amp_cfg))
    assert amp.activation_bytes == plain.activation_bytes // 2
    assert how.endswith('16-bit activations (AmpOptimWrapper)')
    assert plain.input_shapes == {'imgs': (1, 15, 32, 32)}
    assert plain.optimizer_slots == 1


def test_pipeline_input_size():
    assert pipeline_input_size([dict(type='ConsistentClipAugment', size=(48, 32))]) == \
        ((32, 48), True)
    assert pipeline_input_size([dict(type='Resize', scale=(-1, 256)),
                                dict(type='CenterCrop', crop_size=224)]) == ((224, 224), True)
    assert pipeline_input_size([dict(type='Resize', scale=(-1, 128))]) == ((128, 128), False)
    assert pipeline_input_size([dict(type='Resize', scale=(64, 48), keep_ratio=False)]) == \
        ((48, 64), True)
    assert pipeline_input_size([dict(type='MultiScaleCrop', input_size=112)]) == \
        ((112, 112), True)
    assert pipeline_input_size([dict(type='DecordDecode')]) is None


# ------------------------------------------------------------------------------ class names
def test_class_name_words_and_mirrors():
    assert name_words('swipe_left') == ['swipe', 'left']
    assert name_words('rotateCW fast') == ['rotate', 'cw', 'fast']
    assert mirror_name('swipe_left', 'horizontal') == 'swipe_right'
    assert mirror_name('Turning clockwise', 'horizontal') == 'Turning counterclockwise'
    assert mirror_name('move_up', 'vertical') == 'move_down'
    assert mirror_name('fall', 'horizontal') == 'fall'
    assert suggest_flip_label_map(TINY_CLASSES, 'horizontal') == {0: 1, 1: 0, 2: 3, 3: 2}
    assert suggest_flip_label_map({0: 'rotate_cw', 1: 'hop'}, 'horizontal') == {}


def test_class_names_from_each_source(tmp_path):
    assert find_class_names(dict(metainfo=dict(classes=('a', 'b')))) == \
        ClassNames({0: 'a', 1: 'b'}, 'metainfo.classes', True)
    (tmp_path / 'classes.txt').write_text('left_turn\nright_turn\n')
    (tmp_path / 'train.txt').write_text('clips/x_left_1.mp4 0\n')
    found = find_class_names(dict(ann_file=str(tmp_path / 'train.txt')))
    assert found == ClassNames({0: 'left_turn', 1: 'right_turn'},
                               str(tmp_path / 'classes.txt'), True)
    (tmp_path / 'classes.txt').unlink()
    (tmp_path / 'meta.json').write_text(json.dumps(dict(classes=['up', 'down'])))
    assert find_class_names(dict(ann_file=str(tmp_path / 'train.txt'))).names == \
        {0: 'up', 1: 'down'}
    (tmp_path / 'meta.json').unlink()
    (tmp_path / 'train.txt').write_text('a/wave_left_1.mp4 0\na/wave_left_2.mp4 0\nb/c.mp4 1\n')
    assert find_class_names(dict(ann_file=str(tmp_path / 'train.txt'))) == ClassNames(
        {0: 'a/wave_left_1 a/wave_left_2', 1: 'b/c'}, str(tmp_path / 'train.txt'), False)
    assert find_class_names(dict(ann_file=str(tmp_path / 'absent.txt'))) is None


def _cfg(pipeline, **dataset):
    """A config with just a training dataset of this pipeline."""
    return Config(dict(train_dataloader=dict(dataset=dict(dataset, pipeline=pipeline))))


def _flip_cfg(transform, dataset):
    return _cfg([transform], **dataset)


def test_flip_checks(tmp_path):
    (tmp_path / 'train.txt').write_text('s/swipe_left_1.mp4 0\ns/swipe_right_1.mp4 1\n')
    guessed = dict(ann_file=str(tmp_path / 'train.txt'))
    findings = check_flip_labels(_flip_cfg(dict(type='Flip'), guessed))
    # Names guessed from video paths: a warning, not an error.
    assert problems(findings) == [('warning', 'flip-label-map')]
    assert findings[0].fix == 'give Flip flip_label_map={0: 1, 1: 0}, or set flip_ratio=0'
    named = dict(metainfo=dict(classes=['move_up', 'move_down', 'move_left', 'move_right']))
    vertical = check_flip_labels(_flip_cfg(dict(type='Flip', direction='vertical'), named))
    assert 'leaves labels 0 (move_up), 1 (move_down) unchanged' in vertical[0].message
    partial = check_flip_labels(_flip_cfg(
        dict(type='ConsistentClipAugment', flip_label_map={'2': 3}), named))
    assert 'flip_label_map {2: 3} leaves labels 3 (move_right) unchanged' in partial[0].message
    assert problems(check_flip_labels(_flip_cfg(
        dict(type='ConsistentClipAugment', flip_ratio=0.0), named))) == []
    assert problems(check_flip_labels(_flip_cfg(
        dict(type='mmaction.Flip', flip_label_map={2: 3, 3: 2}), named))) == []
    unknown = check_flip_labels(_flip_cfg(dict(type='Flip'), dict(ann_file='absent.txt')))
    assert [(f.severity, f.code) for f in unknown] == [('info', 'flip-label-map')]


def test_other_augmentation_findings():
    pipeline = [dict(type='RandomErasing', mode='rand'), dict(type='RandomErasing'),
                dict(type='ColorJitter', hue=0)]
    findings = check_augmentation(_cfg(pipeline))
    assert problems(findings) == [('error', 'per-frame-augment'), ('warning', 'color-jitter')]
    assert 'draws its order of operations once' in findings[1].message


def test_shared_dataset_is_checked_once(tiny_root):
    wheres = [where for where, _, _ in unique_pipelines(config('good'))]
    assert wheres == ['train_dataloader.dataset',
                      'val_dataloader.dataset (= test_dataloader.dataset)']


def test_finding_format():
    assert Finding('error', 'span', 'too short', 'shorten it').format() == \
        'ERROR   [span] too short\n        fix: shorten it'
    assert Finding('info', 'memory', 'note').format() == 'INFO    [memory] note'


def test_doctor_errors(tiny_root):
    with pytest.raises(ValueError, match='gpu_mem_gib must be > 0'):
        diagnose(config('good'), gpu_mem_gib=0)
    with pytest.raises(FileNotFoundError, match='config file not found: .*nothing.py'):
        load_config(str(CONFIGS / 'nothing.py'))


@pytest.mark.parametrize('path', sorted((REPO / 'configs/hyperframes').glob('*/*.py')),
                         ids=lambda p: p.name)
def test_repository_configs_have_no_errors(path):
    findings = diagnose(load_config(str(path)), progress=False)
    # Model-zoo configs name ImageNet weights users download into checkpoints/ (absent in CI):
    # exactly that finding is expected there, and it names the missing file.
    missing = [f for f in findings if f.code == 'pretrained' and 'not found' in f.message]
    assert all('checkpoints/' in f.message for f in missing)
    errors = [f.code for f in findings if f.severity == 'error' and f not in missing]
    # The per-frame augmentation ablation reproduces the seeds' bug on purpose.
    assert errors == (['per-frame-augment'] if 'indepaug' in path.name else [])


# -------------------------------------------------------------------------- command line
def _doctor_main():
    return load_script('tools/doctor.py').main


def test_exit_status(tiny_root, capsys):
    main = _doctor_main()
    assert main([str(CONFIGS / 'good.py'), '--data', '--no-progress']) == 0
    assert main([str(CONFIGS / 'frame_rate.py'), '--data', '--no-progress']) == 0
    assert main([str(CONFIGS / 'frame_rate.py'), '--data', '--no-progress', '--strict']) == 1
    assert main([str(CONFIGS / 'mean_std.py')]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == '1 errors, 0 warnings, 1 notes'


def test_command_line_tool(tiny_root):
    result = run_tool([REPO / 'tools/doctor.py', CONFIGS / 'flip_without_map.py', '--gpu-mem',
                       '24'], tiny_root, check=False)
    assert result.returncode == 1
    assert 'ERROR   [flip-label-map] train_dataloader.dataset.pipeline[3]' in result.stdout
    assert 'fix: give ConsistentClipAugment flip_label_map={0: 1, 1: 0, 2: 3, 3: 2}' in \
        result.stdout


def test_setups_that_stop_train_and_test_at_once_are_errors(tiny_root, tmp_path):
    """Each ended in '0 errors' with exit 0, the cause at most in a note."""
    empty = tmp_path / 'empty.txt'
    empty.write_text('')
    cases = {
        ('annotation', 'not found'): {
            'train_dataloader.dataset.ann_file': str(tmp_path / 'no.txt')},
        ('annotation', 'lists no video'): {'val_dataloader.dataset.ann_file': str(empty)},
        ('pipeline', 'SampelFrames'): {'train_dataloader.dataset.pipeline.1.type': 'SampelFrames'},
        ('load-from', 'is not a file'): {'load_from': str(tmp_path / 'nope.pth')},
    }
    for (code, words), options in cases.items():
        findings = run('good', data=code == 'annotation', **options)
        errors = [finding for finding in findings if finding.severity == 'error']
        assert [finding.code for finding in errors] == [code], (code, errors)
        assert words in errors[0].message


def test_the_checkpoint_train_starts_from_is_read_as_the_runner_reads_it(tiny_root, tmp_path):
    """tools/train.py refused these only after building everything (or, resuming with a
    work dir whose last_checkpoint names a deleted file, at its first step); the doctor said
    '0 errors'."""
    cfg = config('good')
    state = bare_model(cfg).state_dict()
    own, bare, other = tmp_path / 'own.pth', tmp_path / 'bare.pth', tmp_path / 'other.pth'
    torch.save(dict(state_dict=state, meta=dict(epoch=1, iter=4), message_hub={}), own)
    torch.save(dict(state_dict=state), bare)
    widened = dict(state, **{'backbone.conv1.conv.weight': torch.zeros(64, 24, 7, 7)})
    torch.save(dict(state_dict=widened), other)

    def load_findings(**options):
        return [(f.severity, f.code, f.message) for f in run('good', **options)
                if f.code == 'load-from']

    assert load_findings(load_from=str(own)) == []
    assert load_findings(load_from=str(bare)) == []  # weights to start from: no state needed
    assert load_findings(load_from=str(own), resume=True) == []
    [(severity, _, message)] = load_findings(load_from=str(other))
    assert severity == 'error' and message.startswith(
        f'load_from: {other}: weights of another shape than the model of the config: '
        'backbone.conv1.conv.weight (64, 24, 7, 7) (the model: (64, 15, 7, 7))')
    # another input encoding: the runner's ValueError (check_input_basis) is a finding too
    basis = tmp_path / 'basis.pth'
    trained = "model = dict(backbone=dict(type='HyperResNet', input_encoding='diff'))"
    torch.save(dict(state_dict=state, meta=dict(cfg=trained)), basis)
    [(severity, _, message)] = load_findings(load_from=str(basis))
    assert severity == 'error' and message.startswith(
        f'load_from: {basis}: trained with input_encoding=')
    [(severity, _, message)] = load_findings(load_from=str(bare), resume=True)
    assert severity == 'error' and message.startswith(
        f"resume: {bare}: not a training checkpoint: it has no 'meta', ")
    work_dir = tmp_path / 'work'
    work_dir.mkdir()
    assert load_findings(resume=True, work_dir=str(work_dir)) == [
        ('info', 'load-from', f'resume: {work_dir} holds no checkpoint: the training starts '
         'from the beginning')]
    (work_dir / 'last_checkpoint').write_text(str(work_dir / 'epoch_3.pth'))
    [(severity, _, message)] = load_findings(resume=True, work_dir=str(work_dir))
    assert severity == 'error' and message.startswith(
        f"resume: --resume: last_checkpoint in {work_dir} names '{work_dir / 'epoch_3.pth'}', "
        'which does not exist')
    (work_dir / 'epoch_2.pth').write_bytes(bare.read_bytes())
    findings = load_findings(resume=True, work_dir=str(work_dir))
    assert [(severity, code) for severity, code, _ in findings] == [
        ('error', 'load-from'), ('warning', 'load-from')]  # errors first
    assert findings[0][2].startswith(f'resume: {work_dir / "epoch_2.pth"}: not a training '
                                     'checkpoint')
    assert findings[1][2].endswith(f'resuming from the newest intact checkpoint '
                                   f'{work_dir / "epoch_2.pth"} instead.')


def test_a_list_below_the_datasets_data_root_is_read_there(tmp_path):
    """mmengine joins data_root to a relative ann_file and prefix; the doctor called such a list
    missing."""
    (tmp_path / 'v').mkdir()
    (tmp_path / 'val.txt').write_text('v/a.mp4 0\n')
    paths, reason = annotation_videos(dict(ann_file='val.txt', data_root=str(tmp_path)))
    assert (paths, reason) == ([str(tmp_path / 'v/a.mp4')], None)
    paths, reason = annotation_videos(dict(ann_file='val.txt', data_root=str(tmp_path),
                                           data_prefix=dict(video='v')))
    assert (paths, reason) == ([str(tmp_path / 'v/v/a.mp4')], None)


def test_a_schedule_longer_than_the_training_is_named(tiny_root):
    """--cfg-options train_cfg.max_epochs=8 left a 50-epoch warm-up + cosine as it was: the
    doctor said 0 warnings, and the run ended at its peak learning rate."""
    schedule = [dict(type='LinearLR', start_factor=0.1, by_epoch=True, begin=0, end=5),
                dict(type='CosineAnnealingLR', T_max=45, by_epoch=True, begin=5, end=50)]
    assert problems(run('good', param_scheduler=schedule, **{'train_cfg.max_epochs': 50})) == []
    findings = run('good', param_scheduler=schedule, **{'train_cfg.max_epochs': 8})
    assert problems(findings) == [('warning', 'schedule')]
    assert findings[0].message == (
        'param_scheduler.1 (CosineAnnealingLR) ends at epoch 50 and anneals over T_max=45 '
        'epochs, to epoch 50, after train_cfg.max_epochs=8: the training stops inside it, at '
        'the value it has reached then (a warm-up\'s peak, a cosine not yet annealed)')
    assert findings[0].fix == ('end it with the training: --cfg-options '
                               'param_scheduler.1.end=8 param_scheduler.1.T_max=3')


def test_a_flip_after_the_stack_and_a_missing_stack_are_pipeline_order_errors(tiny_root):
    """mmaction2's Flip after HyperframeStack turned the video upside down, and a TSN-style
    FormatShape ending without the stack failed at the first step: the doctor said 0 errors."""
    cfg = config('good')
    pipeline = cfg.train_dataloader.dataset.pipeline
    cfg.train_dataloader.dataset.pipeline = pipeline[:5] + [
        dict(type='Flip', flip_ratio=0.5, flip_label_map=cfg.flip_label_map), pipeline[5]]
    findings = diagnose(cfg, progress=False)
    assert problems(findings) == [('error', 'pipeline-order')]
    assert findings[0].message.startswith(
        'train_dataloader.dataset.pipeline: Flip (pipeline[5]) after HyperframeStack '
        '(pipeline[4]), which has already stacked the frames into [N, 3T, H, W] hyperframes')
    assert findings[0].fix == ('move them before HyperframeStack (FormatShape: remove it, the '
                               'stack lays the hyperframes out); of the plugin\'s and '
                               'mmaction2\'s steps only CenterFrameTarget, PackActionInputs may '
                               'follow it')
    cfg.train_dataloader.dataset.pipeline = pipeline[:4] + [
        dict(type='FormatShape', input_format='NCHW'), pipeline[5]]
    findings = diagnose(cfg, progress=False)
    assert problems(findings) == [('error', 'pipeline-order')]
    assert (findings[0].message, findings[0].fix) == (
        'train_dataloader.dataset.pipeline has no HyperframeStack, but the model\'s hyperframe '
        'backbone reads [N, 3T, H, W] hyperframes: it will receive single 3-channel frames and '
        'refuse them at the first step',
        'replace FormatShape (pipeline[4]) by dict(type=\'HyperframeStack\')')


def test_frame_label_annotations_outside_the_heads_classes(tmp_path):
    """The runner's error sends the user to --data for a frame label past the head, which read
    video lists alone (0 errors): the window labels (the centre frame's, not every frame's) are
    read by annotation line."""
    ann_file = tmp_path / 'ann.jsonl'
    ann_file.write_text('{"video": "a.mp4", "num_frames": 40, "segments": [[10, 25, 1], '
                        '[30, 40, 7]]}\n{"video": "b.mp4", "frame_labels": [0, 9, 5, 9, 9]}\n')
    dataset = dict(type='FrameLabelVideoDataset', ann_file=str(ann_file), window=10, stride=10,
                   data_prefix=dict(video=str(tmp_path)))
    finding, = check_labels(_cfg([], **dataset), 3)
    assert finding == Finding(
        'error', 'label-range',
        f'train_dataloader.dataset: 2 window label(s) of {ann_file} are outside 0..2, the '
        "classes of the model's head (num_classes=3); a run that reads the annotation stops "
        f'before its first step: {ann_file}:1: 7, {ann_file}:2: 5',
        "correct those labels, or, if the annotation is right, give the model's head 8 classes")
    ann_file.write_text('{"video": "a.mp4", "num_frames": 100000000000, "segments": []}\n')
    finding, = check_labels(_cfg([], **dataset), 3)
    assert (finding.code, finding.message) == ('annotation', (
        f'train_dataloader.dataset: {ann_file}:1: "num_frames" must be a positive int of at '
        'most 100000000 frames, got 100000000000'))
