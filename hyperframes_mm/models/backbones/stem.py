"""The hyperframe stem: what a 2D backbone's stem needs to read a hyperframe, in one order.

Every hyperframe backbone runs its input through the same steps::

    check -> frame attention -> encode -> [first conv] -> + motion products -> extra BN
          -> [norm -> activation]

:class:`HyperframeStem` owns the steps a 2D network lacks (the input check, frame attention,
the input encoding, motion products, ``extra_bn``) and composes them around the bracketed
layers, which stay the 2D backbone's own (a conv-norm-act ``ConvModule`` such as ResNet's
``conv1``, or a bare first conv deep inside a generic backbone). They stay where the 2D
network has them so that a 2D checkpoint's keys, and the order in which the backbone's layers
are built and initialised (hence what a seed gives), are the 2D network's: the stem is called
with them rather than holding them.
"""
import logging
from typing import Optional

import torch
from mmcv.cnn import ConvModule, build_norm_layer
from mmengine.logging import print_log
from mmengine.model import BaseModule
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from ...utils.checks import flag
from .encoding import change_kernel_basis, check_encoding, encode_frames, encoding_matrix
from .frame_attention import FrameAttention
from .inflate import reinflate_conv_weight, set_conv_weight
from .motion_products import MotionProducts, check_pairs

#: Where a backbone registers its stem; its parts' state-dict keys start with it.
STEM_NAME = 'hyperframe_stem'


def check_conv_stem(stem: nn.Module, owner: str, part: str) -> ConvModule:
    """``stem`` if it is a conv -> norm ``ConvModule`` that ``part`` can sit in, else an error."""
    if not isinstance(stem, ConvModule) or not stem.with_norm or \
            tuple(stem.order[:2]) != ('conv', 'norm'):
        raise ValueError(f'{owner}: {part} needs a conv -> norm stem, got {stem!r}')
    return stem


@torch.no_grad()
def init_extra_bn(extra_bn: _BatchNorm, stem_norm: nn.Module) -> None:
    """Make ``extra_bn`` re-standardise to the statistics the pretrained stem norm expects.

    With ``running_mean = mu``, ``running_var = var`` taken from the stem norm and
    ``weight = sqrt(var + eps)``, ``bias = mu``, the extra norm is the identity in eval mode
    (so identical frames still give the 2D output), and in train mode it maps each batch's
    first-conv output to mean ``mu`` and variance ``var`` per channel: exactly the statistics
    of the 2D conv output that the (possibly frozen, ``norm_eval``) stem norm was fitted to,
    whatever the inflation did to them. A stem norm without running statistics counts as
    ``mu = 0``, ``var = 1``.
    """
    mean = getattr(stem_norm, 'running_mean', None)
    var = getattr(stem_norm, 'running_var', None)
    if mean is None or var is None:
        mean = torch.zeros_like(extra_bn.running_mean)
        var = torch.ones_like(extra_bn.running_var)
    extra_bn.running_mean.copy_(mean)
    extra_bn.running_var.copy_(var)
    extra_bn.weight.copy_((var.double() + extra_bn.eps).sqrt().to(extra_bn.weight))
    extra_bn.bias.copy_(mean)
    extra_bn.num_batches_tracked.zero_()


class HyperframeStem(BaseModule):
    """Input check, frame attention, input encoding, motion products and ``extra_bn`` of a
    hyperframe backbone, run around its 2D stem (see the module doc).

    The keyword-only arguments are the stem's options, declared here and nowhere else: every
    hyperframe backbone takes them by name (``HyperResNet(18, input_encoding='diff')``) and
    hands them on unread.

    Args:
        num_frames (int): T, frames per hyperframe.
        owner (str): the backbone's name, for error messages.
        conv_stem (nn.Module, optional): the backbone's 2D stem, a conv -> norm ``ConvModule``,
            which ``extra_bn`` and ``motion_products`` are sized from and sit in; not stored
            (see :meth:`forward`). Needed for either.
        channels_per_frame (int): C. Defaults to 3.
        input_encoding (str): ``'frames'`` feeds the stacked frames to the first conv as they
            are; ``'diff'`` feeds the centre frame plus ``diff_gain`` times the differences of
            consecutive frames (see :mod:`.encoding`), which makes motion as loud as appearance
            and trains much faster from scratch. A 2D checkpoint is inflated in the frame basis,
            then moved to the encoded one (:meth:`to_encoding`), so every inflation guarantee
            holds. Defaults to ``'frames'``.
        diff_gain (float): amplification of the frame differences for ``'diff'``. Defaults
            to 4.
        frame_attention (bool): re-weight the frames of the input with a
            :class:`FrameAttention` (identity at start). Defaults to False.
        extra_bn (bool): a batch norm between the first conv and its (pretrained) norm, the
            identity in eval mode after :func:`init_extra_bn`; in train mode it restores the
            per-channel statistics the pretrained norm expects. Defaults to False.
        motion_products (bool): add a learnt map of the products of each frame difference with
            the spatial gradient (``I_t I_x``, ``I_t I_y``: the sign of motion, which differences
            alone lack) to the first conv's output; see :mod:`.motion_products`. Zero at start,
            so nothing changes until it is trained. Needs T >= 2. Defaults to False.
    """

    def __init__(self,
                 num_frames: int,
                 owner: str,
                 conv_stem: Optional[nn.Module] = None,
                 channels_per_frame: int = 3,
                 *,
                 input_encoding: str = 'frames',
                 diff_gain: float = 4.0,
                 frame_attention: bool = False,
                 extra_bn: bool = False,
                 motion_products: bool = False) -> None:
        super().__init__()
        # a config's 'False' is a true string: it built the part it meant to leave out
        frame_attention = flag(frame_attention, 'frame_attention', owner)
        extra_bn = flag(extra_bn, 'extra_bn', owner)
        motion_products = flag(motion_products, 'motion_products', owner)
        check_encoding(input_encoding, diff_gain)
        self.num_frames = num_frames
        self.owner = owner
        self.channels_per_frame = channels_per_frame
        self.check_first_conv(getattr(conv_stem, 'conv', conv_stem))
        self.input_encoding = input_encoding
        self.diff_gain = float(diff_gain)
        # built in this order (frame attention, extra_bn, motion products): the order in which
        # their layers draw from the random generator, so what a seed gives depends on it
        self.frame_attention = FrameAttention(channels_per_frame) if frame_attention else None
        self.extra_bn = None
        if extra_bn:
            self.extra_bn = self._build_extra_bn(self._conv_stem(conv_stem, 'extra_bn'))
        self.motion_products = None
        if motion_products:
            conv = self._conv_stem(conv_stem, 'motion_products').conv
            self.motion_products = MotionProducts(num_frames, conv, channels_per_frame)

    def _conv_stem(self, conv_stem: Optional[nn.Module], part: str) -> ConvModule:
        if conv_stem is None:
            raise ValueError(f'{self.owner} has no conv-norm stem to put {part} in')
        return check_conv_stem(conv_stem, self.owner, part)

    def _build_extra_bn(self, conv_stem: ConvModule) -> _BatchNorm:
        """A batch norm after the first conv that starts as the exact identity in eval mode:
        ``running_mean = 0``, ``running_var = 1``, ``weight = sqrt(1 + eps)``, ``bias = 0``.
        :func:`init_extra_bn` re-derives it from the stem norm once that is initialised."""
        norm = build_norm_layer(conv_stem.norm_cfg, conv_stem.conv.out_channels)[1]
        if not isinstance(norm, _BatchNorm):
            raise ValueError(f'{self.owner}: extra_bn needs a batch norm; norm_cfg builds '
                             f'{type(norm).__name__}')
        init_extra_bn(norm, conv_stem.norm)
        return norm

    @property
    def in_channels(self) -> int:
        """``C * T``: the channels of the hyperframes the stem reads."""
        return self.channels_per_frame * self.num_frames

    def check_first_conv(self, conv: Optional[nn.Module]) -> None:
        """Refuse a first conv built for other than ``C * T`` inputs: else every later error
        describes a network of another T than the one configured."""
        if isinstance(getattr(conv, 'in_channels', None), int) and \
                conv.in_channels != self.in_channels:
            raise ValueError(f'{self.owner}: channels_per_frame={self.channels_per_frame} makes '
                             f'{self.in_channels} input channels of num_frames='
                             f'{self.num_frames}, and its first conv is built for '
                             f'{conv.in_channels} ({conv.in_channels // self.num_frames} channels '
                             'a frame); leave channels_per_frame out')

    # ------------------------------------------------------------------------- forward
    def check_input(self, x: torch.Tensor) -> None:
        """Raise a clear error for an input that is not ``[N, C*T, H, W]`` with this T."""
        name = f'{self.owner}(num_frames={self.num_frames})'
        if x.dim() != 4:
            raise ValueError(f'{name} expects hyperframes [N, {self.in_channels}, H, W], got a '
                             f'tensor of shape {tuple(x.shape)}')
        channels = x.shape[1]
        if channels != self.in_channels:
            frames = channels // self.channels_per_frame
            seen = (f' ({frames} frame{"s" if frames != 1 else ""})'
                    if channels % self.channels_per_frame == 0 else '')
            # one frame's channels: frames that were never stacked (FormatShape in place of
            # HyperframeStack), whatever T the sampler picked
            why = ('the pipeline has no HyperframeStack (frames reach the model one by one), '
                   'or the sampler\'s num_frames differs from the backbone\'s'
                   if channels == self.channels_per_frame else
                   'the sampler\'s num_frames must equal the backbone\'s')
            raise ValueError(f'{name} expects {self.in_channels} input channels, got '
                             f'{channels}{seen}: {why}')

    def frames(self, x: torch.Tensor) -> torch.Tensor:
        """Check the input and apply frame attention: the frames the first conv reads (in the
        input encoding) and the motion products are formed from."""
        self.check_input(x)
        return x if self.frame_attention is None else self.frame_attention(x)

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """The frames in the input encoding, as the first conv reads them."""
        return encode_frames(frames, self.num_frames, self.input_encoding, self.diff_gain,
                             self.channels_per_frame)

    def forward(self, x: torch.Tensor, conv_stem: Optional[nn.Module] = None) -> torch.Tensor:
        """Hyperframes ``[N, C*T, H, W]`` through the stem.

        With ``conv_stem`` (the backbone's conv-norm-act stem) the result is that stem's
        output: the first conv reads the encoded frames, the motion products (formed from the
        frames themselves) are added to its output and ``extra_bn`` sits between it and the
        norm. Without (a backbone whose first conv lies inside its own forward), the encoded
        frames that its first conv is to read.
        """
        frames = self.frames(x)
        encoded = self.encode(frames)
        if conv_stem is None:
            if self.extra_bn is not None or self.motion_products is not None:
                raise ValueError(f'{self.owner}: extra_bn and motion products run inside the '
                                 'conv stem; call the hyperframe stem with it')
            return encoded
        if self.extra_bn is None and self.motion_products is None:
            return conv_stem(encoded)
        out = conv_stem.conv(encoded)
        if self.motion_products is not None:
            out = out + self.motion_products(frames)
        if self.extra_bn is not None:
            out = self.extra_bn(out)
        out = conv_stem.norm(out)
        return conv_stem.activate(out) if conv_stem.with_activation else out

    # -------------------------------------------------------------- kernels and frames
    def encoding_map(self) -> torch.Tensor:
        """The input encoding as one ``[C*T, C*T]`` float64 matrix on a pixel's channel vector
        (frame-major channels): :meth:`encode` is ``x -> M x`` at every pixel."""
        return torch.kron(
            encoding_matrix(self.num_frames, self.input_encoding, self.diff_gain),
            torch.eye(self.channels_per_frame, dtype=torch.float64))

    def to_encoding(self, weight: torch.Tensor, to_encoded: bool) -> torch.Tensor:
        """A first-conv kernel moved to (or, ``to_encoded=False``, from) the input encoding's
        basis; the network computes the same function with either kernel in its basis."""
        if self.input_encoding == 'frames':
            return weight
        return change_kernel_basis(weight, self.num_frames, self.input_encoding,
                                   self.diff_gain, self.channels_per_frame, to_encoded)

    def reinflate(self, first_conv: nn.Conv2d, num_frames: int) -> None:
        """Re-inflate ``first_conv`` (the conv this stem feeds) and the motion products from
        ``self.num_frames`` to ``num_frames``, in place; see
        :meth:`HyperframeBackboneMixin.reinflate`. Everything is checked before anything
        changes: a refusal leaves the model as it was, not with T' in the stem and T in the
        motion products."""
        if self.motion_products is not None:
            check_pairs(num_frames, 'cannot re-inflate to')
        raw = self.to_encoding(first_conv.weight, to_encoded=False)
        weight = reinflate_conv_weight(raw, num_frames, self.channels_per_frame)
        old_frames, self.num_frames = self.num_frames, num_frames
        set_conv_weight(first_conv, self.to_encoding(weight, to_encoded=True))
        if self.motion_products is not None:
            self.motion_products.reinflate(num_frames)
        print_log(f'{self.owner}: re-inflated from num_frames={old_frames} to {num_frames}',
                  logger='current', level=logging.INFO)

    def train_parts(self, mode: bool, frozen: bool) -> None:
        """Frame attention, ``extra_bn`` and the motion products belong to the stem: frozen
        with it, otherwise trainable and in train mode whatever ``norm_eval``/``partial_bn``
        did to the backbone, since they exist to learn what the frozen 2D statistics cannot."""
        for part in (self.frame_attention, self.extra_bn, self.motion_products):
            if part is None:
                continue
            part.train(mode and not frozen)
            for param in part.parameters():
                param.requires_grad = not frozen

