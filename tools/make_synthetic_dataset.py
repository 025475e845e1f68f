"""Write the synthetic motion benchmark as real videos with mmaction2 VideoDataset lists.

    python tools/make_synthetic_dataset.py data/synthetic --preset default
    python tools/make_synthetic_dataset.py data/synthetic_tiny --train 4 --val 2 --probe

Writes ``<split>/<class>_<index>.mp4``, ``<split>.txt`` (``<split>/<file>.mp4 <label>`` per
line), ``classes.txt`` and ``meta.json`` (classes, fast/slow groups, flip_label_map, fps of
every video). Seeded and independent of ``--workers``; a rerun with the same arguments finds
the finished dataset and returns at once, a run with others rebuilds the folder in place
(removing the old set's lists and its videos the new one does not write).
"""
import argparse

from hyperframes_mm.utils import int_argument

PRESET_NAMES = ('tiny', 'default', 'full')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out_dir', help='dataset root to write')
    parser.add_argument('--preset', choices=PRESET_NAMES, default='tiny',
                        help='classes, frame size, clip length and clip counts (default: tiny, '
                        '4 classes; default: 10 classes; full: 12 classes)')
    parser.add_argument('--train', type=int_argument(1),
                        help='training clips per class (default: preset)')
    parser.add_argument('--val', type=int_argument(1),
                        help='validation clips per class (default: preset)')
    parser.add_argument('--seed', type=int_argument(0), default=0,
                        help='dataset seed (default: 0)')
    parser.add_argument('--workers', type=int_argument(1),
                        help='processes rendering clips (default: number of CPUs)')
    parser.add_argument('--probe', action='store_true',
                        help='then print the accuracy of a single-frame probe and of a '
                        'frame-difference oracle, trained on train and scored on val')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import time

    import numpy as np

    from hyperframes_mm.datasets.synthetic import PRESETS, load_meta, make_synthetic_dataset
    counts = dict(PRESETS[args.preset].clips_per_class)
    for split in ('train', 'val'):
        if getattr(args, split) is not None:
            counts[split] = getattr(args, split)
    start = time.perf_counter()
    try:
        annotations = make_synthetic_dataset(args.out_dir, counts, preset=args.preset,
                                             seed=args.seed, workers=args.workers)
    except (FileExistsError, ValueError) as error:  # a folder in the way, a bad count
        raise SystemExit(f'make_synthetic_dataset.py: {error}') from error
    meta = load_meta(args.out_dir)
    print(f'{len(meta["videos"])} clips of {len(meta["classes"])} classes in {args.out_dir} '
          f'({time.perf_counter() - start:.1f} s)')
    for split, path in annotations.items():
        print(f'{split}: {path}')
    print(f'groups: {meta["groups"]}')
    print(f'flip_label_map: {meta["flip_label_map"]}')
    if args.probe:
        from hyperframes_mm.datasets.synthetic.probe import probe_accuracies, read_split
        result = probe_accuracies(read_split(args.out_dir, 'train'),
                                  read_split(args.out_dir, 'val'), len(meta['classes']),
                                  seed=args.seed)
        print(f'probe on val: single frame {result["single_frame"]:.3f}, frame-difference '
              f'oracle {result["motion"]:.3f}, chance {result["chance"]:.3f}')
        for group, names in meta['groups'].items():
            labels = [meta['classes'].index(name) for name in names]
            mask = np.isin(result['labels'], labels)
            if mask.any():
                print(f'  {group} classes: single frame '
                      f'{np.mean(result["single_frame_pred"][mask] == result["labels"][mask]):.3f}'
                      f', oracle {np.mean(result["motion_pred"][mask] == result["labels"][mask]):.3f}')


if __name__ == '__main__':
    main()
