"""Decode every video of an annotation file once into a memory-mappable frame cache.

    python tools/build_frame_cache.py data/kinetics/train.txt data/kinetics/videos \\
        data/kinetics/frame_cache --short-side 256 --workers 8

Idempotent: fresh entries are skipped, stale or truncated ones rebuilt (as are entries of an
older format: format 1 has no per-frame checksums for reads to check), each written atomically.
Bytes damaged inside an entry are found by --verify, which rebuilds it; a training read that
meets one refuses it, or decodes the video, and names the entry. Read the cache with FrameCacheInit / FrameCacheDecode in place of DecordInit / DecordDecode
(docs/frame_cache.md). Exits with status 1 if any video could not be cached.
"""
import argparse
import sys
from pathlib import Path

from hyperframes_mm.datasets.frame_cache import build_frame_cache, read_video_list
from hyperframes_mm.utils import int_argument


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('ann_file', help='VideoDataset list (`relative/path label` lines) or a '
                        'frame-label .jsonl annotation')
    parser.add_argument('video_root', help='directory the annotation paths are relative to')
    parser.add_argument('cache_root', help='directory to write the cache to')
    parser.add_argument('--short-side', type=int_argument(1), default=None,
                        help='resize frames so the short side is N (as Resize(scale=(-1, N)))')
    parser.add_argument('--workers', type=int_argument(1), default=1,
                        help='parallel decoding processes')
    parser.add_argument('--verify', action='store_true',
                        help='recompute the checksums of existing entries, rebuilding the damaged ones')
    parser.add_argument('--delimiter', default=' ', help='field separator of a VideoDataset list')
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not Path(args.ann_file).is_file():
        raise SystemExit(f'build_frame_cache.py: {args.ann_file}: no such list file')
    try:
        videos = read_video_list(args.ann_file, args.delimiter)
    except ValueError as error:  # names the list's file:line and the fix: no traceback needed
        raise SystemExit(f'build_frame_cache.py: {error}') from None
    summary = build_frame_cache(videos, args.video_root, args.cache_root,
                                short_side=args.short_side, workers=args.workers,
                                verify=args.verify)
    for video, error in sorted(summary.failed.items()):
        print(f'FAILED {video}: {error}', file=sys.stderr)
    for line in summary.rebuilt_lines():
        print(line, file=sys.stderr)
    print(summary)
    return 1 if summary.failed else 0


if __name__ == '__main__':
    sys.exit(main())
