"""Check a hyperframe config for the mistakes that make hyperframe models fail quietly:
augmentation not shared by the frames, flips that keep a direction label, T and mean/std that
do not match the backbone, a checkpoint whose first conv does not fit, videos shorter than the
span or of mixed frame rates (--data), and the batch that fits a GPU (--gpu-mem).

    python tools/doctor.py CONFIG [--data] [--gpu-mem 24]

Each finding comes with a one-line fix; the exit status is 1 when there is an error (or a
warning, with --strict). See docs/troubleshooting.md.
"""
import sys

import hyperframes_mm  # noqa: F401  (upstream fixes and registration)
from hyperframes_mm.analysis.config_utils import config_tool_parser, parse_config_tool_args
from hyperframes_mm.analysis.doctor import diagnose
from hyperframes_mm.utils import int_argument


def main(argv=None) -> int:
    parser = config_tool_parser(__doc__)
    parser.add_argument('--data', action='store_true',
                        help='also read the annotation files and probe every video')
    parser.add_argument('--gpu-mem', type=float, metavar='GIB',
                        help='GPU memory in GiB: report the largest training batch that fits')
    parser.add_argument('--input-size', type=int_argument(1), nargs=2, metavar=('H', 'W'),
                        help='model input size for the memory estimate (default: from a real '
                        'sample with --data, else from the training pipeline)')
    parser.add_argument('--strict', action='store_true', help='exit 1 on warnings too')
    args, cfg = parse_config_tool_args(parser, argv)
    findings = diagnose(cfg, data=args.data, gpu_mem_gib=args.gpu_mem,
                        input_size=args.input_size, progress=not args.no_progress)
    print(f'doctor: {args.config}')
    for finding in findings:
        print(finding.format())
    counts = {severity: sum(f.severity == severity for f in findings)
              for severity in ('error', 'warning', 'info')}
    print(f'{counts["error"]} errors, {counts["warning"]} warnings, {counts["info"]} notes')
    failing = counts['error'] + (counts['warning'] if args.strict else 0)
    return 1 if failing else 0


if __name__ == '__main__':
    sys.exit(main())
