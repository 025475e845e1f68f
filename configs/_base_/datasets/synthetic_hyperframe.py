# The synthetic motion benchmark (python tools/make_synthetic_dataset.py data/synthetic
# --preset default): 10 classes that differ only in motion, 64x64 H.264 clips of 2 s at 15, 25
# or 30 fps. Set HF_SYNTHETIC (or edit data_root) to use another copy.
# One T=5 hyperframe of picks spread over the clip (the recipe chosen on real video; the
# family's 5x8x1 config takes the picks these clips alone favour), trained at 32x32 with one
# augmentation draw per sample; three test clips.
dataset_type = 'VideoDataset'
data_root = '{{$HF_SYNTHETIC:data/synthetic}}'
ann_file_train = f'{data_root}/train.txt'
ann_file_val = f'{data_root}/val.txt'
num_classes = 10
# Horizontal flips turn swipe_left into swipe_right and drift_left into drift_right.
flip_label_map = {0: 1, 1: 0, 5: 6, 6: 5}
# Training reads the frames through the plugin's frame cache (FrameCacheInit/FrameCacheDecode):
# each video decoded once into <video>.hfc beside it, then memory-mapped; the same frames as
# decord's, without a container open and a decode from the keyframe per sample (a large part of
# a training step on clips this small: benchmarks/README.md). BuildFrameCacheHook builds the
# entries before the run (tools/main_job.py has built them already). Validation and test (and
# inference on other videos) decode the videos.
frame_cache_init = dict(type='FrameCacheInit', on_stale='decode')
custom_hooks = [dict(type='BuildFrameCacheHook')]
frame_cache_decode = dict(type='FrameCacheDecode')
hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=5, mode='uniform')
augment = dict(type='ConsistentClipAugment', size=32, area_range=(0.8, 1.0),
               flip_label_map=flip_label_map)

train_pipeline = [
    frame_cache_init,
    hyperframe_sampler,
    frame_cache_decode,
    augment,
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(hyperframe_sampler, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(32, 32), keep_ratio=False),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
# validation and test: the same 3 clips of the whole 32x32 frame
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
