# Fine-tuning an ImageNet MobileNetV2 on a small video dataset: mmaction2's TSM-MobileNetV2
# recipe (recognition/tsm/tsm_imagenet-pretrained-mobilenetv2_8xb16-1x1x8-100e_kinetics400-rgb.py:
# TSMOptimWrapperConstructor with the classifier at 5x the lr, SGD momentum 0.9, weight decay
# 2e-5, gradient norm clipped at 20, lr 0.02 for a batch of 128, here scaled linearly to one
# process with 16 clips), with a linear warm-up and a cosine decay to 0 in place of its steps at
# 40 and 80 of 100 epochs, which have no counterpart in a short schedule.
# Every ImageNet-initialised row of a family trains on this one schedule, hyperframe models and
# mmaction2's TSN/TSM alike: the comparison is of models started from the same weights, so the
# optimiser is not one of the differences. Half the from-scratch schedule's 60 epochs: the
# network starts from features that already work, and the learning curves show where each row
# stops gaining (the from-scratch control keeps its own 60 epochs). The loops, SGD and the warm-up
# + cosine decay are sgd_warmup_cosine_50e.py's, over these epochs.
_base_ = ['./sgd_warmup_cosine_50e.py']
max_epochs = 30
warmup_epochs = 3
# a validation every 2 epochs (one clip: the family's val_clips) resolves the epoch a row
# reaches an accuracy at for little training time
train_cfg = dict(max_epochs=max_epochs, val_interval=2)
param_scheduler = [
    dict(_base_.param_scheduler[0], end=warmup_epochs),
    dict(_base_.param_scheduler[1], T_max=max_epochs - warmup_epochs, begin=warmup_epochs,
         end=max_epochs)
]
optim_wrapper = dict(
    constructor='TSMOptimWrapperConstructor',
    paramwise_cfg=dict(fc_lr5=True),
    optimizer=dict(lr=0.02 * 16 / 128, weight_decay=2e-5),
    clip_grad=dict(max_norm=20))
auto_scale_lr = dict(base_batch_size=16)
