# Auxiliary supervision on the synthetic motion benchmark: the synthetic family's tuned config
# (../synthetic/hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py: HyperResNet-18 from
# scratch, T=5 picks 8/30 s apart, 'diff' input encoding, same data, augmentation and schedule)
# with a second classifier on the same pooled features that predicts the motion state of the
# hyperframe's centre frame (0 steady, 1 fast: the actor moves faster than 0.5 frame widths
# per second), loss weight 0.5. Prediction uses the main head only. The per-frame labels are
# written next to the clips by hyperframes_mm.datasets.synthetic.write_frame_labels(data_root)
# (or make_synthetic_dataset(..., frame_labels=True)); docs/scenarios.md.
_base_ = ['../synthetic/hyperframe_scratch-r18_1xb16-5x8x1-60e_synthetic-rgb.py']

model = dict(
    cls_head=dict(
        _delete_=True,
        type='AuxFrameHead',
        head={{_base_.model.cls_head}},
        aux_num_classes=2,
        aux_loss_weight=0.5))

# The base's training pipeline with the centre frame's motion state added after the sampler
# and carried into the data sample (tests/scenarios checks that nothing else differs).
train_pipeline = [
    _base_.train_init, _base_.hyperframe_sampler,
    dict(type='CenterFrameTarget', ann_file=f'{_base_.data_root}/train_frame_labels.jsonl',
         data_prefix=_base_.data_root), *_base_.train_transforms,
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', algorithm_keys=('aux_label', ))
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
