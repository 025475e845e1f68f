"""Convert a MobileNetV2 ImageNet model to mmaction2's ``MobileNetV2`` layout (a float state dict).

    python tools/model_converters/mobilenet_v2_to_mmaction.py SRC OUT [--widen-factor 1.0] \\
        [--norms identity|calibrated] [--calibrate-list LIST --calibrate-root ROOT] \\
        [--calibrate-images a.jpg ...] [--verify] [--images a.jpg b.png ...]

SRC: torchvision's int8 ``QuantizableMobileNetV2`` saved as TorchScript, the ONNX model zoo's
``mobilenetv2-12-int8.onnx``, or a float torchvision ``mobilenet_v2`` state dict. OUT holds
``state_dict`` (the backbone: what mmaction2's ``MobileNetV2`` / ``MobileNetV2TSM`` and the
plugin's ``pretrained=`` read), ``classifier`` (the ImageNet ``fc``, 1280 -> 1000) and ``meta``
(source file, its sha256, its format, its norms). ``--norms calibrated`` gives the batch norms
the statistics of training frames (``--calibrate-list`` videos or ``--calibrate-images``), so
that the network computes the source in training mode too, not in eval mode only. ``--verify``
runs SRC and the converted backbone + classifier on fixed inputs (random, structured, and
``--images`` resized and centre-cropped to 224) and prints top-1 agreement and the largest logit
difference; with calibrated norms, also how far training mode is from the source with either
kind of norm. See docs/imagenet_weights.md.
"""
import argparse
import hashlib
import io
import math
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
    parser.add_argument('--norms', choices=['identity', 'calibrated'], default='identity',
                        help='identity: the folded norms as converted (a float source\'s as they '
                        'are), one file for every dataset; calibrated: statistics measured on '
                        'the --calibrate-* frames (default: identity)')
    calibration = parser.add_argument_group(
        'norm calibration (--norms calibrated)', 'frames of the training data whose statistics '
        'the batch norms get, so that the network computes the source in training mode too '
        '(docs/imagenet_weights.md)')
    calibration.add_argument('--calibrate-list', help='a VideoDataset list (path label) of '
                             'training videos, e.g. data/utd_mhad/cross_subject_train.txt')
    calibration.add_argument('--calibrate-root', default='',
                             help='the folder the list\'s paths are relative to')
    calibration.add_argument('--calibrate-images', nargs='*', default=[],
                             help='pictures to calibrate on (with or instead of the list)')
    calibration.add_argument('--calibrate-frames', type=int, default=256,
                             help='frames taken from the list\'s videos, spread over them')
    calibration.add_argument('--calibrate-size', type=int, default=224,
                             help='side the frames are resized to: the training input size')
    calibration.add_argument('--batch-size', type=int, default=16,
                             help='frames per training-mode batch in --verify\'s comparison '
                             '(the configs\' clips per batch)')
    args = parser.parse_args(argv)
    wants_frames = bool(args.calibrate_list or args.calibrate_images)
    if args.norms == 'calibrated' and not wants_frames:
        parser.error('--norms calibrated needs --calibrate-list or --calibrate-images')
    if args.norms == 'identity' and wants_frames:
        parser.error('--calibrate-list/--calibrate-images are used by --norms calibrated only')
    if not (math.isfinite(args.widen_factor) and args.widen_factor > 0):
        # 0 or -1 gave a page of size mismatches, nan a float-to-int error naming no option
        parser.error(f'--widen-factor must be a positive number, got {args.widen_factor}')
    for name, least in (('calibrate_frames', 1), ('calibrate_size', 32), ('batch_size', 2)):
        if getattr(args, name) < least:
            parser.error(f'--{name.replace("_", "-")} must be >= {least}, got '
                         f'{getattr(args, name)}')
    return args


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
                     widen_factor: float, activation: str, inputs: torch.Tensor,
                     batch_size: Optional[int] = None) -> torch.Tensor:
    """mmaction2 ``MobileNetV2`` + average pool + the classifier, as torchvision computes: in eval
    mode, or, given ``batch_size``, in training mode on consecutive batches of at least that many
    inputs (the norms then use each batch's statistics, as the first training step does)."""
    from mmaction.models.backbones import MobileNetV2
    model = MobileNetV2(widen_factor=widen_factor, act_cfg=dict(type=activation))
    model.load_state_dict(backbone, strict=True)
    model.train(batch_size is not None)
    batches = [inputs] if batch_size is None else torch.tensor_split(
        inputs, max(1, len(inputs) // batch_size))
    with torch.no_grad():
        features = torch.cat([model(batch).mean((2, 3)) for batch in batches])
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


def verify_norms(args: argparse.Namespace, identity: Dict[str, torch.Tensor],
                 calibrated: Dict[str, torch.Tensor], classifier: Dict[str, torch.Tensor],
                 frame_sets: Dict[str, torch.Tensor]) -> None:
    """Print, per set of frames, how far the network with identity and with calibrated norms is
    from the source network (the converted one with identity norms in eval mode: the source's
    function, as ``verify`` shows) in training mode, and the calibrated one in eval mode."""
    print(f'norms, act ReLU6 (the configs\'), training mode in shuffled batches of '
          f'{args.batch_size}: max |logit diff| and top-1 agreement with the source network')
    for name, frames in frame_sets.items():
        if not len(frames):
            continue
        # batches mix videos, as a training batch does
        frames = frames[torch.randperm(len(frames), generator=torch.Generator().manual_seed(0))]
        reference = converted_logits(identity, classifier, args.widen_factor, 'ReLU6', frames)
        cells = []
        for label, backbone, batch_size in (('identity, train', identity, args.batch_size),
                                            ('calibrated, train', calibrated, args.batch_size),
                                            ('calibrated, eval', calibrated, None)):
            logits = converted_logits(backbone, classifier, args.widen_factor, 'ReLU6', frames,
                                      batch_size)
            agree = int((logits.argmax(1) == reference.argmax(1)).sum())
            cells.append(f'{label} {(logits - reference).abs().max():.4g} '
                         f'{agree}/{len(frames)}')
        print(f'  {name} ({len(frames)}; max |logit| {reference.abs().max():.4g}): '
              + '; '.join(cells))


def read_pictures(paths: List[str]) -> List[torch.Tensor]:
    """``[3, H, W]`` uint8 RGB of each picture; one that cannot be read is a ``ValueError``
    naming it."""
    import numpy as np
    from PIL import Image
    pictures = []
    for path in paths:
        try:
            with Image.open(path) as image:
                pixels = np.asarray(image.convert('RGB'))
        except OSError as error:  # PIL's UnidentifiedImageError and a missing file alike
            raise ValueError(f'{path}: cannot read it as a picture: {error}') from error
        pictures.append(torch.from_numpy(pixels.copy()).permute(2, 0, 1))
    return pictures


def video_frames(args: argparse.Namespace, held: bool) -> List[torch.Tensor]:
    """``[3, H, W]`` uint8 frames of ``--calibrate-list`` videos: ``--calibrate-frames`` of
    them, over videos spread across the list (every class of a sorted list), at evenly spaced
    points of each video. ``held`` takes the frames halfway between those, which calibration
    does not see, for ``--verify``."""
    import numpy as np

    from hyperframes_mm.datasets.video_io import open_video
    from hyperframes_mm.deploy.quantize import labelled_videos, spread
    if not args.calibrate_list:
        return []
    videos = spread(labelled_videos(args.calibrate_list, args.calibrate_root),
                    args.calibrate_frames)
    per_video = -(-args.calibrate_frames // len(videos))
    frames = []
    for path, _ in videos:
        reader = open_video(str(path))
        offset = 0.75 if held else 0.25
        picks = ((np.arange(per_video) + offset) * len(reader) / per_video).astype(int)
        frames += [torch.from_numpy(frame).permute(2, 0, 1)
                   for frame in reader.get_batch(picks.tolist()).asnumpy()]
    return spread(frames, args.calibrate_frames)


def normalised(pictures: List[torch.Tensor], size: int) -> torch.Tensor:
    """``[N, 3, size, size]``: each picture resized to ``size x size`` (as the configs' test
    pipelines resize frames, aspect not kept), scaled to [0, 1], ImageNet mean and std."""
    from torchvision.transforms import functional
    resized = [functional.resize(picture, [size, size], antialias=True).float() / 255
               for picture in pictures]
    return functional.normalize(torch.stack(resized), [0.485, 0.456, 0.406],
                                [0.229, 0.224, 0.225])


def writes_over_inputs(args: argparse.Namespace) -> bool:
    """Whether ``args.out`` cannot take the converted file (then says why on stderr), checked
    before the conversion runs: it names the source ``args.src`` (writing over it loses the
    only copy of the weights the output is made from), another file the run reads (a picture
    of ``--images`` or ``--calibrate-images``, the ``--calibrate-list`` or one of its videos),
    or a directory; or a picture of ``--images`` cannot be read (found after the output was
    written, as a PIL traceback)."""
    from hyperframes_mm.utils import refuse_overwrite, same_file
    if same_file(args.src, args.out):
        print(f'error: the output {args.out} is the source {args.src}; write the converted file '
              'to another path', file=sys.stderr)
        return True
    inputs = {f'{option} {path}': path for option, paths in (
        ('--images', getattr(args, 'images', [])),
        ('--calibrate-images', getattr(args, 'calibrate_images', []))) for path in paths}
    listed = getattr(args, 'calibrate_list', None)
    if listed:
        from hyperframes_mm.deploy.quantize import labelled_videos
        inputs['--calibrate-list'] = listed
        try:
            inputs.update({f'video {index + 1} of --calibrate-list': video for index, (video, _)
                           in enumerate(labelled_videos(listed, args.calibrate_root))})
        except (OSError, ValueError):  # a bad list is named when the frames are read
            pass
    try:
        refuse_overwrite({'the output': args.out}, inputs)
        read_pictures(getattr(args, 'images', []))
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return True
    return False


def write_output(data: bytes, out: str) -> bool:
    """Write the converted file whole or not at all; False (said on stderr, naming it) when
    the disk refuses it (full, read-only, a file-size limit): the old file there is kept."""
    from hyperframes_mm.engine import atomic_write_bytes
    try:
        atomic_write_bytes(data, out)
    except OSError as error:
        print(f'error: writing {out} failed, nothing written: {error}', file=sys.stderr)
        return False
    return True


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if writes_over_inputs(args):
        return 1
    import hyperframes_mm  # noqa: F401  (the DRN module before mmaction2 is imported)
    from mmaction.models.backbones import MobileNetV2

    from hyperframes_mm.models.backbones.mobilenet_v2_converters import (
        calibrate_norms, convert_mobilenet_v2, source_format)
    try:
        kind = source_format(args.src)
        backbone, classifier = convert_mobilenet_v2(args.src, args.widen_factor)
        if args.norms == 'calibrated':
            frames = normalised(video_frames(args, held=False) +
                                read_pictures(args.calibrate_images), args.calibrate_size)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    meta = dict(source=str(args.src), sha256=sha256(args.src), format=kind,
                widen_factor=args.widen_factor, norms=args.norms)
    identity = backbone
    if args.norms == 'calibrated':
        # ReLU6, as the configs build it: the statistics are those of the network they train
        model = MobileNetV2(widen_factor=args.widen_factor)
        model.load_state_dict(backbone, strict=True)
        backbone = calibrate_norms(model, frames)
        meta['calibration'] = dict(frames=len(frames), size=args.calibrate_size,
                                   list=args.calibrate_list, root=args.calibrate_root,
                                   images=len(args.calibrate_images))
    # Written whole or not at all: a kill mid-save must not leave a truncated file that the
    # next run's pretrained= would load.
    buffer = io.BytesIO()
    torch.save(dict(state_dict=backbone, classifier=classifier, meta=meta), buffer)
    if not write_output(buffer.getvalue(), args.out):
        return 1
    print(f'wrote {args.out}: {len(backbone)} backbone tensors in mmaction2 MobileNetV2 layout, '
          f'classifier {tuple(classifier["weight"].shape)}, {args.norms} norms'
          + (f' ({len(frames)} frames at {args.calibrate_size}px)'
             if args.norms == 'calibrated' else '')
          + f', from {kind} {args.src} (sha256 {meta["sha256"]})')
    if args.verify:
        verify(args, kind, backbone, classifier)
        if args.norms == 'calibrated':
            held = video_frames(args, held=True)
            verify_norms(args, identity, backbone, classifier, {
                'calibration frames': frames,
                'held-out frames of the list\'s videos': (normalised(held, args.calibrate_size)
                                                          if held else frames[:0]),
                'other inputs (random, structured, --images; 224px)':
                    imagenet_inputs(args.images)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
