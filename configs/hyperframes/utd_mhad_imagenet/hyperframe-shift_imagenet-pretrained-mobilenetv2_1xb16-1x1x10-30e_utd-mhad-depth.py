# Time mixed deeper than conv1: a clip is two T=5 hyperframes in time order (10 picks spread over
# it, the first five and the last five), each through the T=5 row's network (the ImageNet
# MobileNetV2, conv1 inflated the same way), with mmaction2's TemporalShift in the residual blocks
# exchanging features between the two, where MobileNetV2TSM puts it. A clip costs two passes, so
# the test averages 2 clips, not the T=5 row's 3: a decision is then 4 passes, against the 15 of
# TSM-MobileNetV2-5 (5 segments x 3 clips).
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import (dataloaders, pipelines,  # after _base_ (old-style config)
                                         shifted_hyperframes)
segments = 2
test_clips = 2
model, hyperframe_sampler, pipeline_parts, segment_format = shifted_hyperframes(
    segments, test_clips, _base_.pipeline_parts, _base_.hyperframe_sampler)
train_pipeline, val_pipeline, test_pipeline = pipelines(pipeline_parts, hyperframe_sampler,
                                                        segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
