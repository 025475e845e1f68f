"""Light frame attention: re-weight the frames of a hyperframe before the first convolution."""
import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from torch import nn


def frame_descriptors(x: torch.Tensor,
                      channels_per_frame: int = 3,
                      pooled_size: int = 16) -> torch.Tensor:
    """Describe each frame of ``[N, C*T, H, W]`` hyperframes by ``2C`` numbers: ``[N, T, 2C]``.

    Per frame and channel: its spatial mean (the frame's colour), then the spatial mean of its
    absolute difference from the clip's mean frame (how much the frame moved away from the rest
    of the clip). Inputs larger than ``pooled_size`` are first average-pooled to
    ``pooled_size x pooled_size`` (one cheap pass instead of several full-resolution ones): the
    colour is then exact up to rounding when H and W are multiples of ``pooled_size``, and the
    motion term measures motion at that coarse scale, which is what a per-frame weight needs.
    Computed in float32 whatever the input dtype.

    Args:
        x (Tensor): hyperframes, frame-major channels.
        channels_per_frame (int): C. Defaults to 3.
        pooled_size (int): resolution the descriptors are computed at. Defaults to 16.

    Returns:
        Tensor: ``[N, T, 2C]`` float32.
    """
    num, channels = x.shape[:2]
    if channels % channels_per_frame:
        raise ValueError(f'{channels} channels are not a whole number of frames of '
                         f'{channels_per_frame} channels')
    if x.shape[2] > pooled_size or x.shape[3] > pooled_size:
        x = (_adaptive_mean(x, pooled_size) if torch.onnx.is_in_onnx_export() else
             F.adaptive_avg_pool2d(x, pooled_size))
    frames = x.float().reshape(num, channels // channels_per_frame, channels_per_frame,
                               *x.shape[2:])
    colour = frames.mean(dim=(3, 4))
    motion = (frames - frames.mean(dim=1, keepdim=True)).abs().mean(dim=(3, 4))
    return torch.cat([colour, motion], dim=2)


def _pool_matrix(length: int, size: int, like: torch.Tensor) -> torch.Tensor:
    """``[size, length]``: row ``i`` averages the bin ``adaptive_avg_pool`` gives output ``i``
    (from ``floor(i * length / size)`` to ``ceil((i + 1) * length / size)``)."""
    matrix = torch.zeros(size, length, dtype=like.dtype, device=like.device)
    for index in range(size):
        start, end = index * length // size, -(-(index + 1) * length // size)
        matrix[index, start:end] = 1 / (end - start)
    return matrix


def _adaptive_mean(x: torch.Tensor, size: int) -> torch.Tensor:
    """``F.adaptive_avg_pool2d(x, size)`` as two products with constant bin matrices: the ONNX
    exporter cannot write the adaptive pooling of an input whose batch is dynamic, nor one whose
    sides are not multiples of ``size``; the same bins, as matrices of the traced sizes, it can."""
    height, width = int(x.shape[2]), int(x.shape[3])
    return _pool_matrix(height, size, x) @ x @ _pool_matrix(width, size, x).transpose(0, 1)


class FrameAttention(BaseModule):
    """Per-frame weights learnt from the frames themselves, applied to the input hyperframe.

    A two-layer MLP shared by all frames maps each frame's :func:`frame_descriptors` to a score
    ``z_t``; frame ``t``'s channels are multiplied by ``w_t = 2 * sigmoid(z_t)`` (in ``(0, 2)``).
    The last layer starts at zero, so every ``w_t`` is exactly 1 and the module is the identity
    until it is trained: a backbone loaded from a 2D checkpoint still gives the 2D output on
    identical frames. Sharing the MLP over frames keeps it to ``(2C + 2) * hidden + 1``
    parameters (257 for C=3, hidden=32) whatever T is, so re-inflating T -> T' leaves it as is.
    Its cost is two passes over the input (a pooling for the descriptors, the re-weighting),
    negligible next to the first conv.

    Args:
        channels_per_frame (int): C. Defaults to 3.
        hidden_channels (int): width of the MLP. Defaults to 32.
    """

    def __init__(self, channels_per_frame: int = 3, hidden_channels: int = 32) -> None:
        super().__init__()
        self.channels_per_frame = channels_per_frame
        self.fc1 = nn.Linear(2 * channels_per_frame, hidden_channels)
        self.fc2 = nn.Linear(hidden_channels, 1)
        self._zero_last_layer()

    def _zero_last_layer(self) -> None:
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)

    def init_weights(self) -> None:
        """Restore the identity start, whatever a parent's ``init_cfg`` did to the Linears."""
        super().init_weights()
        self._zero_last_layer()

    def frame_weights(self, x: torch.Tensor) -> torch.Tensor:
        """``[N, C*T, H, W]`` -> per-frame weights ``[N, T]`` in ``(0, 2)``, float32."""
        hidden = torch.relu(self.fc1(frame_descriptors(x, self.channels_per_frame)))
        return 2 * torch.sigmoid(self.fc2(hidden)).squeeze(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = self.frame_weights(x).to(x.dtype)
        num, channels, height, width = x.shape
        frames = x.reshape(num, weights.shape[1], self.channels_per_frame, height, width)
        return (frames * weights[:, :, None, None, None]).reshape(num, channels, height, width)
