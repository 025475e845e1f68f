# The seeds' bug, for the ablation: the recipe's model and schedule, but every frame of a
# hyperframe gets its own random crop, so frames stop lining up and the crop jitter drowns the
# motion. No flips here (a label cannot follow flips drawn per frame): crops are the only change.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py']
augment = dict(type='ConsistentClipAugment', size=_base_.input_size, area_range=(0.8, 1.0),
               flip_ratio=0.0, independent=True)
train_pipeline = [
    _base_.train_init, _base_.hyperframe_sampler, _base_.frame_cache_decode, augment,
    *_base_.hyperframe_format
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
