# mmaction2's TSM as the temporal baseline of the ablations: ResNetTSM-18 (shift 1/8 of the
# channels between the 5 segments at every block), same data, augmentation and schedule as TSN.
# ResNetTSM(pretrained=None) needs pretrained2d=False to skip its 2D-checkpoint loader.
_base_ = ['./tsn_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py']
model = dict(
    backbone=dict(
        type='ResNetTSM', pretrained2d=False, num_segments=_base_.num_frames, shift_div=8),
    cls_head=dict(
        type='TSMHead', num_segments=_base_.num_frames, is_shift=True, init_std=0.001))
