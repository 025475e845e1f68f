"""The main job: build the synthetic benchmark, train and test the hyperframe model, print results.

    python tools/main_job.py [--work-dir work_dirs/main_job]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = 'configs/hyperframes/tiny/hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py'


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work-dir', default='work_dirs/main_job')
    parser.add_argument('--data-root', default='data/synthetic_tiny')
    return parser.parse_args()


def run(cmd, env):
    print('+', ' '.join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, env=env, check=True)


def main():
    args = parse_args()
    env = dict(os.environ, HF_SYNTHETIC_TINY=args.data_root)
    work_dir = Path(args.work_dir)
    run([sys.executable, 'tools/make_synthetic_dataset.py', args.data_root, '--train', '8',
         '--val', '4'], env)
    run([sys.executable, 'tools/train.py', CONFIG, '--work-dir', str(work_dir)], env)
    checkpoint = (work_dir / 'last_checkpoint').read_text().strip()
    run([sys.executable, 'tools/test.py', CONFIG, checkpoint, '--work-dir', str(work_dir)], env)
    logs = sorted(work_dir.glob('*/*.json'))
    metrics = json.loads(logs[-1].read_text().splitlines()[-1])
    print('\n| model | top-1 | mean class acc |\n|---|---|---|')
    print(f'| HyperResNet-18, T=5 (tiny) | {metrics["acc/top1"]:.3f} | '
          f'{metrics["acc/mean1"]:.3f} |')


if __name__ == '__main__':
    main()
