#!/usr/bin/env bash
# GPU smoke test for a lent CUDA machine (the `device` tool), in two steps.
#
#   bash tools/gpu_smoke.sh prepare   # here, with internet: fetch the pure-Python/manylinux
#                                     # wheels the device lacks into .whl/ (git-ignored)
#   bash tools/gpu_smoke.sh run       # there (device `run` with carry=['.whl']): install the
#                                     # wheels into /tmp/site, then train + test a few iterations
#                                     # on CUDA with --amp and print a short table
#
# The device image has Python 3.12 with torch and the usual scientific stack; it cannot reach
# PyPI, so everything else travels as wheels (the list: tools/gpu_wheels.sh, shared with
# tools/gpu_bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_wheels.sh

smoke() {
    local DATA=/tmp/synthetic_tiny WORK=${OUT:-/tmp}/gpu_smoke start trained done_at
    export HF_SYNTHETIC_TINY=$DATA
    CONFIG=configs/hyperframes/tiny/hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py
    python3 tools/make_synthetic_dataset.py "$DATA" --train 8 --val 4
    start=$(date +%s)
    python3 tools/train.py "$CONFIG" --work-dir "$WORK" --amp \
        --cfg-options train_cfg.max_epochs=2 2>&1 | tail -n 20
    trained=$(date +%s)
    python3 tools/test.py "$CONFIG" "$(cat "$WORK/last_checkpoint")" --work-dir "$WORK" \
        2>&1 | tail -n 5
    done_at=$(date +%s)
    timeout 300 python3 -m pytest -q -x tests 2>&1 | tail -n 5 || true
    printf '\n| step | seconds |\n|---|---|\n| train 2 epochs (amp, cuda) | %s |\n| test | %s |\n' \
        $((trained - start)) $((done_at - trained))
}

gpu_tool smoke '' "$@"
