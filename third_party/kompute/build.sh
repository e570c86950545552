#!/usr/bin/env bash
# Builds vksycl's compiled modules for a source checkout into OUT_DIR (ci/setup.sh puts them
# in vksycl/), the way the wheel builds them: CMakeLists.txt, without the mypyc modules.
# `_kp<EXT_SUFFIX>`, the private Kompute module, from the kp==0.9.0 sdist with the patches
# beside this script (sources.sh), against the system's Vulkan headers and fmt (headers
# only) and PYTHON's pybind11; `_native<EXT_SUFFIX>`, vksycl's own C (native/). Cached: a
# second run with the same patches and build files copies them from ~/.cache/vksycl/kp.
# SOURCES builds other (patched) Kompute sources, uncached.
#   third_party/kompute/build.sh PYTHON OUT_DIR [SOURCES]
set -euo pipefail
out=$2 sources=${3:-}
# absolute, for CMake, but not resolved: a virtual environment's python is a link
case $1 in */*) python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;; *) python=$(command -v "$1") ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
key=$(cat "$here"/patches/*.patch "$here"/sources.sh "$here"/module_name.c "$root"/native/* \
          "$root"/CMakeLists.txt "$0" | sha256sum | cut -c1-12)
cached=${XDG_CACHE_HOME:-$HOME/.cache}/vksycl/kp/$key
modules=("_kp$suffix" "_native$suffix")
mkdir -p "$out"
# replaced whole, never rewritten in place: a running process may have the old one mapped
place() { cmp -s "$1" "$out/$2" || { cp "$1" "$out/.$2.tmp" && mv "$out/.$2.tmp" "$out/$2"; }; }
if [ -z "$sources" ] && [ -f "$cached/${modules[0]}" ] && [ -f "$cached/${modules[1]}" ]; then
  for m in "${modules[@]}"; do place "$cached/$m" "$m"; echo "$out/$m"; done
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(-DCMAKE_BUILD_TYPE=Release -DVKSYCL_MYPYC=OFF -DPython_EXECUTABLE="$python")
[ -n "$sources" ] && args+=(-DVKSYCL_KOMPUTE_SOURCE="$sources")
cmake -S "$root" -B "$work/build" "${args[@]}" >&2
cmake --build "$work/build" --target kp vksycl_native \
      --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" >&2
for m in "${modules[@]}"; do
  built=$(find "$work/build" -name "$m" | head -n1)
  if [ -z "$sources" ]; then
    mkdir -p "$cached"
    cp "$built" "$cached/$m.tmp" && mv "$cached/$m.tmp" "$cached/$m"
  fi
  place "$built" "$m"
  echo "$out/$m"
done
