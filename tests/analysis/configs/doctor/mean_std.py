# Finding mean-std: 6 values are neither one frame's (3) nor one per channel (15).
_base_ = ['good.py']
model = dict(data_preprocessor=dict(mean=[123.675, 116.28, 103.53] * 2,
                                    std=[58.395, 57.12, 57.375] * 2))
