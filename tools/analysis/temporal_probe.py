"""Does a trained hyperframe model use time? Evaluate it with frames reversed, shuffled, frozen
and at other sampling intervals; print the accuracies and a verdict, write JSON and a PNG.

    python tools/analysis/temporal_probe.py CONFIG CHECKPOINT [--out-dir DIR] [--scales 0.5 2]

See docs/troubleshooting.md.
"""
import os.path as osp

import hyperframes_mm  # noqa: F401  (upstream fixes and registration)
from hyperframes_mm.analysis.config_utils import config_tool_parser, parse_config_tool_args
from hyperframes_mm.analysis.temporal_probe import (SPLITS, format_report, run_temporal_probe,
                                                    write_probe_outputs)


def main(argv=None) -> None:
    parser = config_tool_parser(__doc__, 'the model\'s config file')
    parser.add_argument('checkpoint', help='the trained checkpoint')
    parser.add_argument('--out-dir', help='where to write temporal_probe.json and .png '
                        '(default: work_dirs/temporal_probe/<config name>)')
    parser.add_argument('--scales', type=float, nargs='*', default=[0.5, 2.0],
                        help='sampling-interval factors to try (default: 0.5 2)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the shuffle (default: 0)')
    parser.add_argument('--device', help='cuda, cpu, ... (default: cuda when available)')
    parser.add_argument('--split', choices=SPLITS, default='test',
                        help='which dataloader of the config to use (default: test)')
    parser.add_argument('--batch-size', type=int, help='override the dataloader batch size')
    parser.add_argument('--num-workers', type=int, help='override the dataloader workers')
    parser.add_argument('--tolerance', type=float, default=0.02,
                        help='accuracy drop that still counts as none (default: 0.02)')
    args, cfg = parse_config_tool_args(parser, argv)
    out_dir = args.out_dir or osp.join(
        'work_dirs', 'temporal_probe', osp.splitext(osp.basename(args.config))[0])
    # checked before the passes: an unusable folder found after them lost every pass's result
    if osp.exists(out_dir) and not osp.isdir(out_dir):
        parser.error(f'--out-dir {out_dir}: a file, not a folder')
    report = run_temporal_probe(cfg, args.checkpoint, scales=args.scales, seed=args.seed,
                                device=args.device, split=args.split,
                                batch_size=args.batch_size, num_workers=args.num_workers,
                                tolerance=args.tolerance, progress=not args.no_progress)
    meta = dict(config=args.config, checkpoint=args.checkpoint, split=args.split,
                seed=args.seed, tolerance=args.tolerance)
    # written before the table is formatted: an error there must not lose every pass's results
    json_path, png_path = write_probe_outputs(report, out_dir, meta)
    print(format_report(report))
    print(f'wrote {json_path} and {png_path}')


if __name__ == '__main__':
    main()
