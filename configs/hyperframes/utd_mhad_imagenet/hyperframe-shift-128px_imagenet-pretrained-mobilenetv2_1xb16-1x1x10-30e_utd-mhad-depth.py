# The shifted row (two T=5 hyperframes of a clip, TemporalShift between them in the residual
# blocks) at 128x128, the depth videos' own side, instead of the family's 112: each stride of the
# network sees the body at a scale nearer the one its ImageNet weights learnt, for the area's
# cost. It is the row chosen on the four training subjects among those within half of TSM's
# latency, and then tested once (benchmarks/README.md, results/utd_mhad_imagenet_val.md).
_base_ = ['./hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x10-30e_utd-mhad-depth.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
input_size = 128
augment = dict(_base_.augment, size=input_size)
train_transforms = [_base_.frame_cache_decode, augment]
test_transforms = [
    _base_.test_transforms[0],
    dict(_base_.test_transforms[1], scale=(input_size, input_size))
]
pipeline_parts = [
    (*_base_.pipeline_parts[0][:2], train_transforms),
    (*_base_.pipeline_parts[1][:2], test_transforms),
    (*_base_.pipeline_parts[2][:2], test_transforms),
]
train_pipeline, val_pipeline, test_pipeline = pipelines(pipeline_parts, _base_.hyperframe_sampler,
                                                        _base_.segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
