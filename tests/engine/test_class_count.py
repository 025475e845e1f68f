"""hyperframes_mm.engine.class_count: HyperframeRunner checks the labels a loop reads against the
head's classes before the loop's first step (a list numbered past the head stops naming the
list and its samples, in training and in test, where it was scored silently), and gives a batch
blending the head's width where a carried config left another there."""
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config
from mmengine.fileio import load
from mmengine.registry import RUNNERS

from hyperframes_mm.engine.class_count import ClassCountError, check_labels, labels_outside
from ..conftest import TINY_CONFIG


def _relabelled(tiny_dataset, tmp_path, name, change):
    """``name`` of the tiny data set with each label ``change(label)``: (its path, labels)."""
    lines = (tiny_dataset / name).read_text().split()
    paths, labels = lines[0::2], [change(int(label)) for label in lines[1::2]]
    path = tmp_path / name
    path.write_text(''.join(f'{video} {label}\n' for video, label in zip(paths, labels)))
    return path, paths, labels


def test_training_stops_before_its_first_step_on_labels_past_the_head(runner_of, tiny_dataset):
    labels = [int(label) for label in (tiny_dataset / 'train.txt').read_text().split()[1::2]]
    past = [(index, label) for index, label in enumerate(labels) if label >= 3]
    assert len(past) == 4  # the fourth class's clips
    runner = runner_of(**{'model.cls_head.num_classes': 3})
    with pytest.raises(ClassCountError) as error:
        runner.train()
    videos = (tiny_dataset / 'train.txt').read_text().split()[0::2]
    shown = '; '.join(f'sample {index} ({tiny_dataset / videos[index]}): 3'
                      for index, _ in past)
    assert str(error.value) == (
        f'train list {tiny_dataset / "train.txt"}: 4 label(s) outside 0..2, the classes of the '
        f'model\'s head (model.cls_head.num_classes=3): {shown}. Correct those labels, or, if '
        'the list is right, give the head 4 classes (model.cls_head.num_classes); '
        'tools/doctor.py --data lists every such line.')
    assert runner.iter == 0 and not list(Path(runner.work_dir).glob('*.pth'))


def test_a_test_list_numbered_from_one_stops_the_test_instead_of_scoring(runner_of,
                                                                         tiny_dataset,
                                                                         tmp_path):
    ann_file, paths, labels = _relabelled(tiny_dataset, tmp_path, 'val.txt',
                                          lambda label: label + 1)
    runner = runner_of(**{'test_dataloader.dataset.ann_file': str(ann_file)})
    with pytest.raises(ClassCountError, match=(
            rf'^test list {ann_file}: 2 label\(s\) outside 0\.\.3, .*num_classes=4\): sample '
            rf'{labels.index(4)} \(.*\): 4; sample {labels.index(4) + 1} \(.*\): 4\. Correct')):
        runner.test()
    # a list of the head's classes is tested
    runner = runner_of()
    assert set(runner.test()) >= {'acc/top1', 'acc/mean1'}


def test_the_blending_gets_the_heads_width_where_the_config_left_another(runner_of):
    runner = runner_of(**{'model.data_preprocessor.blending':
                          dict(type='MixupBlending', alpha=0.2, num_classes=7),
                          'train_cfg.max_epochs': 1, 'train_cfg.val_begin': 2})
    runner.train()  # the loss meets 7-wide labels with 4 scores without it
    assert runner.model.data_preprocessor.blending.num_classes == 4
    assert runner.iter == 4
    log = (Path(runner.log_dir) / f'{runner.timestamp}.log').read_text()
    assert ('model.data_preprocessor.blending: MixupBlending makes labels num_classes=7 wide, '
            'and the head has 4 classes (model.cls_head.num_classes): it blends 4-wide labels'
            ) in log


def test_labels_are_found_inside_dataset_wrappers_and_unlabelled_samples_pass():
    def leaf(labels, ann_file='list.txt', multi_class=False):
        return SimpleNamespace(ann_file=ann_file, multi_class=multi_class, data_list=[
            dict(filename=f'v{index}.mp4', label=label) for index, label in enumerate(labels)])
    inner = leaf([0, 5, -1, torch.tensor(1).item()], 'a.txt')
    wrapped = SimpleNamespace(datasets=[SimpleNamespace(dataset=inner),
                                        leaf([[0, 9]], 'b.txt', multi_class=True),
                                        leaf([-2, 2], 'c.txt')])
    assert labels_outside(wrapped, 3) == [('a.txt', 'sample 1', 'v1.mp4', 5),
                                         ('c.txt', 'sample 0', 'v0.mp4', -2)]
    check_labels(leaf([0, 2, -1]), 3, 'val')
    with pytest.raises(ClassCountError, match=r'^val list c\.txt: 1 label\(s\) outside 0\.\.2, '
                       r'.*: sample 0 \(v0\.mp4\): -2\. Correct those labels; tools'):
        check_labels(leaf([-2], 'c.txt'), 3, 'val')


#: the tiny config's loops on mmaction2's VideoDataset
STOCK_DATASET = {f'{loop}_dataloader.dataset.type': 'VideoDataset'
                 for loop in ('train', 'val', 'test')}


def test_an_unlabelled_test_list_is_refused_where_it_was_scored_against_minus_one(
        runner_of, tiny_dataset, tmp_path):
    """A list of file names alone, tested with mmaction2's tools/test.py: acc/top1 0.0000 and
    exit 0; in training, "Target -1 is out of bounds" naming no list."""
    videos = (tiny_dataset / 'val.txt').read_text().split()[0::2]
    bare = tmp_path / 'names.txt'
    bare.write_text(''.join(f'{video}\n' for video in videos))
    # mmaction2's own dataset, which reads such lists without a word (the plugin's
    # CheckedVideoDataset refuses them itself)
    runner = runner_of(**{'test_dataloader.dataset.ann_file': str(bare), **STOCK_DATASET})
    shown = '; '.join(f'sample {index} ({tiny_dataset / video})'
                      for index, video in enumerate(videos[:5]))
    with pytest.raises(ClassCountError) as error:
        runner.test()
    message = (
        f'test list {bare}: {len(videos)} sample(s) without a label ({shown}; and '
        f'{len(videos) - 5} more), and the test loop scores them against labels with AccMetric: '
        'give every line its label, or, to predict a list of file names alone, evaluate with '
        'DumpResults only, which writes the predictions and reads no label: --cfg-options '
        'test_evaluator._delete_=True test_evaluator.type=DumpResults '
        'test_evaluator.out_file_path=preds.pkl')
    assert str(error.value) == message
    # tools/test.py --dump adds a DumpResults beside the config's metrics: it reads no label,
    # and the message named it among the metrics that compare predictions with labels
    runner = runner_of(**{'test_dataloader.dataset.ann_file': str(bare), **STOCK_DATASET,
                          'test_evaluator': [dict(type='AccMetric'), dict(
                              type='DumpResults', out_file_path=str(tmp_path / 'p.pkl'))]})
    with pytest.raises(ClassCountError) as error:
        runner.test()
    assert str(error.value) == message
    # the route the message names, on an evaluator with options of its own (the frame-cache
    # configs' metric_list, which a dump merged into it took and refused): a list of file
    # names alone is predicted
    cfg = Config.fromfile(str(TINY_CONFIG))
    cfg.merge_from_dict({'test_dataloader.dataset.ann_file': str(bare), **STOCK_DATASET,
                         'test_evaluator.metric_list': ('top_k_accuracy', )})
    cfg.merge_from_dict({'test_evaluator._delete_': True, 'test_evaluator.type': 'DumpResults',
                         'test_evaluator.out_file_path': str(tmp_path / 'preds.pkl')})
    RUNNERS.build(dict(cfg, work_dir=str(tmp_path / 'work'), experiment_name='dump')).test()
    assert [sample['gt_label'].item() for sample in load(tmp_path / 'preds.pkl')] == \
        [-1] * len(videos)
    train, _, labels = _relabelled(tiny_dataset, tmp_path, 'train.txt',
                                   lambda label: -1 if label == 3 else label)
    runner = runner_of(**{'train_dataloader.dataset.ann_file': str(train), **STOCK_DATASET})
    with pytest.raises(ClassCountError, match=rf'^train list {train}: 4 sample\(s\) without a '
                       r'label \(sample \d+ .*\), and the train loop trains on labels: give'):
        runner.train()
    assert runner.iter == 0


def test_a_video_listed_with_two_labels_is_refused(runner_of, tiny_dataset, tmp_path):
    lines = (tiny_dataset / 'val.txt').read_text().splitlines()
    video, label = lines[0].split()
    twice = tmp_path / 'twice.txt'
    twice.write_text('\n'.join(lines + [f'{video} {(int(label) + 1) % 4}']) + '\n')
    runner = runner_of(**{'test_dataloader.dataset.ann_file': str(twice), **STOCK_DATASET})
    with pytest.raises(ClassCountError, match=(
            rf'^test list {twice}: video {tiny_dataset / video} is listed with label {label} '
            rf'\(sample 0\) and label {(int(label) + 1) % 4} \(sample {len(lines)}\); a '
            'single-label list gives each video one label$')):
        runner.test()


def test_a_video_listed_twice_is_refused_where_each_line_is_scored(runner_of, tiny_dataset,
                                                                     tmp_path):
    lines = (tiny_dataset / 'val.txt').read_text().splitlines()
    doubled = tmp_path / 'doubled.txt'
    doubled.write_text('\n'.join(lines + lines) + '\n')
    runner = runner_of(**{'test_dataloader.dataset.ann_file': str(doubled), **STOCK_DATASET})
    shown = '; '.join(f'{tiny_dataset / line.split()[0]} (samples {index} and '
                      f'{index + len(lines)})' for index, line in enumerate(lines[:5]))
    more = f'; and {len(lines) - 5} more' if len(lines) > 5 else ''
    with pytest.raises(ClassCountError) as error:
        runner.test()
    assert str(error.value) == (
        f'test list {doubled}: {len(lines)} video(s) listed again ({shown}{more}), and the test '
        'loop scores each line, so such a video counts twice: list each video once')


def test_an_evaluation_that_would_replace_bad_videos_is_refused(runner_of):
    inner = Config.fromfile(str(TINY_CONFIG)).test_dataloader.dataset.to_dict()
    runner = runner_of(**{'test_dataloader.dataset': dict(
        _delete_=True, type='GuardedDataset', on_bad_video='skip', dataset=inner)})
    with pytest.raises(ClassCountError) as error:
        runner.test()
    assert str(error.value) == (
        "the test dataset is wrapped in GuardedDataset(on_bad_video='skip'), which replaces a "
        "bad video's sample by another one: the evaluation would score that one twice and the "
        "bad video not at all. Use on_bad_video='raise' for validation and test, and remove the "
        'videos it names from the list')
    # training may skip: a replaced sample is one more draw of another
    runner = runner_of(**{'train_dataloader.dataset': dict(
        _delete_=True, type='GuardedDataset', on_bad_video='skip',
        dataset=Config.fromfile(str(TINY_CONFIG)).train_dataloader.dataset.to_dict()),
        'train_cfg.max_epochs': 1, 'val_cfg': None, 'val_dataloader': None,
        'val_evaluator': None})
    runner.train()
    assert runner.epoch == 1


def test_only_loops_that_read_labels_need_them():
    from hyperframes_mm.engine.class_count import check_labelled, loop_needs_labels

    def loop(*metrics):
        return SimpleNamespace(evaluator=SimpleNamespace(metrics=[
            type(name, (), {})() for name in metrics]))
    assert loop_needs_labels('train', loop())
    assert loop_needs_labels('test', loop('AccMetric', 'DumpResults'))
    assert not loop_needs_labels('test', loop('DumpResults'))
    # the same video twice with one label (oversampling) is a labelled list
    check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
        dict(filename='a.mp4', label=1), dict(filename='a.mp4', label=1)]), 'train')
    # one video written two ways, or a frame folder (RawframeDataset's records), is one video
    with pytest.raises(ClassCountError, match=r'^test list l\.txt: 1 video\(s\) listed again '
                       r'\(root/\./a\.mp4 \(samples 0 and 1\)\)'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(filename='root/a.mp4', label=1), dict(filename='root/./a.mp4', label=1)]),
            'test')
    with pytest.raises(ClassCountError, match=r'^test list l\.txt: video root/a is listed with '
                       r'label 1 \(sample 0\) and label 2 \(sample 1\)'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(frame_dir='root/a', total_frames=9, label=1),
            dict(frame_dir='root/a', total_frames=9, label=2)]), 'test')
    with pytest.raises(ClassCountError, match=r'\(sample 0 \(root/a\)\)'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(frame_dir='root/a', total_frames=9, label=-1)]), 'test', 'AccMetric')
    # ... and not a list to score: each line would count
    with pytest.raises(ClassCountError, match=r'^val list l\.txt: 1 video\(s\) listed again '
                       r'\(a\.mp4 \(samples 0 and 1\)\), and the val loop scores each line'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(filename='a.mp4', label=1), dict(filename='a.mp4', label=1)]), 'val')


def test_clips_of_one_long_video_are_several_samples():
    """RawframeDataset(with_offset=True) and the frame-label datasets list one file once per
    clip: each clip is a sample, with a label of its own."""
    from hyperframes_mm.engine.class_count import check_labelled
    for split in ('train', 'val'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(frame_dir='long/video1', offset=0, total_frames=64, label=3),
            dict(frame_dir='long/video1', offset=64, total_frames=64, label=5),
            dict(frame_dir='long/video1', offset=128, total_frames=64, label=5)]), split)
        check_labelled(SimpleNamespace(ann_file='l.jsonl', data_list=[
            dict(filename='a.mp4', window_start=0, window_end=8, center_frame=4, label=0),
            dict(filename='a.mp4', window_start=8, window_end=16, center_frame=12, label=0)]),
            split)
    # the same clip twice is still one sample scored twice
    with pytest.raises(ClassCountError, match=r'1 video\(s\) listed again'):
        check_labelled(SimpleNamespace(ann_file='l.txt', data_list=[
            dict(frame_dir='long/video1', offset=64, total_frames=64, label=5),
            dict(frame_dir='long/./video1', offset=64, total_frames=64, label=5)]), 'val')


def test_a_flip_label_map_past_the_head_stops_training(runner_of):
    """The synthetic family's map (0<->1, 5<->6) carried to data of 4 classes with the data root
    and class count changed relabelled flipped clips of the wrong classes, silently."""
    pipeline = Config.fromfile(str(TINY_CONFIG)).train_dataloader.dataset.pipeline
    flip = dict(type='ConsistentClipAugment', size=56, flip_ratio=0.5,
                flip_label_map={0: 1, 1: 0, 5: 6, 6: 5})
    runner = runner_of(**{'train_dataloader.dataset.pipeline': pipeline[:-2] + [flip] +
                          pipeline[-2:]})
    with pytest.raises(ClassCountError) as error:
        runner.train()
    assert str(error.value) == (
        'train pipeline: ConsistentClipAugment(flip_label_map={0: 1, 1: 0, 5: 6, 6: 5}) maps '
        'labels [5, 6], outside 0..3, the classes of the model\'s head '
        '(model.cls_head.num_classes=4): a map left from another data set relabels flipped '
        'clips of the wrong classes. Give the map of this data set\'s classes (tools/doctor.py '
        'suggests one from the class names), or none.')
    assert runner.iter == 0
    # a map within the head's classes is this data set's to judge
    flip['flip_label_map'] = {0: 1, 1: 0}
    runner = runner_of(**{'train_dataloader.dataset.pipeline': pipeline[:-2] + [flip] +
                          pipeline[-2:], 'train_cfg.max_epochs': 1, 'train_cfg.val_begin': 2})
    runner.train()
    assert runner.iter == 4


def test_frame_label_windows_outside_the_head_name_the_annotation_line(tmp_path):
    """A window's index is no line of the annotation: the error names the line that gave the
    label, as tools/doctor.py --data does."""
    from hyperframes_mm.datasets.frame_label_dataset import FrameLabelVideoDataset
    ann_file = tmp_path / 'ann.jsonl'
    ann_file.write_text('{"video": "b.mp4", "num_frames": 20, "segments": []}\n'
                        '{"video": "a.mp4", "num_frames": 40, "segments": [[30, 40, 7]]}\n')
    dataset = FrameLabelVideoDataset(str(ann_file), [], window=10,
                                     data_prefix=dict(video='videos'))
    with pytest.raises(ClassCountError) as error:
        check_labels(dataset, 3, 'train')
    assert str(error.value) == (
        f'train list {ann_file}: 1 label(s) outside 0..2, the classes of the model\'s head '
        f'(model.cls_head.num_classes=3): {ann_file}:2 (videos/a.mp4): 7. Correct those labels, '
        'or, if the list is right, give the head 8 classes (model.cls_head.num_classes); '
        'tools/doctor.py --data lists every such line.')
