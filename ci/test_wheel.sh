#!/usr/bin/env bash
# The wheel as a user gets it: builds dist/ (ci/wheel.sh, cached), installs only the wheel
# (with its mpi extra, and pytest) into a fresh virtual environment outside the checkout,
# checks that vksycl is imported from there, and runs `python -m vksycl info`, every
# example and the tests that use only the public API (tests/public_api.txt) against it,
# from a folder outside the checkout.
#   bash ci/test_wheel.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${1:-python3}
bash ci/wheel.sh "$python"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
py=$work/venv/bin/python
wheel=$(ls dist/vksycl-*.whl)
$py -m pip install -q --disable-pip-version-check "$wheel[mpi]" pytest hypothesis
mkdir "$work/run" && cd "$work/run"

$py - "$work/venv" <<'EOF'
import os, sys
import vksycl
from vksycl import _native, mypyc_modules
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(vksycl.__file__).startswith(venv + os.sep), vksycl.__file__
# vksycl's own C, which the vocabulary and events build on
assert vksycl.range.__mro__[2] is _native.IndexBase, vksycl.range.__mro__
assert vksycl.event.__mro__[1] is _native.EventCore, vksycl.event.__mro__
assert mypyc_modules.loaded() == list(mypyc_modules.MODULES), mypyc_modules.loaded()
files = [sys.modules[m].__file__ for m in mypyc_modules.MODULES]
assert all(os.path.exists(f) for f in files), files
print(f"vksycl {vksycl.__version__} from {os.path.dirname(vksycl.__file__)}, "
      f"{len(mypyc_modules.loaded())} modules compiled")
EOF
$py -m vksycl info

for example in "$repo"/examples/*.py; do
  echo "== examples/$(basename "$example")"
  (mkdir -p "ex" && cd ex && $py "$example" > ../example.log 2>&1) ||
    { cat example.log; echo "examples/$(basename "$example") failed against the wheel" >&2; exit 1; }
done

# tests/conftest.py refuses to run them against the checkout's vksycl
mapfile -t tests < <(grep -v '^#' "$repo/tests/public_api.txt" | sed "s|^|$repo/tests/|")
VKSYCL_TESTS_AGAINST=installed $py -m pytest -p no:cacheprovider "${tests[@]}"
