# Recognizer2D over hyperframes with mmaction2's own MobileNetV2, conv1 widened to 3T channels:
# it reads the 2D ImageNet file mmaction2's TSN/TSM-MobileNetV2 read (docs/backbones.md). The
# head and data preprocessor are hyper_r18.py's; conv2 gives the head 1280 channels.
_base_ = ['hyper_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='HyperMobileNetV2',
        num_frames=5,
        inflate_init='replicate',
        input_encoding='diff',  # as hyper_r18.py
        diff_gain=4.0,
        pretrained=None,
        norm_eval=False),
    cls_head=dict(in_channels=1280))
