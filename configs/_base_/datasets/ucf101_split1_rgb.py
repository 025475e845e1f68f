# UCF101, official split 1, as mmaction2 lays it out (tools/data/ucf101: videos under
# data/ucf101/videos/<Class>/<name>.avi, lists "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 0").
# Pipelines: those of hyperframe_rgb_pipelines.py (T=5, frames 2 apart, one augmentation draw per
# sample). The flip has no flip_label_map: no UCF101 class depends on left/right, so a flipped clip
# keeps its label. Dataloaders: hyperframe_rgb_dataloaders.py's; a video that fails to decode stops
# the run naming the file (UCF101 is small and clean: a failure is worth a stop).
_base_ = ['./hyperframe_rgb_dataloaders.py']
data_root = 'data/ucf101/videos'
split = 1  # official train/test splits: 1, 2, 3
ann_file_train = f'data/ucf101/ucf101_train_split_{split}_videos.txt'
ann_file_val = f'data/ucf101/ucf101_val_split_{split}_videos.txt'

# No num_classes on the datasets: a config carried to another data set changes the head's
# class count, and a count left here would refuse its labels past this one (the runner checks
# every list's labels against the head before a loop runs; tools/doctor.py --data too).
train_dataloader = dict(
    dataset=dict(
        dataset=dict(ann_file=ann_file_train, data_prefix=dict(video=data_root))))
val_dataloader = dict(
    dataset=dict(
        dataset=dict(ann_file=ann_file_val, data_prefix=dict(video=data_root))))
test_dataloader = val_dataloader  # the same videos; the base sets the test's pipeline and batch
