# The pipelines of the real-video RGB datasets (kinetics400_rgb.py, ucf101_split1_rgb.py,
# hmdb51_split1_rgb.py, sthv2_rgb.py): one T=5 hyperframe of frames 2 apart, one augmentation
# draw per sample (crop, flip, colours) for all its frames. Validation: centre crop of a resized
# frame; test: three crops along the long side.
_base_ = ['./hyperframe_steps.py']
from hyperframes_mm.config_parts import pipelines  # after _base_ (old-style config)
# Set once here, read by every pipeline (a config that changes one of them rebuilds its
# pipelines from these parts):
input_size = 224  # training crop and validation centre crop
test_scale = input_size * 8 // 7  # short side for validation and test (mmaction2's 256 for 224)
num_frames = 5  # T: frames per hyperframe
val_clips = 3
test_clips = 10

hyperframe_sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=2)
augment = dict(type='ConsistentClipAugment', size=input_size, flip_ratio=0.5, brightness=0.4,
               contrast=0.4, saturation=0.4, hue=0.1)
train_init = dict(type='SafeDecordInit')
train_transforms = [dict(type='DecordDecode'), augment]
val_transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, test_scale)),
    dict(type='CenterCrop', crop_size=input_size)
]
test_transforms = [
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, test_scale)),
    dict(type='ThreeCrop', crop_size=test_scale)
]

# Every pipeline is [reader, sampler with the split's views, decoding and transforms, stacking].
# The parts of each split (train, val, test) around the sampler and the stacking, which a config
# that changes either rebuilds its pipelines from:
pipeline_parts = [
    (train_init, dict(), train_transforms),
    (_base_.test_init, dict(num_clips=val_clips, test_mode=True), val_transforms),
    (_base_.test_init, dict(num_clips=test_clips, test_mode=True), test_transforms),
]
train_pipeline, val_pipeline, test_pipeline = pipelines(
    pipeline_parts, hyperframe_sampler, _base_.hyperframe_format)

# The two-stream model's pipelines (kinetics400_fastslow_rgb.py, ucf101_split1_fastslow_rgb.py):
# per clip, a fast T=5 hyperframe (frames 1 apart, 5 frames) centred inside a slow one (frames
# 4 apart, 17 frames), both drawn at one random place and given the same crop, flip and colours,
# stacked into one T=10 hyperframe.
fastslow_sampler = dict(
    type='HyperframeSampleFrames',
    num_frames=num_frames,
    streams=dict(fast=dict(interval=1), slow=dict(interval=4)),
    stream_align='center')
fastslow_train_pipeline, fastslow_val_pipeline, fastslow_test_pipeline = pipelines(
    pipeline_parts, fastslow_sampler, _base_.fused_format)
