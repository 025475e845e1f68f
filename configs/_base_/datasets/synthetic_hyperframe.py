# The synthetic motion benchmark (python tools/make_synthetic_dataset.py data/synthetic
# --preset default): 10 classes that differ only in motion, 64x64 H.264 clips of 2 s at 15, 25
# or 30 fps. Set HF_SYNTHETIC (or edit data_root) to use another copy.
# One T=5 hyperframe of picks spread over the clip (the recipe chosen on real video; the
# family's 5x8x1 config takes the picks these clips alone favour), trained at 32x32 with one
# augmentation draw per sample; three test clips.
_base_ = ['./hyperframe_steps.py']
dataset_type = 'VideoDataset'
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
# Training reads the frames through the plugin's frame cache (FrameCacheInit/FrameCacheDecode):
# each video decoded once into <video>.hfc beside it, then memory-mapped; the same frames as
# decord's, without a container open and a decode from the keyframe per sample (a large part of
# a training step on clips this small: benchmarks/README.md). BuildFrameCacheHook builds the
# entries before the run (tools/main_job.py has built them already). Validation and test (and
# inference on other videos) decode the videos and take the whole frame at the training size.
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
# validation and test: the same clips of the whole frame
val_pipeline = [
    _base_.test_init,
    dict(hyperframe_sampler, num_clips=test_clips, test_mode=True), *test_transforms,
    *_base_.hyperframe_format
]
test_pipeline = val_pipeline

# From the frame cache a training sample is a memory-mapped read: on a 2-core CPU, loader worker
# processes cost more (inter-process copies, scheduling against the training thread) than they
# save, so training loads in the main process (bench_pipeline.py times both). Raise
# num_workers on a bigger machine.
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
