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
#   bash tools/gpu_bench.sh run deploy [ARGS...]  # the GPU columns of the deployment table
#                                          # instead (benchmarks/bench_deploy.py --device cuda:
#                                          # PyTorch float, fp16 channels-last, onnxruntime's CUDA
#                                          # provider where its wheel has one), deploy.gpu.md
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
    # mmaction2 1.2.0 imports its multimodal models whenever transformers is installed, and they
    # fail to import with newer transformers; no benchmarked model uses them
    if python3 -c 'import transformers' 2> /dev/null &&
       ! python3 -c 'import mmaction.models' > /dev/null 2>&1; then
        echo "mmaction.models does not import beside this transformers: uninstalling it"
        python3 -m pip uninstall -y -q transformers
    fi
    if [ "${1:-}" = deploy ]; then
        shift
        python3 benchmarks/bench_deploy.py --device cuda --out "$out/deploy.gpu.md" "$@" 2>&1 |
            tee "$out/bench_deploy_gpu.log"
    else
        python3 benchmarks/bench_gpu.py --out "$out" "$@" 2>&1 | tee "$out/bench_gpu.log"
    fi
    echo "gpu_bench: $(( $(date +%s) - GPU_START )) s in all, install included"
}

gpu_tool bench_gpu ' [deploy] [bench_gpu.py or bench_deploy.py arguments]' "$@"
