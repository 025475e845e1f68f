#!/usr/bin/env bash
# GPU smoke test for a lent CUDA machine (the `device` tool), in two steps.
#
#   bash tools/gpu_smoke.sh prepare   # here, with internet: fetch the pure-Python/manylinux
#                                     # wheels the device lacks into .whl/ (git-ignored)
#   bash tools/gpu_smoke.sh run       # there (device `run` with carry=['.whl']): install the
#                                     # wheels into /tmp/site, then train + test a few iterations
#                                     # on CUDA with --amp and print a short table
#
# The device image has Python 3.12 with torch, torchvision, numpy, opencv-python-headless,
# onnx(runtime), timm and pytest; it cannot reach PyPI, so everything else travels as wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(mmaction2==1.2.0 mmengine==0.10.7 mmcv-lite==2.1.0 mmpretrain==1.2.0 decord==0.6.0
        av importlib_metadata addict yapf termcolor mat4py modelindex model-index ordered-set
        platformdirs einops)

case "${1:-}" in
prepare)
    mkdir -p .whl
    grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}"
    ls -la .whl
    ;;
run)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
    python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('GPU:', torch.cuda.get_device_name(0), 'torch', torch.__version__)"
    DATA=/tmp/synthetic_tiny WORK=${OUT:-/tmp}/gpu_smoke
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
    ;;
*)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
