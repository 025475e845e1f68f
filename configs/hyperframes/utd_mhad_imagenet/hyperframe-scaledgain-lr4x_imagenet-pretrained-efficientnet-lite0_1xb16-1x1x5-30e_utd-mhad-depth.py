# EfficientNet-Lite0's T=5 hyperframe (its frame-difference gain at its input scale) at 4x the
# learning rate of MobileNetV2's recipe, which this network shares with the family but was never
# tuned for: at the recipe's rate it ends training with a higher loss, its steps too small. The
# rate is the one the four training-subject folds chose among 0.5x, 1x, 2x, 4x and 8x
# (docs/efficientnet_lite0.md); warm-up, decay, the classifier's 5x, weight decay and clipping
# stay the recipe's.
_base_ = ['./hyperframe-scaledgain_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-30e_utd-mhad-depth.py']
optim_wrapper = dict(optimizer=dict(lr=_base_.optim_wrapper.optimizer.lr * 4))
