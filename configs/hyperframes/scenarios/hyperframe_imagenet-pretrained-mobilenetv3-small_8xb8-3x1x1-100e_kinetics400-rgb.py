# Scenario "real-time alerting on CPU": a model that scores every window of a live stream on a
# CPU (tools/stream_infer.py, the screening stage of a cascade). One T=3 hyperframe of
# consecutive frames through HyperMobileNetV3-small at 160x160, 8 clips per GPU; the stem
# inflated from the ImageNet kernel. Validation and test score the view a stream window gets:
# one clip, centre crop.
_base_ = [
    '../../_base_/models/hyper_mobilenet_v3_small.py', '../../_base_/datasets/kinetics400_rgb.py',
    '../../_base_/schedules/sgd_warmup_cosine_100e.py', '../../_base_/default_runtime.py'
]

# set once: T, the input size and the views, which every pipeline below reads
num_frames = 3
input_size = 160
test_scale = input_size * 8 // 7
val_clips = test_clips = 1
model = dict(
    backbone=dict(num_frames=num_frames,
                  pretrained='checkpoints/mobilenet_v3_small-imagenet.pth'),
    cls_head=dict(num_classes=400))

sampler = dict(type='HyperframeSampleFrames', num_frames=num_frames, interval=1)
train_pipeline = [
    _base_.train_init, sampler,
    dict(type='DecordDecode'),
    dict(_base_.augment, size=input_size), *_base_.hyperframe_format
]
val_pipeline = [
    _base_.test_init,
    dict(sampler, num_clips=test_clips, test_mode=True),
    dict(type='DecordDecode'),
    dict(type='Resize', scale=(-1, test_scale)),
    dict(type='CenterCrop', crop_size=input_size), *_base_.hyperframe_format
]
test_pipeline = val_pipeline
train_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(batch_size=8, dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
# mmaction2's MobileNetV2 TSM recipe (SGD lr 0.02 at a total batch of 128, weight decay 2e-5,
# gradient clip 20) times 0.6 as for the other ImageNet-initialised models, scaled linearly to
# 8 GPUs x 8. With 8 clips per GPU the batch-norm statistics are noisy: on several GPUs set
# model.backbone.norm_cfg=dict(type='SyncBN', eps=0.001, momentum=0.01).
optim_wrapper = dict(
    optimizer=dict(lr=0.006, weight_decay=2e-5), clip_grad=dict(max_norm=20))
auto_scale_lr = dict(base_batch_size=64)
