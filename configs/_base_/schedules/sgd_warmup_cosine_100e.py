# Training an ImageNet-initialised hyperframe model on Kinetics-400: sgd_warmup_cosine_50e.py's
# optimiser and lr (mmaction2's TSN recipe times 0.6 at a total batch of 256) over 100 epochs
# (as mmaction2's TSN), 3 of linear warm-up (an epoch is ~940 iterations at a total batch of
# 256), then cosine decay to 0.
_base_ = ['./sgd_warmup_cosine_50e.py']
max_epochs = 100
warmup_epochs = 3
train_cfg = dict(max_epochs=max_epochs, val_interval=5)
# the base's warm-up and cosine decay, over these epochs
param_scheduler = [
    dict(_base_.param_scheduler[0], end=warmup_epochs),
    dict(_base_.param_scheduler[1], T_max=max_epochs - warmup_epochs, begin=warmup_epochs,
         end=max_epochs)
]
