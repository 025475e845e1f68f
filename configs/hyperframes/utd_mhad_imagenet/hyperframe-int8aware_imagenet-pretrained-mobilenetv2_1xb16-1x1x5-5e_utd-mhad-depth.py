# The T=5 row made for its int8 file (hyperframes_mm.engine.int8_aware, docs/deployment.md): the
# row's trained float checkpoint, given as load_from (the hook refuses to start without one),
# trains a few more epochs through the rounding onnxruntime's static quantisation applies, batch
# norms frozen, at a tenth of the family's learning rate decaying to 0 with no warm-up (the
# weights already work). Export and quantise the result with tools/deployment/quantize_int8.py,
# as the float row.
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
max_epochs = 5
train_cfg = dict(max_epochs=max_epochs, val_interval=1)
param_scheduler = [
    dict(type='CosineAnnealingLR', T_max=max_epochs, eta_min=0, by_epoch=True, begin=0,
         end=max_epochs, convert_to_iter_based=True)
]
optim_wrapper = dict(optimizer=dict(lr=_base_.optim_wrapper.optimizer.lr / 10))
custom_hooks = _base_.custom_hooks + [dict(type='Int8AwareHook')]
default_hooks = dict(checkpoint=dict(interval=max_epochs))
