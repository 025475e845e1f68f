#!/usr/bin/env bash
# Choices on training subjects, on a lent CUDA machine (the `device` tool), in two steps:
#
#   bash tools/gpu_validate_utd.sh prepare S [ROW ...]           # here: the wheels the device
#       # lacks into .whl/ (tools/gpu_wheels.sh, without PyAV, which training does not use), and
#       # into .gpu_data/ (git-ignored) the data set's videos, lists and meta (no frame cache;
#       # HF_UTD_MHAD, else data/utd_mhad) with the weight files the rows (names or words of
#       # them, as --rows; default the zoo rows) start from on fold S, and only those
#       # (`bench_utd_mhad_imagenet.py --weights`): both networks' files and the data do not fit
#       # in what may travel at once; refused when the whole would not travel
#   bash tools/gpu_validate_utd.sh run S [bench arguments]       # there (carry .whl and
#       # .gpu_data; the same rows: --rows ...): benchmarks/bench_utd_mhad_imagenet.py
#       # --validate-on S on the GPU, every selected run at once, the record and the table
#       # written to $OUT
#
# Sized for a 9-minute call: one network's rows, one seed, --jobs 12 on the device's 16 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_wheels.sh
#: the weight files prepare copied, one a line, at the paths the configs read them from
WEIGHTS_LIST=.gpu_data/weights.txt

validate() {
    local subject=${1:?the training subject to validate on: 1, 3, 5 or 7} out=${OUT:-work_dirs}
    shift
    # each weight file where the configs read it (the working tree that travels has none)
    while read -r file; do
        mkdir -p "$(dirname "$file")"
        ln -sfn "$PWD/.gpu_data/weights/${file#/}" "$file"
    done < "$WEIGHTS_LIST"
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
    local subject=${1:?the training subject the run will validate on: 1, 3, 5 or 7}
    local data=${HF_UTD_MHAD:-data/utd_mhad} python=${PYTHON:-.venv/bin/python} files file
    shift
    files=$("$python" benchmarks/bench_utd_mhad_imagenet.py --data "$data" \
            --validate-on "$subject" --weights ${1:+--rows "$@"})
    grep -qxF '/.gpu_data/' .git/info/exclude 2>/dev/null || echo '/.gpu_data/' >> .git/info/exclude
    rm -rf .gpu_data && mkdir -p .gpu_data/utd_mhad .gpu_data/weights
    (cd "$data" && find . \( -name '*.mp4' -o -name '*.txt' -o -name '*.json' \) -print0 |
        tar --null -cf - -T -) | tar -xf - -C .gpu_data/utd_mhad
    : > "$WEIGHTS_LIST"
    for file in $files; do
        if [ ! -f "$file" ]; then
            echo "$file: a selected row starts from it and it is not here" \
                 "(docs/imagenet_weights.md, docs/efficientnet_lite0.md)" >&2
            return 1
        fi
        mkdir -p ".gpu_data/weights/$(dirname "${file#/}")"
        cp "$file" ".gpu_data/weights/${file#/}"
        echo "$file" >> "$WEIGHTS_LIST"
    done
    echo "weight files carried: $(tr '\n' ' ' < "$WEIGHTS_LIST")"
    rm -f "$GPU_WHEEL_DIR"/av-*.whl
    gpu_travel_check .gpu_data
}

if [ "${1:-}" = prepare ]; then
    shift
    gpu_wheels_prepare || true   # the size check counts PyAV, removed below
    prepare_data "$@"
else
    gpu_tool validate ' S [bench_utd_mhad_imagenet.py arguments]' "$@"
fi
