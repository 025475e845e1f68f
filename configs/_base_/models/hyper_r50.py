# Recognizer2D over hyperframes with a ResNet-50 whose conv1 takes 3T channels: hyper_r18.py's
# model on the deeper network, whose last stage gives the head 2048 channels.
_base_ = ['hyper_r18.py']
model = dict(backbone=dict(depth=50), cls_head=dict(in_channels=2048))
