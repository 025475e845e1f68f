# A 3D baseline: mmaction2's I3D on a ResNet-18 (every block's 3x3 conv inflated to 3x3x3; the
# stem halves the frame rate, as mmaction2's I3D does), on 8 frames spread over the whole clip,
# with the same data, views and from-scratch SGD schedule as TSN and TSM.
_base_ = [
    '../../_base_/datasets/utd_mhad_depth.py',
    '../../_base_/schedules/sgd_scratch_warmup_cosine_60e.py',
    '../../_base_/default_runtime.py'
]
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
model = dict(
    type='Recognizer3D',
    backbone=dict(
        type='ResNet3d',
        depth=18,
        pretrained=None,
        pretrained2d=False,
        conv1_kernel=(3, 7, 7),
        conv1_stride_t=2,
        pool1_stride_t=1,
        inflate=(1, 1, 1, 1),
        zero_init_residual=False,
        norm_eval=False),
    cls_head=dict(
        type='I3DHead',
        num_classes=27,
        in_channels=512,
        spatial_type='avg',
        dropout_ratio=0.5,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(
        type='ActionDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        format_shape='NCTHW'))
num_frames = 8
# the family's picks and views, 8 frames a clip, stacked in time for the 3D network
frames = dict(_base_.hyperframe_sampler, num_frames=num_frames)
clip_format = [dict(type='FormatShape', input_format='NCTHW'), dict(type='PackActionInputs')]
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, frames, clip_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
