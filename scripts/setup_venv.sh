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
# The lock is complete: --no-deps keeps pip from adding the second OpenCV that upstream metadata
# asks for (the header of requirements/lock-cpu.txt says why there is one).
"$VENV/bin/python" -m pip install --quiet --no-deps -r requirements/lock-cpu.txt
# A venv installed before that holds two OpenCVs: remove the extra ones, then reinstall the
# locked one, whose files went with the cv2 folder they share.
opencv=$(grep -E '^opencv' requirements/lock-cpu.txt)
extra=$("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^opencv' \
        | grep -vixF "$opencv" | cut -d= -f1 || true)
if [ -n "$extra" ]; then
    echo "[setup] removing extra OpenCV distributions: $extra"
    # shellcheck disable=SC2086  # one distribution name per word
    "$VENV/bin/python" -m pip uninstall --quiet -y $extra
    "$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "$opencv"
fi
"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
"$VENV/bin/python" -c "import hyperframes_mm, mmaction.models"
echo "$want" > "$STAMP"
echo "[setup] done"
