# UTD-MHAD depth, cross-subject (tools/data/utd_mhad/README.md): 27 actions, 431 training clips
# (subjects 1, 3, 5, 7) and 430 test clips (2, 4, 6, 8), 128x128 grey depth videos at 30 fps
# written by tools/data/utd_mhad/convert_depth.py. Every row of the family trains at 96x96 on
# frames from the frame cache (hyperframe_frame_cache.py) and tests on the same 3 clips x 1 crop
# of the decoded videos (the whole frame at the training size). Set HF_UTD_MHAD to use another
# copy.
_base_ = ['./hyperframe_frame_cache.py']
from hyperframes_mm.config_parts import pipelines  # after _base_ (old-style config)
data_root = '{{$HF_UTD_MHAD:data/utd_mhad}}'
# Every choice (recipe options, T, input size, test clips, epochs) is read on the training
# subjects: with HF_UTD_VAL_SUBJECT=S (1, 3, 5 or 7) a run trains on the other three training
# subjects and validates on S (lists written by the converter: cross_subject_val/). Unset, the
# final protocol: train on all four training subjects and test once, with the last checkpoint,
# on subjects 2, 4, 6, 8; its validation loop then scores the test subjects as a learning curve
# only (no setting and no checkpoint is chosen by it).
# Another data set in this layout (HF_UTD_MHAD) holds out its own subjects' folds, any number.
val_subject = '{{$HF_UTD_VAL_SUBJECT:none}}'
if val_subject == 'none':
    ann_file_train = f'{data_root}/cross_subject_train.txt'
    ann_file_val = f'{data_root}/cross_subject_test.txt'
elif val_subject.isdigit():
    ann_file_train = f'{data_root}/cross_subject_val/s{val_subject}_train.txt'
    ann_file_val = f'{data_root}/cross_subject_val/s{val_subject}_val.txt'
else:
    raise ValueError(f'HF_UTD_VAL_SUBJECT={val_subject!r}: validation holds out one training '
                     'subject, by its number (1, 3, 5 or 7 on UTD-MHAD; unset for the final '
                     'protocol)')
ann_file_test = f'{data_root}/cross_subject_test.txt'
num_classes = 27
# The family's settings, set here once: every row's pipelines read them (a row changes only
# what it is about: its picks, or the input format of an mmaction2 baseline).
input_size = 96  # training crop and test frame side
test_clips = 3
num_frames = 5  # T: frames per sample
# Every subject performs every action with the right arm: a horizontal flip makes a left-handed
# performer nobody in the test set is, and turns the left/right and clockwise pairs into each
# other, so training does not flip (the ablation's flip row maps 0 <-> 1 and 8 <-> 9).
augment = dict(type='ConsistentClipAugment', size=input_size, area_range=(0.6, 1.0),
               flip_ratio=0.0)
train_transforms = [_base_.frame_cache_decode, augment]
test_transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(input_size, input_size), keep_ratio=False)
]
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, mode='uniform')

# Every pipeline is [reader, sampler with the split's views, decoding and transforms, stacking].
# The parts of each split (train, val, test) around the sampler and the stacking, which a row
# that changes either rebuilds its pipelines from:
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
test_dataloader = dict(
    dataset=dict(ann_file=ann_file_test, data_prefix=dict(video=data_root),
                 pipeline=test_pipeline))
