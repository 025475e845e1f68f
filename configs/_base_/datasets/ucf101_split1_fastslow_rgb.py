# UCF101 for the two-stream model: the data, dataloaders and augmentation of
# ucf101_split1_rgb.py, with staggered windows: per clip, a fast T=5 hyperframe (frames 1 apart,
# 5 frames) centred inside a slow one (frames 4 apart, 17 frames), both drawn at one random place
# and given the same crop, flip and colours; PackActionInputs collects them as imgs_fast and
# imgs_slow.
_base_ = ['ucf101_split1_rgb.py']

fastslow_sampler = dict(
    type='HyperframeSampleFrames',
    num_frames=5,
    streams=dict(fast=dict(interval=1), slow=dict(interval=4)),
    stream_align='center')
train_pipeline = [
    dict(type='SafeDecordInit'),
    fastslow_sampler,
    dict(type='DecordDecode'),
    dict(type='ConsistentClipAugment', size=224, flip_ratio=0.5, brightness=0.4, contrast=0.4,
         saturation=0.4, hue=0.1),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
val_pipeline = [
    dict(type='SafeDecordInit'),
    dict(fastslow_sampler, num_clips=3, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='CenterCrop', crop_size=224),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
test_pipeline = [
    dict(type='SafeDecordInit'),
    dict(fastslow_sampler, num_clips=10, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, 256)),
    dict(type='ThreeCrop', crop_size=256),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]

train_dataloader = dict(dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
