#!/usr/bin/env bash
# The test command of README.md (and of .ci/run): set up .venv if needed, then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
# Tests use tiny models: one intra-op thread is as fast, and avoids OpenMP threads spinning
# against the data-loader workers and tool subprocesses the tests start (10-30x slower).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec .venv/bin/python -m pytest tests "$@"
