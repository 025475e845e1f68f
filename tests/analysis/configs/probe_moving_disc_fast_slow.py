# The moving-disc probe config as a two-stream model: fast (1 frame apart) and slow (3 apart)
# hyperframes of T=5 through one shared HyperResNet, features concatenated.
_base_ = ['probe_moving_disc.py']

model = dict(
    _delete_=True,
    type='FastSlowRecognizer',
    streams=('fast', 'slow'),
    backbone=dict(type='HyperResNet', depth=18, num_frames=5, num_stages=2, out_indices=(1, ),
                  strides=(1, 2), dilations=(1, 1)),
    cls_head=dict(type='TSNHead', num_classes=4, in_channels=256, dropout_ratio=0.0,
                  average_clips='prob'),
    data_preprocessor=dict(type='HyperframeDataPreprocessor', mean=[128.0] * 3,
                           std=[64.0] * 3))
test_pipeline = [
    dict(type='DecordInit'),
    dict(type='HyperframeSampleFrames', num_frames=5, num_clips=2, test_mode=True,
         streams=dict(fast=dict(interval=1), slow=dict(interval=3))),
    dict(type='DecordDecode'),
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
