# The reading and dataloaders of the small-clip datasets whose every model trains on CPU
# (synthetic_hyperframe.py, utd_mhad_depth.py). Training reads the frames through the plugin's
# frame cache (FrameCacheInit/FrameCacheDecode): each video decoded once into <video>.hfc beside
# it, then memory-mapped; the same frames as decord's, without a container open and a decode from
# the keyframe per sample (a large part of a training step on clips this small:
# benchmarks/README.md). BuildFrameCacheHook builds the entries before the run
# (tools/build_frame_cache.py does it beforehand, in parallel). Validation and test (and
# inference on other videos) decode the videos. A dataset base adds its lists, videos and
# pipelines. The lists are read by CheckedVideoDataset (mmaction2's VideoDataset, each line
# checked first), so a bad line stops the run naming its file and line, and a video that fails to
# decode stops it naming the file and sample: validation and test skip nothing, since a test
# set that quietly lost clips would be another test set.
_base_ = ['./hyperframe_steps.py']
dataset_type = 'CheckedVideoDataset'
custom_hooks = [dict(type='BuildFrameCacheHook')]
train_init = dict(type='FrameCacheInit', on_stale='decode')
frame_cache_decode = dict(type='FrameCacheDecode')

# From the frame cache a training sample is a memory-mapped read: on a 2-core CPU, loader worker
# processes cost more (inter-process copies, scheduling against the training thread) than they
# save, so training loads in the main process (bench_pipeline.py times both). Raise
# num_workers on a bigger machine.
train_dataloader = dict(
    batch_size=16,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(type=dataset_type))
val_dataloader = dict(
    batch_size=16,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type=dataset_type, test_mode=True))
test_dataloader = val_dataloader

val_evaluator = dict(type='AccMetric', metric_list=('top_k_accuracy', 'mean_class_accuracy'))
test_evaluator = val_evaluator
