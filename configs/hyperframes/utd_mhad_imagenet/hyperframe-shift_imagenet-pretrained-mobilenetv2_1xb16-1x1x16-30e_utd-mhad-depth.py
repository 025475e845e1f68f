# The shifted row (two hyperframes of a clip in time order, mmaction2's TemporalShift exchanging
# features between them in the residual blocks) with the T=8 row's hyperframes: 16 picks spread
# over the clip, the first eight and the last eight, so each pass sees more of the action for a
# wider conv1 only. The test averages 2 clips, as the T=5 shifted row.
_base_ = ['./hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x10-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
num_frames = 8
model = dict(backbone=dict(num_frames=num_frames))
hyperframe_sampler = dict(_base_.hyperframe_sampler, num_frames=_base_.segments * num_frames)
train_pipeline, val_pipeline, test_pipeline = pipelines(_base_.pipeline_parts, hyperframe_sampler,
                                                        _base_.segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
