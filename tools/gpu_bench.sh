#!/usr/bin/env bash
# GPU benchmark for a lent CUDA machine (the `device` tool), in two steps, like gpu_smoke.sh.
#
#   bash tools/gpu_bench.sh prepare        # here, with internet: fetch the wheels the device
#                                          # lacks into .whl/ (git-ignored; the list is in
#                                          # tools/gpu_wheels.sh) and check they can travel
#   bash tools/gpu_bench.sh run [ARGS...]  # there (device `run` with carry=['.whl']): install
#                                          # them into /tmp/site, then run benchmarks/bench_gpu.py
#                                          # ARGS, writing gpu_bench.md/.json (and its log) to
#                                          # $OUT, else work_dirs/bench_gpu
#
# The run is sized to end within 8 minutes, install included (--budget caps the compiles); give
# the device call a timeout_s of about 540. ARGS override the sizes, e.g. --batch 256
# --workers 14, --only 'Hyper|TSM', --no-compile; `python3 benchmarks/bench_gpu.py -h` lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_wheels.sh

bench_gpu() {
    local out=${OUT:-work_dirs/bench_gpu}
    mkdir -p "$out"
    echo "wheels installed in $(( $(date +%s) - GPU_START )) s"
    python3 benchmarks/bench_gpu.py --out "$out" "$@" 2>&1 | tee "$out/bench_gpu.log"
    echo "gpu_bench: $(( $(date +%s) - GPU_START )) s in all, install included"
}

gpu_tool bench_gpu ' [bench_gpu.py arguments]' "$@"
