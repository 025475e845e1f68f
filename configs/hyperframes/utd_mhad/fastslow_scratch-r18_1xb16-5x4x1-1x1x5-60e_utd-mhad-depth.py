# Two time scales in one backbone pass: a fast hyperframe (T=5 picks 4/30 s apart: the
# direction of the quick arm movements) at a random place in the clip and a slow one (T=5 spread
# over the whole clip: the course of the action, the single stream's recipe), stacked into one
# T=10 hyperframe (early fusion), so the second scale costs a wider first conv rather than a
# second backbone pass; the same augmentation draw for both. Test: 3 clips of each stream,
# paired. With motion products; the fast/slow ablations in benchmarks/README.md compare two
# backbone passes and a fast stream at half size.
_base_ = ['./hyperframe_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py']
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
