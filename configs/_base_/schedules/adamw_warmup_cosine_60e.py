# Training from scratch on a CPU: 60 epochs, 3 of linear warm-up, cosine decay, AdamW. The
# schedule of every model on the synthetic benchmark and of the hyperframe models on UTD-MHAD:
# mmaction2's from-scratch SGD schedule underfits the synthetic clips, and on UTD-MHAD it is an
# ablation row (benchmarks/README.md compares the two on both). At 30 epochs the synthetic recipe
# was still learning; 60 fit the main job's CPU budget once training read the frame cache and
# HyperResNet skipped its padding-only conv taps (benchmarks/README.md, "Schedule length").
max_epochs = 60
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs, val_begin=1, val_interval=20)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=True, begin=0, end=3,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - 3, eta_min=0, by_epoch=True, begin=3,
         end=max_epochs, convert_to_iter_based=True)
]
# fused=True updates every parameter in one kernel instead of a loop over the parameters: the
# same algorithm, and on one CPU thread the unfused AdamW step of a ResNet-18 costs as much as a
# good part of a small-input iteration
optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-3, weight_decay=0.05, fused=True),
    clip_grad=dict(max_norm=40, norm_type=2))
auto_scale_lr = dict(enable=False, base_batch_size=16)
