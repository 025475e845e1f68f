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

case "${1:-}" in
prepare)
    gpu_wheels_prepare
    ;;
run)
    shift
    start=$(date +%s)
    gpu_wheels_install
    out=${OUT:-work_dirs/bench_gpu}
    mkdir -p "$out"
    python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('GPU:', torch.cuda.get_device_name(0), 'torch', torch.__version__)"
    echo "wheels installed in $(( $(date +%s) - start )) s"
    python3 benchmarks/bench_gpu.py --out "$out" "$@" 2>&1 | tee "$out/bench_gpu.log"
    echo "gpu_bench: $(( $(date +%s) - start )) s in all, install included"
    ;;
*)
    echo "usage: $0 prepare|run [bench_gpu.py arguments]" >&2
    exit 2
    ;;
esac
