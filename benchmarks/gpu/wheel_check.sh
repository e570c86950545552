#!/usr/bin/env bash
# On the NVIDIA machine (Python 3.12, no network; .gpu/ from prepare.sh beside the
# checkout): builds vksycl's wheel from this checkout as pip would, with no build isolation
# (scikit-build-core, mypy and the rest come from .gpu/whl), installs it alone into a fresh
# virtual environment that also sees the system's packages (torch, cupy, pytest), and runs
# against it, from a folder outside the checkout: `python -m vksycl info`,
# examples/quickstart.py, examples/matrix_gemm.py, the public-API tests
# (tests/public_api.txt) and the CUDA interop tests. Logs and the wheel go to $OUT
# (default /tmp/wheel_check).
#   bash benchmarks/gpu/wheel_check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
out=${OUT:-/tmp/wheel_check}
mkdir -p "$out"
exec > >(tee "$out/wheel_check.log") 2>&1

# the Vulkan loader, its headers and fmt's, as run.sh brings them
for f in .gpu/debs/*.deb; do
  case "$f" in *-dev_*|*fmt*) ;; *) dpkg -x "$f" / ;; esac
done
ldconfig
mkdir -p /tmp/pfx; for f in .gpu/debs/*.deb; do dpkg -x "$f" /tmp/pfx; done
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export CMAKE_PREFIX_PATH=/tmp/pfx/usr
export CPATH=/tmp/pfx/usr/include LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu
export PYTHONUNBUFFERED=1 CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)

# the build tools, for the building interpreter only
python3 -m pip install -q --no-index --no-deps --target /tmp/buildtools .gpu/whl/*.whl
export VKSYCL_KP_SDIST=$repo/.gpu/kp-0.9.0.tar.gz  # third_party/kompute/sources.sh patches it
start=$(date +%s)
PYTHONPATH=/tmp/buildtools python3 -m pip wheel -v --no-build-isolation --no-deps \
  -w "$out" . > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
echo "wheel built in $(( $(date +%s) - start )) s: $(ls "$out"/vksycl-*.whl)"
ls -l "$out"/vksycl-*.whl

venv=/tmp/wheel_check_venv
rm -rf "$venv"
# where the interpreter lacks ensurepip, a venv without pip, filled by the outer pip
if python3 -m venv --system-site-packages "$venv" 2>/dev/null; then
  pip=("$venv/bin/python" -m pip)
else
  python3 -m venv --system-site-packages --without-pip "$venv"
  pip=(python3 -m pip --python "$venv/bin/python")
fi
# the outer interpreter's packages (numpy, torch, cupy, pytest) after the venv's own: a
# venv made from a venv's interpreter sees only the base installation's otherwise
python3 -c 'import site; print("\n".join(site.getsitepackages()))' > \
  "$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/outer.pth"
# vksycl's dependencies from .gpu/whl (no index here); the wheel itself, alone
# (--no-deps: the resolver does not count numpy from the system's site-packages there)
"${pip[@]}" install -q --no-index --no-deps .gpu/whl/*.whl "$out"/vksycl-*.whl
run=$(mktemp -d) && cd "$run"
"$venv/bin/python" - "$venv" <<'EOF'
import os, sys
import vksycl
from vksycl import mypyc_modules
assert os.path.realpath(vksycl.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep)
assert mypyc_modules.loaded() == list(mypyc_modules.MODULES), mypyc_modules.loaded()
files = [sys.modules[m].__file__ for m in mypyc_modules.MODULES]
assert all(os.path.exists(f) for f in files), files
print(f"vksycl {vksycl.__version__} from {os.path.dirname(vksycl.__file__)}")
EOF
"$venv/bin/python" -m vksycl info | tee "$out/info.log"
status=0
for example in quickstart matrix_gemm; do
  echo "== examples/$example.py"
  "$venv/bin/python" "$repo/examples/$example.py" 2>&1 | tee "$out/$example.log" ||
    status=1
done
mapfile -t tests < <(grep -v '^#' "$repo/tests/public_api.txt" | sed "s|^|$repo/tests/|")
VKSYCL_TESTS_AGAINST=installed "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "${tests[@]}" "$repo/tests/test_cuda_interop.py" "$repo/tests/test_external_memory.py" \
  2>&1 | tee "$out/tests.log" || status=1
echo "wheel_check: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
