# mmaction2's schedule for training from scratch (recognition/slowonly/slowonly_r50_8xb16-4x16x1-
# 256e_kinetics400-rgb.py): SGD, momentum 0.9, weight decay 1e-4, gradient norm clipped at 40,
# linear warm-up over the first 34/256 of the epochs, then cosine decay to zero; its lr 0.2 for a
# batch of 128 scaled linearly to one process with 16 clips.
max_epochs = 60
warmup_epochs = 8
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs, val_begin=1, val_interval=5)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=True, begin=0, end=warmup_epochs,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs, eta_min=0, by_epoch=True,
         begin=warmup_epochs, end=max_epochs, convert_to_iter_based=True)
]
optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=0.2 * 16 / 128, momentum=0.9, weight_decay=1e-4),
    clip_grad=dict(max_norm=40, norm_type=2))
auto_scale_lr = dict(enable=False, base_batch_size=16)
