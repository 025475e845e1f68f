# Recognizer2D over hyperframes with mmpretrain's MobileNetV3-small: hyper_mobilenet_v3_large.py's
# model on the small network, whose last layer gives 576 channels. The CPU-first backbone: its
# cost hardly grows with T (only the 3x3 stem does; GFLOPs in the family model-zoo tables).
_base_ = ['hyper_mobilenet_v3_large.py']
model = dict(backbone=dict(arch='small'), cls_head=dict(in_channels=576))
