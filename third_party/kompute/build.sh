#!/usr/bin/env bash
# Builds the kp wheel from the kp==0.9.0 sdist with the patches beside this script,
# against the system's Vulkan headers and fmt and the environment's pybind11 (so numpy 2
# works), and caches it: a second run with the same patches reuses the wheel.
#   third_party/kompute/build.sh PYTHON OUT_DIR [--sdist-only]
set -euo pipefail
python=$1 out=$2 mode=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
key=$(cat "$here"/patches/*.patch "$0" | sha256sum | cut -c1-12)
mkdir -p "$out"
wheel=$(ls "$out"/kp-0.9.0+vksycl."$key"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$mode" ] && [ -n "$wheel" ]; then echo "$wheel"; exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download -q --no-deps --no-binary=:all: -d "$work" kp==0.9.0 >&2
tar -xzf "$work"/kp-0.9.0.tar.gz -C "$work"
src="$work/kp-0.9.0"
for p in "$here"/patches/*.patch; do patch -s -p1 -d "$src" < "$p"; done
# A local version label keeps the patched build apart from the registry's kp.
sed -i "s/version='0.9.0'/version='0.9.0+vksycl.$key'/" "$src/setup.py"
if [ "$mode" = "--sdist-only" ]; then
  tar -czf "$out/kp-0.9.0+vksycl.$key.tar.gz" -C "$work" kp-0.9.0
  echo "$out/kp-0.9.0+vksycl.$key.tar.gz"; exit 0
fi
export KOMPUTE_OPT_INSTALL=OFF KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF \
       KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF \
       KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON
export CMAKE_PREFIX_PATH="$("$python" -c 'import pybind11; print(pybind11.get_cmake_dir())')${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
"$python" -m pip wheel -q --no-build-isolation --no-deps -w "$work/dist" "$src" >&2
cp "$work"/dist/kp-*.whl "$out/"
ls "$out"/kp-0.9.0+vksycl."$key"-*.whl | head -n1
