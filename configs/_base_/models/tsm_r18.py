# mmaction2's TSM on a ResNet-18: tsn_r18.py with ResNetTSM (1/8 of the channels of every block
# shifted between the T segments) and the TSM head. Set num_segments (backbone and head) to the
# pipeline's T. ResNetTSM(pretrained=None) needs pretrained2d=False to skip its 2D-checkpoint
# loader.
_base_ = ['tsn_r18.py']
model = dict(
    backbone=dict(type='ResNetTSM', pretrained2d=False, num_segments=5, shift_div=8),
    cls_head=dict(
        type='TSMHead', num_segments=5, is_shift=True, dropout_ratio=0.5, init_std=0.001))
