# Recognizer2D over hyperframes with mmpretrain's ViT-B/16 (12 layers, 768 wide), its patch
# embedding (a 16x16 stride-16 conv) inflated to 3T input channels by InflatedBackbone: every
# 16x16 patch token sees the T frames at once. The class token (768) goes to hyper_r18.py's TSN
# head (more dropout for the larger network), through hyper_r18.py's data preprocessor.
# Set img_size to the training crop: a 224 checkpoint's position embedding is resized to it
# (bicubic) when the checkpoint loads.
# Normalisation: ImageNet mean/std, as DeiT-B / MAE ViT-B checkpoints expect; mmpretrain's
# 3rdparty in21k ViT-B checkpoints expect mean = std = 127.5 instead.
_base_ = ['hyper_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='InflatedBackbone',
        num_frames=5,
        first_conv='patch_embed.projection',
        inflate_init='replicate',
        input_encoding='diff',  # as hyper_r18.py
        diff_gain=4.0,
        backbone=dict(
            type='mmpretrain.VisionTransformer',
            arch='b',
            img_size=224,
            patch_size=16,
            drop_path_rate=0.1),
        pretrained=None),
    cls_head=dict(in_channels=768, dropout_ratio=0.5))
