# mmaction2's TSM-MobileNetV2 (recognition/tsm/tsm_imagenet-pretrained-mobilenetv2_8xb16-1x1x8-
# 100e_kinetics400-rgb.py) on 5 segments instead of 8: MobileNetV2TSM (1/8 of the channels of
# every residual block shifted between segments) loading the same ImageNet file strictly, one
# frame from each of 5 equal segments of the clip (TSN sampling), scores averaged; its fine-tuning
# recipe (sgd_mobilenet_v2_finetune_30e.py). Tested on the family's views.
_base_ = [
    '../../_base_/models/tsm_mobilenet_v2.py', '../../_base_/models/imagenet_mobilenet_v2.py',
    '../../_base_/datasets/utd_mhad_depth_imagenet.py',
    '../../_base_/schedules/sgd_mobilenet_v2_finetune_30e.py', '../../_base_/default_runtime.py'
]
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
model = dict(
    backbone=dict(num_segments=_base_.num_frames, pretrained=_base_.imagenet_mobilenet_v2),
    cls_head=dict(num_classes=_base_.num_classes, num_segments=_base_.num_frames))
# T frames a sample, one from each of T equal segments of the clip; validated and tested on the
# views of every row of the family (the hyperframe rows' picks for its clips)
segments = dict(type='SampleFrames', clip_len=1, frame_interval=1, num_clips=_base_.num_frames)
train_pipeline = [_base_.train_init, segments, *_base_.train_transforms, *_base_.segment_format]
val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts[1:], _base_.hyperframe_sampler, _base_.segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
