# The product's promise on real video: mmaction2's ImageNet MobileNetV2 with conv1 inflated to
# one T=5 hyperframe (the RGB kernel replicated over the 5 picks and divided by 5, so that 5
# identical frames give the 2D network's output), every other weight kept, fine-tuned. The
# picks and the diff encoding are the UTD-MHAD recipe's (picks spread over the clip).
_base_ = [
    '../../_base_/models/hyper_mobilenet_v2.py', '../../_base_/models/imagenet_mobilenet_v2.py',
    '../../_base_/datasets/utd_mhad_depth_imagenet.py',
    '../../_base_/schedules/sgd_mobilenet_v2_finetune_30e.py', '../../_base_/default_runtime.py'
]
model = dict(
    backbone=dict(
        num_frames=_base_.num_frames,
        inflate_init='replicate',
        pretrained=_base_.imagenet_mobilenet_v2),
    cls_head=dict(num_classes=_base_.num_classes))
default_hooks = dict(checkpoint=dict(interval=5, max_keep_ckpts=1))
