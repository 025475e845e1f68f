# mmaction2's TSN as the video baseline of the ablations: its own ResNet-18 on 5 segments spread
# over the clip (one frame each, SampleFrames), scores averaged; trained like the hyperframe
# models (same augmentation draw for all frames, schedule, input size).
_base_ = [
    '../../_base_/models/tsn_r18.py', '../../_base_/datasets/synthetic_hyperframe.py',
    '../../_base_/schedules/adamw_warmup_cosine_60e.py', '../../_base_/default_runtime.py'
]
from hyperframes_mm.config_parts import dataloaders  # after _base_ (old-style config)
model = dict(cls_head=dict(num_classes=10, dropout_ratio=0.2))
# T segments over the clip, one frame each; the test takes the same T segments, centred
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=_base_.num_frames)
train_pipeline = [_base_.train_init, segments, *_base_.train_transforms, *_base_.segment_format]
val_pipeline = [
    _base_.test_init,
    dict(segments, test_mode=True), *_base_.test_transforms, *_base_.segment_format
]
test_pipeline = val_pipeline
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
default_hooks = dict(logger=dict(interval=10))
