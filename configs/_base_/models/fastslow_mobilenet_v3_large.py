# Two time scales in one backbone pass: a fast (short interval) and a slow (long interval) T=5
# hyperframe of the same moment, stacked into one T=10 hyperframe (fusion='early') for one
# HyperMobileNetV3-large, as in fastslow_r18.py (why: there).
model = dict(
    type='FastSlowRecognizer',
    streams=('fast', 'slow'),
    share_backbone=True,
    fusion='early',
    backbone=dict(
        type='HyperMobileNetV3',
        arch='large',
        num_frames=10,
        inflate_init='replicate',
        # centre frame + 4x frame differences (benchmarks/README.md); the same function as
        # stacked frames at initialisation from a 2D checkpoint, easier to train
        input_encoding='diff',
        diff_gain=4.0,
        pretrained=None),
    cls_head=dict(
        type='TSNHead',
        num_classes=400,
        in_channels=960,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.2,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(
        type='HyperframeDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375]),
    train_cfg=None,
    test_cfg=None)
