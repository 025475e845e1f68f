train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=30, val_begin=1, val_interval=1)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=True, begin=0, end=3, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=27, eta_min=0, by_epoch=True, begin=3, end=30,
         convert_to_iter_based=True)
]

optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=1e-4),
    clip_grad=dict(max_norm=40, norm_type=2))

# lr above is for this total batch; --auto-scale-lr rescales it for other batch sizes.
auto_scale_lr = dict(enable=False, base_batch_size=64)
