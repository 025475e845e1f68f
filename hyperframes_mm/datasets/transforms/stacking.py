"""Stack decoded frames into hyperframes: ``[num_hyperframes, 3T, H, W]``, frame-major."""
from typing import Dict, List

import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform

from .pipeline_info import stream_key


def stack_hyperframes(frames: np.ndarray, clip_len: int) -> np.ndarray:
    """Stack ``[N, H, W, C]`` frames into ``[N // clip_len, C * clip_len, H, W]``.

    Consecutive groups of ``clip_len`` frames become one hyperframe; channel ``C * t + c`` of a
    hyperframe is channel ``c`` of its frame ``t`` (frame-major), the order inflated kernels use.

    Args:
        frames (np.ndarray): ``[N, H, W, C]`` with N a multiple of ``clip_len``.
        clip_len (int): T, frames per hyperframe.

    Returns:
        np.ndarray: ``[N // T, C * T, H, W]``, same dtype, contiguous.
    """
    if frames.ndim != 4:
        raise ValueError(f'expected frames [N, H, W, C], got shape {frames.shape}')
    num, height, width, channels = frames.shape
    if clip_len < 1 or num % clip_len:
        raise ValueError(f'{num} frames cannot be split into hyperframes of {clip_len} frames')
    grouped = frames.reshape(num // clip_len, clip_len, height, width, channels)
    return np.ascontiguousarray(grouped.transpose(0, 1, 4, 2, 3).reshape(
        num // clip_len, clip_len * channels, height, width))


@TRANSFORMS.register_module()
class HyperframeStack(BaseTransform):
    """Stack the frames of each clip along channels into hyperframes.

    The frame list is laid out as mmaction2's transforms leave it: crop-major (``ThreeCrop`` /
    ``TenCrop`` repeat the whole list once per crop), then stream (in the order of
    ``hyperframe_streams``), then clip, then frame. Crops become extra hyperframes, so a test
    sample of K clips and 3 crops gives ``[3K, 3T, H, W]`` that ``Recognizer2D`` averages.

    Required Keys:

        - imgs (list[np.ndarray] | np.ndarray): frames of shape ``[H, W, C]``.
        - clip_len (int): T, when ``hyperframe_streams`` is absent.
        - num_clips (int): K, when ``hyperframe_streams`` is absent.
        - hyperframe_streams (list[dict], optional): one ``dict(name, clip_len, num_clips)`` per
          stream, written by ``HyperframeSampleFrames(streams=...)``.

    Modified Keys:

        - imgs: ``[crops * K, 3T, H, W]`` for a single-stream sample. Removed for a multi-stream
          sample.

    Added Keys:

        - imgs_<name> (np.ndarray): ``[crops * K, 3T, H, W]`` per stream of a multi-stream sample;
          collect them with ``PackActionInputs(collect_keys=('imgs_fast', 'imgs_slow'))``.
        - num_hyperframes (int): ``crops * K`` (of the first stream).
        - input_shape (tuple): shape of the (first stream's) hyperframe array.
    """

    def transform(self, results: Dict) -> Dict:
        """Replace the frame list by hyperframes (per stream for multi-stream samples)."""
        imgs = results['imgs']
        if isinstance(imgs, (list, tuple)):
            shapes = [np.shape(img) for img in imgs]
            for index, shape in enumerate(shapes):
                if shape != shapes[0]:
                    raise ValueError(
                        f'HyperframeStack: {results.get("filename", "sample")}: frame {index} '
                        f'has shape {shape} but frame 0 has {shapes[0]}; frames of a sample must '
                        'share one size (resize or crop them first)')
            frames = np.stack(imgs)
        else:
            frames = np.asarray(imgs)
        if frames.ndim == 3:
            frames = frames[..., None]
        streams = results.get('hyperframe_streams') or [
            dict(name=None, clip_len=results['clip_len'], num_clips=results['num_clips'])]
        per_crop = sum(s['clip_len'] * s['num_clips'] for s in streams)
        if len(frames) % per_crop:
            raise ValueError(
                f'HyperframeStack: {len(frames)} frames in {results.get("filename", "sample")} '
                f'are not a whole number of crops of {per_crop} frames (streams: {streams})')
        crops = frames.reshape((len(frames) // per_crop, per_crop) + frames.shape[1:])
        start = 0
        stacked: List[np.ndarray] = []
        for stream in streams:
            size = stream['clip_len'] * stream['num_clips']
            chunk = crops[:, start:start + size].reshape((-1, ) + frames.shape[1:])
            stacked.append(stack_hyperframes(chunk, stream['clip_len']))
            start += size
        if streams[0]['name'] is None:
            results['imgs'] = stacked[0]
        else:
            results.pop('imgs')
            for stream, array in zip(streams, stacked):
                results[stream_key(stream['name'])] = array
        results['num_hyperframes'] = len(stacked[0])
        results['input_shape'] = stacked[0].shape
        return results

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}()'

