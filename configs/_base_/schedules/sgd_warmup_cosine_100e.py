# Training an ImageNet-initialised hyperframe model on Kinetics-400: 100 epochs (as mmaction2's
# TSN), 3 of linear warm-up (an epoch is ~940 iterations at a total batch of 256), then cosine
# decay to 0.
# lr: mmaction2's single-frame ImageNet recipe (TSN, _base_/schedules/sgd_100e.py: SGD lr 0.01
# at a total batch of 256) times 0.6, as in sgd_warmup_cosine_50e.py.
max_epochs = 100
warmup_epochs = 3
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
    optimizer=dict(type='SGD', lr=0.006, momentum=0.9, weight_decay=1e-4),
    clip_grad=dict(max_norm=40, norm_type=2))
# lr is for this total batch (8 GPUs x 32); --auto-scale-lr rescales it for another.
auto_scale_lr = dict(enable=False, base_batch_size=256)
