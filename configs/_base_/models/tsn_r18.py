# mmaction2's TSN on a ResNet-18, the 2D video baseline: Recognizer2D over T segments of one frame
# each (the pipeline's segment_format), their scores averaged by the TSN head; mmaction2's own
# data preprocessor with ImageNet normalisation. From scratch unless a config names a checkpoint.
# The hyperframe models (hyper_r18.py and the bases on it) keep its head: a change here changes
# theirs.
model = dict(
    type='Recognizer2D',
    backbone=dict(type='ResNet', depth=18, pretrained=None, norm_eval=False),
    cls_head=dict(
        type='TSNHead',
        num_classes=400,
        in_channels=512,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.4,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(
        type='ActionDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        format_shape='NCHW'))
