# The shifted row with a third T=5 hyperframe: 15 picks spread over the clip, in time order, five
# a hyperframe, TemporalShift exchanging features between neighbours in the residual blocks. With
# two hyperframes a shift only swaps channels between the clip's halves; with three the middle
# one reads both neighbours, so time is mixed in every block as TSM mixes it, at T=5 the pass.
# A clip costs three passes, so the test reads 1 clip: a decision is 3 passes, as the T=5 row's
# 3 clips (how many clips it tests on is read on validation, benchmarks/README.md).
_base_ = ['./hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x10-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import (dataloaders, pipelines,  # after _base_ (old-style config)
                                         shifted_hyperframes)
segments = 3
test_clips = 1
# the shifted row's sampler, one hyperframe's picks (T=5), made three
model, hyperframe_sampler, pipeline_parts, segment_format = shifted_hyperframes(
    segments, test_clips, _base_.pipeline_parts,
    dict(_base_.hyperframe_sampler, num_frames=_base_.num_frames))
train_pipeline, val_pipeline, test_pipeline = pipelines(pipeline_parts, hyperframe_sampler,
                                                        segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
