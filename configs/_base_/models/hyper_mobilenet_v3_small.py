# Recognizer2D over hyperframes with mmpretrain's MobileNetV3-small, its stem conv widened to
# 3T channels; the last layer gives 576 channels. The CPU-first backbone: its cost hardly grows
# with T (only the 3x3 stem does; GFLOPs in the family model-zoo tables).
model = dict(
    type='Recognizer2D',
    backbone=dict(
        type='HyperMobileNetV3',
        arch='small',
        num_frames=5,
        inflate_init='replicate',
        # centre frame + 4x frame differences (benchmarks/README.md); the same function as
        # stacked frames at initialisation from a 2D checkpoint, easier to train
        input_encoding='diff',
        diff_gain=4.0,
        pretrained=None),
    cls_head=dict(
        type='TSNHead',
        num_classes=400,
        in_channels=576,
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
