# mmaction2's TSN on the ImageNet MobileNetV2: its MobileNetV2 (loading the same file through
# mmengine's Pretrained init) on one frame from each of 5 equal segments of the clip, scores
# averaged; the same data, views and fine-tuning recipe as TSM.
_base_ = ['./tsm_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-30e_utd-mhad-depth.py']
model = dict(
    backbone=dict(_delete_=True, type='MobileNetV2', pretrained=_base_.imagenet_mobilenet_v2),
    cls_head=dict(
        _delete_=True,
        type='TSNHead',
        num_classes=_base_.num_classes,
        in_channels=1280,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.4,
        init_std=0.01,
        average_clips='prob'))
