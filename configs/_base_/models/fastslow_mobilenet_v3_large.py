# Two time scales in one backbone pass: a fast (short interval) and a slow (long interval) T=5
# hyperframe of the same moment, stacked into one T=10 hyperframe (fusion='early') for one
# HyperMobileNetV3-large, as in fastslow_r18.py (why: there).
_base_ = ['hyper_mobilenet_v3_large.py']
model = dict(
    type='FastSlowRecognizer',
    streams=('fast', 'slow'),
    share_backbone=True,
    fusion='early',
    backbone=dict(num_frames=10))
