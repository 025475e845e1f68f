from .frame_label_dataset import FrameLabelVideoDataset
from .transforms import *  # noqa: F401,F403
from .bad_video import (AnnotationError, BadVideoError, CheckedVideoDataset, GuardedDataset,
                        SafeDecordInit, validate_video_annotations)
