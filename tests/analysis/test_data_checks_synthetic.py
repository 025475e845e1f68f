"""The doctor's data checks on synthetic sets: one frame rate suggested for every split, and a
folder that a killed synthetic build left."""
import shutil

from mmengine.config import Config

from hyperframes_mm.analysis.data_checks import check_data
from hyperframes_mm.datasets.synthetic import generate, make_synthetic_dataset


def frame_counting_config(root) -> Config:
    """Train and val pipelines that pick frames 2 apart, whatever the video's rate."""
    pipeline = [dict(type='DecordInit'),
                dict(type='SampleFrames', clip_len=2, frame_interval=2, num_clips=1),
                dict(type='DecordDecode')]
    loaders = {f'{split}_dataloader': dict(dataset=dict(
        type='VideoDataset', ann_file=f'{root}/{split}.txt', data_prefix=dict(video=str(root)),
        pipeline=pipeline, test_mode=split == 'val')) for split in ('train', 'val')}
    return Config(loaders)


def test_the_frame_rate_fix_names_one_rate_for_every_split(tiny_dataset):
    """The tiny set's training clips have a median of 15 fps, its validation clips 20 (a rate
    no clip has): the fix proposed a different target_fps per split, so following it sampled
    training and testing at different rates. Over both splits' clips the median is 15."""
    findings = [f for f in check_data(frame_counting_config(tiny_dataset), progress=False)
                if f.code == 'frame-rate']
    assert [f.message.split(':')[0] for f in findings] == [
        'train_dataloader.dataset.pipeline[1]', 'val_dataloader.dataset.pipeline[1]']
    assert {f.fix for f in findings} == {
        'sample by time: SampleFrames(target_fps=15) or HyperframeSampleFrames(time_based=True, '
        'interval=<seconds>); one rate for every split: 15 fps is the median over the videos '
        'of all the splits whose sampler counts frames, so training and testing sample alike'}


def test_a_folder_a_killed_rebuild_left_is_an_error(tiny_dataset, tmp_path, monkeypatch):
    """A rebuild of a set with another seed, stopped at its first video: the folder holds the
    build mark and the old set's videos. The data check probed them as a healthy set."""
    root = tmp_path / 'set'
    shutil.copytree(tiny_dataset, root)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(generate, 'write_video', killed)
    try:
        make_synthetic_dataset(root, dict(train=4, val=2), seed=9, workers=1, progress=False)
    except KeyboardInterrupt:
        pass
    findings = [f for f in check_data(frame_counting_config(root), progress=False)
                if f.severity != 'info']
    assert [(f.severity, f.code) for f in findings] == [('error', 'interrupted-build')]
    assert findings[0].message == (
        f'train_dataloader.dataset, val_dataloader.dataset: {root} holds .synthetic-build.json: '
        'an interrupted synthetic build (a kill or a crash stopped it midway: part of its '
        'videos written, no lists, no meta.json)')
    assert findings[0].fix == (f'rerun python tools/make_synthetic_dataset.py {root} --preset '
                               'tiny --train 4 --val 2 --seed 9')
