# Recognizer2D over hyperframes with mmpretrain's ViT-B/16 (12 layers, 768 wide), its patch
# embedding (a 16x16 stride-16 conv) inflated to 3T input channels by InflatedBackbone: every
# 16x16 patch token sees the T frames at once. The class token (768) goes to a TSN head.
# Set img_size to the training crop: a 224 checkpoint's position embedding is resized to it
# (bicubic) when the checkpoint loads.
# Normalisation: ImageNet mean/std, as DeiT-B / MAE ViT-B checkpoints expect; mmpretrain's
# 3rdparty in21k ViT-B checkpoints expect mean = std = 127.5 instead.
model = dict(
    type='Recognizer2D',
    backbone=dict(
        type='InflatedBackbone',
        num_frames=5,
        first_conv='patch_embed.projection',
        inflate_init='replicate',
        # centre frame + 4x frame differences (benchmarks/README.md); the same function as
        # stacked frames at initialisation from a 2D checkpoint, easier to train
        input_encoding='diff',
        diff_gain=4.0,
        backbone=dict(
            type='mmpretrain.VisionTransformer',
            arch='b',
            img_size=224,
            patch_size=16,
            drop_path_rate=0.1),
        pretrained=None),
    cls_head=dict(
        type='TSNHead',
        num_classes=400,
        in_channels=768,
        spatial_type='avg',
        consensus=dict(type='AvgConsensus', dim=1),
        dropout_ratio=0.5,
        init_std=0.01,
        average_clips='prob'),
    data_preprocessor=dict(
        type='HyperframeDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375]),
    train_cfg=None,
    test_cfg=None)
