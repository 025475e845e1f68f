"""Show what a hyperframe model sees: the T augmented frames of each stream as a PNG grid (of
streams stacked into one hyperframe, its frames in stacking order, each column named by its
stream), and optionally the per-class scores of a stream-inference run over time.

    python tools/visualize_hyperframe.py CONFIG VIDEO --out grid.png [--pipeline train|test] \\
        [--seed 0] [--scale 3]
    python tools/visualize_hyperframe.py CONFIG VIDEO --out grid.png \\
        --scores preds.jsonl --scores-out scores.png [--classes 0 2]

A row per stream and hyperframe (test clip / crop), a column per frame, each frame enlarged by
a whole factor with its video frame index underneath: frames that do not stay aligned (a
crop or flip drawn per frame) show at once. See docs/deployment.md.
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional

from hyperframes_mm.utils import int_argument

#: what cv2.imwrite writes the grid as, and what matplotlib saves the score plot as
GRID_FORMATS = ('.png', '.jpg', '.jpeg', '.bmp', '.tif', '.tiff', '.webp')
PLOT_FORMATS = ('.png', '.jpg', '.jpeg', '.pdf', '.svg', '.eps', '.ps', '.tif', '.tiff',
                '.webp')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config')
    parser.add_argument('video')
    parser.add_argument('--out', required=True, help='the image of the grid to write')
    parser.add_argument('--pipeline', default='train', choices=['train', 'val', 'test'])
    parser.add_argument('--seed', type=int, default=0, help='random draw of the pipeline')
    parser.add_argument('--scale', type=int_argument(1),
                        help='enlargement factor (default: >= 96 px)')
    parser.add_argument('--scores', help='JSON lines of tools/stream_infer.py to plot')
    parser.add_argument('--scores-out', help='PNG of the score plot')
    parser.add_argument('--classes', type=int, nargs='+', help='classes to plot (default all)')
    parser.add_argument('--class-names', help='text file, one class name per line')
    parser.add_argument('--streams', nargs='+', help='streams to plot (default all)')
    args = parser.parse_args(argv)
    if bool(args.scores) != bool(args.scores_out):
        parser.error('--scores and --scores-out go together')
    # checked before any decoding: OpenCV (the grid) and matplotlib (the plot) pick their
    # writer by the extension and fail without naming the option
    for option, path, kinds in (('--out', args.out, GRID_FORMATS),
                                ('--scores-out', args.scores_out, PLOT_FORMATS)):
        if path is not None and Path(path).suffix.lower() not in kinds:
            parser.error(f'{option} {path}: writes an image, so the name ends in one of '
                         f'{", ".join(kinds)}')
    return args



def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401  (registers the plugin)
    from hyperframes_mm.analysis.visualize import (augmented_frames, describe_augment, frame_grid,
                                               plot_scores, write_png)
    from hyperframes_mm.datasets.video_io import BadVideoError
    try:
        shown = augmented_frames(args.config, args.video, args.pipeline, args.seed)
    except (OSError, KeyError, ValueError, BadVideoError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    title = f'{args.pipeline} pipeline, seed {args.seed}: ' + \
        (describe_augment(shown['augment_params']) or 'no random augmentation')
    image, layout = frame_grid(shown['frames'], shown['frame_inds'], args.scale, title,
                               column_streams=shown['column_streams'])
    write_png(args.out, image)
    shapes = ', '.join(f'{name} {list(frames.shape)}' for name, frames in shown['frames'].items())
    print(f'wrote {args.out}: {shapes} (hyperframes, T, H, W, 3) at x{layout["scale"]}')
    if args.scores:
        names = None
        try:
            if args.class_names:
                with open(args.class_names, encoding='utf-8') as handle:
                    names = [line.strip() for line in handle if line.strip()]
        except OSError as error:
            print(f'error: --class-names {args.class_names}: {error.strerror or error}',
                  file=sys.stderr)
            return 1
        try:
            series = plot_scores(args.scores, args.scores_out, args.classes, names,
                                 args.streams)
        except (OSError, ValueError) as error:
            # the names file is named where its count is what is wrong
            named = (f' (--class-names {args.class_names})'
                     if names is not None and str(error).startswith(f'{len(names)} class names')
                     else '')
            print(f'error: {error}{named}', file=sys.stderr)
            return 1
        print(f'wrote {args.scores_out}: {len(series)} streams, '
              f'{sum(len(s["t"]) for s in series.values())} windows')
    return 0


if __name__ == '__main__':
    sys.exit(main())
