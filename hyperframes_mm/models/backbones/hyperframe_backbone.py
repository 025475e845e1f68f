"""What every hyperframe backbone shares: input check, stem extras, checkpoint inflation, T -> T'.

A hyperframe backbone is a 2D backbone whose first convolution takes ``C * num_frames`` channels.
:class:`HyperframeBackboneMixin` gives it

* a clear error when the input's channel count does not match ``num_frames``;
* optional :class:`FrameAttention` on the input and an optional ``extra_bn`` right after the
  first conv (before the pretrained norm);
* loading of a 2D (C-channel) or hyperframe (C*T-channel) checkpoint, the first conv inflated by
  :func:`inflate_conv_weight`; anything else, or a checkpoint that leaves a backbone weight
  unset, is an error naming the file, never a silently random layer;
* :meth:`reinflate` (T -> T', in place), which :func:`reinflate_backbone` applies to every
  hyperframe backbone of a model.
"""
import logging
from collections import OrderedDict
from typing import Dict, List, Optional, Set

import torch
from mmcv.cnn import ConvModule, build_norm_layer
from mmengine.logging import print_log
from mmengine.runner.checkpoint import _load_checkpoint
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from .encoding import change_kernel_basis, check_encoding, describe, encode_frames
from .frame_attention import FrameAttention
from .inflate import INFLATE_MODES, inflate_conv_weight, reinflate_conv_weight, set_conv_weight
from .motion_products import MotionProducts

#: State-dict prefixes of the parts a 2D checkpoint cannot hold (initialised when absent).
HYPERFRAME_PARTS = ('frame_attention.', 'extra_bn.', 'motion_products.')


def strip_prefixes(state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Keep the backbone of a wrapped state dict: DDP's ``module.``, a classifier's or
    recognizer's ``backbone.`` (its head, outside the prefix, is dropped)."""
    for prefix in ('module.', 'backbone.'):
        if any(key.startswith(prefix) for key in state_dict):
            state_dict = OrderedDict((key[len(prefix):], value)
                                     for key, value in state_dict.items()
                                     if key.startswith(prefix))
    return state_dict


def read_state_dict(path: str) -> Dict[str, torch.Tensor]:
    """A checkpoint file's weights: a bare state dict, or one under ``state_dict``/``model``."""
    checkpoint = _load_checkpoint(path, map_location='cpu')
    for key in ('state_dict', 'model'):
        if isinstance(checkpoint, dict) and isinstance(checkpoint.get(key), dict):
            checkpoint = checkpoint[key]
            break
    if not isinstance(checkpoint, dict):
        raise TypeError(f'{path}: expected a state dict, got {type(checkpoint).__name__}')
    return checkpoint


def check_hyperframe_args(name: str, num_frames: int, inflate_init: str,
                          pretrained: Optional[str]) -> None:
    """Validate the arguments every hyperframe backbone takes, before any layer is built."""
    if not isinstance(num_frames, int) or isinstance(num_frames, bool) or num_frames < 1:
        raise ValueError(f'{name}: num_frames must be a positive int, got {num_frames!r}')
    if inflate_init not in INFLATE_MODES:
        raise ValueError(f'{name}: inflate_init must be one of {INFLATE_MODES}, '
                         f'got {inflate_init!r}')
    if pretrained is not None and not isinstance(pretrained, str):
        raise TypeError(f'{name}: pretrained must be a checkpoint path or None, '
                        f'got {type(pretrained).__name__}')


class HyperframeBackboneMixin:
    """Hyperframe behaviour for a 2D backbone class; mix in before the backbone class.

    A subclass sets ``first_conv_name`` (dotted module path of the first ``nn.Conv2d``), calls
    :func:`check_hyperframe_args` first in ``__init__`` and :meth:`_setup_hyperframe` after
    building the 2D layers, starts ``forward`` with :meth:`hyperframe_input` (or, with a
    conv-norm-act stem named by ``stem_module_name``, with
    ``stem_forward(hyperframe_frames(x))``, which adds ``extra_bn`` and the motion products),
    calls :meth:`_init_hyperframe_weights` at the end of ``init_weights``, and may override
    :meth:`convert_checkpoint` for foreign key layouts.
    """

    first_conv_name: str = ''
    stem_module_name: Optional[str] = None

    def _setup_hyperframe(self,
                          num_frames: int,
                          inflate_init: str,
                          pretrained: Optional[str],
                          extra_bn: bool,
                          frame_attention: bool,
                          channels_per_frame: int = 3,
                          input_encoding: str = 'frames',
                          diff_gain: float = 4.0,
                          motion_products: bool = False) -> None:
        check_encoding(input_encoding, diff_gain)
        self.input_encoding = input_encoding
        self.diff_gain = float(diff_gain)
        self.num_frames = num_frames
        self.inflate_init = inflate_init
        self.pretrained = pretrained
        self.channels_per_frame = channels_per_frame
        self.frame_attention = (FrameAttention(channels_per_frame) if frame_attention else None)
        self.extra_bn = self._build_extra_bn() if extra_bn else None
        self.motion_products = None
        if motion_products:
            self._stem('motion_products')
            self.motion_products = MotionProducts(num_frames, self.first_conv, channels_per_frame)

    # ----------------------------------------------------------------------- structure
    @property
    def first_conv(self) -> nn.Conv2d:
        """The first convolution, whose input channels are ``C * num_frames``."""
        return self.get_submodule(self.first_conv_name)

    @property
    def in_channels_expected(self) -> int:
        return self.channels_per_frame * self.num_frames

    def _stem(self, part: str = 'extra_bn') -> ConvModule:
        """The conv-norm stem that ``part`` (``extra_bn``, ``motion_products``) plugs into."""
        name = type(self).__name__
        if self.stem_module_name is None:
            raise ValueError(f'{name} has no conv-norm stem to put {part} in')
        stem = self.get_submodule(self.stem_module_name)
        if not isinstance(stem, ConvModule) or not stem.with_norm or \
                tuple(stem.order[:2]) != ('conv', 'norm'):
            raise ValueError(f'{name}: {part} needs a conv -> norm stem, got {stem!r}')
        return stem

    def _build_extra_bn(self) -> _BatchNorm:
        """A batch norm after the first conv that starts as the exact identity in eval mode.

        ``running_mean = 0``, ``running_var = 1``, ``weight = sqrt(1 + eps)``, ``bias = 0``:
        ``(x - 0) / sqrt(1 + eps) * sqrt(1 + eps) + 0 = x`` up to one float rounding.
        :meth:`_init_extra_bn` re-derives it from the pretrained stem norm after loading.
        """
        stem = self._stem()
        norm = build_norm_layer(stem.norm_cfg, stem.conv.out_channels)[1]
        if not isinstance(norm, _BatchNorm):
            raise ValueError(f'{type(self).__name__}: extra_bn needs a batch norm; norm_cfg '
                             f'builds {type(norm).__name__}')
        self._init_extra_bn(norm, stem.norm)
        return norm

    @staticmethod
    @torch.no_grad()
    def _init_extra_bn(extra_bn: _BatchNorm, stem_norm: nn.Module) -> None:
        """Make ``extra_bn`` re-standardise to the statistics the pretrained stem norm expects.

        With ``running_mean = mu``, ``running_var = var`` taken from the stem norm and
        ``weight = sqrt(var + eps)``, ``bias = mu``, the extra norm is the identity in eval mode
        (so identical frames still give the 2D output), and in train mode it maps each batch's
        first-conv output to mean ``mu`` and variance ``var`` per channel: exactly the
        statistics of the 2D conv output that the (possibly frozen, ``norm_eval``) stem norm was
        fitted to, whatever the inflation did to them.
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

    # ------------------------------------------------------------------------- forward
    def check_input(self, x: torch.Tensor) -> None:
        """Raise a clear error for an input that is not ``[N, C*T, H, W]`` with this T."""
        name = f'{type(self).__name__}(num_frames={self.num_frames})'
        if x.dim() != 4:
            raise ValueError(f'{name} expects hyperframes [N, {self.in_channels_expected}, H, W], '
                             f'got a tensor of shape {tuple(x.shape)}')
        channels = x.shape[1]
        if channels != self.in_channels_expected:
            seen = (f' ({channels // self.channels_per_frame} frames)'
                    if channels % self.channels_per_frame == 0 else '')
            raise ValueError(f'{name} expects {self.in_channels_expected} input channels, got '
                             f'{channels}{seen}: the sampler\'s num_frames must equal the '
                             'backbone\'s')

    def hyperframe_frames(self, x: torch.Tensor) -> torch.Tensor:
        """Check the input and apply frame attention: the frames the first conv reads (in its
        input encoding) and the motion products are formed from."""
        self.check_input(x)
        return x if self.frame_attention is None else self.frame_attention(x)

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """The frames in this backbone's input encoding, as the first conv reads them."""
        return encode_frames(frames, self.num_frames, self.input_encoding, self.diff_gain,
                             self.channels_per_frame)

    def hyperframe_input(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`hyperframe_frames`, encoded: the first conv's input, for backbones whose
        first conv is not a conv-norm stem's (``stem_forward`` encodes by itself)."""
        return self.encode(self.hyperframe_frames(x))

    def _to_encoding(self, weight: torch.Tensor, to_encoded: bool) -> torch.Tensor:
        """A first-conv kernel moved to (or from) this backbone's input encoding basis."""
        if self.input_encoding == 'frames':
            return weight
        return change_kernel_basis(weight, self.num_frames, self.input_encoding,
                                   self.diff_gain, self.channels_per_frame, to_encoded)

    def stem_forward(self, frames: torch.Tensor) -> torch.Tensor:
        """Run the conv-norm-act stem on :meth:`hyperframe_frames`' output: the conv reads them
        encoded, the motion products (formed from the frames themselves) are added to its
        output, and ``extra_bn`` sits between the conv and its norm."""
        stem = self.get_submodule(self.stem_module_name)
        x = self.encode(frames)
        if self.extra_bn is None and self.motion_products is None:
            return stem(x)
        out = stem.conv(x)
        if self.motion_products is not None:
            out = out + self.motion_products(frames)
        if self.extra_bn is not None:
            out = self.extra_bn(out)
        out = stem.norm(out)
        return stem.activate(out) if stem.with_activation else out

    def train_hyperframe_parts(self, mode: bool, stem_frozen: bool) -> None:
        """Frame attention, ``extra_bn`` and the motion products belong to the stem: frozen
        with it, otherwise trainable and in train mode whatever ``norm_eval``/``partial_bn``
        did, since they exist to learn what the frozen 2D statistics cannot."""
        for part in (self.frame_attention, self.extra_bn, self.motion_products):
            if part is None:
                continue
            part.train(mode and not stem_frozen)
            for param in part.parameters():
                param.requires_grad = not stem_frozen

    # --------------------------------------------------------------------- checkpoints
    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Map a checkpoint's keys to this module's; identity unless a subclass knows layouts."""
        return state_dict

    def _init_hyperframe_weights(self) -> None:
        """Load ``pretrained`` (if any), then initialise the parts it did not provide."""
        loaded: Set[str] = set()
        if self.pretrained is not None:
            loaded = self.load_hyperframe_checkpoint(self.pretrained)
        if self.extra_bn is not None and not any(key.startswith('extra_bn.') for key in loaded):
            self._init_extra_bn(self.extra_bn, self._stem().norm)

    def load_hyperframe_checkpoint(self, path: str) -> Set[str]:
        """Load a 2D or hyperframe checkpoint, inflating the first conv; return the keys loaded.

        Raises:
            KeyError: the checkpoint has no first conv, or leaves backbone weights unset.
            ValueError: its first conv has neither C nor C*T input channels.
            ValueError: or the checkpoint holds ``extra_bn``/``frame_attention`` weights the
                backbone was built without.
            RuntimeError: another weight has the wrong shape (wrong depth or arch).
        """
        name = type(self).__name__
        state_dict = self.convert_checkpoint(strip_prefixes(read_state_dict(path)))
        key = f'{self.first_conv_name}.weight'
        if key not in state_dict:
            raise KeyError(f'{path}: no first conv weight {key!r} for {name} (after mapping the '
                           f'checkpoint\'s key layout); first keys: {list(state_dict)[:5]}')
        weight = state_dict[key]
        in_channels = weight.shape[1]
        if in_channels == self.channels_per_frame:
            # Inflate in the frame basis, where replicate/center have their meaning, then move
            # to the encoded basis: the network computes the same function either way.
            state_dict[key] = self._to_encoding(
                inflate_conv_weight(weight, self.num_frames, self.inflate_init,
                                    self.channels_per_frame), to_encoded=True)
            how = f'inflated {in_channels} -> {self.in_channels_expected} channels ' \
                  f'(inflate_init={self.inflate_init})'
            if self.input_encoding != 'frames':
                how += f', in the {describe(self.input_encoding, self.diff_gain)} input basis'
        elif in_channels == self.in_channels_expected:
            how = f'already a {self.num_frames}-frame hyperframe kernel, loaded as is'
        else:
            raise ValueError(
                f'{path}: first conv {key!r} has {in_channels} input channels; {name}(num_frames='
                f'{self.num_frames}) loads a 2D checkpoint ({self.channels_per_frame} channels) '
                f'or a hyperframe one with {self.in_channels_expected}. To run a checkpoint '
                f'trained at another T, build the backbone with that num_frames, load it, then '
                'call reinflate_backbone(model, new_num_frames).')
        try:
            missing, unexpected = self.load_state_dict(state_dict, strict=False)
        except RuntimeError as error:
            raise RuntimeError(f'{path} does not fit {name}: {error}') from error
        unset = [k for k in missing
                 if not k.startswith(HYPERFRAME_PARTS) and not k.endswith('num_batches_tracked')]
        if unset:
            raise KeyError(f'{path} leaves {len(unset)} weights of {name} unset (wrong '
                           f'architecture or key layout?): {unset[:10]}')
        dropped_parts = sorted({k.split('.')[0] for k in unexpected
                                if k.startswith(HYPERFRAME_PARTS)})
        if dropped_parts:
            raise ValueError(f'{path} was trained with {dropped_parts}, which this {name} lacks: '
                             'build it with ' +
                             ', '.join(f'{part}=True' for part in dropped_parts) +
                             ' (dropping them would change what the model computes)')
        print_log(f'{name}: loaded {path}: first conv {how}; new parts initialised: '
                  f'{sorted({k.split(".")[0] for k in missing if k.startswith(HYPERFRAME_PARTS)})}',
                  logger='current', level=logging.INFO)
        if unexpected:
            print_log(f'{name}: {path} holds {len(unexpected)} weights {name} has no place for, '
                      f'ignored: {unexpected[:10]}', logger='current', level=logging.WARNING)
        return set(state_dict) - set(unexpected)

    # ---------------------------------------------------------------------- T -> T'
    def reinflate(self, num_frames: int) -> None:
        """Re-inflate the first conv in place from ``self.num_frames`` to ``num_frames``.

        The kernel is resampled over time by :func:`reinflate_conv_weight`, which keeps its
        temporal sum: T' identical frames give what T identical frames gave. Frame attention and
        ``extra_bn`` do not depend on T and are kept; the motion products' kernel is resampled
        over frame pairs the same way. The kernel becomes a new parameter, so do
        this for inference or before building an optimizer.
        """
        conv = self.first_conv
        raw = self._to_encoding(conv.weight, to_encoded=False)
        weight = reinflate_conv_weight(raw, num_frames, self.channels_per_frame)
        self.num_frames, old_frames = num_frames, self.num_frames
        set_conv_weight(conv, self._to_encoding(weight, to_encoded=True))
        if self.motion_products is not None:
            self.motion_products.reinflate(num_frames)
        print_log(f'{type(self).__name__}: re-inflated from num_frames={old_frames} to '
                  f'{num_frames}', logger='current', level=logging.INFO)


def reinflate_backbone(model: nn.Module, num_frames: int) -> List[str]:
    """Re-inflate, in place, every hyperframe backbone inside ``model`` to ``num_frames``.

    ``model`` may be a backbone, a recognizer or any module holding them (a two-stream model
    with separate backbones re-inflates both; pass one backbone to change one stream). The
    data preprocessor tiles its mean/std to whatever arrives, so nothing else needs to change.

    Args:
        model (nn.Module): the model or backbone.
        num_frames (int): the new T.

    Returns:
        list[str]: names (in ``model.named_modules()``) of the re-inflated backbones.
    """
    names = [name for name, module in model.named_modules()
             if isinstance(module, HyperframeBackboneMixin)]
    if not names:
        raise ValueError(f'{type(model).__name__} holds no hyperframe backbone to re-inflate')
    for name in names:
        model.get_submodule(name).reinflate(num_frames)
    return names
