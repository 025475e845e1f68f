# The wheels a bare lent CUDA machine (the `device` tool) lacks, how they get there, and the
# two-step command line of the GPU scripts; sourced by tools/gpu_smoke.sh and
# tools/gpu_bench.sh, so that both install exactly one list the same way.
#
# The device image has Python 3.12 with torch, torchvision, numpy, opencv-python-headless,
# onnx(runtime), timm, scipy, tqdm, nvidia-ml-py and pytest; it reaches no package registry, so
# the rest travels in .whl/ (git-ignored) with the working tree, which may be 64 MiB in all.
# Importing hyperframes_mm needs mmaction2, mmengine, mmcv-lite and mmpretrain (HyperMobileNetV3)
# with their small pure-Python needs; writing and caching clips needs av (encoding) and decord.
GPU_WHEELS=(mmaction2==1.2.0 mmengine==0.10.7 mmcv-lite==2.1.0 mmpretrain==1.2.0 decord==0.6.0
            av importlib_metadata addict yapf termcolor mat4py modelindex model-index ordered-set
            platformdirs einops)
GPU_WHEEL_DIR=.whl
# What travels to the device at most: the working tree plus carried paths.
GPU_TRAVEL_LIMIT_MIB=64

# Download GPU_WHEELS into .whl/ for CPython 3.12 on manylinux x86-64 (run here, with a
# registry), then refuse a folder that would not install or not travel: two versions of one
# distribution (`pip install --target` would stop), or tree + wheels over the limit.
gpu_wheels_prepare() {
    mkdir -p "$GPU_WHEEL_DIR"
    grep -qxF "/$GPU_WHEEL_DIR/" .git/info/exclude 2>/dev/null ||
        echo "/$GPU_WHEEL_DIR/" >> .git/info/exclude
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d "$GPU_WHEEL_DIR" "${GPU_WHEELS[@]}"
    local twice
    twice=$(ls "$GPU_WHEEL_DIR"/*.whl | xargs -n1 basename | cut -d- -f1 | tr 'A-Z-' 'a-z_' |
            sort | uniq -d)
    if [ -n "$twice" ]; then
        echo "$GPU_WHEEL_DIR/ holds two versions of: $twice; delete the older wheels" >&2
        return 1
    fi
    gpu_travel_check
}

# Refuse what would not travel: the working tree, the wheels and the ignored PATHs a script
# carries besides them (its data), over GPU_TRAVEL_LIMIT_MIB in all.
gpu_travel_check() {
    local wheels tree carried=0 total
    wheels=$(du -cb "$GPU_WHEEL_DIR"/*.whl | tail -n1 | cut -f1)
    # du skips (and complains about) tracked files deleted from the tree; they do not travel
    tree=$(git ls-files -z --cached --others --exclude-standard |
           du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1) || true
    [ $# -gt 0 ] && carried=$(du -cb "$@" | tail -n1 | cut -f1)
    total=$((wheels + tree + carried))
    ls -lS "$GPU_WHEEL_DIR"
    awk -v w="$wheels" -v t="$tree" -v c="$carried" -v what="$*" \
        -v limit="$GPU_TRAVEL_LIMIT_MIB" 'BEGIN { printf "wheels %.1f MiB + working tree " \
        "%.1f MiB%s = %.1f MiB of the %d MiB that may travel\n", w / 1048576, t / 1048576, \
        (what == "" ? "" : sprintf(" + %s %.1f MiB", what, c / 1048576)),
        (w + t + c) / 1048576, limit }'
    if [ "$total" -gt $((GPU_TRAVEL_LIMIT_MIB * 1048576)) ]; then
        echo "too large to travel: leave out a wheel, untracked files or carried data" >&2
        return 1
    fi
}

# Install .whl/ into /tmp/site (run there: no index, no dependency resolution) and put it and
# the repository on PYTHONPATH.
gpu_wheels_install() {
    if ! ls "$GPU_WHEEL_DIR"/*.whl > /dev/null 2>&1; then
        echo "no wheels in $GPU_WHEEL_DIR/: run '$0 prepare' first and carry '$GPU_WHEEL_DIR'" >&2
        return 1
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$GPU_WHEEL_DIR"/*.whl
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
}

# gpu_tool RUN_FUNCTION USAGE_TAIL [prepare | run ARGS...]: a GPU script's command line.
# `prepare` (here) fetches the wheels; `run` (there) installs them, checks that CUDA is present,
# and calls RUN_FUNCTION ARGS, with GPU_START the time the run began (install included).
gpu_tool() {
    local run=$1 usage=$2
    shift 2
    case "${1:-}" in
    prepare)
        gpu_wheels_prepare
        ;;
    run)
        shift
        GPU_START=$(date +%s)
        gpu_wheels_install
        python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('GPU:', torch.cuda.get_device_name(0), 'torch', torch.__version__)"
        "$run" "$@"
        ;;
    *)
        echo "usage: $0 prepare|run$usage" >&2
        exit 2
        ;;
    esac
}
