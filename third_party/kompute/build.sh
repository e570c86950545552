#!/usr/bin/env bash
# Builds vksycl's private Kompute module, `_kp<EXT_SUFFIX>`, into OUT_DIR for a source
# checkout (ci/setup.sh puts it in vksycl/), the way the wheel builds it: CMakeLists.txt,
# without the mypyc modules. From the kp==0.9.0 sdist with the patches beside this script
# (sources.sh), against the system's Vulkan headers and fmt (headers only) and PYTHON's
# pybind11, and cached: a second run with the same patches and build files copies the
# module from ~/.cache/vksycl/kp. SOURCES builds other (patched) Kompute sources, uncached.
#   third_party/kompute/build.sh PYTHON OUT_DIR [SOURCES]
set -euo pipefail
out=$2 sources=${3:-}
# absolute, for CMake, but not resolved: a virtual environment's python is a link
case $1 in */*) python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;; *) python=$(command -v "$1") ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
key=$(cat "$here"/patches/*.patch "$here"/sources.sh "$here"/module_name.c "$root"/native/*.c \
          "$root"/CMakeLists.txt "$0" | sha256sum | cut -c1-12)
cached=${XDG_CACHE_HOME:-$HOME/.cache}/vksycl/kp/$key/_kp$suffix
mkdir -p "$out"
# replaced whole, never rewritten in place: a running process may have the old one mapped
place() { cmp -s "$1" "$out/_kp$suffix" || { cp "$1" "$out/.kp.tmp" && mv "$out/.kp.tmp" "$out/_kp$suffix"; }; }
if [ -z "$sources" ] && [ -f "$cached" ]; then
  place "$cached"; echo "$out/_kp$suffix"; exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(-DCMAKE_BUILD_TYPE=Release -DVKSYCL_MYPYC=OFF -DPython_EXECUTABLE="$python")
[ -n "$sources" ] && args+=(-DVKSYCL_KOMPUTE_SOURCE="$sources")
cmake -S "$root" -B "$work/build" "${args[@]}" >&2
cmake --build "$work/build" --target kp --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" >&2
built=$(find "$work/build" -name "_kp$suffix" | head -n1)
if [ -z "$sources" ]; then
  mkdir -p "$(dirname "$cached")"
  cp "$built" "$cached.tmp" && mv "$cached.tmp" "$cached"
fi
place "$built"
echo "$out/_kp$suffix"
