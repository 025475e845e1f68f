"""Normalise and batch hyperframes: a 3-value mean/std tiled over the T frames of each stream."""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from mmaction.registry import MODELS
from mmaction.utils import SampleList
from mmengine.model import BaseDataPreprocessor, stack_batch

from hyperframes_mm.utils.checks import finite_number, positive_int

OWNER = 'HyperframeDataPreprocessor'


def _numbers(values, name: str, above: Optional[float] = None) -> List[float]:
    """``values`` as a list of finite numbers (each ``> above`` where given), else a
    ``ValueError`` naming ``name``: a zero, negative or NaN std normalises to inf, a flipped sign
    or NaN without an error, and a string's characters are no per-channel values."""
    if isinstance(values, (str, bytes)) or not hasattr(values, '__iter__'):
        raise ValueError(f'{OWNER}: {name} must be a sequence of numbers, got {values!r}')
    return [finite_number(value, f'{name}[{index}]', OWNER, above=above)
            for index, value in enumerate(values)]


@MODELS.register_module()
class HyperframeDataPreprocessor(BaseDataPreprocessor):
    """Batch ``[K, 3T, H, W]`` hyperframes and normalise each frame with the image mean/std.

    mmaction2's ``ActionDataPreprocessor`` cannot broadcast a 3-value mean over 3T channels; here
    the mean/std are tiled to whatever channel count arrives, so one config serves every T and
    every stream (streams may differ in T). Normalisation runs in float32 whatever the input
    dtype, so uint8 inputs and mixed-precision training are safe.

    Args:
        mean (Sequence[float], optional): per-channel mean of one frame (3 values), or of a whole
            hyperframe (3T values). Defaults to None (no normalisation).
        std (Sequence[float], optional): as ``mean``. Defaults to None.
        to_rgb (bool): reverse the channel order inside every frame (BGR -> RGB). Defaults to
            False (decord and PyAV already decode RGB).
        channels_per_frame (int): channels of one frame. Defaults to 3.
        blending (dict, optional): mmaction2 batch blending (``MixupBlending``,
            ``CutmixBlending``, ``RandomBatchAugment``), single stream only: a clip is blended
            whole, every frame with the same weight (and cutmix box), so the motion between its
            frames is kept. Its ``num_classes`` is the width of the blended labels and must be the
            head's class count. Defaults to None.
    """

    def __init__(self,
                 mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None,
                 to_rgb: bool = False,
                 channels_per_frame: int = 3,
                 blending: Optional[dict] = None) -> None:
        super().__init__()
        # checked first: the mean/std checks below divide by it
        positive_int(channels_per_frame, 'channels_per_frame', OWNER)
        if (mean is None) != (std is None):
            raise ValueError('HyperframeDataPreprocessor: give both mean and std, or neither')
        if mean is not None:
            mean, std = _numbers(mean, 'mean'), _numbers(std, 'std', above=0)
        if mean is not None and len(mean) != len(std):
            raise ValueError(f'HyperframeDataPreprocessor: mean has {len(mean)} values but std '
                             f'has {len(std)}')
        if mean is not None and len(mean) % channels_per_frame:
            raise ValueError(f'HyperframeDataPreprocessor: mean/std need a multiple of '
                             f'channels_per_frame={channels_per_frame} values, got {len(mean)}')
        self.to_rgb = to_rgb
        self.channels_per_frame = channels_per_frame
        self._enable_normalize = mean is not None
        if mean is not None:
            self.register_buffer('mean', torch.tensor(mean, dtype=torch.float32), False)
            self.register_buffer('std', torch.tensor(std, dtype=torch.float32), False)
        self.blending = MODELS.build(blending) if blending is not None else None

    def _normalise(self, batch: torch.Tensor) -> torch.Tensor:
        """``[..., 3T, H, W]`` -> float32, RGB-ordered, normalised per frame."""
        order, mean, std = self._per_channel(batch.shape[-3], batch.device)
        batch = batch.float()
        if order is not None:
            batch = batch[..., order, :, :]
        if mean is None:
            return batch
        return (batch - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)

    def _per_channel(self, channels: int, device=None) -> Tuple:
        """For ``channels`` input channels: the channel order that ``to_rgb`` reads them in
        (None: as they are) and the mean and std tiled to them (None, None: no normalisation).
        """
        if channels % self.channels_per_frame:
            raise ValueError(f'HyperframeDataPreprocessor: inputs have {channels} channels, not a '
                             f'multiple of channels_per_frame={self.channels_per_frame}')
        order = None
        if self.to_rgb:
            order = torch.arange(channels, device=device).view(-1, self.channels_per_frame)
            order = order.flip(1).reshape(-1)
        if not self._enable_normalize:
            return order, None, None
        if channels % len(self.mean):
            raise ValueError(f'HyperframeDataPreprocessor: mean/std have {len(self.mean)} values, '
                             f'which does not divide the {channels} input channels')
        repeats = channels // len(self.mean)
        return order, self.mean.repeat(repeats), self.std.repeat(repeats)

    def affine(self, channels: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """The normalisation of ``channels`` input channels as ``x -> A x + b`` on each pixel's
        channel vector, ``A`` ``[channels, channels]`` and ``b`` ``[channels]`` in float64: what
        an exported graph can fold into one 1x1 convolution (:mod:`hyperframes_mm.deploy.export`).
        """
        order, mean, std = self._per_channel(channels)
        matrix = torch.eye(channels, dtype=torch.float64)
        if order is not None:
            matrix = matrix[order.cpu()]
        if mean is None:
            return matrix, torch.zeros(channels, dtype=torch.float64)
        scale = 1 / std.cpu().double()
        return scale[:, None] * matrix, -mean.cpu().double() * scale

    def preprocess(self, inputs: Union[List[torch.Tensor], List[Dict[str, torch.Tensor]]],
                   data_samples: SampleList,
                   training: bool = False) -> Tuple:
        """Stack the samples of a batch and normalise them; dict inputs are per stream."""
        if isinstance(inputs, (list, tuple)) and isinstance(inputs[0], dict):
            inputs = {key: [sample[key] for sample in inputs] for key in inputs[0]}
        if isinstance(inputs, dict):
            # Multi-stream: pseudo_collate gives a list per stream, default_collate a tensor.
            if training and self.blending is not None:
                raise ValueError('HyperframeDataPreprocessor: batch blending is not supported for '
                                 'multi-stream inputs (each stream would draw its own mix)')
            return {key: self._normalise(value if isinstance(value, torch.Tensor)
                                         else stack_batch(list(value)))
                    for key, value in inputs.items()}, data_samples
        batch = self._normalise(inputs if isinstance(inputs, torch.Tensor) else stack_batch(inputs))
        if training and self.blending is not None:
            self._check_labels(data_samples)
            batch, data_samples = self.blending(batch, data_samples)
        return batch, data_samples

    def _check_labels(self, data_samples: SampleList) -> None:
        """A label the blending's one-hot width cannot hold fails here, naming the parameter,
        not inside ``F.one_hot`` (a config moved to data with more classes than it names)."""
        width = self.blending.num_classes
        for sample in data_samples:
            label = sample.gt_label
            if label.numel() == 1 and not 0 <= int(label) < width:
                raise ValueError(
                    f'HyperframeDataPreprocessor: label {int(label)} of '
                    f'{sample.metainfo.get("filename", "a training sample")} is outside the '
                    f'blending\'s num_classes={width}: set model.data_preprocessor.blending\'s '
                    'num_classes (each of its augments\') to the head\'s class count')

    def forward(self, data: dict, training: bool = False) -> dict:
        data = self.cast_data(data)
        data['inputs'], data['data_samples'] = self.preprocess(data['inputs'],
                                                               data.get('data_samples'), training)
        return data
