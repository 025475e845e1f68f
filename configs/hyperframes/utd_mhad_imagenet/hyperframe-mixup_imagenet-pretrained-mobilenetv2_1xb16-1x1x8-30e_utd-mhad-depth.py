# The T=8 row with mixup, mmaction2's batch blending for its TSM fine-tuning recipes
# (MixupBlending, alpha 0.2): every clip of a batch is blended with another, frames and label
# alike, so the same mix reaches all T frames and the motion between them stays a motion. The
# T=8 row fits its few training clips almost exactly; mixing them is the cheapest regulariser
# that keeps every frame of a clip consistent (it costs nothing at test time).
_base_ = ['./hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e_utd-mhad-depth.py']
# num_classes: the width of the blended labels, the head's class count (mmaction2's convention)
blending = dict(type='MixupBlending', alpha=0.2, num_classes=_base_.num_classes)
model = dict(data_preprocessor=dict(blending=blending))
