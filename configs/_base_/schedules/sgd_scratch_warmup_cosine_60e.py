# mmaction2's schedule for training from scratch (recognition/slowonly/slowonly_r50_8xb16-4x16x1-
# 256e_kinetics400-rgb.py): SGD, momentum 0.9, weight decay 1e-4, gradient norm clipped at 40,
# linear warm-up over the first 34/256 of the epochs, then cosine decay to zero; its lr 0.2 for a
# batch of 128 scaled linearly to one process with 16 clips.
# The loops, SGD and the warm-up + cosine decay are sgd_warmup_cosine_50e.py's, over these epochs.
_base_ = ['./sgd_warmup_cosine_50e.py']
max_epochs = 60
warmup_epochs = 8
train_cfg = dict(max_epochs=max_epochs, val_interval=5)
param_scheduler = [
    dict(_base_.param_scheduler[0], end=warmup_epochs),
    dict(_base_.param_scheduler[1], T_max=max_epochs - warmup_epochs, begin=warmup_epochs,
         end=max_epochs)
]
optim_wrapper = dict(optimizer=dict(lr=0.2 * 16 / 128))
auto_scale_lr = dict(base_batch_size=16)
