"""Input encodings of a hyperframe: make motion explicit before the first convolution.

Stacked frames are highly correlated: almost all of a hyperframe's variance is appearance, and
the motion signal (the differences between frames) is small. A randomly initialised first conv
trained by SGD then learns appearance long before motion, which is why plain early fusion
under-uses time. The ``'diff'`` encoding re-expresses the T frames as the centre frame plus the
T-1 differences of consecutive frames, amplified by ``gain``, so motion is as loud as appearance
from the first step (TSN's RGB-difference modality, folded into one hyperframe).

Every encoding is an invertible linear map ``E`` over the frame axis (``encoded_s = sum_u E[s,
u] * frame_u``, the same for each colour channel and pixel), so a first-conv kernel can be moved
between the raw-frame basis and the encoded basis without changing what the network computes:
``K_encoded = K_raw @ E^-1``. A 2D checkpoint inflated in the raw basis (``replicate``,
``center``) keeps every guarantee (T identical frames give the 2D output) under any encoding.
"""
import math
from typing import Optional

import torch

ENCODINGS = ('frames', 'diff')


def check_encoding(encoding: str, gain: float, name: str = 'input_encoding') -> None:
    """Raise a clear error for an unknown encoding or a gain that is not a positive finite
    number (NaN passes ``gain <= 0``, and NaN or Inf gave NaN features or a singular
    inversion of the pretrained conv1, naming nothing)."""
    if encoding not in ENCODINGS:
        raise ValueError(f'{name} must be one of {ENCODINGS}, got {encoding!r}')
    if (not isinstance(gain, (int, float)) or isinstance(gain, bool) or not math.isfinite(gain)
            or gain <= 0):
        raise ValueError(f'diff_gain must be a positive finite number, got {gain!r}')


def encoding_matrix(num_frames: int, encoding: str, gain: float = 1.0,
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The ``[T, T]`` matrix ``E`` of an encoding: row s gives encoded slot s from the frames.

    ``'frames'`` is the identity. ``'diff'``: slot 0 is the centre frame (index ``T // 2``) and
    slot ``j >= 1`` is ``gain * (frame_j - frame_{j-1})``.
    """
    check_encoding(encoding, gain)
    matrix = torch.eye(num_frames, dtype=dtype)
    if encoding == 'diff' and num_frames > 1:
        matrix = torch.zeros(num_frames, num_frames, dtype=dtype)
        matrix[0, num_frames // 2] = 1.0
        for slot in range(1, num_frames):
            matrix[slot, slot] = gain
            matrix[slot, slot - 1] = -gain
    return matrix


def encode_frames(x: torch.Tensor, num_frames: int, encoding: str, gain: float = 1.0,
                  channels_per_frame: int = 3) -> torch.Tensor:
    """Apply an encoding to hyperframes ``[N, C*T, H, W]`` (frame-major channels).

    Returns:
        Tensor: ``[N, C*T, H, W]``; the input itself for ``'frames'`` or ``T == 1``.
    """
    if encoding == 'frames' or num_frames == 1:
        return x
    frames = x.view(x.shape[0], num_frames, channels_per_frame, *x.shape[2:])
    anchor = frames[:, num_frames // 2]
    diffs = (frames[:, 1:] - frames[:, :-1]) * gain
    return torch.cat([anchor, diffs.flatten(1, 2)], dim=1)


def change_kernel_basis(weight: torch.Tensor, num_frames: int, encoding: str, gain: float,
                        channels_per_frame: int = 3, to_encoded: bool = True) -> torch.Tensor:
    """Move a first-conv kernel ``[out, C*T, ...]`` between the raw-frame and encoded bases.

    ``to_encoded=True`` returns ``K @ E^-1`` (a raw-basis kernel made to read encoded input with
    the same result), ``False`` returns ``K @ E`` (the inverse). Computed in float64 and cast
    back, so fp16/bf16 kernels lose nothing beyond their own rounding.
    """
    matrix = encoding_matrix(num_frames, encoding, gain)
    if to_encoded:
        matrix = torch.linalg.inv(matrix)
    shape = weight.shape
    grouped = weight.detach().double().reshape(shape[0], num_frames, channels_per_frame,
                                               *shape[2:])
    moved = torch.einsum('ot...,ts->os...', grouped, matrix.to(grouped.device))
    return moved.reshape(shape).to(weight.dtype)


def describe(encoding: str, gain: Optional[float]) -> str:
    """A short human-readable name, for logs."""
    return encoding if encoding == 'frames' else f'{encoding} (gain {gain:g})'
