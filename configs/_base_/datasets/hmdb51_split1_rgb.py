# HMDB51, official split 1, as mmaction2 lays it out (tools/data/hmdb51: videos under
# data/hmdb51/videos/<class>/<name>.avi, lists "brush_hair/<name>.avi 0").
# Pipelines: one T=5 hyperframe of frames 2 apart, one augmentation draw per sample. The flip has
# no flip_label_map: no HMDB51 class depends on left/right, so a flipped clip keeps its label.
# The dataset is wrapped in GuardedDataset(on_bad_video='raise'): the list is checked on
# construction (labels, missing files: an error naming file:line), and a video that fails to
# decode stops the run naming the file (HMDB51 is small and clean: a failure is worth a stop).
dataset_type = 'VideoDataset'
data_root = 'data/hmdb51/videos'
split = 1  # official train/test splits: 1, 2, 3
ann_file_train = f'data/hmdb51/hmdb51_train_split_{split}_videos.txt'
ann_file_val = f'data/hmdb51/hmdb51_val_split_{split}_videos.txt'
num_classes = 51

train_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=2),
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=224, flip_ratio=0.5, brightness=0.4, contrast=0.4,
         saturation=0.4, hue=0.1),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=2, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='CenterCrop', crop_size=224),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, interval=2, num_clips=10, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='ThreeCrop', crop_size=256),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs')
]

train_dataloader = dict(
    batch_size=32,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        num_classes=num_classes,
        dataset=dict(
            type=dataset_type,
            ann_file=ann_file_train,
            data_prefix=dict(video=data_root),
            pipeline=train_pipeline)))
val_dataloader = dict(
    batch_size=32,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        num_classes=num_classes,
        dataset=dict(
            type=dataset_type,
            ann_file=ann_file_val,
            data_prefix=dict(video=data_root),
            pipeline=val_pipeline,
            test_mode=True)))
test_dataloader = dict(
    batch_size=1,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type='GuardedDataset',
        on_bad_video='raise',
        num_classes=num_classes,
        dataset=dict(
            type=dataset_type,
            ann_file=ann_file_val,
            data_prefix=dict(video=data_root),
            pipeline=test_pipeline,
            test_mode=True)))

val_evaluator = dict(type='AccMetric')
test_evaluator = val_evaluator
