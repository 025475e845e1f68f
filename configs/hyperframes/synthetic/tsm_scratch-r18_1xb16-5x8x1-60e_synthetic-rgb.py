# mmaction2's TSM on the recipe's frames: ResNetTSM-18 (shift 1/8 of the channels between the 5
# frames at every block) fed the same 5 picks as the hyperframe recipe (8/30 s apart, one random
# window per sample, 3 test clips) instead of TSN-style segments, whose random frame per segment
# scatters the spacing between frames in training. The fair temporal baseline for motion.
_base_ = ['./tsm_scratch-r18_1xb16-1x1x5-60e_synthetic-rgb.py']
from hyperframes_mm.config_parts import dataloaders, pipelines  # after _base_ (old-style config)
picks = dict(type='HyperframeSampleFrames', num_frames=_base_.num_frames, interval=8 / 30,
             time_based=True)
# the family's pipelines (its dataset base's pipeline_parts) with these picks, as TSM's input
train_pipeline, val_pipeline, test_pipeline = pipelines(
    _base_.pipeline_parts, picks, _base_.segment_format)
train_dataloader, val_dataloader, test_dataloader = dataloaders(
    train_pipeline, val_pipeline, test_pipeline)
