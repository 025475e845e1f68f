# Finding num-frames, early fusion: two T=5 streams stacked into one hyperframe need a T=10
# backbone; this one is built for one stream's T.
_base_ = ['fast_slow_num_frames.py']
model = dict(
    share_backbone=True,
    fusion='early',
    backbone=dict(_delete_=True, type='HyperResNet', depth=18, num_frames=5),
    cls_head=dict(in_channels=512))
