#!/usr/bin/env bash
# The test command of README.md (and of .ci/run): set up .venv if needed, then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
exec .venv/bin/python -m pytest tests "$@"
