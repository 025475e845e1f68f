"""Per-sample targets read from per-frame labels: the label of the sampled hyperframe's centre.

An auxiliary head (``AuxFrameHead``) learns to predict a cheap per-frame property of the centre
frame (an event's phase, a motion state) next to the clip's class. :func:`center_pick` finds
that frame from what the sampler wrote; :class:`CenterFrameTarget` looks its label up in a
frame-label annotation file (docs/frame_labels.md) and puts it in ``results`` for
``PackActionInputs(algorithm_keys=(...))`` to carry into the data sample.
"""
import os.path as osp
from typing import Dict, Optional

import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform

from ..frame_label_dataset import load_frame_annotations


def center_pick(frame_inds: np.ndarray, clip_len: int, num_clips: int,
                start_index: int = 0) -> int:
    """The middle frame of the sampled picks: pick ``T // 2`` of clip ``K // 2``.

    Only the first ``K * T`` picks are read (the first stream's, when the sampler wrote
    several streams one after the other); for an even T it is the later of the two middle
    picks, the frame ``center`` inflation puts the 2D kernel on.

    Args:
        frame_inds (np.ndarray): the sampler's picks, clip-major.
        clip_len (int): T of the (first) stream.
        num_clips (int): K.
        start_index (int): what the sampler added to every index. Defaults to 0.

    Returns:
        int: a frame index of the video.

    Raises:
        ValueError: fewer than ``K * T`` picks.
    """
    frame_inds = np.asarray(frame_inds).reshape(-1)
    if clip_len < 1 or num_clips < 1 or len(frame_inds) < clip_len * num_clips:
        raise ValueError(f'center_pick: {len(frame_inds)} picks cannot hold {num_clips} clips '
                         f'of {clip_len} frames')
    clips = frame_inds[:clip_len * num_clips].reshape(num_clips, clip_len)
    return int(clips[num_clips // 2, clip_len // 2]) - int(start_index)


@TRANSFORMS.register_module()
class CenterFrameTarget(BaseTransform):
    """Put the per-frame label of a sample's centre frame into ``results``.

    The labels come from a frame-label annotation file (JSON lines, docs/frame_labels.md):
    ``FrameLabelVideoDataset``'s annotations, or the synthetic benchmark's
    ``<split>_frame_labels.jsonl`` motion states. A video is found by its path:
    ``data_prefix`` joined with the annotation's ``video`` must name the same file as the
    sample's ``filename`` (give the dataset's ``data_prefix['video']``).

    The centre frame is ``center_frame`` when the sample has one (frame-label datasets set it
    and the sampler centres its clips on it), else the middle pick of the sampled hyperframe
    (:func:`center_pick`). Place the transform after the sampler, and collect the target with
    ``PackActionInputs(algorithm_keys=('aux_label', ))``.

    Required Keys:

        - filename (str): the video, looked up in the annotation.
        - frame_inds (np.ndarray): the sampler's picks (without ``center_frame``).
        - clip_len (int): T of the first stream (without ``center_frame``).
        - num_clips (int): K (without ``center_frame``).
        - start_index (int, optional): added to the picks by the sampler. Defaults to 0.
        - center_frame (int, optional): the sample's centre frame.

    Added Keys:

        - aux_label (int): the centre frame's label (the key is ``key``).

    Args:
        ann_file (str): the frame-label annotation file.
        data_prefix (str): the directory its ``video`` paths are relative to. Defaults to ''.
        key (str): the results key to write. Defaults to ``'aux_label'``.
        background_label (int): label of frames no segment covers (annotations given as
            ``segments``). Defaults to 0.

    Raises:
        ValueError: from the annotation file, naming ``file:line``.
    """

    def __init__(self,
                 ann_file: str,
                 data_prefix: str = '',
                 key: str = 'aux_label',
                 background_label: int = 0) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError(f'CenterFrameTarget: key must be a non-empty string, got {key!r}')
        self.ann_file = ann_file
        self.data_prefix = data_prefix
        self.key = key
        self.background_label = background_label
        self.labels: Dict[str, np.ndarray] = {
            self._normalise(osp.join(data_prefix, annotation.video)): annotation.labels
            for annotation in load_frame_annotations(ann_file, background_label)}

    @staticmethod
    def _normalise(path: str) -> str:
        return osp.normpath(str(path))

    def _center(self, results: Dict, filename: str) -> int:
        center: Optional[int] = results.get('center_frame')
        if center is not None:
            return int(center)
        missing = [k for k in ('frame_inds', 'clip_len', 'num_clips') if k not in results]
        if missing:
            raise KeyError(f'CenterFrameTarget: {filename}: results lack {missing}; put it after '
                           'the sampler (HyperframeSampleFrames or SampleFrames)')
        return center_pick(results['frame_inds'], int(results['clip_len']),
                           int(results['num_clips']), int(results.get('start_index', 0)))

    def transform(self, results: Dict) -> Dict:
        """Add the centre frame's label under ``key``."""
        filename = str(results.get('filename', ''))
        labels = self.labels.get(self._normalise(filename))
        if labels is None:
            raise KeyError(f'CenterFrameTarget: {filename!r} is not annotated in '
                           f'{self.ann_file} (with data_prefix={self.data_prefix!r})')
        center = self._center(results, filename)
        if not 0 <= center < len(labels):
            raise ValueError(f'CenterFrameTarget: {filename}: centre frame {center} is outside '
                             f'the {len(labels)} frames {self.ann_file} labels')
        results[self.key] = int(labels[center])
        return results

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(ann_file={self.ann_file!r}, '
                f'data_prefix={self.data_prefix!r}, key={self.key!r}, '
                f'background_label={self.background_label})')
