"""What every hyperframe backbone shares: weights in, train modes, T -> T'.

A hyperframe backbone is a 2D backbone whose first convolution takes ``C * num_frames``
channels, with a :class:`~.stem.HyperframeStem` (input check, frame attention, input encoding,
motion products, ``extra_bn``) run around its 2D stem. :class:`HyperframeBackboneMixin`, mixed
in before the 2D class, gives every such backbone one copy of

* ``init_weights``: the 2D backbone's own initialisation, then a 2D (C-channel) or hyperframe
  (C*T-channel) checkpoint loaded by :func:`load_inflated_checkpoint`, whose first conv is
  inflated by :func:`inflate_conv_weight`; anything else, or a checkpoint that leaves a backbone
  weight unset, is an error naming the file, never a silently random layer;
* ``train``: the 2D backbone's frozen stages and ``norm_eval``, the stem's parts kept training
  (or frozen with the stem), partial BN that spares the stem's norms;
* :meth:`~HyperframeBackboneMixin.reinflate` (T -> T', in place), which
  :func:`reinflate_backbone` applies to every hyperframe backbone of a model.
"""
import logging
import os
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Set, Tuple

import torch
from mmengine.logging import MMLogger, print_log
from mmengine.model import BaseModule
from torch import nn

from ...utils import delegated, is_int, positive_int
from .encoding import describe
from .inflate import INFLATE_MODES, inflate_conv_weight
from .stem import STEM_NAME, HyperframeStem, init_extra_bn


def stem_part(key: str) -> Optional[str]:
    """The stem part (``extra_bn``, ...) a backbone state-dict key belongs to, else None."""
    parts = key.split('.')
    return parts[1] if parts[0] == STEM_NAME and len(parts) > 2 else None


def strip_prefixes(state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Keep the backbone of a wrapped state dict: DDP's ``module.``, a classifier's or
    recognizer's ``backbone.`` (its head, outside the prefix, is dropped)."""
    for prefix in ('module.', 'backbone.'):
        if any(key.startswith(prefix) for key in state_dict):
            state_dict = OrderedDict((key[len(prefix):], value)
                                     for key, value in state_dict.items()
                                     if key.startswith(prefix))
    return state_dict


def timm_classifier_prefixes(model: nn.Module, prefix: str = '') -> Tuple[str, ...]:
    """The key prefixes of a timm model's classifier head(s), as its ``pretrained_cfg`` names
    them (``'fc'``, ``'head.fc'``, ``('head', 'head_dist')``), under ``prefix``; none for a
    model that is not timm's."""
    cfg = getattr(model, 'pretrained_cfg', None) or {}
    names = cfg.get('classifier') or ()
    names = (names,) if isinstance(names, str) else tuple(names)
    return tuple(f'{prefix}{name}.' for name in names)


def is_safetensors(path: str) -> bool:
    """Whether ``path`` is a safetensors file (timm's and the HF hub's ``model.safetensors``,
    whatever its extension): an 8-byte little-endian header length, then its JSON header."""
    if not os.path.isfile(path):
        return False
    with open(path, 'rb') as file:
        head = file.read(9)
    return (len(head) == 9 and head[8:] == b'{'
            and int.from_bytes(head[:8], 'little') <= os.path.getsize(path) - 8)


def load_checkpoint_file(path: str):
    """Read a checkpoint file as it is: a safetensors file with safetensors (which holds only
    tensors, so nothing in it can run code), anything else by the verified, weights-only
    ``torch.load`` of :func:`~hyperframes_mm.engine.checkpoint.load_verified`; NaN or Inf is
    refused either way."""
    from ...engine.checkpoint import check_finite, load_verified
    if os.path.isdir(path):
        raise IsADirectoryError(f'{path}: is a directory, not a checkpoint file')
    if not is_safetensors(path):
        return load_verified(path, map_location='cpu')
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise ImportError(f'{path}: a safetensors file, and the safetensors package is not '
                          'installed: pip install safetensors, or convert it where it is with '
                          'torch.save(safetensors.torch.load_file(path), "model.pth")') from None
    checkpoint = load_file(path, device='cpu')
    check_finite(checkpoint, path)
    return checkpoint


def read_state_dict(path: str) -> Dict[str, torch.Tensor]:
    """A checkpoint file's weights: a bare state dict, or one under ``state_dict``/``model``."""
    checkpoint = load_checkpoint_file(path)
    for key in ('state_dict', 'model'):
        if isinstance(checkpoint, dict) and isinstance(checkpoint.get(key), dict):
            checkpoint = checkpoint[key]
            break
    if not isinstance(checkpoint, dict):
        raise ValueError(f'{path}: expected a state dict, got {type(checkpoint).__name__}')
    return checkpoint


def check_hyperframe_args(owner: str, num_frames: int, inflate_init: str,
                          pretrained: Optional[str], init_cfg=None) -> None:
    """Check the arguments every hyperframe backbone takes beside its 2D backbone's; called
    before any layer is built, so that a bad ``num_frames`` never reaches a conv.

    Args:
        owner (str): the backbone's name, for the errors.
        num_frames (int): T, frames per hyperframe: a positive int.
        inflate_init (str): one of :data:`~.inflate.INFLATE_MODES`.
        pretrained (str, optional): a local checkpoint path, or None.
        init_cfg (dict | list[dict], optional): the 2D backbone's initialisation; one that
            loads a checkpoint (``type='Pretrained'``) is refused: mmengine's loader skips the
            first conv (3 input channels against 3T) and reads the file unverified.
    """
    positive_int(num_frames, 'num_frames', owner)
    if inflate_init not in INFLATE_MODES:
        raise ValueError(f'{owner}: inflate_init must be one of {INFLATE_MODES}, '
                         f'got {inflate_init!r}')
    if pretrained is not None and not isinstance(pretrained, str):
        raise TypeError(f'{owner}: pretrained must be a checkpoint path or None, '
                        f'got {type(pretrained).__name__}')
    if pretrained is not None and (not pretrained.strip() or '://' in pretrained):
        raise ValueError(f'{owner}: pretrained must name a local checkpoint file (nothing is '
                         f'downloaded: save the weights to a file once and give its path), got '
                         f'{pretrained!r}')
    if 'Pretrained' in str(init_cfg):
        raise ValueError(f'{owner}: give the checkpoint as {owner}(pretrained=PATH), which '
                         'inflates its first conv; init_cfg=dict(type=\'Pretrained\') would '
                         'leave that conv at its random values (shape mismatch) and read the '
                         'file unverified')


class HyperframeBackboneMixin:
    """``init_weights``, ``train`` and ``reinflate`` of a hyperframe backbone; mix it in before
    the 2D backbone class.

    The backbone names its first ``nn.Conv2d`` (``first_conv_name``, a dotted module path) and,
    when that conv sits in a conv-norm-act ``ConvModule`` stem, the stem (``stem_module_name``);
    its ``__init__`` checks its arguments with :func:`check_hyperframe_args`, builds its 2D
    layers with ``C * num_frames`` input channels, then sets ``hyperframe_stem`` (a
    :class:`~.stem.HyperframeStem` around the conv stem), ``inflate_init`` and ``pretrained``;
    its forward runs the input through ``hyperframe_stem``. A backbone whose checkpoints come in
    foreign key layouts overrides :meth:`convert_checkpoint`.
    """

    first_conv_name: str = ''
    stem_module_name: Optional[str] = None
    #: Stages the 2D backbone freezes (its own argument where it has one); from 0 on, its stem
    #: is frozen and the hyperframe stem's parts with it. A wrapper of an arbitrary backbone
    #: freezes nothing of the stem, which it does not know.
    frozen_stages: int = -1

    hyperframe_stem: HyperframeStem
    inflate_init: str
    pretrained: Optional[str]

    @property
    def conv_stem(self) -> Optional[nn.Module]:
        """The 2D stem the hyperframe stem runs around (``stem_module_name``), if any."""
        return (self.get_submodule(self.stem_module_name)
                if self.stem_module_name is not None else None)

    @property
    def first_conv(self) -> nn.Conv2d:
        """The first convolution, whose input channels are ``C * num_frames``."""
        return self.get_submodule(self.first_conv_name)

    num_frames = delegated(STEM_NAME, 'num_frames', 'T, frames per hyperframe.')
    channels_per_frame = delegated(STEM_NAME, 'channels_per_frame', 'C, channels of a frame.')
    input_encoding = delegated(STEM_NAME, 'input_encoding', "``'frames'`` or ``'diff'``.")
    frame_attention = delegated(STEM_NAME, 'frame_attention', 'The stem\'s, or None.')
    extra_bn = delegated(STEM_NAME, 'extra_bn', 'The stem\'s, or None.')
    motion_products = delegated(STEM_NAME, 'motion_products', 'The stem\'s, or None.')

    def convert_checkpoint(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Map a checkpoint's keys to this module's; identity unless a subclass knows layouts."""
        return state_dict

    def classifier_prefixes(self) -> Tuple[str, ...]:
        """Key prefixes (after :meth:`convert_checkpoint`) of the 2D classifier head, the only
        weights a checkpoint may hold that this backbone has no place for. None by default: the
        converters of a known layout drop its head, and ``strip_prefixes`` a recognizer's."""
        return ()

    def init_weights(self) -> None:
        """Initialise from scratch as the 2D backbone's ``init_cfg`` says (never its own
        checkpoint loading, which would skip the widened first conv), load and inflate
        ``pretrained`` when given, then derive ``extra_bn`` from the stem norm unless the
        checkpoint held it."""
        BaseModule.init_weights(self)
        loaded: Set[str] = set()
        if self.pretrained is not None:
            loaded = load_inflated_checkpoint(self, self.pretrained)
        if self.extra_bn is not None and not any(stem_part(key) == 'extra_bn' for key in loaded):
            init_extra_bn(self.extra_bn, self.conv_stem.norm)

    def train(self, mode: bool = True) -> nn.Module:
        """Set train/eval mode with the 2D backbone's rules (frozen stages, ``norm_eval``,
        partial BN), then the stem's parts: frozen with the stem, otherwise training whatever
        those rules did to the batch norms."""
        super().train(mode)
        self.hyperframe_stem.train_parts(mode, frozen=self.frozen_stages >= 0)
        return self

    def _partial_bn(self) -> None:
        """Freeze every batch norm but the stem's (its norm and ``extra_bn``): TSN's partial BN,
        which keeps the first norm training because the first conv's input statistics are new,
        wherever the module order puts the stem's norms."""
        MMLogger.get_current_instance().info('Freezing BatchNorm2D except the stem\'s.')
        stem_norms = {id(self.conv_stem.norm), id(self.extra_bn)}
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d) and id(module) not in stem_norms:
                module.eval()
                module.weight.requires_grad = False
                module.bias.requires_grad = False

    def reinflate(self, num_frames: int) -> None:
        """Re-inflate the first conv in place from ``self.num_frames`` to ``num_frames``.

        The kernel is resampled over time by :func:`reinflate_conv_weight`, which keeps its
        temporal sum: T' identical frames give what T identical frames gave. Frame attention and
        ``extra_bn`` do not depend on T and are kept; the motion products' kernel is resampled
        over frame pairs the same way. The kernel becomes a new parameter, so do
        this for inference or before building an optimizer.
        """
        self.hyperframe_stem.reinflate(self.first_conv, num_frames)


def check_stage_args(owner: str, out_indices: Sequence[int], last_output: int,
                     frozen_stages: int, last_frozen: int, layers: str) -> None:
    """Check ``out_indices`` and ``frozen_stages`` against the layers a backbone has, before it
    is built: its 2D base refuses some bad values with a bare assertion or a message naming
    no component, fails on others only when ``train()`` looks for a stage that is not there,
    and takes the rest silently (a negative or repeated index returns fewer outputs than
    asked, an empty list none at all).

    Args:
        owner (str): the backbone's name, for the errors.
        out_indices (Sequence[int]): a non-empty list or tuple of distinct ints in increasing
            order (the forward returns outputs in layer order, whatever order is asked), each
            in ``0..last_output``.
        last_output (int): the index of the backbone's last output layer.
        frozen_stages (int): an int in ``-1..last_frozen``.
        last_frozen (int): the most stages the backbone can freeze.
        layers (str): what the indices count, for the errors.
    """
    if not (isinstance(out_indices, (list, tuple)) and out_indices
            and all(is_int(index) and 0 <= index <= last_output for index in out_indices)
            and list(out_indices) == sorted(set(out_indices))):
        raise ValueError(f'{owner}: out_indices must be a non-empty list or tuple of distinct '
                         f'ints in increasing order, each in 0..{last_output} ({layers}), got '
                         f'{out_indices!r}')
    if not (is_int(frozen_stages) and -1 <= frozen_stages <= last_frozen):
        raise ValueError(f'{owner}: frozen_stages must be an int in -1..{last_frozen} (-1 '
                         f'freezes nothing, 0 the stem; {layers}), got {frozen_stages!r}')


def load_inflated_checkpoint(model: nn.Module,
                             path: str,
                             first_conv: Optional[str] = None,
                             inflate_init: Optional[str] = None,
                             channels_per_frame: int = 3) -> Set[str]:
    """Load a 2D (or hyperframe) checkpoint into ``model``, inflating its first conv.

    The one place weights enter a hyperframe model (``pretrained=`` calls it from
    ``init_weights``), explicit and logged, after timm's ``load_pretrained``: the checkpoint's
    first-conv kernel with ``C`` input channels is inflated to the model's ``C * T`` by
    :func:`inflate_conv_weight`; one that already has ``C * T`` is loaded as is.

    Args:
        model (nn.Module): a hyperframe backbone (its first conv, key layout, ``inflate_init``
            and input encoding are its own; the kernel is inflated in the frame basis, then
            moved to the encoded one), or any module whose conv ``first_conv`` was already
            widened to ``C * T`` inputs (a torchvision or timm network), T read from it.
        path (str): the checkpoint file: a bare state dict or one under ``state_dict``/
            ``model``, with or without ``module.``/``backbone.`` prefixes.
        first_conv (str, optional): dotted name of the first conv; a hyperframe backbone's own
            by default (giving another is an error).
        inflate_init (str, optional): ``'replicate'``, ``'center'`` or ``'random'``; a
            hyperframe backbone's own by default, else ``'replicate'``.
        channels_per_frame (int): C of a module that is not a hyperframe backbone. Defaults
            to 3.

    Returns:
        set[str]: the keys loaded.

    Raises:
        KeyError: the checkpoint has no first conv, or leaves weights of ``model`` unset (only
            the stem's parts and ``num_batches_tracked`` may be missing: they keep their
            initialisation).
        ValueError: its first conv has neither C nor C*T input channels, or it holds stem parts
            the backbone was built without.
        RuntimeError: another weight has the wrong shape (wrong depth or arch), or the file
            holds weights the model has no place for beyond a classifier head (another
            network's file: an SE-ResNet's into a ResNet).
    """
    name = type(model).__name__
    state_dict = strip_prefixes(read_state_dict(path))
    stem, basis = None, ''
    if isinstance(model, HyperframeBackboneMixin):
        if first_conv not in (None, model.first_conv_name):
            raise ValueError(f'load_inflated_checkpoint: {name}\'s first conv is '
                             f'{model.first_conv_name!r}, not {first_conv!r}')
        first_conv, channels_per_frame = model.first_conv_name, model.channels_per_frame
        inflate_init = inflate_init or model.inflate_init
        state_dict = model.convert_checkpoint(state_dict)
        stem = model.hyperframe_stem
        if stem.input_encoding != 'frames':
            basis = f', in the {describe(stem.input_encoding, stem.diff_gain)} input basis'
    elif first_conv is None:
        raise ValueError(f'load_inflated_checkpoint: {name} is not a hyperframe backbone; name '
                         'its first conv (first_conv=...)')
    inflate_init = inflate_init or 'replicate'
    expected = model.get_submodule(first_conv).in_channels
    num_frames = expected // channels_per_frame
    key = f'{first_conv}.weight'
    if key not in state_dict:
        raise KeyError(f'{path}: no first conv weight {key!r} for {name} (after mapping the '
                       f'checkpoint\'s key layout); first keys: {list(state_dict)[:5]}')
    in_channels = state_dict[key].shape[1]
    if in_channels == channels_per_frame:
        # inflated in the frame basis, where replicate/center have their meaning, then moved
        # to the model's input basis: the network computes the same function either way
        # a half-precision file is inflated in float32 (as timm's adapt_input_conv does), then
        # cast to the model's dtype: W / T rounded back to half loses T * (W / T) == W
        kernel = state_dict[key]
        if kernel.is_floating_point():
            kernel = kernel.to(torch.promote_types(kernel.dtype, torch.float32))
        weight = inflate_conv_weight(kernel, num_frames, inflate_init, channels_per_frame)
        weight = weight if stem is None else stem.to_encoding(weight, to_encoded=True)
        state_dict[key] = weight.to(model.get_submodule(first_conv).weight.dtype)
        how = f'inflated {in_channels} -> {expected} channels (inflate_init={inflate_init}){basis}'
    elif in_channels == expected:
        if stem is not None:  # trained in some input basis: the file's config says which
            from ...engine.checkpoint import check_input_basis, trained_input_basis
            checkpoint = load_checkpoint_file(path)
            if trained_input_basis(checkpoint) is None:
                # a bare state dict: no weight's shape records the encoding, so a kernel
                # learnt on frame differences loads into a model fed frames (and back) and
                # reads its inputs in a basis it never saw
                print_log(f'{name}: {path} holds a {num_frames}-frame first conv but no config '
                          'naming the input encoding it was trained on, so it cannot be '
                          'checked; it will read inputs as input_encoding='
                          f'{stem.input_encoding!r}, diff_gain={stem.diff_gain:g}. Save it '
                          'with its config (an mmengine checkpoint) or make sure they match.',
                          logger='current', level=logging.WARNING)
            check_input_basis(model, checkpoint, path)
        how = f'already a {num_frames}-frame hyperframe kernel, loaded as is'
    else:
        raise ValueError(
            f'{path}: first conv {key!r} has {in_channels} input channels; {name}(num_frames='
            f'{num_frames}) loads a 2D checkpoint ({channels_per_frame} channels) or a '
            f'hyperframe one with {expected}. To run a checkpoint trained at another T, build '
            'the backbone with that num_frames, load it, then call '
            'reinflate_backbone(model, new_num_frames).')
    try:
        missing, unexpected = model.load_state_dict(state_dict, strict=False)
    except RuntimeError as error:
        raise RuntimeError(f'{path} does not fit {name}: {error}') from error
    unset = [k for k in missing if stem_part(k) is None and not k.endswith('num_batches_tracked')]
    if unset:
        raise KeyError(f'{path} leaves {len(unset)} weights of {name} unset (wrong '
                       f'architecture or key layout?): {unset[:10]}')
    deeper = extra_blocks(model, unexpected)
    if deeper:
        raise RuntimeError(f'{path} does not fit {name}: it holds blocks {name} does not have '
                           f'(another depth or width?): {deeper[:5]}' +
                           (f', ... ({len(deeper)} in all)' if len(deeper) > 5 else ''))
    dropped_parts = sorted({stem_part(k) for k in unexpected if stem_part(k)})
    if dropped_parts:
        raise ValueError(f'{path} was trained with {dropped_parts}, which this {name} lacks: '
                         'build it with ' + ', '.join(f'{part}=True' for part in dropped_parts) +
                         ' (dropping them would change what the model computes)')
    head = (model.classifier_prefixes() if isinstance(model, HyperframeBackboneMixin)
            else timm_classifier_prefixes(model))
    foreign = [k for k in unexpected if not k.startswith(head)]
    if foreign:
        # the file's network has layers this one lacks (an SE/ECA block where the model has
        # none, another stem): loading the rest would compute a network that is neither
        raise RuntimeError(f'{path} is another network\'s checkpoint, not {name}\'s: it holds '
                           f'{len(foreign)} weights {name} has no place for, which are not its '
                           f'classifier head {list(head)}: {foreign[:5]}. Load a checkpoint of '
                           'the same architecture, or build the backbone the file was saved from')
    print_log(f'{name}: loaded {path}: first conv {how}; new parts initialised: '
              f'{sorted({stem_part(k) for k in missing if stem_part(k)})}',
              logger='current', level=logging.INFO)
    if unexpected:
        print_log(f'{name}: {path} holds {len(unexpected)} weights {name} has no place for, '
                  f'ignored: {unexpected[:10]} (the 2D classifier head)', logger='current',
                  level=logging.WARNING)
    return set(state_dict) - set(unexpected)


def extra_blocks(model: nn.Module, keys) -> List[str]:
    """The ``keys`` that name a block past the end of one of ``model``'s stages
    (``layer1.2.conv1.weight`` against a ``layer1`` of two blocks): a deeper network's, whose
    weights a load would drop. A key under a part the model has no place for at all (a
    classifier it was built without) is not one."""
    extra = []
    for key in keys:
        module = model
        for depth, part in enumerate(key.split('.')[:-1]):
            child = module._modules.get(part)
            if child is None:
                if depth and isinstance(module, (nn.Sequential, nn.ModuleList)):
                    extra.append(key)
                break
            module = child
    return extra


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
