# Two time scales in one HyperResNet-18 pass: fast (T=5, picks 3/30 s apart: quick events over
# 0.4 s) and slow (T=5, 9/30 s apart: trends over 1.2 s), staggered around one centre, the same
# augmentation draw for both, stacked into one T=10 hyperframe (early fusion, the design
# chosen on UTD-MHAD's real video), so the second scale widens the first conv instead of adding
# a backbone pass. The streams are tuned on these clips alone: the family's default fast/slow is
# the one chosen on real video (the 5x4x1-1x1x5 config); benchmarks/README.md compares the two,
# and this one with two passes.
_base_ = ['./hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
# the streams' frames in one hyperframe: the backbone reads both streams' T
model = dict(backbone=dict(num_frames=2 * _base_.num_frames))
hyperframe_sampler = dict(
    type='HyperframeSampleFrames',
    num_frames=_base_.num_frames,
    time_based=True,
    streams=dict(fast=dict(interval=3 / 30), slow=dict(interval=9 / 30)),
    stream_align='center')
# the family's pipelines (its dataset base's pipeline_parts) with these streams, stacked into
# one hyperframe per clip
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, hyperframe_sampler, _base_.fused_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
