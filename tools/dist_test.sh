#!/usr/bin/env bash
# Distributed testing with torchrun and mmengine's `pytorch` launcher:
#   bash tools/dist_test.sh CONFIG CHECKPOINT NUM_PROCESSES [mmaction2 test.py options]
# (environment: tools/dist_launch.sh).
set -euo pipefail
source "$(dirname "$0")/dist_launch.sh"
dist_launch test.py "$3" "$1" "$2" --launcher pytorch "${@:4}"
