"""Convert a MobileNetV2 ImageNet model to mmaction2's ``MobileNetV2`` layout (a float state dict).

    python tools/model_converters/mobilenet_v2_to_mmaction.py SRC OUT [--widen-factor 1.0] \\
        [--verify] [--images a.jpg b.png ...]

SRC: torchvision's int8 ``QuantizableMobileNetV2`` saved as TorchScript, the ONNX model zoo's
``mobilenetv2-12-int8.onnx``, or a float torchvision ``mobilenet_v2`` state dict. OUT holds
``state_dict`` (the backbone: what mmaction2's ``MobileNetV2`` / ``MobileNetV2TSM`` and the
plugin's ``pretrained=`` read), ``classifier`` (the ImageNet ``fc``, 1280 -> 1000) and ``meta``
(source file, its sha256, its format). ``--verify`` runs SRC and the converted backbone +
classifier on fixed inputs (random, structured, and ``--images`` resized and centre-cropped to
224) and prints top-1 agreement and the largest logit difference. See docs/imagenet_weights.md.
"""
import argparse
import hashlib
import io
import os
import sys
from typing import Dict, List, Optional

import torch


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('src', help='TorchScript (.pt), ONNX (.onnx) or torchvision state dict')
    parser.add_argument('out', help='the .pth file to write')
    parser.add_argument('--widen-factor', type=float, default=1.0,
                        help='width multiplier of the model (checked by a strict load)')
    parser.add_argument('--verify', action='store_true',
                        help='compare the converted model with SRC on fixed inputs')
    parser.add_argument('--images', nargs='*', default=[],
                        help='pictures added to the --verify inputs')
    return parser.parse_args(argv)


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, 'rb') as file:
        for chunk in iter(lambda: file.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def imagenet_inputs(images: List[str]) -> torch.Tensor:
    """``[N, 3, 224, 224]`` ImageNet-normalised: 4 random, 4 structured (stripes, a ramp, a
    checkerboard, a disc), then each image resized to 256 on its short side and centre-cropped,
    as torchvision's ImageNet evaluation does."""
    from PIL import Image
    from torchvision.transforms import functional
    generator = torch.Generator().manual_seed(0)
    noise = torch.rand(4, 3, 224, 224, generator=generator)
    row, column = torch.meshgrid(torch.arange(224.), torch.arange(224.), indexing='ij')
    patterns = [(torch.sin(column / 6) + 1) / 2, (row + column) / 446,
                ((row // 28 + column // 28) % 2).float(),
                (((row - 112)**2 + (column - 90)**2) < 60**2).float()]
    structured = torch.stack([torch.stack([p, p.flip(0), 1 - p]) for p in patterns])
    pictures = [functional.to_tensor(functional.center_crop(
        functional.resize(Image.open(path).convert('RGB'), 256), 224)) for path in images]
    pixels = torch.cat([noise, structured] + [p[None] for p in pictures])
    return functional.normalize(pixels, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def source_logits(path: str, kind: str, inputs: torch.Tensor) -> torch.Tensor:
    """SRC's own ImageNet logits on ``inputs``."""
    if kind == 'torchscript':
        model = torch.jit.load(path, map_location='cpu').eval()
        # traced models may fix the batch to 1 (a reshape to [1, -1] before the classifier)
        with torch.no_grad():
            return torch.cat([model(image[None]) for image in inputs])
    if kind == 'onnx':
        import onnxruntime
        session = onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
        name = session.get_inputs()[0].name
        return torch.from_numpy(session.run(None, {name: inputs.numpy()})[0])
    from hyperframes_mm.models.backbones.mobilenet_v2_converters import read_torchvision_float
    from torchvision.models import mobilenet_v2
    state_dict = read_torchvision_float(path)
    model = mobilenet_v2(num_classes=state_dict['classifier.1.weight'].shape[0])
    model.load_state_dict(state_dict)
    with torch.no_grad():
        return model.eval()(inputs)


def converted_logits(backbone: Dict[str, torch.Tensor], classifier: Dict[str, torch.Tensor],
                     widen_factor: float, activation: str, inputs: torch.Tensor) -> torch.Tensor:
    """mmaction2 ``MobileNetV2`` + average pool + the classifier, as torchvision computes."""
    from mmaction.models.backbones import MobileNetV2
    model = MobileNetV2(widen_factor=widen_factor, act_cfg=dict(type=activation))
    model.load_state_dict(backbone, strict=True)
    model.eval()
    with torch.no_grad():
        features = model(inputs).mean((2, 3))
    return torch.nn.functional.linear(features, classifier['weight'], classifier['bias'])


def verify(args: argparse.Namespace, kind: str, backbone: Dict[str, torch.Tensor],
           classifier: Dict[str, torch.Tensor]) -> None:
    inputs = imagenet_inputs(args.images)
    reference = source_logits(args.src, kind, inputs)
    print(f'verify on {len(inputs)} inputs (4 random, 4 structured, {len(args.images)} '
          f'images): SRC top-1 {reference.argmax(1).tolist()}')
    # torchvision's quantisable model runs ReLU where mmaction2 builds ReLU6
    for activation in ('ReLU6', 'ReLU'):
        logits = converted_logits(backbone, classifier, args.widen_factor, activation, inputs)
        agree = (logits.argmax(1) == reference.argmax(1)).tolist()
        print(f'  converted, act {activation}: top-1 agrees on {sum(agree)}/{len(agree)} '
              f'{agree}; max |logit diff| {(logits - reference).abs().max():.4f} '
              f'(max |SRC logit| {reference.abs().max():.4f})')


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file: the same spelling, a link to it, or a hard link."""
    if os.path.exists(first) and os.path.exists(second):
        return os.path.samefile(first, second)
    return os.path.realpath(first) == os.path.realpath(second)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if same_file(args.src, args.out):
        # Writing over the source loses the only copy of the weights the output is made from.
        print(f'error: the output {args.out} is the source {args.src}; write the converted file '
              'to another path', file=sys.stderr)
        return 1
    import hyperframes_mm  # noqa: F401  (the DRN module before mmaction2 is imported)
    from hyperframes_mm.engine import atomic_write_bytes
    from hyperframes_mm.models.backbones.mobilenet_v2_converters import (
        convert_mobilenet_v2, source_format)
    try:
        kind = source_format(args.src)
        backbone, classifier = convert_mobilenet_v2(args.src, args.widen_factor)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    meta = dict(source=str(args.src), sha256=sha256(args.src), format=kind,
                widen_factor=args.widen_factor)
    # Written whole or not at all: a kill mid-save must not leave a truncated file that the
    # next run's pretrained= would load.
    buffer = io.BytesIO()
    torch.save(dict(state_dict=backbone, classifier=classifier, meta=meta), buffer)
    atomic_write_bytes(buffer.getvalue(), args.out)
    print(f'wrote {args.out}: {len(backbone)} backbone tensors in mmaction2 MobileNetV2 layout, '
          f'classifier {tuple(classifier["weight"].shape)}, from {kind} {args.src} '
          f'(sha256 {meta["sha256"]})')
    if args.verify:
        verify(args, kind, backbone, classifier)
    return 0


if __name__ == '__main__':
    sys.exit(main())
