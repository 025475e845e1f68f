#!/usr/bin/env bash
# The main job of README.md: set up .venv, build the synthetic benchmark as real video files,
# train and test the models, print the results table. Options go to tools/main_job.py
# (e.g. --full for the longer runs, --work-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
exec .venv/bin/python tools/main_job.py "$@"
