# UCF101 (ucf101_split1_rgb.py) for the two-stream model: the same data, dataloaders and
# augmentation, with the staggered fast and slow windows of hyperframe_rgb_pipelines.py.
_base_ = ['ucf101_split1_rgb.py']

train_pipeline = _base_.fastslow_train_pipeline
val_pipeline = _base_.fastslow_val_pipeline
test_pipeline = _base_.fastslow_test_pipeline
train_dataloader = dict(dataset=dict(dataset=dict(pipeline=train_pipeline)))
val_dataloader = dict(dataset=dict(dataset=dict(pipeline=val_pipeline)))
test_dataloader = dict(dataset=dict(dataset=dict(pipeline=test_pipeline)))
