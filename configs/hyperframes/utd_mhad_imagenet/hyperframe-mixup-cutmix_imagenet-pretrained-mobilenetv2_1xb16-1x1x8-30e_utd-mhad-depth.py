# The T=8 row with mmaction2's stronger blending, its MViT/VideoMAE fine-tuning pair: each batch
# either mixup (alpha 0.8) or cutmix (alpha 1: a box of another clip pasted into every frame of
# the clip, at the same place, so it moves with nothing of its own).
_base_ = ['./hyperframe-mixup_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e_utd-mhad-depth.py']
blending = dict(
    _delete_=True,
    type='RandomBatchAugment',
    augments=[
        dict(type='MixupBlending', alpha=0.8, num_classes=_base_.num_classes),
        dict(type='CutmixBlending', alpha=1.0, num_classes=_base_.num_classes)
    ])
model = dict(data_preprocessor=dict(blending=blending))
