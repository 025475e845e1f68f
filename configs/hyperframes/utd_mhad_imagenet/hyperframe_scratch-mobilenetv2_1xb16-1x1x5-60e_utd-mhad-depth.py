# The control: the T=5 row's model, data and input size from random weights, on the schedule
# the UTD-MHAD family trains every hyperframe model from scratch with (AdamW, 60 epochs), so
# that the ImageNet rows are compared with a from-scratch model given its own full schedule.
_base_ = [
    '../../_base_/models/hyper_mobilenet_v2.py',
    '../../_base_/datasets/utd_mhad_depth_imagenet.py',
    '../../_base_/schedules/adamw_warmup_cosine_60e.py', '../../_base_/default_runtime.py'
]
model = dict(
    backbone=dict(num_frames=_base_.num_frames, pretrained=None),
    cls_head=dict(num_classes=_base_.num_classes))
# validated as often as the ImageNet rows: its last validation is the accuracy their learning
# curves are read against
train_cfg = dict(val_interval=2)
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
