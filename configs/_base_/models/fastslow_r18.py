# Two time scales in one backbone pass: a fast (short interval) and a slow (long interval) T=5
# hyperframe of the same moment, stacked into one T=10 hyperframe (fusion='early') for one
# HyperResNet-18, so the second scale costs a wider conv1 rather than a second backbone pass. On
# real video (the UTD-MHAD fast/slow ablation in benchmarks/README.md) this beat two passes whose
# features are concatenated (fusion='concat', num_frames=5, in_channels=1024).
_base_ = ['hyper_r18.py']
model = dict(
    type='FastSlowRecognizer',
    streams=('fast', 'slow'),
    share_backbone=True,
    fusion='early',
    backbone=dict(num_frames=10))
