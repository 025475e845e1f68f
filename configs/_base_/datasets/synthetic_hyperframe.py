# The synthetic motion benchmark (python tools/make_synthetic_dataset.py data/synthetic
# --preset default): 10 classes that differ only in motion, 64x64 H.264 clips of 2 s at 15, 25
# or 30 fps. Set HF_SYNTHETIC (or edit data_root) to use another copy.
# One T=5 hyperframe of picks spread over the clip (the recipe chosen on real video; the
# family's 5x8x1 config takes the picks these clips alone favour), trained at 32x32 with one
# augmentation draw per sample on frames from the frame cache (hyperframe_frame_cache.py); three
# test clips of the whole frame.
_base_ = ['./hyperframe_frame_cache.py']
from hyperframes_mm.config_parts import pipelines  # after _base_ (old-style config)
data_root = '{{$HF_SYNTHETIC:data/synthetic}}'
ann_file_train = f'{data_root}/train.txt'
ann_file_val = f'{data_root}/val.txt'
num_classes = 10
# Horizontal flips turn swipe_left into swipe_right and drift_left into drift_right.
flip_label_map = {0: 1, 1: 0, 5: 6, 6: 5}
# The family's settings, set here once: every model's pipelines read them (a config changes
# only what it is about: its picks, its augmentation, or the input format of a baseline).
input_size = 32  # training crop and test frame side
test_clips = 3
num_frames = 5  # T: frames per sample
augment = dict(type='ConsistentClipAugment', size=input_size, area_range=(0.8, 1.0),
               flip_label_map=flip_label_map)
train_transforms = [_base_.frame_cache_decode, augment]
test_transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(input_size, input_size), keep_ratio=False)
]
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, mode='uniform')

# Every pipeline is [reader, sampler with the split's views, decoding and transforms, stacking];
# validation and test take the same clips of the whole frame. The parts of each split (train,
# val, test) around the sampler and the stacking, which a config that changes either rebuilds
# its pipelines from:
pipeline_parts = [
    (_base_.train_init, dict(), train_transforms),
    (_base_.test_init, dict(num_clips=test_clips, test_mode=True), test_transforms),
    (_base_.test_init, dict(num_clips=test_clips, test_mode=True), test_transforms),
]
train_pipeline, val_pipeline, test_pipeline = pipelines(
    pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)

# No num_classes on the datasets: a config carried to another data set changes the head's
# class count, and a count left here would refuse its labels past this one
# (tools/doctor.py --data checks the labels against the head).
train_dataloader = dict(
    dataset=dict(ann_file=ann_file_train, data_prefix=dict(video=data_root),
                 pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(ann_file=ann_file_val, data_prefix=dict(video=data_root),
                 pipeline=val_pipeline))
test_dataloader = val_dataloader
