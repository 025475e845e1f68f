"""Stack decoded frames into hyperframes: ``[num_hyperframes, 3T, H, W]``, frame-major."""
from typing import Dict, List, Sequence

import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform

from ...utils import positive_int
from ...utils.checks import flag
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


def fuse_streams(stacked: Sequence[np.ndarray], names: Sequence[str]) -> np.ndarray:
    """The streams' hyperframes as one wider hyperframe each: ``[N, C * (T_1 + ... + T_S), H, W]``.

    Hyperframe ``n`` of every stream (the same clip and crop) is concatenated along channels in
    stream order, so the fused hyperframe is frame-major over the frames of all the streams:
    stream 1's T_1 frames, then stream 2's, ... (what one backbone pass over both time scales
    reads: early fusion).

    Args:
        stacked (Sequence[np.ndarray]): per stream, ``[N, C * T_s, H, W]`` with one N and size.
        names (Sequence[str]): the streams' names, for the error.

    Returns:
        np.ndarray: ``[N, C * sum(T_s), H, W]``, contiguous.
    """
    shapes = {name: array.shape for name, array in zip(names, stacked)}
    if len({(shape[0], ) + shape[2:] for shape in shapes.values()}) != 1:
        raise ValueError(f'HyperframeStack(fuse_streams=True): the streams need the same number '
                         f'of hyperframes and one frame size to be fused, got {shapes}')
    return np.ascontiguousarray(np.concatenate(stacked, axis=1))


@TRANSFORMS.register_module()
class HyperframeStack(BaseTransform):
    """Stack the frames of each clip along channels into hyperframes.

    The frame list is laid out as mmaction2's transforms leave it: crop-major (``ThreeCrop`` /
    ``TenCrop`` repeat the whole list once per crop), then stream (in the order of
    ``hyperframe_streams``), then clip, then frame. Crops become extra hyperframes, so a test
    sample of K clips and 3 crops gives ``[3K, 3T, H, W]`` that ``Recognizer2D`` averages.

    A multi-stream sample gives one array per stream (for ``FastSlowRecognizer``'s separate
    passes), or with ``fuse_streams=True`` one hyperframe of all the streams' frames
    (:func:`fuse_streams`: early fusion, for ``Recognizer2D`` and a backbone whose T is the
    streams' total).

    With ``segments=S`` each clip's T sampled frames become S consecutive hyperframes of T / S
    frames (early part of the clip first), the segments a temporal shift exchanges features
    between (``HyperMobileNetV2(num_segments=S)`` with mmaction2's ``TSMHead``): sample T = S x
    the hyperframe's frames, e.g. 10 uniform picks for two 5-frame segments.

    Args:
        fuse_streams (bool): stack a multi-stream sample's streams into one hyperframe under
            ``imgs``. Defaults to False.
        segments (int): hyperframes each clip's frames are split into, in time order; single
            stream only. Defaults to 1.

    Required Keys:

        - imgs (list[np.ndarray] | np.ndarray): frames of shape ``[H, W, C]``.
        - clip_len (int): T, when ``hyperframe_streams`` is absent.
        - num_clips (int): K, when ``hyperframe_streams`` is absent.
        - hyperframe_streams (list[dict], optional): one ``dict(name, clip_len, num_clips)`` per
          stream, written by ``HyperframeSampleFrames(streams=...)``.

    Modified Keys:

        - imgs: ``[crops * K * S, 3T / S, H, W]`` for a single-stream sample (S: ``segments``);
          for a multi-stream sample with ``fuse_streams``, ``[crops * K, 3 * (T_1 + ... + T_S),
          H, W]`` (S there counts streams), else removed.

    Added Keys:

        - imgs_<name> (np.ndarray): ``[crops * K, 3T, H, W]`` per stream of a multi-stream sample
          without ``fuse_streams``; collect them with
          ``PackActionInputs(collect_keys=('imgs_fast', 'imgs_slow'))``.
        - num_hyperframes (int): ``crops * K`` (of the first stream).
        - input_shape (tuple): shape of the ``imgs`` array (the first stream's, unfused).
    """

    def __init__(self, fuse_streams: bool = False, segments: int = 1) -> None:
        # a config's 'no' is a true string and would fuse the streams
        self.fuse_streams = flag(fuse_streams, 'fuse_streams', 'HyperframeStack')
        self.segments = positive_int(segments, 'segments', 'HyperframeStack')

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
        if frames.ndim != 4 or frames.shape[-1] not in (1, 3):
            # mmaction2's DecordDecode(mode='efficient') reads with decord 0.6's sequential
            # reader, which returns 4- or 6-channel garbage at some narrow widths: the data
            # preprocessor then refused a channel count, naming no file
            raise ValueError(
                f'HyperframeStack: {results.get("filename", "sample")}: frames of shape '
                f'{frames.shape[1:]} are not H x W x 3 (RGB) or H x W x 1 (grey); decord 0.6 '
                'decodes some narrow widths (16, 24, 48, 72 pixels among them) to garbage in '
                'DecordDecode(mode=\'efficient\'): re-encode the video at another width, or '
                'decode it in mode=\'accurate\'')
        streams = results.get('hyperframe_streams') or [
            dict(name=None, clip_len=results['clip_len'], num_clips=results['num_clips'])]
        if self.segments > 1:
            if streams[0]['name'] is not None:
                raise ValueError('HyperframeStack: segments splits a single-stream sample; '
                                 f'this one has streams {[s["name"] for s in streams]}')
            if streams[0]['clip_len'] % self.segments:
                raise ValueError(f'HyperframeStack: {streams[0]["clip_len"]} frames a clip '
                                 f'cannot be split into {self.segments} segments; sample a '
                                 'multiple of segments')
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
            stacked.append(stack_hyperframes(chunk, stream['clip_len'] // self.segments))
            start += size
        if streams[0]['name'] is None:
            results['imgs'] = stacked[0]
        elif self.fuse_streams:
            stacked = [fuse_streams(stacked, [stream['name'] for stream in streams])]
            results['imgs'] = stacked[0]
        else:
            results.pop('imgs')
            for stream, array in zip(streams, stacked):
                results[stream_key(stream['name'])] = array
        results['num_hyperframes'] = len(stacked[0])
        results['input_shape'] = stacked[0].shape
        return results

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(fuse_streams={self.fuse_streams}, '
                f'segments={self.segments})')

