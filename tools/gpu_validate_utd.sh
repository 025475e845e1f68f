#!/usr/bin/env bash
# Choices on training subjects, on a lent CUDA machine (the `device` tool), in two steps:
#
#   bash tools/gpu_validate_utd.sh prepare [DATA] [CHECKPOINT]   # here: the wheels the device
#       # lacks into .whl/ (tools/gpu_wheels.sh, without PyAV, which training does not use), and
#       # DATA's videos, lists and meta (no frame cache) with the ImageNet MobileNetV2 file (and
#       # the calibrated ones beside it) into .gpu_data/ (git-ignored); defaults data/utd_mhad
#       # and the family's converted file
#   bash tools/gpu_validate_utd.sh run S [bench arguments]       # there (carry .whl and
#       # .gpu_data): benchmarks/bench_utd_mhad_imagenet.py --validate-on S on the GPU, every
#       # selected run at once, the record and the table written to $OUT
#
# Sized for a 9-minute call: the family's zoo rows, one seed, --jobs 12 on the device's 16 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_wheels.sh

validate() {
    local subject=${1:?the training subject to validate on: 1, 3, 5 or 7} out=${OUT:-work_dirs}
    shift
    export HF_IMAGENET_MOBILENET_V2=.gpu_data/mobilenet_v2_imagenet_mmaction.pth
    export HF_UTD_CALIBRATED_DIR=.gpu_data  # the 'calibrated norms' row's files
    # The device image's transformers is newer than mmaction2 1.2.0's VindLU can import; a
    # record of version 0 ahead of it on the path makes mmaction2 register its placeholders.
    mkdir -p /tmp/site/transformers-0.0.0.dist-info
    printf 'Metadata-Version: 2.1\nName: transformers\nVersion: 0.0.0\n' \
        > /tmp/site/transformers-0.0.0.dist-info/METADATA
    echo "wheels installed in $(( $(date +%s) - GPU_START )) s"
    python3 benchmarks/bench_utd_mhad_imagenet.py --validate-on "$subject" \
        --data .gpu_data/utd_mhad --work-dir /tmp/bench_utd_val \
        --record "$out/utd_mhad_imagenet_val.json" "$@" 2>&1 | tee "$out/validate.log" |
        grep -v '^\(frame cache\|timing\)' || true
    cp benchmarks/results/utd_mhad_imagenet_val.md "$out/" 2>/dev/null || true
    echo "gpu_validate_utd: $(( $(date +%s) - GPU_START )) s in all, install included"
}

prepare_data() {
    local data=${1:-data/utd_mhad} checkpoint=${2:-checkpoints/mobilenet_v2_imagenet_mmaction.pth}
    grep -qxF '/.gpu_data/' .git/info/exclude 2>/dev/null || echo '/.gpu_data/' >> .git/info/exclude
    rm -rf .gpu_data && mkdir -p .gpu_data/utd_mhad
    (cd "$data" && find . \( -name '*.mp4' -o -name '*.txt' -o -name '*.json' \) -print0 |
        tar --null -cf - -T -) | tar -xf - -C .gpu_data/utd_mhad
    cp "$checkpoint" .gpu_data/mobilenet_v2_imagenet_mmaction.pth
    cp "$(dirname "$checkpoint")"/mobilenet_v2_utd_mhad_calibrated_*.pth .gpu_data/ 2>/dev/null ||
        echo "no calibrated MobileNetV2 files beside $checkpoint: the 'calibrated norms' row will not run"
    rm -f "$GPU_WHEEL_DIR"/av-*.whl
    du -sh .gpu_data "$GPU_WHEEL_DIR"
}

if [ "${1:-}" = prepare ]; then
    shift
    gpu_wheels_prepare || true   # the size check counts PyAV, removed below
    prepare_data "$@"
else
    gpu_tool validate ' S [bench_utd_mhad_imagenet.py arguments]' "$@"
fi
