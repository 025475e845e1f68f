# Fine-tuning an ImageNet ViT on a video dataset: 30 epochs, 3 of linear warm-up, cosine decay
# to 0, AdamW (no weight decay on norms, biases, position embedding and class token), gradient
# clip 1. lr 1e-4 at a total batch of 64 (8 GPUs x 8): the usual ViT-B fine-tuning range
# without layer-wise decay; not tuned here.
max_epochs = 30
warmup_epochs = 3
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs, val_begin=1, val_interval=3)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=True, begin=0, end=warmup_epochs,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs, eta_min=0, by_epoch=True,
         begin=warmup_epochs, end=max_epochs, convert_to_iter_based=True)
]
optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=1e-4, betas=(0.9, 0.999), weight_decay=0.05),
    paramwise_cfg=dict(
        norm_decay_mult=0.0,
        bias_decay_mult=0.0,
        custom_keys={
            '.pos_embed': dict(decay_mult=0.0),
            '.cls_token': dict(decay_mult=0.0)
        }),
    clip_grad=dict(max_norm=1.0, norm_type=2))
# lr is for this total batch; --auto-scale-lr rescales it for another.
auto_scale_lr = dict(enable=False, base_batch_size=64)
