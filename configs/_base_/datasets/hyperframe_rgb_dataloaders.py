# The dataloaders of the real-video RGB datasets (kinetics400_rgb.py, ucf101_split1_rgb.py,
# hmdb51_split1_rgb.py, sthv2_rgb.py), each over hyperframe_rgb_pipelines.py's pipeline of its
# split: 32 clips a batch in training and validation, one video a batch in the test (its clips x
# crops views), every dataset wrapped in GuardedDataset, which checks the list on construction
# (labels, missing files: an error naming file:line) and stops the run at a video that fails to
# decode, naming the file. A dataset base adds its lists, videos and classes, and may let training
# skip bad videos (on_bad_video='skip').
_base_ = ['./hyperframe_rgb_pipelines.py']
dataset_type = 'VideoDataset'

train_dataloader = dict(
    batch_size=32,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        dataset=dict(type=dataset_type, pipeline=_base_.train_pipeline)))
val_dataloader = dict(
    batch_size=32,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        dataset=dict(type=dataset_type, pipeline=_base_.val_pipeline, test_mode=True)))
test_dataloader = dict(
    val_dataloader,
    batch_size=1,
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        dataset=dict(type=dataset_type, pipeline=_base_.test_pipeline, test_mode=True)))

val_evaluator = dict(type='AccMetric')
test_evaluator = val_evaluator
