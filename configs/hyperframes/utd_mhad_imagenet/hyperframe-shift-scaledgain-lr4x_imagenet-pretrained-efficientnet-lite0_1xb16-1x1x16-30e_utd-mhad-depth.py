# The shifted pair on EfficientNet-Lite0: a clip is two of its chosen T=8 hyperframes in time order
# (16 picks spread over it, the first eight and the last eight), each through that row's network
# (stem inflated, the gain and rate its folds chose), with mmaction2's TemporalShift in the
# inverted residual blocks exchanging features between the two, where MobileNetV2TSM puts it
# (InflatedBackbone(num_segments=2)): the MobileNetV2 shifted row's design on this network. A
# clip costs two passes, so the test averages 2 clips, as the MobileNetV2 shifted rows.
_base_ = ['./hyperframe-scaledgain-lr4x_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x8-30e_utd-mhad-depth.py']
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
