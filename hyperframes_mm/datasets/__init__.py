from .frame_label_dataset import FrameLabelVideoDataset
from .transforms import *  # noqa: F401,F403
