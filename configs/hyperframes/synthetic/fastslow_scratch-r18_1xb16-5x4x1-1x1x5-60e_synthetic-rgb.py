# The fast/slow model chosen on real video (configs/hyperframes/utd_mhad), unchanged on the
# synthetic motion benchmark: a fast hyperframe (T=5 picks 4/30 s apart, anywhere in the clip)
# and a slow one (T=5 spread over the whole clip), the same augmentation draw for both, stacked
# into one T=10 hyperframe for one HyperResNet-18 pass (early fusion), with motion products.
# The streams these clips alone would pick (3/30 s and 9/30 s apart) are the 5x3x1-5x9x1
# config of this family; benchmarks/README.md compares the two.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
# the streams' frames in one hyperframe: the backbone reads both streams' T
model = dict(backbone=dict(num_frames=2 * _base_.num_frames, motion_products=True))
hyperframe_sampler = dict(
    type='HyperframeSampleFrames',
    num_frames=_base_.num_frames,
    time_based=True,
    streams=dict(fast=dict(interval=4 / 30), slow=dict(mode='uniform')))
# the family's pipelines (its dataset base's pipeline_parts) with these streams, stacked into
# one hyperframe per clip
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.fused_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
