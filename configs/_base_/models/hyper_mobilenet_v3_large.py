# Recognizer2D over hyperframes with mmpretrain's MobileNetV3-large, its stem conv widened to
# 3T channels; the last layer gives 960 channels. The head (lighter dropout for the smaller
# network) and data preprocessor are hyper_r18.py's.
_base_ = ['hyper_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='HyperMobileNetV3',
        arch='large',
        num_frames=5,
        inflate_init='replicate',
        input_encoding='diff',  # as hyper_r18.py
        diff_gain=4.0,
        pretrained=None),
    cls_head=dict(in_channels=960, dropout_ratio=0.2))
