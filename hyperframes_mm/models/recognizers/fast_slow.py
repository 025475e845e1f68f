"""Two-or-more-stream hyperframe recognizer: fast and slow hyperframes, features fused, classified."""
import copy
from typing import Dict, Optional, Sequence, Tuple, Union

import torch
from mmaction.models.recognizers.base import BaseRecognizer
from mmaction.registry import MODELS
from mmaction.utils import ConfigType, OptConfigType, SampleList
from mmengine.model import ModuleDict
from torch import nn
from torch.nn import functional as F

from ...datasets.transforms.pipeline_info import stream_key
from ...utils import positive_int
from ...utils.checks import finite_number, flag

FUSIONS = ('concat', 'sum')


def pool_features(features: Union[torch.Tensor, Tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """Global-average a backbone output to ``[N, C]``.

    Accepts what 2D backbones return: ``[N, C, H, W]`` maps, ``[N, L, C]`` token sequences, flat
    ``[N, C]`` vectors, or a tuple of them (the last, deepest one is used).
    """
    if isinstance(features, (tuple, list)):
        features = features[-1]
    if features.dim() == 4:
        return features.mean(dim=(2, 3))
    if features.dim() == 3:
        return features.mean(dim=1)
    if features.dim() == 2:
        return features
    raise ValueError(f'cannot pool backbone output of shape {tuple(features.shape)}')


def stream_dropout_mask(batch: int, num_streams: int, p: float,
                        device: torch.device) -> torch.Tensor:
    """Inverted-dropout mask ``[batch, num_streams]`` that drops whole streams of a sample.

    Each stream of each sample is kept with probability ``1 - p`` and scaled by ``1 / (1 - p)``;
    a sample whose streams were all dropped keeps them all (unscaled), so no sample is left without
    input.
    """
    keep = torch.rand(batch, num_streams, device=device) >= p
    mask = keep.float() / (1.0 - p)
    all_dropped = ~keep.any(dim=1)
    mask[all_dropped] = 1.0
    return mask


@MODELS.register_module()
class FastSlowRecognizer(BaseRecognizer):
    """Hyperframes of several temporal scales through a (shared) 2D backbone, fused, classified.

    Each stream (e.g. ``fast``: short interval, fine motion; ``slow``: long interval, trends) is a
    ``[B, K, 3T, H, W]`` input under the key ``imgs_<name>`` — what ``HyperframeStack`` writes for a
    multi-stream sample and ``PackActionInputs(collect_keys=(...))`` collects. Every stream goes
    through the backbone, is pooled to ``[B*K, C]``, and the streams are fused by concatenation
    (``[B*K, S*C]``) or summation (``[B*K, C]``). The head sees the fused feature as K segments,
    so mmaction2's ``TSNHead`` averages test clips exactly as it does for ``Recognizer2D``.

    Fusing before the backbone (early fusion: one hyperframe of both streams' frames, one pass)
    needs no recognizer of its own: ``HyperframeStack(fuse_streams=True)`` stacks the streams in
    the data pipeline and mmaction2's ``Recognizer2D`` runs a backbone whose T is the streams'
    total. This recognizer is for what only a recognizer can do: a pass per stream (each at its
    own size, through a shared or its own backbone) and fusion of the features.

    Args:
        backbone (dict): backbone config shared by all streams, or a dict mapping each stream name
            to its own backbone config (streams may then differ in T); with
            ``share_backbone=True`` one backbone is built and every stream must have its T.
        cls_head (dict): head config; its ``in_channels`` must be ``S * C`` for ``concat`` and
            ``C`` for ``sum``.
        streams (Sequence[str]): stream names, in fusion order. Defaults to ``('fast', 'slow')``.
        share_backbone (bool): one backbone for all streams (same parameters, the cost of one
            backbone in memory) or one per stream. Defaults to True.
        fusion (str): ``'concat'`` or ``'sum'`` of the streams' features. Defaults to
            ``'concat'``.
        stream_dropout (float): training-time probability of dropping a whole stream's feature for
            a sample (see :func:`stream_dropout_mask`), so that neither stream dominates. Defaults
            to 0.
        stream_downsample (dict[str, int], optional): stream name -> integer factor by which that
            stream's hyperframes are average-pooled (``factor x factor`` pixels to one) before its
            backbone: a stream at half size costs about a quarter, so a stream that carries
            coarse motion can be added for a fraction of a full backbone pass. Streams not named
            keep the input size. Defaults to None (every stream at full size).
        train_cfg, test_cfg (dict, optional): as mmaction2's recognizers.
        data_preprocessor (dict, optional): defaults to ``HyperframeDataPreprocessor`` without
            normalisation.
    """

    def __init__(self,
                 backbone: ConfigType,
                 cls_head: ConfigType,
                 streams: Sequence[str] = ('fast', 'slow'),
                 share_backbone: bool = True,
                 fusion: str = 'concat',
                 stream_dropout: float = 0.0,
                 stream_downsample: Optional[Dict[str, int]] = None,
                 train_cfg: OptConfigType = None,
                 test_cfg: OptConfigType = None,
                 data_preprocessor: OptConfigType = None) -> None:
        # a string is a sequence too: streams='fast' became the four streams 'f', 'a', 's', 't'
        if isinstance(streams, (str, bytes)) or not hasattr(streams, '__iter__'):
            raise ValueError(f'FastSlowRecognizer: streams must be a sequence of names, got '
                             f'{streams!r}')
        streams = tuple(streams)
        if len(streams) < 2 or len(set(streams)) != len(streams):
            raise ValueError(f'FastSlowRecognizer: streams must be >= 2 distinct names, got '
                             f'{streams}')
        if fusion not in FUSIONS:
            early = (' (early fusion is HyperframeStack(fuse_streams=True) in the pipeline, '
                     'then Recognizer2D with the streams\' total num_frames)'
                     if fusion == 'early' else '')
            raise ValueError(f'FastSlowRecognizer: fusion must be one of {FUSIONS}, got '
                             f'{fusion!r}{early}')
        # a config's 'False' is a true string: it built one backbone for all streams
        share_backbone = flag(share_backbone, 'share_backbone', 'FastSlowRecognizer')
        if not 0.0 <= finite_number(stream_dropout, 'stream_dropout', 'FastSlowRecognizer') < 1.0:
            raise ValueError(f'FastSlowRecognizer: stream_dropout must be in [0, 1), got '
                             f'{stream_dropout}')
        stream_downsample = dict(stream_downsample or {})
        unknown = sorted(set(stream_downsample) - set(streams))
        if unknown:
            raise ValueError(f'FastSlowRecognizer: stream_downsample names {unknown}, which are '
                             f'not among the streams {streams}')
        for name, factor in stream_downsample.items():
            positive_int(factor, f'stream_downsample[{name!r}]', 'FastSlowRecognizer')
        per_stream = self._per_stream_configs(backbone, streams)
        if share_backbone and any(cfg != per_stream[streams[0]] for cfg in per_stream.values()):
            raise ValueError('FastSlowRecognizer: share_backbone=True needs one backbone config '
                             'for all streams; give per-stream configs with share_backbone=False')
        if data_preprocessor is None:
            data_preprocessor = dict(type='HyperframeDataPreprocessor')
        super().__init__(backbone=copy.deepcopy(per_stream[streams[0]]), cls_head=cls_head,
                         train_cfg=train_cfg, test_cfg=test_cfg,
                         data_preprocessor=data_preprocessor)
        if not share_backbone:
            built = {streams[0]: self.backbone}
            built.update({name: MODELS.build(copy.deepcopy(per_stream[name]))
                          for name in streams[1:]})
            # mmengine's ModuleDict: BaseModule.init_weights recurses only into children that
            # have init_weights, so in torch's the streams' pretrained= was never loaded
            self.backbone = ModuleDict(built)
        self.streams = streams
        self.share_backbone = share_backbone
        self.fusion = fusion
        self.stream_dropout = stream_dropout
        self.stream_downsample = stream_downsample

    @staticmethod
    def _per_stream_configs(backbone: ConfigType, streams: Tuple[str, ...]) -> Dict[str, dict]:
        if 'type' in backbone:
            return {name: backbone for name in streams}
        if set(backbone) != set(streams):
            raise ValueError(f'FastSlowRecognizer: per-stream backbone configs must be given for '
                             f'exactly the streams {streams}, got {sorted(backbone)}')
        return dict(backbone)

    def stream_backbone(self, name: str) -> nn.Module:
        """The backbone that processes stream ``name``."""
        return self.backbone if self.share_backbone else self.backbone[name]

    def _stream_hyperframes(self, inputs: Dict[str, torch.Tensor]) -> Tuple[list, int]:
        """Every stream's ``[B, K, 3T, H, W]`` input checked and flattened to ``[B*K, 3T, H, W]``,
        in stream order, and K."""
        hyperframes, num_segs = [], None
        for name in self.streams:
            clips = inputs[stream_key(name)]
            if clips.dim() != 5:
                raise ValueError(f'FastSlowRecognizer: {stream_key(name)} must be '
                                 f'[B, K, 3T, H, W], got shape {tuple(clips.shape)}')
            if num_segs is None:
                num_segs = clips.shape[1]
            elif clips.shape[1] != num_segs:
                raise ValueError(f'FastSlowRecognizer: every stream needs the same number of '
                                 f'hyperframes per sample; {stream_key(name)} has '
                                 f'{clips.shape[1]}, {stream_key(self.streams[0])} has {num_segs}')
            hyperframes.append(clips.flatten(0, 1))
        return hyperframes, num_segs

    def _downsampled(self, name: str, hyperframes: torch.Tensor) -> torch.Tensor:
        """Stream ``name``'s hyperframes average-pooled by its ``stream_downsample`` factor."""
        factor = self.stream_downsample.get(name, 1)
        if factor == 1:
            return hyperframes
        if min(hyperframes.shape[-2:]) < factor:
            raise ValueError(f'FastSlowRecognizer: {stream_key(name)} of size '
                             f'{tuple(hyperframes.shape[-2:])} cannot be downsampled {factor}x')
        return F.avg_pool2d(hyperframes, factor)

    def extract_feat(self,
                     inputs: Dict[str, torch.Tensor],
                     stage: str = 'neck',
                     data_samples: Optional[SampleList] = None,
                     test_mode: bool = False) -> Tuple[torch.Tensor, dict]:
        """Fused features ``[B*K, F, 1, 1]`` and ``dict(num_segs=K)`` for the head.

        ``stage='backbone'`` returns them flat (``[B*K, F]``); ``stage='head'`` returns the head's
        class scores ``[B, num_classes]`` instead (what ``mode='tensor'`` exports use).

        Args:
            inputs (dict[str, Tensor]): ``imgs_<name>`` -> ``[B, K, 3T, H, W]`` for every stream.
        """
        if not isinstance(inputs, dict):
            raise TypeError('FastSlowRecognizer expects a dict of streams (imgs_<name> -> '
                            '[B, K, 3T, H, W]), as PackActionInputs(collect_keys=...) packs them; '
                            f'got {type(inputs).__name__}')
        missing = [stream_key(name) for name in self.streams if stream_key(name) not in inputs]
        if missing:
            raise KeyError(f'FastSlowRecognizer: inputs lack {missing} (have {sorted(inputs)}); '
                           'the sampler streams and the recognizer streams must match')
        unread = sorted(set(inputs) - {stream_key(name) for name in self.streams})
        if unread:  # a stream the sampler makes and no backbone reads: dropped, silently
            raise KeyError(f'FastSlowRecognizer: inputs hold {unread}, which no stream of the '
                           f'recognizer ({", ".join(self.streams)}) reads; the sampler streams '
                           'and the recognizer streams must match')
        hyperframes, num_segs = self._stream_hyperframes(inputs)
        features = []
        for name, frames in zip(self.streams, hyperframes):
            try:
                features.append(pool_features(
                    self.stream_backbone(name)(self._downsampled(name, frames))))
            except ValueError as error:  # the backbone names itself, not the stream it reads
                error.add_note(f'FastSlowRecognizer: while reading {stream_key(name)}')
                raise
        if self.training and self.stream_dropout > 0:
            mask = stream_dropout_mask(features[0].shape[0], len(features), self.stream_dropout,
                                       features[0].device)
            features = [feature * mask[:, index:index + 1]
                        for index, feature in enumerate(features)]
        widths = {name: feature.shape[1] for name, feature in zip(self.streams, features)}
        if self.fusion == 'sum' and len(set(widths.values())) > 1:
            raise ValueError(f'FastSlowRecognizer: fusion=\'sum\' adds the streams\' features, '
                             f'which need one width, got {widths}; use fusion=\'concat\'')
        fused = (torch.cat(features, dim=1) if self.fusion == 'concat' else
                 torch.stack(features, dim=0).sum(dim=0))
        kwargs = dict(num_segs=num_segs)
        if stage == 'backbone':
            return fused, kwargs
        head_width = getattr(self.cls_head, 'in_channels', None)
        if isinstance(head_width, int) and head_width != fused.shape[1]:
            # else a bare matmul error in the head's fc, naming no setting
            raise ValueError(
                f'FastSlowRecognizer: cls_head.in_channels={head_width}, and fusion='
                f'{self.fusion!r} of the streams\' features {widths} gives {fused.shape[1]}: '
                f'set cls_head.in_channels={fused.shape[1]}')
        fused = fused[:, :, None, None]
        if stage == 'head':
            return self.cls_head(fused, **kwargs), kwargs
        return fused, kwargs
