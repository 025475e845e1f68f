# The recipe chosen on real video (configs/hyperframes/utd_mhad), unchanged on the synthetic
# motion benchmark: HyperResNet-18 from scratch, one T=5 hyperframe of picks spread over the
# clip, the 'diff' input encoding (centre frame + 4x consecutive frame differences), no motion
# products, one augmentation draw per sample for all frames, AdamW. The settings these clips
# alone would pick (picks 8/30 s apart, motion products) are the 5x8x1 config of this family;
# benchmarks/README.md gives what each choice costs on both data sets.
_base_ = [
    '../../_base_/models/hyper_r18.py', '../../_base_/datasets/synthetic_hyperframe.py',
    '../../_base_/schedules/adamw_warmup_cosine_60e.py', '../../_base_/default_runtime.py'
]
# At 32x32 layer4 works on 1x1 maps, where a padded 3x3 conv reads mostly padding:
# PadAwareConv2d skips those taps (the same function, a faster step; bench_train_step.py).
model = dict(
    backbone=dict(num_frames=_base_.num_frames, input_encoding='diff', diff_gain=4.0,
                  motion_products=False, conv_cfg=dict(type='PadAwareConv2d')),
    cls_head=dict(num_classes=10, dropout_ratio=0.2))
# a checkpoint holds the weights and the AdamW state: saving one each epoch would cost a
# noticeable part of these short epochs, so only every 20th (and the last) is kept
default_hooks = dict(logger=dict(interval=10), checkpoint=dict(interval=20, max_keep_ckpts=1))
