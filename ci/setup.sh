#!/usr/bin/env bash
# Installs everything vksycl needs on a Debian machine, idempotently: the Vulkan loader,
# Mesa's lavapipe, the Khronos validation layer, headers and a compiler for Kompute, the
# virtual environment .venv, vksycl itself in editable mode with its extras (MPI included:
# mpi4py and MPICH wheels), its private patched Kompute module vksycl/_kp and its own C
# module vksycl/_native (built once, then cached), and its mypyc modules. The wheel
# (ci/wheel.sh) builds the same from the same sources.
set -euo pipefail
cd "$(dirname "$0")/.."

# vulkan-validationlayers: the Khronos validation layer the test suite runs under
# (VKSYCL_VALIDATE=1); nothing loads it otherwise
packages=(libvulkan1 mesa-vulkan-drivers libvulkan-dev libfmt-dev vulkan-validationlayers g++
          make cmake patch)
python3 -c 'import ensurepip' 2>/dev/null || packages+=(python3-venv)
# Kompute's Python module compiles against the interpreter's headers.
python3 -c 'import os, sysconfig; exit(not os.path.exists(os.path.join(
    sysconfig.get_paths()["include"], "Python.h")))' || packages+=(python3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
# the mpi extra: mpi4py and MPICH as wheels (mpiexec lands in .venv/bin), for the MPI
# tests and examples/mpi_jacobi.py; the docs extra: MkDocs and matplotlib, for the site
# (tests/test_docs.py builds it); the torch extra: torch 2.13.0's CPU build, which the
# tests of autodiff.torch_function need and which a newer release's CUDA build (several
# GB) would only slow down
$py -m pip install -q --disable-pip-version-check -e '.[build,dev,mpi,docs,torch]' \
  'torch==2.13.0'

# Kompute lives inside vksycl now: a separately installed kp from an older set-up goes
if $py -c 'import importlib.metadata as m; m.version("kp")' 2>/dev/null; then
  $py -m pip uninstall -q -y kp
fi
third_party/kompute/build.sh "$py" vksycl >/dev/null

# the modules every launch runs through, compiled by mypyc (vksycl/mypyc_modules.py); a
# no-op when built from the present sources
$py ci/build_mypyc.py
