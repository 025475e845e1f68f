#!/usr/bin/env bash
# The test command of README.md (and of .ci/run): set up .venv if needed, then run pytest.
#   bash scripts/test.sh [--kernels native|avx2|default] [pytest arguments]
# --kernels runs the tests with PyTorch, oneDNN, MKL and OpenBLAS capped at another CPU's
# instruction set (scripts/kernels.sh), e.g. `--kernels default -m trained` checks that the
# assertions on trained outcomes hold on other machines' kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
kernels=native
if [ "${1:-}" = "--kernels" ]; then
    kernels=${2:?--kernels needs native, avx2 or default}
    shift 2
fi
. scripts/kernels.sh
settings=$(kernel_env "$kernels")
bash scripts/setup_venv.sh
# Tests use tiny models: one intra-op thread is as fast, and avoids OpenMP threads spinning
# against the data-loader workers and tool subprocesses the tests start (10-30x slower).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[ "$kernels" = native ] || echo "[test] kernel setting '$kernels': $settings"
# One pytest worker per CPU (pytest-xdist), so that CI's cores all run tests; each test file
# on one worker, so that a file's module fixtures (a trained tiny model, a rendered dataset)
# are built once. `-n 0` (after the script's name) runs it in one process.
# shellcheck disable=SC2086  # one assignment per word
exec env $settings .venv/bin/python -m pytest tests -n auto --dist loadfile "$@"
