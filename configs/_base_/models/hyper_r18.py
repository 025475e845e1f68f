# Recognizer2D over hyperframes: mmaction2's TSN (tsn_r18.py) with HyperResNet-18, whose conv1
# takes 3T channels, and the data preprocessor that tiles ImageNet's mean and std over them. Dim 1
# of the input holds hyperframes (test clips x crops), whose scores the TSN head averages,
# exactly as it averages TSN segments.
_base_ = ['tsn_r18.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='HyperResNet',
        depth=18,
        num_frames=5,
        inflate_init='replicate',
        # centre frame + 4x frame differences (benchmarks/README.md); the same function as
        # stacked frames at initialisation from a 2D checkpoint, easier to train
        input_encoding='diff',
        diff_gain=4.0,
        pretrained=None,
        norm_eval=False),
    data_preprocessor=dict(
        _delete_=True,
        type='HyperframeDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375]),
    train_cfg=None,
    test_cfg=None)
