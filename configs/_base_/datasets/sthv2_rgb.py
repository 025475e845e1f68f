# Something-Something V2 as mmaction2 lays it out (tools/data/sthv2: webm videos converted to
# data/sthv2/videos/<id>.mp4, lists "<id>.mp4 <label>"): 174 classes of short hand-object
# actions (~4 s at 12 fps) that a single frame cannot tell apart.
# Pipelines: those of hyperframe_rgb_pipelines.py (T=5, frames 2 apart, one augmentation draw per
# sample) with fewer test clips, and a flip that swaps the labels of the classes that name a
# direction (mmaction2's map for "... from left to right" <-> "... from right to left" and the
# like). Dataloaders: hyperframe_rgb_dataloaders.py's; training skips videos that fail to decode
# (GuardedDataset(on_bad_video='skip'), logged); validation and test stop on them, naming the file.
_base_ = ['./hyperframe_rgb_dataloaders.py']
from hyperframes_mm.config_parts import pipelines  # after _base_ (old-style config)
data_root = 'data/sthv2/videos'
ann_file_train = 'data/sthv2/sthv2_train_list_videos.txt'
ann_file_val = 'data/sthv2/sthv2_val_list_videos.txt'
flip_label_map = {86: 87, 87: 86, 93: 94, 94: 93, 166: 167, 167: 166}

# 4 test clips x 3 crops (2 x 1 in validation) of its short clips
val_clips = 2
test_clips = 4
augment = dict(_base_.augment, flip_label_map=flip_label_map)
train_transforms = [dict(type='DecordDecode'), augment]
# hyperframe_rgb_pipelines.py's parts with these clips and this flip
pipeline_parts = [
    (_base_.train_init, dict(), train_transforms),
    (_base_.test_init, dict(num_clips=val_clips, test_mode=True), _base_.val_transforms),
    (_base_.test_init, dict(num_clips=test_clips, test_mode=True), _base_.test_transforms),
]
train_pipeline, val_pipeline, test_pipeline = pipelines(
    pipeline_parts, _base_.hyperframe_sampler, _base_.hyperframe_format)

# No num_classes on the datasets: a config carried to another data set changes the head's
# class count, and a count left here would refuse its labels past this one (the runner checks
# every list's labels against the head before a loop runs; tools/doctor.py --data too).
train_dataloader = dict(
    dataset=dict(
        on_bad_video='skip',
        dataset=dict(
            ann_file=ann_file_train, data_prefix=dict(video=data_root),
            pipeline=train_pipeline)))
val_dataloader = dict(
    dataset=dict(
        dataset=dict(ann_file=ann_file_val, data_prefix=dict(video=data_root),
                     pipeline=val_pipeline)))
test_dataloader = dict(
    dataset=dict(
        dataset=dict(ann_file=ann_file_val, data_prefix=dict(video=data_root),
                     pipeline=test_pipeline)))
