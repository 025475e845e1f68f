# mmaction2's TSM: ResNetTSM-18 (1/8 of the channels shifted between the 5 segments in every
# block), one frame from each of 5 equal segments of the clip (TSN sampling), scores averaged;
# mmaction2's from-scratch SGD schedule.
_base_ = [
    '../../_base_/models/tsm_r18.py', '../../_base_/datasets/utd_mhad_depth.py',
    '../../_base_/schedules/sgd_scratch_warmup_cosine_60e.py',
    '../../_base_/default_runtime.py'
]
from hyperframes_mm.config_parts import dataloaders  # after _base_ (old-style config)
model = dict(
    backbone=dict(num_segments=_base_.num_frames),
    cls_head=dict(num_classes=27, num_segments=_base_.num_frames))
# T frames a sample, one from each of T equal segments of the clip; tested on the views of every
# row of the family (the recipe's picks for its test clips)
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=_base_.num_frames)
test_segments = dict(_base_.hyperframe_sampler, num_clips=_base_.test_clips, test_mode=True)
train_pipeline = [_base_.train_init, segments, *_base_.train_transforms, *_base_.segment_format]
val_pipeline = [_base_.test_init, test_segments, *_base_.test_transforms, *_base_.segment_format]
test_pipeline = val_pipeline
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
