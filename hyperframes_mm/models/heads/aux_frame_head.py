"""A classification head with an auxiliary per-sample target learnt from the same features."""
from typing import Dict, Tuple, Union

import torch
from mmaction.evaluation import top_k_accuracy
from mmaction.registry import MODELS
from mmaction.utils import ConfigType, OptConfigType, SampleList
from mmengine.model import BaseModule
from mmengine.model.weight_init import normal_init
from torch import nn

from ...utils import delegated, int_at_least
from ...utils.checks import finite_number
from ..recognizers.fast_slow import pool_features


def pool_clip_features(feats: Union[torch.Tensor, Tuple[torch.Tensor, ...]],
                       num_segs: int) -> torch.Tensor:
    """``[N * S, C, ...]`` backbone features -> ``[N, C]``: spatial mean, then segment mean.

    The pooling ``TSNHead`` applies before its classifier (average over space, then
    ``AvgConsensus`` over the S segments / test clips of a sample), for any shape
    :func:`~hyperframes_mm.models.recognizers.fast_slow.pool_features` accepts.

    Raises:
        ValueError: the batch is not a whole number of samples of ``num_segs`` segments.
    """
    pooled = pool_features(feats)
    if num_segs < 1 or pooled.shape[0] % num_segs:
        raise ValueError(f'pool_clip_features: {pooled.shape[0]} feature rows are not whole '
                         f'samples of num_segs={num_segs}')
    return pooled.reshape(-1, num_segs, pooled.shape[1]).mean(dim=1)


@MODELS.register_module()
class AuxFrameHead(BaseModule):
    """Wrap a classification head and learn an auxiliary per-sample target on its features.

    The wrapped ``head`` (e.g. ``TSNHead``) classifies as usual. A linear classifier of
    ``aux_num_classes`` reads the same backbone features, pooled as ``TSNHead`` pools them
    (:func:`pool_clip_features`), and is trained on a per-sample target stored in each data
    sample under ``aux_key`` — e.g. the label of the centre frame that ``CenterFrameTarget``
    writes and ``PackActionInputs(algorithm_keys=('aux_label', ))`` carries. :meth:`loss`
    returns the wrapped head's losses plus ``loss_aux = aux_loss_weight * CE(aux)`` (mmengine
    sums every ``loss*`` entry) and the auxiliary top-1 accuracy (``aux_top1_acc``, logged
    only). Prediction, ``forward`` (a recognizer's ``stage='head'``, ONNX export) and clip
    averaging are the wrapped head's alone: the auxiliary classifier costs nothing at test
    time, and a recognizer (``Recognizer2D``, ``FastSlowRecognizer``) needs no change.

    Auxiliary supervision is off unless a config wraps its head in this class::

        cls_head=dict(type='AuxFrameHead', aux_num_classes=2, aux_loss_weight=0.5,
                      head=dict(type='TSNHead', num_classes=10, in_channels=512))

    Args:
        head (dict): config of the main head; it must have ``in_channels``.
        aux_num_classes (int): classes of the auxiliary target, at least 2.
        aux_loss_weight (float): weight of the auxiliary cross-entropy, > 0. Defaults to 0.5.
        aux_key (str): the data-sample field holding the target. Defaults to ``'aux_label'``.
        aux_dropout_ratio (float): dropout before the auxiliary classifier, in [0, 1).
            Defaults to 0.
        init_std (float): std of the auxiliary classifier's normal init. Defaults to 0.01.
        init_cfg (dict, optional): Defaults to None.
    """

    def __init__(self,
                 head: ConfigType,
                 aux_num_classes: int,
                 aux_loss_weight: float = 0.5,
                 aux_key: str = 'aux_label',
                 aux_dropout_ratio: float = 0.0,
                 init_std: float = 0.01,
                 init_cfg: OptConfigType = None) -> None:
        int_at_least(aux_num_classes, 'aux_num_classes', 2, 'AuxFrameHead')
        if isinstance(aux_loss_weight, bool) or not isinstance(aux_loss_weight, (int, float)) \
                or not aux_loss_weight > 0:
            raise ValueError(f'AuxFrameHead: aux_loss_weight must be > 0, got {aux_loss_weight!r}'
                             ' (to train without the auxiliary target, use the head itself)')
        # a string failed the comparison with a bare TypeError that named no argument
        if not 0.0 <= finite_number(aux_dropout_ratio, 'aux_dropout_ratio', 'AuxFrameHead') < 1.0:
            raise ValueError(f'AuxFrameHead: aux_dropout_ratio must be in [0, 1), got '
                             f'{aux_dropout_ratio!r}')
        super().__init__(init_cfg=init_cfg)
        self.head = MODELS.build(head)
        in_channels = getattr(self.head, 'in_channels', None)
        if not isinstance(in_channels, int):
            raise ValueError(f'AuxFrameHead: the wrapped {type(self.head).__name__} has no '
                             'in_channels to size the auxiliary classifier from')
        self.aux_num_classes = aux_num_classes
        self.aux_loss_weight = float(aux_loss_weight)
        self.aux_key = aux_key
        self.init_std = init_std
        self.aux_dropout = nn.Dropout(aux_dropout_ratio) if aux_dropout_ratio else None
        self.aux_fc = nn.Linear(in_channels, aux_num_classes)
        self.aux_loss = nn.CrossEntropyLoss()

    # The wrapped head's attributes that recognizers, exporters and tools read.
    num_classes = delegated('head', 'num_classes', 'Classes of the main head.')
    in_channels = delegated('head', 'in_channels', 'Feature channels both classifiers read.')
    average_clips = delegated('head', 'average_clips',
                              "The main head's clip averaging (``'prob'``, ``'score'`` or None).")

    def init_weights(self) -> None:
        """Initialise the wrapped head its own way and the auxiliary classifier from N(0, std)."""
        super().init_weights()
        normal_init(self.aux_fc, std=self.init_std)

    def forward(self, x, **kwargs) -> torch.Tensor:
        """The main head's class scores."""
        return self.head(x, **kwargs)

    def aux_scores(self, feats, num_segs: int = 1) -> torch.Tensor:
        """Auxiliary class scores ``[N, aux_num_classes]`` from the backbone features."""
        pooled = pool_clip_features(feats, num_segs)
        if self.aux_dropout is not None:
            pooled = self.aux_dropout(pooled)
        return self.aux_fc(pooled)

    def aux_targets(self, data_samples: SampleList, device: torch.device) -> torch.Tensor:
        """The ``[N]`` auxiliary targets of a batch.

        Raises:
            KeyError: a data sample has no ``aux_key`` field.
            ValueError: a target outside ``[0, aux_num_classes)``.
        """
        missing = [index for index, sample in enumerate(data_samples)
                   if self.aux_key not in sample]
        if missing:
            raise KeyError(f'AuxFrameHead: data samples {missing[:5]} have no {self.aux_key!r}: '
                           f'put CenterFrameTarget (key={self.aux_key!r}) after the sampler of '
                           f'the training pipeline and PackActionInputs(algorithm_keys='
                           f"('{self.aux_key}', ))")
        targets = torch.as_tensor([int(sample.get(self.aux_key)) for sample in data_samples],
                                  dtype=torch.long, device=device)
        bad = (targets < 0) | (targets >= self.aux_num_classes)
        if bad.any():
            raise ValueError(f'AuxFrameHead: {self.aux_key} values {targets[bad].tolist()[:5]} '
                             f'are outside [0, {self.aux_num_classes}) (aux_num_classes)')
        return targets

    def loss(self, feats, data_samples: SampleList, **kwargs) -> Dict[str, torch.Tensor]:
        """The wrapped head's losses, plus ``loss_aux`` and ``aux_top1_acc``."""
        losses = self.head.loss(feats, data_samples, **kwargs)
        scores = self.aux_scores(feats, kwargs.get('num_segs', 1))
        targets = self.aux_targets(data_samples, scores.device)
        losses['loss_aux'] = self.aux_loss_weight * self.aux_loss(scores, targets)
        accuracy = top_k_accuracy(scores.detach().cpu().numpy(), targets.cpu().numpy(), (1, ))
        losses['aux_top1_acc'] = torch.tensor(accuracy[0], device=scores.device)
        return losses

    def predict(self, feats, data_samples: SampleList, **kwargs) -> SampleList:
        """The wrapped head's predictions (the auxiliary classifier is not used)."""
        return self.head.predict(feats, data_samples, **kwargs)

    def predict_by_feat(self, cls_scores: torch.Tensor, data_samples: SampleList) -> SampleList:
        """The wrapped head's ``predict_by_feat``."""
        return self.head.predict_by_feat(cls_scores, data_samples)

    def average_clip(self, cls_scores: torch.Tensor, num_segs: int = 1) -> torch.Tensor:
        """The wrapped head's clip averaging."""
        return self.head.average_clip(cls_scores, num_segs=num_segs)
