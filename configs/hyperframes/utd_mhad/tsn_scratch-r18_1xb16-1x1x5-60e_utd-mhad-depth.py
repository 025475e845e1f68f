# mmaction2's TSN: its ResNet-18 on one frame from each of 5 equal segments of the clip, scores
# averaged; the same data, views and from-scratch SGD schedule as TSM.
_base_ = ['./tsm_scratch-r18_1xb16-1x1x5-60e_utd-mhad-depth.py']
model = dict(
    backbone=dict(_delete_=True, type='ResNet', depth=18, pretrained=None, norm_eval=False),
    cls_head=dict(
        _delete_=True,
        type='TSNHead',
        num_classes=27,
        in_channels=512,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.4,
        init_std=0.01,
        average_clips='prob'))
