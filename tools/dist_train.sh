#!/usr/bin/env bash
# Distributed training with torchrun and mmengine's `pytorch` launcher:
#   bash tools/dist_train.sh CONFIG NUM_PROCESSES [mmaction2 train.py options]
# (environment: tools/dist_launch.sh).
set -euo pipefail
source "$(dirname "$0")/dist_launch.sh"
dist_launch train.py "$2" "$1" --launcher pytorch "${@:3}"
