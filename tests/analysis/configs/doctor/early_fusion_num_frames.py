# Finding num-frames, early fusion: two T=5 streams stacked into one hyperframe
# (HyperframeStack(fuse_streams=True)) need a T=10 backbone; this one is built for one stream's T.
_base_ = ['fast_slow_num_frames.py']
model = dict(
    _delete_=True,
    type='Recognizer2D',
    backbone=dict(type='HyperResNet', depth=18, num_frames=5),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=512, average_clips='prob'),
    data_preprocessor={{_base_.model.data_preprocessor}})
fused_format = [dict(type='HyperframeStack', fuse_streams=True), dict(type='PackActionInputs')]
train_pipeline = [*_base_.train_pipeline[:-2], *fused_format]
test_pipeline = [*_base_.test_pipeline[:-2], *fused_format]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
