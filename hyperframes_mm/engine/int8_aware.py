"""Int8-aware fine-tuning: a trained float model trains a few more epochs through the rounding its
int8 deployment will apply, so that onnxruntime's static quantisation
(:func:`hyperframes_mm.deploy.quantize.quantize_int8`) costs it less accuracy.

Post-training quantisation rounds every weight and activation once, after training chose weights
that never saw the rounding; its errors add up over the network's layers. Here every convolution
and linear layer computes with its weights rounded as the int8 file stores them (per output
channel, symmetric, the 7-bit range the quantiser uses so that no AVX2 CPU saturates) and with
its input rounded to uint8 over a range observed during training (per tensor, asymmetric, as the
quantiser calibrates it); gradients pass the rounding unchanged (the straight-through
estimator), so the weights move to where rounding costs least. The checkpoint keeps plain float
weights under the model's own names: it exports and quantises as any other, and the quantiser's
per-channel weight rounding is then exactly the one trained through (per-channel symmetric
rounding does not change, up to float rounding, when a batch norm's scale is folded into the
kernel).

Where the export folds the normalisation and the input encoding into the stem's first conv
(:func:`hyperframes_mm.deploy.export.fold_input_into_stem`), that conv's int8 file reads the raw
pixels, which uint8 holds exactly, through the folded kernel: here its input is not rounded and
its kernel is rounded in the folded basis, then moved back to the encoded one.

Batch norms keep their running statistics frozen: a few epochs of small batches would otherwise
move the statistics that the int8 graph folds into its kernels. Not modelled: the int8 graph
also rounds a convolution's output where it feeds an operator that stays in float (a residual
``Add``); here only the inputs of convolutions and linear layers are rounded.
"""
import logging
from typing import Dict, List, Optional, Tuple

import torch
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from mmaction.registry import HOOKS

from ..utils.folding import foldable_stem, input_affine, offset_response

#: onnxruntime's per-channel symmetric int8 weight codes with ``reduce_range`` (``quantize_int8``)
WEIGHT_CODES = (-64, 64)
#: its uint8 activation codes (activations are not reduced)
ACTIVATION_CODES = (0, 255)
#: the layers onnxruntime quantises (Conv, Gemm/MatMul)
QUANTISED_LAYERS = (nn.Conv2d, nn.Linear)


def weight_scale(weight: torch.Tensor) -> torch.Tensor:
    """The per-output-channel scale :func:`quantize_int8` stores ``weight`` with: onnxruntime's
    symmetric ``2 * absmax / (qmax - qmin)``, computed in float64 and stored as float32, 1 for an
    all-zero channel (the zero point is 0)."""
    qmin, qmax = WEIGHT_CODES
    absmax = weight.detach().flatten(1).abs().amax(1).double()
    scale = (2 * absmax / (qmax - qmin)).float()
    return torch.where(scale < torch.finfo(torch.float32).tiny, torch.ones_like(scale), scale)


def fake_quantize_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` rounded per output channel as :func:`quantize_int8` stores it, differentiable
    (straight-through)."""
    qmin, qmax = WEIGHT_CODES
    scale = weight_scale(weight)
    zero = torch.zeros(scale.numel(), dtype=torch.int32, device=weight.device)
    return torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, qmin, qmax)


def activation_quantizer() -> nn.Module:
    """A per-tensor uint8 fake quantiser whose range is a moving average of the observed
    minima and maxima (zero always included, as the quantiser's calibration does)."""
    from torch.ao.quantization import FakeQuantize, MovingAverageMinMaxObserver
    qmin, qmax = ACTIVATION_CODES
    return FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=qmin, quant_max=qmax,
                        dtype=torch.quint8, qscheme=torch.per_tensor_affine)


class Int8Rounding:
    """The rounding of :func:`quantize_int8` attached to every convolution and linear layer of a
    model through forward hooks; :meth:`remove` takes it off again.

    The model's parameters, buffers and state dict stay as they are: the rounded weight is put
    in the layer's instance ``__dict__`` for the duration of its forward (where attribute lookup
    finds it before the parameter), so every layer class that reads ``self.weight`` computes with
    it, whatever its ``forward`` does (``PadAwareConv2d``'s cropped kernels, timm's same
    padding). The activation quantisers are held here, not registered in the model, so that
    checkpoints do not change.
    """

    def __init__(self, model: nn.Module) -> None:
        self.layers: List[Tuple[str, nn.Module]] = [
            (name, module) for name, module in model.named_modules()
            if isinstance(module, QUANTISED_LAYERS)]
        if not self.layers:
            raise ValueError(f'Int8Rounding: {type(model).__name__} has no convolution or '
                             'linear layer to round')
        self.inputs: Dict[str, nn.Module] = {}
        self.handles = []
        stem = foldable_stem(model)
        folded = stem.conv if stem is not None else None
        for name, module in self.layers:
            if module is folded:
                self._round_folded(module, *input_affine(model))
                continue
            weight = module.weight
            quantizer = activation_quantizer().to(weight.device)
            self.inputs[name] = quantizer
            self.handles.append(module.register_forward_pre_hook(self._pre_hook(quantizer)))
            self.handles.append(module.register_forward_hook(self._restore, always_call=True))

    @staticmethod
    def _pre_hook(quantizer: nn.Module):

        def round_inputs_and_weight(module, args):
            module.__dict__['weight'] = fake_quantize_weight(module._parameters['weight'])
            return (quantizer(args[0]), *args[1:])

        return round_inputs_and_weight

    def _round_folded(self, conv: nn.Conv2d, matrix: torch.Tensor, offset: torch.Tensor) -> None:
        """Round the stem conv as its folded int8 kernel: ``W A`` per output channel, where
        ``A``, ``b`` (:func:`input_affine`) map raw pixels to the conv's input. With ``W~`` the
        rounded kernel moved back (``Q(W A) A^-1``), the conv on ``A p + b`` gives
        ``Q(W A) * p + W~ * b``; the int8 graph adds ``W * b`` in float (the folded bias and
        border), so the forward hook adds ``(W - W~) * b``."""
        to_folded = matrix.to(conv.weight)
        from_folded = torch.linalg.inv(matrix).to(conv.weight)
        offset = offset.to(conv.weight)

        def round_weight(module, args):
            weight = module._parameters['weight']
            folded = torch.einsum('oihw,ij->ojhw', weight, to_folded)
            module.__dict__['weight'] = torch.einsum('ojhw,ji->oihw',
                                                     fake_quantize_weight(folded), from_folded)

        def add_offset_rounding(module, args, output):
            rounded = module.__dict__.pop('weight', None)
            if rounded is None:
                return output
            inside, border = offset_response(module, module._parameters['weight'] - rounded,
                                             offset, args[0].shape[-2:])
            return output + inside[:, None, None] + border

        self.handles.append(conv.register_forward_pre_hook(round_weight))
        self.handles.append(conv.register_forward_hook(add_offset_rounding, always_call=True))

    @staticmethod
    def _restore(module, args, output) -> None:
        module.__dict__.pop('weight', None)

    def observe(self, enabled: bool) -> None:
        """Whether the activation ranges follow what the layers see (training) or stay
        (validation, which should not move them)."""
        for quantizer in self.inputs.values():
            quantizer.enable_observer(enabled)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        for _, module in self.layers:
            module.__dict__.pop('weight', None)
        self.handles = []


def freeze_norms(model: nn.Module) -> int:
    """Put every batch norm of ``model`` in evaluation mode; returns how many there are."""
    norms = [module for module in model.modules() if isinstance(module, _BatchNorm)]
    for norm in norms:
        norm.eval()
    return len(norms)


@HOOKS.register_module()
class Int8AwareHook(Hook):
    """Fine-tune a trained float model through the rounding of its int8 deployment
    (:class:`Int8Rounding`), batch norms frozen.

    ``custom_hooks = [dict(type='Int8AwareHook')]`` in a config that loads the float model
    (``load_from``) and trains it a few epochs at a small learning rate
    (``configs/hyperframes/utd_mhad_imagenet/hyperframe-int8aware_*.py``); validation runs
    through the same rounding, so its accuracy estimates the int8 model's. The checkpoints are
    ordinary float ones: export and quantise them with ``tools/deployment/``.

    Args:
        require_load_from (bool): refuse to start without ``load_from`` or a resume: a short,
            low learning rate schedule from initial weights trains a poor model without
            saying so. Defaults to True.
    """

    priority = 'VERY_HIGH'

    def __init__(self, require_load_from: bool = True) -> None:
        self.require_load_from = require_load_from
        self.rounding: Optional[Int8Rounding] = None

    def before_train(self, runner) -> None:
        if self.require_load_from and not (runner._load_from or runner._resume):
            raise ValueError('Int8AwareHook fine-tunes a trained float model: give its '
                             'checkpoint as load_from (--cfg-options load_from=PATH), or set '
                             'require_load_from=False')
        model = runner.model.module if is_model_wrapper(runner.model) else runner.model
        self.rounding = Int8Rounding(model)
        frozen = freeze_norms(model)
        print_log(f'Int8AwareHook: {len(self.rounding.layers)} layers train through int8 '
                  f'rounding, {frozen} batch norms frozen', logger='current', level=logging.INFO)

    def before_train_iter(self, runner, batch_idx: int, data_batch=None) -> None:
        # the loop puts the whole model in training mode at each epoch's start
        freeze_norms(runner.model)

    def before_val_epoch(self, runner) -> None:
        if self.rounding is not None:
            self.rounding.observe(False)

    def after_val_epoch(self, runner, metrics=None) -> None:
        if self.rounding is not None:
            self.rounding.observe(True)

    def after_train(self, runner) -> None:
        if self.rounding is not None:
            self.rounding.remove()
            self.rounding = None
