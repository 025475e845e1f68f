#!/usr/bin/env bash
# Create or refresh the project-local virtual environment at .venv/ (idempotent).
# Re-installs only when requirements/lock-cpu.txt or setup.py changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
VENV=.venv
STAMP=$VENV/.hyperframes_install_stamp
want=$(cat requirements/lock-cpu.txt setup.py requirements/runtime.txt | sha256sum | cut -d' ' -f1)

if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi
echo "[setup] installing the pinned CPU stack into $VENV (torch from local files; a few minutes)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# torch first: it is the big one and comes from this machine's local files when present.
"$VENV/bin/python" -m pip install --quiet torch==2.14.1 torchvision==0.29.1
"$VENV/bin/python" -m pip install --quiet -r requirements/lock-cpu.txt
"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
"$VENV/bin/python" -c "import hyperframes_mm, mmaction.models"
echo "$want" > "$STAMP"
echo "[setup] done"
