# UTD-MHAD depth, cross-subject (tools/data/utd_mhad/README.md): 27 actions, 431 training clips
# (subjects 1, 3, 5, 7) and 430 test clips (2, 4, 6, 8), 128x128 grey depth videos at 30 fps
# written by tools/data/utd_mhad/convert_depth.py. Every row of the family trains at 96x96 and
# tests on the same 3 clips x 1 crop (the whole frame). Set HF_UTD_MHAD to use another copy.
_base_ = ['./hyperframe_steps.py']
dataset_type = 'VideoDataset'
data_root = '{{$HF_UTD_MHAD:data/utd_mhad}}'
ann_file_train = f'{data_root}/cross_subject_train.txt'
ann_file_val = f'{data_root}/cross_subject_test.txt'
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
# Around its picks, every row trains on frames read from the frame cache beside the videos
# (<video>.hfc, which BuildFrameCacheHook builds before the run; tools/build_frame_cache.py does
# it beforehand, in parallel) and augmented, and tests on the decoded videos, the whole frame at
# the training size.
custom_hooks = [dict(type='BuildFrameCacheHook')]
train_init = dict(type='FrameCacheInit', on_stale='decode')
frame_cache_decode = dict(type='FrameCacheDecode')
train_transforms = [frame_cache_decode, augment]
test_transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(input_size, input_size), keep_ratio=False)
]
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, mode='uniform')

train_pipeline = [
    train_init, hyperframe_sampler, *train_transforms, *_base_.hyperframe_format
]
val_pipeline = [
    _base_.test_init,
    dict(hyperframe_sampler, num_clips=test_clips, test_mode=True), *test_transforms,
    *_base_.hyperframe_format
]
test_pipeline = val_pipeline

# From the frame cache a sample loads in about a millisecond: on a small CPU, loader worker
# processes cost more than they save. Raise num_workers on a bigger machine.
train_dataloader = dict(
    batch_size=16,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        ann_file=ann_file_train,
        data_prefix=dict(video=data_root),
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=16,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        ann_file=ann_file_val,
        data_prefix=dict(video=data_root),
        pipeline=val_pipeline,
        test_mode=True))
test_dataloader = val_dataloader

val_evaluator = dict(type='AccMetric', metric_list=('top_k_accuracy', 'mean_class_accuracy'))
test_evaluator = val_evaluator
