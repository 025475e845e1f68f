# Kinetics-400 as mmaction2 lays it out (tools/data/kinetics: videos under
# data/kinetics400/videos_train and videos_val, lists "<name>.mp4 <label>";
# mmaction2 resizes the videos to a 256 or 320 short side first, which decodes much faster).
# Pipelines: those of hyperframe_rgb_pipelines.py (T=5, frames 2 apart, one augmentation draw per
# sample). The flip has no flip_label_map: no Kinetics-400 class names a left/right direction, so a
# flipped clip keeps its label. Dataloaders: hyperframe_rgb_dataloaders.py's. Every copy of
# Kinetics has some videos that fail to decode, so training skips them (GuardedDataset's
# on_bad_video='skip'): a bad video is logged, replaced by a random other sample and never
# decoded again. Validation and test stop on one instead (on_bad_video='raise'): a replaced test
# video would count another video's prediction twice; remove the file the error names from the
# list. All three check the list on construction (bad labels raise; missing videos raise, or
# with 'skip' are listed in a warning and never drawn).
_base_ = ['./hyperframe_rgb_dataloaders.py']
data_root = 'data/kinetics400/videos_train'
data_root_val = 'data/kinetics400/videos_val'
ann_file_train = 'data/kinetics400/kinetics400_train_list_videos.txt'
ann_file_val = 'data/kinetics400/kinetics400_val_list_videos.txt'

# No num_classes on the datasets: a config carried to another data set changes the head's
# class count, and a count left here would refuse its labels past this one (the runner checks
# every list's labels against the head before a loop runs; tools/doctor.py --data too).
train_dataloader = dict(
    dataset=dict(
        on_bad_video='skip',
        dataset=dict(ann_file=ann_file_train, data_prefix=dict(video=data_root))))
val_dataloader = dict(
    dataset=dict(
        dataset=dict(ann_file=ann_file_val, data_prefix=dict(video=data_root_val))))
test_dataloader = val_dataloader  # the same videos; the base sets the test's pipeline and batch
