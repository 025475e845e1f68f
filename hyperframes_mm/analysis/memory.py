"""Activation memory of one training sample, and the largest batch that fits a GPU.

The estimate is measured, not modelled: one forward pass at batch 1 on the CPU with a hook on
every leaf module adds up the bytes of every distinct tensor the layers output (a view or an
in-place ReLU shares its input's storage and is counted once), plus the input. That is what
autograd keeps for the backward pass, roughly; the backward pass adds the gradients of those
activations and temporary buffers, so training takes about :data:`BACKWARD_FACTOR` times the
forward activations per sample. On top come the weights, their gradients and the optimizer's
state (one slot per weight for SGD with momentum, two for Adam), and an allowance of
:data:`CUDA_RESERVE_GIB` for the CUDA context, cuDNN workspaces and allocator slack.
Under ``AmpOptimWrapper`` activations count 2 bytes a value instead of 4.
"""
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from mmengine.config import Config

from ..datasets.transforms.pipeline_info import stream_key, transform_type
from .config_utils import dataset_leaves, model_streams, sampler_spec
from .findings import Finding

#: training memory per sample / forward activations per sample
BACKWARD_FACTOR = 3
#: GiB set aside for the CUDA context, cuDNN workspaces and allocator slack
CUDA_RESERVE_GIB = 1.0
DEFAULT_INPUT_SIZE = (224, 224)
GIB = 1 << 30
MIB = 1 << 20


def _hw(size) -> Tuple[int, int]:
    """``(H, W)`` from an mmaction2 size: an int (square) or ``(w, h)``."""
    if isinstance(size, (int, float)):
        return int(size), int(size)
    return int(size[1]), int(size[0])


def pipeline_input_size(pipeline: Sequence[Dict]) -> Optional[Tuple[Tuple[int, int], bool]]:
    """``((H, W), exact)`` of the frames a pipeline outputs, from its last sizing transform.

    ``Resize`` with ``keep_ratio=True`` to a short side ``s`` gives a frame of unknown aspect,
    taken as ``s x s`` (``exact=False``). None when no transform fixes the size.
    """
    size, exact = None, True
    for transform in pipeline:
        kind = transform_type(transform)
        if kind == 'ConsistentClipAugment' and transform.get('size', 224) is not None:
            size, exact = _hw(transform.get('size', 224)), True
        elif kind == 'Resize' and isinstance(transform.get('scale'), (tuple, list)):
            scale = transform['scale']
            if not transform.get('keep_ratio', True):
                size, exact = _hw(scale), True
            else:
                side = max(scale) if -1 in scale else min(scale)
                size, exact = (int(side), int(side)), False
        elif kind in ('CenterCrop', 'ThreeCrop', 'TenCrop'):
            size, exact = _hw(transform['crop_size']), True
        elif kind == 'RandomCrop':
            size, exact = _hw(transform['size']), True
        elif kind == 'MultiScaleCrop':
            size, exact = _hw(transform['input_size']), True
    return None if size is None else (size, exact)


def forward_activation_bytes(model: torch.nn.Module, inputs) -> int:
    """Bytes of every distinct tensor output by a leaf module in one forward pass, plus inputs.

    Runs ``model.extract_feat(inputs, stage='head')`` (backbone, neck and head of an mmaction2
    recognizer) in eval mode without gradients; the model's mode is restored.
    """
    tensors: List[torch.Tensor] = []

    def collect(value) -> None:
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    handles = [module.register_forward_hook(lambda _m, _a, output: collect(output))
               for module in model.modules() if not list(module.children())]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model.extract_feat(inputs, stage='head')
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    collect(inputs)
    # Tensors are kept alive in ``tensors``, so no storage was freed and reused meanwhile.
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return int(sum(storages.values()))


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory of training one sample and the fixed cost of the model.

    Attributes:
        input_shapes (dict): input name -> shape of one sample (``[K, 3T, H, W]``).
        input_bytes (int): bytes of one sample's input.
        activation_bytes (int): forward activations of one sample, input included.
        parameter_bytes (int): bytes of the weights.
        optimizer_slots (int): optimizer state tensors per weight.
    """
    input_shapes: Dict[str, Tuple[int, ...]]
    input_bytes: int
    activation_bytes: int
    parameter_bytes: int
    optimizer_slots: int

    @property
    def training_bytes_per_sample(self) -> int:
        return BACKWARD_FACTOR * self.activation_bytes

    @property
    def fixed_bytes(self) -> int:
        """Weights, gradients, optimizer state and the CUDA allowance."""
        return self.parameter_bytes * (2 + self.optimizer_slots) + int(CUDA_RESERVE_GIB * GIB)

    def max_batch(self, gpu_bytes: float) -> int:
        """The largest batch whose training memory fits ``gpu_bytes`` (0: not even one)."""
        return max(0, int((gpu_bytes - self.fixed_bytes) // self.training_bytes_per_sample))


def _optimizer_slots(cfg: Config) -> int:
    optimizer = (cfg.get('optim_wrapper') or {}).get('optimizer') or {}
    kind = transform_type(optimizer).lower() if optimizer else ''
    if kind.startswith('adam') or kind in ('lamb', 'nadam', 'radam'):
        return 2
    if kind == 'sgd' and not optimizer.get('momentum', 0):
        return 0
    return 1


def training_input_shapes(cfg: Config, model, input_size: Optional[Tuple[int, int]],
                          from_data: bool) -> Tuple[Dict[str, Tuple[int, ...]], str]:
    """Input name -> one training sample's shape ``[K, 3T, H, W]``, and how it was found.

    T is the backbone's (per stream; an early-fusion pipeline's one input has the streams' total,
    the backbone's), so the estimate holds for the model even when the sampler disagrees with it
    (that is the ``num-frames`` finding). With ``from_data``
    K, H and W come from the training dataset's first sample, loaded through its pipeline;
    otherwise K from the sampler (times ThreeCrop/TenCrop), H and W from ``input_size`` or the
    pipeline's crop/resize sizes (224 x 224 when none is found).
    """
    dataset_cfg = cfg.train_dataloader.dataset
    pipeline = dataset_leaves(dataset_cfg, 'train_dataloader.dataset')[0][1]['pipeline']
    spec = sampler_spec(pipeline)
    frames = {stream_key(name): backbone.num_frames
              for name, backbone in model_streams(model).items()}
    if from_data and input_size is None:
        from mmaction.registry import DATASETS
        sample = DATASETS.build(dict(dataset_cfg))[0]['inputs']
        sample = sample if isinstance(sample, dict) else {'imgs': sample}
        shapes = {key: tuple(value.shape) for key, value in sample.items()}
        return {key: shape[:1] + ((3 * frames[key], ) if key in frames else shape[1:2]) + shape[2:]
                for key, shape in shapes.items()}, 'a real sample'
    if not frames and spec is not None:
        frames = {stream_key(stream.name): stream.num_frames for stream in spec.streams}
    crops = 1
    for transform in pipeline:
        crops *= {'ThreeCrop': 3, 'TenCrop': 10}.get(transform_type(transform), 1)
    clips = spec.num_clips if spec is not None else 1
    if input_size is not None:
        size, how = tuple(input_size), 'the given input size'
    else:
        found = pipeline_input_size(pipeline)
        if found is None:
            size, how = DEFAULT_INPUT_SIZE, 'no size in the training pipeline: 224 x 224 assumed'
        else:
            size = found[0]
            how = 'the training pipeline' + ('' if found[1] else ' (short side, taken square)')
    return {key: (clips * crops, 3 * t) + tuple(size)
            for key, t in (frames or {'imgs': 1}).items()}, how


def estimate_memory(cfg: Config, model, input_size: Optional[Tuple[int, int]] = None,
                    from_data: bool = False) -> Tuple[MemoryEstimate, str]:
    """Measure one training sample's activations (see the module docstring)."""
    shapes, how = training_input_shapes(cfg, model, input_size, from_data)
    inputs = {key: torch.zeros((1, ) + shape) for key, shape in shapes.items()}
    model_inputs = inputs['imgs'] if list(inputs) == ['imgs'] else inputs
    activation = forward_activation_bytes(model.cpu(), model_inputs)
    amp = transform_type(cfg.get('optim_wrapper') or {}) == 'AmpOptimWrapper'
    if amp:
        activation //= 2  # measured in float32; autocast keeps activations in 16 bits
    estimate = MemoryEstimate(
        input_shapes=shapes,
        input_bytes=sum(4 * math.prod(shape) for shape in shapes.values()),
        activation_bytes=activation,
        parameter_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
        optimizer_slots=_optimizer_slots(cfg))
    return estimate, how + (', 16-bit activations (AmpOptimWrapper)' if amp else '')


def check_memory(cfg: Config, model, gpu_mem_gib: Optional[float] = None,
                 input_size: Optional[Tuple[int, int]] = None,
                 from_data: bool = False) -> List[Finding]:
    """The memory estimate as a note, and an error when the training batch cannot fit."""
    if not isinstance(cfg.get('train_dataloader'), dict):
        return [Finding('info', 'memory', 'no train_dataloader: memory not estimated')]
    try:
        estimate, how = estimate_memory(cfg, model, input_size, from_data)
    except (ValueError, RuntimeError, KeyError, OSError) as error:
        return [Finding('info', 'memory', f'memory not estimated: the training input could not '
                        f'be built or run through the model: {str(error).splitlines()[0]}')]
    batch = int(cfg.train_dataloader.get('batch_size', 1))
    shapes = ', '.join(f'{key} {list(shape)}' for key, shape in estimate.input_shapes.items())
    note = (f'per training sample ({shapes}, from {how}): forward activations '
            f'{estimate.activation_bytes / MIB:.1f} MiB, about '
            f'{estimate.training_bytes_per_sample / MIB:.1f} MiB with backward '
            f'(x{BACKWARD_FACTOR}); weights, gradients and optimizer state '
            f'{estimate.parameter_bytes * (2 + estimate.optimizer_slots) / MIB:.1f} MiB')
    if gpu_mem_gib is None:
        return [Finding('info', 'memory', note + ' (give --gpu-mem to size the batch)')]
    largest = estimate.max_batch(gpu_mem_gib * GIB)
    note += (f'; on {gpu_mem_gib:g} GiB ({CUDA_RESERVE_GIB:g} GiB kept for CUDA) the largest '
             f'batch is about {largest}')
    findings = [Finding('info', 'memory', note)]
    if batch <= largest:
        return findings
    need = (estimate.fixed_bytes + batch * estimate.training_bytes_per_sample) / GIB
    room = gpu_mem_gib * GIB - estimate.fixed_bytes
    if largest >= 1:
        fix = (f'first the batch: train_dataloader.batch_size={largest} (optim_wrapper '
               f'accumulative_counts={math.ceil(batch / largest)} keeps the effective batch); '
               'then the resolution; T last')
    elif room > 0:
        (height, width) = next(iter(estimate.input_shapes.values()))[-2:]
        factor = math.sqrt(room / estimate.training_bytes_per_sample)
        share = estimate.input_bytes / estimate.activation_bytes
        fix = (f'batch 1 does not fit: lower the resolution to about {round(height * factor)}x'
               f'{round(width * factor)} (activations grow with H x W); T comes last, only the '
               f'input grows with it ({share:.0%} of the activations)')
    else:
        fix = (f'the model alone takes {estimate.fixed_bytes / GIB:.2f} GiB (weights, gradients, '
               'optimizer state, CUDA allowance): use a smaller backbone or a larger GPU')
    findings.append(Finding(
        'error', 'memory',
        f'train_dataloader.batch_size={batch} needs about {need:.1f} GiB, more than the '
        f'{gpu_mem_gib:g} GiB given: expect CUDA out of memory', fix))
    return findings
