"""One augmentation draw per sample, applied to every frame of every stream of a hyperframe.

A hyperframe only shows motion if its T frames stay aligned: cropping, scaling, flipping or
colouring each frame differently invents motion that is not in the video. The parameter draws
(``draw_crop_box``, ``draw_color_params``) and the pixel work (``crop_resize``,
``adjust_color``) are plain functions; :class:`ConsistentClipAugment` draws once per call and
applies the same parameters to all frames (or per frame, with ``independent=True``, to measure
what misalignment costs).

Colour jitter is our own: mmaction2's ``ColorJitter`` overflows uint8 under numpy 2 and fixes
its order of operations once per run. Ours works on uint8 with OpenCV look-up tables and colour
conversions (no float copy of the frames), clamps after every operation and draws the order per
call, like torchvision's ``ColorJitter``.
"""
import logging
from typing import Dict, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np
from mmaction.registry import TRANSFORMS
from mmcv.transforms import BaseTransform
from mmengine.logging import print_log

from ...utils.checks import finite_number, flag

COLOR_OPS = ('brightness', 'contrast', 'saturation', 'hue')
#: ITU-R BT.601 luma weights (R, G, B), as torchvision and PIL use for grayscale.
LUMA = (0.299, 0.587, 0.114)
Box = Tuple[int, int, int, int]


def to_rgb_frames(frames: Sequence[np.ndarray], name: str) -> Tuple[List[np.ndarray],
                                                                     Optional[str]]:
    """Check that frames are uint8 images of one size; convert grayscale / RGBA to RGB.

    Args:
        frames (Sequence[np.ndarray]): ``[H, W]``, ``[H, W, 1]``, ``[H, W, 3]`` or
            ``[H, W, 4]`` uint8 frames.
        name (str): the video, for error messages.

    Returns:
        tuple: the ``[H, W, 3]`` frames, and ``'grayscale'`` / ``'RGBA'`` when they were
        converted (None otherwise).

    Raises:
        ValueError: naming ``name``: no frames, not uint8, an unknown channel count, or frames
        of different sizes.
    """
    if len(frames) == 0:
        raise ValueError(f'{name}: no frames to augment')
    frames = [np.asarray(frame) for frame in frames]
    first = frames[0]
    for index, frame in enumerate(frames):
        if frame.dtype != np.uint8:
            raise ValueError(f'{name}: frame {index} is {frame.dtype}; ConsistentClipAugment '
                             'takes decoded uint8 frames (put it before any normalisation)')
        if frame.ndim not in (2, 3) or (frame.ndim == 3 and frame.shape[2] not in (1, 3, 4)):
            raise ValueError(f'{name}: frame {index} has shape {frame.shape}; expected '
                             '[H, W, 3] RGB (or [H, W] / [H, W, 1] grayscale, [H, W, 4] RGBA)')
        if frame.shape[:2] != first.shape[:2]:
            raise ValueError(f'{name}: frames change size inside the video: frame 0 is '
                             f'{first.shape[0]}x{first.shape[1]}, frame {index} is '
                             f'{frame.shape[0]}x{frame.shape[1]} (HxW). Decode with '
                             'DecordDecode (it rescales to the first size) or re-encode the '
                             'video at one size')
        if frame.shape != first.shape:
            raise ValueError(f'{name}: frame {index} has shape {frame.shape} but frame 0 has '
                             f'{first.shape}: mixed channel counts')
    channels = 1 if first.ndim == 2 else first.shape[2]
    if channels == 3:
        return frames, None
    code = cv2.COLOR_GRAY2RGB if channels == 1 else cv2.COLOR_RGBA2RGB
    return [cv2.cvtColor(frame, code) for frame in frames], 'grayscale' if channels == 1 else 'RGBA'


def _randint(rng, high: int) -> int:
    """A uniform int in ``[0, high]`` from any numpy random source with ``random()``."""
    return min(int(rng.random() * (high + 1)), high)


def random_resized_box(height: int, width: int, area_range: Tuple[float, float],
                       aspect_ratio_range: Tuple[float, float], rng,
                       max_attempts: int = 10) -> Box:
    """A random crop box of random area and aspect ratio (Inception / torchvision style).

    Up to ``max_attempts`` draws of an area fraction in ``area_range`` and a log-uniform aspect
    ratio (w/h) in ``aspect_ratio_range``; the first box that fits is placed at a random
    position. If none fits, the largest centred box within the ratio range.

    Args:
        height (int): frame height.
        width (int): frame width.
        area_range (tuple[float, float]): fraction of the frame's area.
        aspect_ratio_range (tuple[float, float]): width / height of the box.
        rng: numpy random source (``np.random``, a ``Generator`` or ``RandomState``).
        max_attempts (int): draws before the fallback. Defaults to 10.

    Returns:
        tuple[int, int, int, int]: ``(x1, y1, x2, y2)``, exclusive ends.
    """
    area = height * width
    log_ratio = np.log(aspect_ratio_range)
    for _ in range(max_attempts):
        target = area * rng.uniform(*area_range)
        ratio = float(np.exp(rng.uniform(*log_ratio)))
        box_w = int(round(np.sqrt(target * ratio)))
        box_h = int(round(np.sqrt(target / ratio)))
        if 0 < box_w <= width and 0 < box_h <= height:
            y1 = _randint(rng, height - box_h)
            x1 = _randint(rng, width - box_w)
            return x1, y1, x1 + box_w, y1 + box_h
    in_ratio = width / height
    if in_ratio < aspect_ratio_range[0]:
        box_w, box_h = width, int(round(width / aspect_ratio_range[0]))
    elif in_ratio > aspect_ratio_range[1]:
        box_w, box_h = int(round(height * aspect_ratio_range[1])), height
    else:
        box_w, box_h = width, height
    x1, y1 = (width - box_w) // 2, (height - box_h) // 2
    return x1, y1, x1 + box_w, y1 + box_h


def scale_jitter_box(height: int, width: int, scale_range: Tuple[int, int],
                     size: Tuple[int, int], rng) -> Tuple[Box, float]:
    """Short-side scale jitter + a random crop of ``size`` pixels, as one box in the frame.

    The frame is (virtually) resized so its short side is ``s ~ U(scale_range)``, then a
    ``size`` crop is taken at a random position; that crop is the box returned, in the
    original frame's pixels, so the caller resizes only once.

    Args:
        height (int): frame height.
        width (int): frame width.
        scale_range (tuple[int, int]): short side after scaling, in pixels.
        size (tuple[int, int]): ``(w, h)`` of the crop after scaling.
        rng: numpy random source.

    Returns:
        tuple: ``((x1, y1, x2, y2), s)``.
    """
    short = rng.uniform(*scale_range)
    factor = min(height, width) / short
    box_w = min(width, max(1, int(round(size[0] * factor))))
    box_h = min(height, max(1, int(round(size[1] * factor))))
    x1 = _randint(rng, width - box_w)
    y1 = _randint(rng, height - box_h)
    return (x1, y1, x1 + box_w, y1 + box_h), float(short)


def draw_color_params(rng, brightness: float = 0., contrast: float = 0., saturation: float = 0.,
                      hue: float = 0.) -> Dict:
    """Draw torchvision-style colour jitter factors and a random order of the enabled ops.

    Brightness, contrast and saturation factors are uniform in ``[max(0, 1 - x), 1 + x]``, the
    hue shift in ``[-hue, hue]`` (a fraction of the colour circle); a strength of 0 disables the
    op (factor 1, shift 0, left out of ``color_order``).

    Returns:
        dict: ``brightness``, ``contrast``, ``saturation`` (factors), ``hue`` (shift) and
        ``color_order`` (list of op names, in the order they are applied).
    """
    strengths = dict(brightness=brightness, contrast=contrast, saturation=saturation, hue=hue)
    params = dict(brightness=1.0, contrast=1.0, saturation=1.0, hue=0.0)
    enabled = [op for op in COLOR_OPS if strengths[op] > 0]
    for op in enabled:
        value = strengths[op]
        params[op] = float(rng.uniform(-value, value) if op == 'hue' else
                           rng.uniform(max(0.0, 1 - value), 1 + value))
    params['color_order'] = [enabled[i] for i in rng.permutation(len(enabled))]
    return params


def crop_resize(frames: Sequence[np.ndarray], box: Box,
                size: Optional[Tuple[int, int]]) -> np.ndarray:
    """Crop every frame to ``box`` and resize it to ``size`` (bilinear), in one pass per frame.

    Args:
        frames (Sequence[np.ndarray]): ``[H, W, 3]`` uint8 frames of one size.
        box (tuple): ``(x1, y1, x2, y2)``.
        size (tuple[int, int], optional): ``(w, h)`` output; None keeps the box's size.

    Returns:
        np.ndarray: ``[N, h, w, 3]`` uint8, contiguous.
    """
    x1, y1, x2, y2 = box
    out_w, out_h = (x2 - x1, y2 - y1) if size is None else size
    out = np.empty((len(frames), out_h, out_w, frames[0].shape[2]), np.uint8)
    for index, frame in enumerate(frames):
        crop = frame[y1:y2, x1:x2]
        if crop.shape[:2] == (out_h, out_w):
            out[index] = crop
        else:
            cv2.resize(crop, (out_w, out_h), dst=out[index], interpolation=cv2.INTER_LINEAR)
    return out


def flip_frames(batch: np.ndarray) -> np.ndarray:
    """Mirror ``[N, H, W, C]`` frames left-right with OpenCV: numpy's negative-stride copy of
    interleaved pixels is many times slower (``benchmarks/bench_pipeline.py`` times the data
    path)."""
    out = np.empty_like(batch)
    for frame, flipped in zip(batch, out):
        cv2.flip(frame, 1, dst=flipped)
    return out


def _lut(table: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(table + 0.5), 0, 255).astype(np.uint8)


def adjust_color(batch: np.ndarray, params: Dict) -> np.ndarray:
    """Apply the colour ops of ``params`` in ``params['color_order']`` to ``[N, H, W, 3]`` uint8.

    Each op clamps to ``[0, 255]`` and rounds to uint8, as torchvision's PIL path does:

    - brightness ``b``: ``b * x``;
    - contrast ``c``: ``c * x + (1 - c) * m``, ``m`` the mean grey level of each frame;
    - saturation ``s``: ``s * x + (1 - s) * grey(x)`` per pixel;
    - hue ``h``: the HSV hue rotated by ``h`` turns (8-bit hue, as PIL).

    Returns:
        np.ndarray: the adjusted batch (a new array when any op ran; ``batch`` otherwise).
    """
    num, height, width, _ = batch.shape
    tall = batch.reshape(num * height, width, 3)
    for op in params['color_order']:
        value = params[op]
        if op == 'brightness':
            tall = cv2.LUT(tall, _lut(np.arange(256) * value))
        elif op == 'contrast':
            frames = tall.reshape(num, height, width, 3)
            adjusted = np.empty_like(frames)
            levels = np.arange(256) * value
            for index, frame in enumerate(frames):
                mean = float(np.dot(cv2.mean(frame)[:3], LUMA))
                cv2.LUT(frame, _lut(levels + (1 - value) * mean), dst=adjusted[index])
            tall = adjusted.reshape(num * height, width, 3)
        elif op == 'saturation':
            grey = cv2.cvtColor(cv2.cvtColor(tall, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
            tall = cv2.addWeighted(tall, value, grey, 1 - value, 0)
        else:
            hsv = cv2.cvtColor(tall, cv2.COLOR_RGB2HSV_FULL)
            hsv[..., 0] += np.uint8(int(round(value * 256)) % 256)  # uint8 wraps: a rotation
            tall = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB_FULL)
    return tall.reshape(num, height, width, 3)


def _pair(size: Union[int, Sequence[int]], name: str) -> Tuple[int, int]:
    if isinstance(size, (int, np.integer)):
        pair = (size, size)
    elif isinstance(size, (Sequence, np.ndarray)):
        pair = tuple(size)
    else:  # tuple() of a float or None is a bare TypeError naming no parameter
        pair = ()
    if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1
                             for v in pair):
        raise ValueError(f'ConsistentClipAugment: {name} must be a positive int or (w, h), got '
                         f'{size!r}')
    return int(pair[0]), int(pair[1])


def _range(value, name: str, low: float, high: float) -> Tuple[float, float]:
    """``(min, max)`` of finite numbers with ``0 < min``, ``low <= min <= max <= high``."""
    # A str or a number has no pair to compare; an infinite bound passes the comparisons and
    # overflows the crop arithmetic at the first sample.
    valid = isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, str) and \
        len(value) == 2
    if valid:
        for index, bound in enumerate(value):
            finite_number(bound, f'{name}[{index}]', 'ConsistentClipAugment')
        valid = 0 < value[0] and low <= value[0] <= value[1] <= high
    if not valid:
        raise ValueError(f'ConsistentClipAugment: {name} must be (min, max) with '
                         f'0 < min <= max, min >= {low}, max <= {high}; got {value!r}')
    return float(value[0]), float(value[1])


@TRANSFORMS.register_module()
class ConsistentClipAugment(BaseTransform):
    """Random crop / scale / flip / colour jitter, drawn once per sample for all its frames.

    One call draws one crop box, one flip and one set of colour factors (with a random order
    of the colour ops) and applies them to every frame in ``imgs``, i.e. every frame of every
    clip and every stream of the sample, so the frames of a hyperframe stay aligned and the
    fast and slow streams see the same crop. ``independent=True`` draws per frame instead,
    which reproduces the misaligned per-frame augmentation for ablations.

    The crop is one of:

    - random resized crop (``area_range`` set, the default): a box of random area and aspect
      ratio, resized to ``size``;
    - scale jitter (``area_range=None``, ``scale_range=(lo, hi)``): the frame is scaled so its
      short side is a random length in ``[lo, hi]`` and a ``size`` crop is taken at a random
      place (computed as one box in the original frame, resized once);
    - none (both None): the whole frame resized to ``size`` (kept as is when ``size`` is None).

    When a sample is flipped, ``flip_label_map`` maps its label (e.g. Something-Something's
    "moving left" <-> "moving right"); labels not in the map stay.

    Frames arrive as decoded uint8; grayscale (``[H, W]`` or ``[H, W, 1]``) and RGBA frames are
    converted to RGB, logged once per file. Frames of different sizes raise an error naming the
    file (decord rescales a video's frames to its first size; PyAV does not).

    Required Keys:

        - imgs (list[np.ndarray]): uint8 frames ``[H, W, 3]`` (or grayscale / RGBA).
        - label (int, optional): mapped through ``flip_label_map`` when flipped.
        - filename (str, optional): named in errors and log lines.

    Modified Keys:

        - imgs: list of ``[h, w, 3]`` uint8 RGB frames (``size`` when given).
        - img_shape: ``(h, w)``.
        - label: when flipped and in ``flip_label_map``.

    Added Keys:

        - augment_params (dict | list[dict]): the draw: ``crop_bbox`` (``(x1, y1, x2, y2)`` in
          the input frame), ``scale`` (the jittered short side, or None), ``flip`` (bool),
          ``brightness``, ``contrast``, ``saturation``, ``hue``, ``color_order``; with
          ``independent=True`` a list of one such dict per frame.

    Args:
        size (int | tuple[int, int], optional): output ``(w, h)`` (an int: square). Defaults
            to 224.
        area_range (tuple[float, float], optional): random resized crop area fraction, in
            ``(0, 1]``. None: no random resized crop. Defaults to ``(0.08, 1.0)``.
        aspect_ratio_range (tuple[float, float]): random resized crop width/height range.
            Defaults to ``(3 / 4, 4 / 3)``.
        scale_range (tuple[int, int], optional): short-side scale jitter range in pixels, used
            with ``area_range=None``; its minimum must be at least the larger side of ``size``.
            Defaults to None.
        flip_ratio (float): probability of a horizontal flip. Defaults to 0.5.
        flip_label_map (dict[int, int], optional): label of a flipped sample. Defaults to None.
        brightness (float): brightness jitter strength (>= 0). Defaults to 0.
        contrast (float): contrast jitter strength (>= 0). Defaults to 0.
        saturation (float): saturation jitter strength (>= 0). Defaults to 0.
        hue (float): hue jitter strength, a fraction of the colour circle in ``[0, 0.5]``.
            Defaults to 0.
        independent (bool): draw per frame (the per-frame ablation). Defaults to False.
    """

    def __init__(self,
                 size: Optional[Union[int, Tuple[int, int]]] = 224,
                 area_range: Optional[Tuple[float, float]] = (0.08, 1.0),
                 aspect_ratio_range: Tuple[float, float] = (3 / 4, 4 / 3),
                 scale_range: Optional[Tuple[int, int]] = None,
                 flip_ratio: float = 0.5,
                 flip_label_map: Optional[Dict[int, int]] = None,
                 brightness: float = 0.,
                 contrast: float = 0.,
                 saturation: float = 0.,
                 hue: float = 0.,
                 independent: bool = False) -> None:
        self.size = None if size is None else _pair(size, 'size')
        self.area_range = None if area_range is None else _range(area_range, 'area_range', 0, 1)
        self.aspect_ratio_range = _range(aspect_ratio_range, 'aspect_ratio_range', 0, np.inf)
        self.scale_range = None if scale_range is None else _range(scale_range, 'scale_range',
                                                                   1, np.inf)
        if self.area_range is not None and self.scale_range is not None:
            raise ValueError('ConsistentClipAugment: scale_range has no effect with area_range '
                             '(a random resized crop is relative to the frame, whatever its '
                             'scale); set area_range=None for scale jitter + a fixed-size crop')
        if self.size is None and (self.area_range is not None or self.scale_range is not None):
            raise ValueError('ConsistentClipAugment: size=None only works without a crop '
                             '(area_range=None, scale_range=None)')
        if self.scale_range is not None and self.scale_range[0] < max(self.size):
            raise ValueError(f'ConsistentClipAugment: scale_range={scale_range} must not go '
                             f'below the crop size {self.size}: the crop would not fit')
        # A str compares as a bare TypeError, and an infinite jitter overflows at the first
        # sample: each is a finite number first.
        for name, value in dict(flip_ratio=flip_ratio, brightness=brightness, contrast=contrast,
                                saturation=saturation, hue=hue).items():
            finite_number(value, name, 'ConsistentClipAugment')
        if not 0 <= flip_ratio <= 1:
            raise ValueError(f'ConsistentClipAugment: flip_ratio must be in [0, 1], got '
                             f'{flip_ratio!r}')
        for name, value in dict(brightness=brightness, contrast=contrast,
                                saturation=saturation).items():
            if not value >= 0:
                raise ValueError(f'ConsistentClipAugment: {name} must be >= 0, got {value!r}')
        if not 0 <= hue <= 0.5:
            raise ValueError(f'ConsistentClipAugment: hue must be in [0, 0.5], got {hue!r}')
        independent = flag(independent, 'independent', 'ConsistentClipAugment')
        if independent and flip_label_map:
            raise ValueError('ConsistentClipAugment: flip_label_map needs one flip per sample; '
                             'with independent=True each frame flips on its own')
        self.flip_ratio = float(flip_ratio)
        self.flip_label_map = self._label_map(flip_label_map)
        self.color = dict(brightness=float(brightness), contrast=float(contrast),
                          saturation=float(saturation), hue=float(hue))
        self.independent = bool(independent)
        self._warned_converted = set()

    @staticmethod
    def _label_map(flip_label_map: Optional[Dict]) -> Optional[Dict[int, int]]:
        if not flip_label_map:
            return None
        try:
            return {int(key): int(value) for key, value in flip_label_map.items()}
        except (TypeError, ValueError, AttributeError) as error:
            raise ValueError(f'ConsistentClipAugment: flip_label_map must map int labels to int '
                             f'labels, got {flip_label_map!r}') from error

    def draw(self, height: int, width: int, rng=np.random) -> Dict:
        """Draw one set of augmentation parameters for frames of ``height`` x ``width``."""
        scale = None
        if self.area_range is not None:
            box = random_resized_box(height, width, self.area_range, self.aspect_ratio_range,
                                     rng)
        elif self.scale_range is not None:
            box, scale = scale_jitter_box(height, width, self.scale_range, self.size, rng)
        else:
            box = (0, 0, width, height)
        params = dict(crop_bbox=tuple(int(v) for v in box), scale=scale,
                      flip=bool(rng.random() < self.flip_ratio))
        params.update(draw_color_params(rng, **self.color))
        return params

    def apply(self, frames: Sequence[np.ndarray], params: Dict) -> np.ndarray:
        """Apply one parameter set to all ``frames``: ``[N, h, w, 3]`` uint8."""
        batch = crop_resize(frames, params['crop_bbox'], self.size)
        if params['flip']:
            batch = flip_frames(batch)
        return adjust_color(batch, params)

    def transform(self, results: Dict) -> Dict:
        """Augment ``results['imgs']`` with one draw (or one per frame)."""
        name = str(results.get('filename', results.get('frame_dir', 'the sample')))
        frames, converted = to_rgb_frames(results['imgs'], name)
        if converted and name not in self._warned_converted:
            self._warned_converted.add(name)
            print_log(f'ConsistentClipAugment: {name} has {converted} frames; converted to RGB',
                      logger='current', level=logging.WARNING)
        height, width = frames[0].shape[:2]
        if self.independent:
            params = [self.draw(height, width) for _ in frames]
            imgs = [self.apply([frame], draw)[0] for frame, draw in zip(frames, params)]
        else:
            params = self.draw(height, width)
            imgs = list(self.apply(frames, params))
            if params['flip'] and self.flip_label_map and 'label' in results:
                results['label'] = self._flip_label(results['label'], name)
        results['imgs'] = imgs
        results['img_shape'] = imgs[0].shape[:2]
        results['augment_params'] = params
        return results

    def _flip_label(self, label, name: str) -> int:
        if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
            raise ValueError(f'ConsistentClipAugment: {name}: flip_label_map needs a single int '
                             f'label, got {label!r}')
        return self.flip_label_map.get(int(label), int(label))

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(size={self.size}, area_range={self.area_range}, '
                f'aspect_ratio_range={self.aspect_ratio_range}, '
                f'scale_range={self.scale_range}, flip_ratio={self.flip_ratio}, '
                f'flip_label_map={self.flip_label_map}, '
                + ''.join(f'{op}={value}, ' for op, value in self.color.items())
                + f'independent={self.independent})')
