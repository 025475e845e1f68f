#!/usr/bin/env bash
# Check the OpenMMLab packaging end to end, as a user of `pip install .` and mim meets it:
#   1. build an sdist (MANIFEST.in) and a wheel from it, outside the checkout;
#   2. install the wheel, non-editable and without dependencies, into a fresh venv that borrows
#      the third-party packages of a base venv (default .venv) through a .pth file, so torch
#      and the OpenMMLab stack are not installed a second time; add requirements/mim.txt there;
#   3. from an empty directory: `import hyperframes_mm` is silent, `mim train` trains a tiny
#      config found by name in the package's .mim/configs for one epoch, `mim test` tests its
#      checkpoint, `mim search hyperframes_mm` lists the model zoo;
#   4. the wheel holds the plugin alone (no top-level `benchmarks`), and every experiment script
#      of the checkout still starts (`--help`) with that install, as from a clone.
# tests/test_packaging.py runs it. The wheels of requirements/mim.txt are downloaded once into
# $BASE/mim-wheels; later runs need no network. Exit status 3: they could not be downloaded.
#
#   bash scripts/check_mim.sh [BASE_VENV]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=$(cd "${1:-.venv}" && pwd)
PY=$BASE/bin/python
WORK=$(mktemp -d)
# KEEP=1 keeps the build, venv and logs for a look
trap 'if [ -n "${KEEP:-}" ]; then echo "[check_mim] kept $WORK"; else rm -rf "$WORK"; fi' EXIT
say() { echo "[check_mim] $*"; }

say "sdist and wheel"
"$PY" setup.py -q egg_info --egg-base "$WORK" sdist --dist-dir "$WORK/dist" >"$WORK/sdist.log" 2>&1 \
    || { cat "$WORK/sdist.log"; exit 1; }
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/dist" "$WORK"/dist/*.tar.gz \
    >"$WORK/wheel.log" 2>&1 || { cat "$WORK/wheel.log"; exit 1; }

WHEELS=$BASE/mim-wheels
if ! "$PY" -m pip download -q --no-deps --no-index --find-links "$WHEELS" -d "$WORK/mim" \
        -r requirements/mim.txt >/dev/null 2>&1; then
    say "downloading requirements/mim.txt into $WHEELS (once)"
    "$PY" -m pip download -q --no-deps -d "$WHEELS" -r requirements/mim.txt >"$WORK/dl.log" 2>&1 \
        || { grep -v 'is ignored' "$WORK/dl.log"; say "cannot download requirements/mim.txt"; exit 3; }
fi

say "fresh venv with the wheel (non-editable), borrowing $BASE's packages"
"$PY" -m venv --without-pip "$WORK/venv"
VPY=$WORK/venv/bin/python
"$PY" -m pip --python "$VPY" install -q --no-deps --no-index --find-links "$WHEELS" \
    "$WORK"/dist/*.whl -r requirements/mim.txt 2>&1 | { grep -v 'is ignored' || true; }
# Appended to sys.path after the venv's own site-packages: the wheel and mim's pins come first.
# The base venv's .pth files (its editable hyperframes_mm) are not run from such a path.
"$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' \
    >"$("$VPY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/_base_venv.pth"

mkdir "$WORK/run" && cd "$WORK/run"
export OMP_NUM_THREADS=1 HF_SYNTHETIC_TINY=$WORK/data
unset PYTHONWARNINGS
"$VPY" - <<'EOF'
import importlib.util, pathlib, sys, sysconfig
spec = importlib.util.find_spec('hyperframes_mm')
package = pathlib.Path(spec.origin).parent
assert package.parent == pathlib.Path(sysconfig.get_path('purelib')), f'not the wheel: {package}'
assert importlib.util.find_spec('benchmarks') is None, 'the wheel installs a top-level benchmarks'
for name in ('configs', 'tools', 'model-index.yml'):
    path = package / '.mim' / name
    assert path.exists() and not path.is_symlink(), f'{path}: missing or a link'
print(f'[check_mim] installed at {package}')
EOF
noise=$("$VPY" -c 'import hyperframes_mm' 2>&1)
[ -z "$noise" ] || { say "import hyperframes_mm printed:"; echo "$noise"; exit 1; }

CONFIG=hyperframe_scratch-r18_1xb4-5x2x1-2e_synthetic-tiny-rgb.py
MIM=$("$VPY" -c 'import hyperframes_mm, pathlib; print(pathlib.Path(hyperframes_mm.__file__).parent / ".mim")')
"$VPY" "$MIM/tools/make_synthetic_dataset.py" "$HF_SYNTHETIC_TINY" --train 4 --val 2 >data.log 2>&1 \
    || { cat data.log; exit 1; }
say "mim train hyperframes_mm $CONFIG (1 epoch)"
"$VPY" -m mim train hyperframes_mm "$CONFIG" --work-dir work --cfg-options train_cfg.max_epochs=1 \
    >train.log 2>&1 || { tail -n 40 train.log; exit 1; }
grep -q 'will use .*/hyperframes_mm/.mim/configs/' train.log \
    || { tail -n 40 train.log; say "mim did not find the config in the package"; exit 1; }
CHECKPOINT=$(cat work/last_checkpoint)
say "mim test hyperframes_mm $CONFIG --checkpoint $(basename "$CHECKPOINT")"
"$VPY" -m mim test hyperframes_mm "$CONFIG" --checkpoint "$CHECKPOINT" --work-dir work \
    >test.log 2>&1 || { tail -n 40 test.log; exit 1; }
grep -q 'acc/top1' test.log || { tail -n 40 test.log; say "mim test printed no accuracy"; exit 1; }
say "mim search hyperframes_mm"
"$VPY" -m mim search hyperframes_mm >search.txt 2>&1 || { tail -n 20 search.txt; exit 1; }
grep -q 'hyperframe_imagenet-pretrained-r18_8xb32-5x2x1-100e_kinetics400-rgb' search.txt \
    || { cat search.txt; say "mim search does not list the model zoo"; exit 1; }

say "experiment scripts from the checkout, benchmarks not installed"
for script in "$ROOT"/benchmarks/bench_*.py "$ROOT"/tools/main_job.py \
        "$ROOT"/tools/analysis/zoo_table.py; do
    "$VPY" "$script" --help >help.log 2>&1 \
        || { tail -n 20 help.log; say "$script does not start"; exit 1; }
done

say "ok: mim search lists the model zoo; mim test: $(grep -o 'acc/top1: [0-9.]*' test.log | tail -n 1)"
