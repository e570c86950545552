#!/usr/bin/env bash
# On the NVIDIA machine: installs what prepare.sh gathered (Vulkan loader, the wheels)
# under /tmp, builds vksycl's private Kompute module (vksycl/_kp) against the host's
# pybind11, then runs the given command with vksycl importable, its launch path compiled by
# mypyc (VKSYCL_GPU_MYPYC=0 skips that, saving about a minute, where timings do not
# matter). Building Kompute takes about 25 s on 16 cores.
#   bash benchmarks/gpu/run.sh python3 benchmarks/memory.py
set -euo pipefail
cd "$(dirname "$0")/../.."
for f in .gpu/debs/*.deb; do
  case "$f" in *-dev_*|*fmt*) ;; *) dpkg -x "$f" / ;; esac
done
ldconfig
mkdir -p /tmp/pfx; for f in .gpu/debs/*.deb; do dpkg -x "$f" /tmp/pfx; done
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export CMAKE_PREFIX_PATH=/tmp/pfx/usr:$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')
export CPATH=/tmp/pfx/usr/include LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export VKSYCL_KP_SDIST=$PWD/.gpu/kp-0.9.0.tar.gz  # third_party/kompute/sources.sh patches it
third_party/kompute/build.sh python3 vksycl >/dev/null
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
if [ "${VKSYCL_GPU_MYPYC:-1}" != 0 ]; then
  python3 ci/build_mypyc.py  # the compiled launch path (vksycl/mypyc_modules.py)
fi
exec "$@"
