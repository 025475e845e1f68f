"""Write the synthetic motion dataset as real video files with mmaction2 annotation lists.

    python tools/make_synthetic_dataset.py data/synthetic_tiny --train 4 --val 2
"""
import argparse

from hyperframes_mm.datasets.synthetic import make_synthetic_dataset


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out_dir', help='dataset root to write')
    parser.add_argument('--train', type=int, default=16, help='training clips per class')
    parser.add_argument('--val', type=int, default=4, help='validation clips per class')
    parser.add_argument('--seed', type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    for split, path in make_synthetic_dataset(args.out_dir, dict(train=args.train, val=args.val),
                                              seed=args.seed).items():
        print(f'{split}: {path}')


if __name__ == '__main__':
    main()
