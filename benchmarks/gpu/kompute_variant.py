"""Kompute variants for probes: the patched Kompute sources (the sdist in `.gpu/` with
third_party/kompute's patches) with a probe's edits to one of its source files, built as
the Kompute module of a copy of vksycl in a folder of its own, and probe scripts run with
that folder first on the path."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator


def build(source: str, edits: list[tuple[str, str]]) -> str:
    """The folder a variant is installed in: `source` (a path inside the sources) with each
    (old, new) of `edits` made, every old text found exactly once. The folder holds copies
    of vksycl (with the variant's `_kp`), spirv_gen and the mypyc build of the launch path,
    which the copies' sources still match."""
    work, target = tempfile.mkdtemp(), tempfile.mkdtemp()
    src = os.path.join(work, "kompute")
    (sdist,) = glob.glob(".gpu/kp-*.tar.gz")
    subprocess.run(["bash", "third_party/kompute/sources.sh", sys.executable, src],
                   env={**os.environ, "VKSYCL_KP_SDIST": os.path.abspath(sdist)}, check=True)
    path = os.path.join(src, source)
    with open(path) as f:
        text = f.read()
    for old, new in edits:
        assert text.count(old) == 1, f"not found once in {source}: {old[:60]!r}"
        text = text.replace(old, new)
    with open(path, "w") as f:
        f.write(text)
    skip = shutil.ignore_patterns("__pycache__", "_kp.*", "_native.*")
    for package in ("vksycl", "spirv_gen"):
        shutil.copytree(package, os.path.join(target, package), ignore=skip)
    if os.path.isdir(os.path.join("build", "mypyc")):
        shutil.copytree(os.path.join("build", "mypyc"), os.path.join(target, "build", "mypyc"))
    subprocess.run(["bash", "third_party/kompute/build.sh", sys.executable,
                    os.path.join(target, "vksycl"), src], check=True, stdout=subprocess.DEVNULL)
    return target


# what each `barrier_forms` variant records before a dispatch
BARRIER_FORMS = {"0": "as shipped: transfer and compute writes to compute",
                 "1": "compute to compute, memory barrier",
                 "2": "compute to compute, execution only",
                 "3": "compute to compute, memory barrier, by region",
                 "6": "no barrier"}


def barrier_forms(env: str) -> str:
    """C++ for an edit of `OpAlgoDispatch::record`, in place of the line opening its
    barrier block: the barrier form the environment variable `env` picks, as `variant`
    (1: compute to compute, memory barrier; 2 or 5: execution only; 3: memory barrier by
    region; 6: none; any other: the shipped barrier, the block that follows)."""
    return f"""    static int variant = getenv("{env}") ?
        atoi(getenv("{env}")) : 0;
    vk::MemoryBarrier computeWrites(vk::AccessFlagBits::eShaderWrite,
                                    vk::AccessFlagBits::eShaderRead |
                                      vk::AccessFlagBits::eShaderWrite);
    if (this->mBarrier && variant == 1) {{
        commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                                      vk::PipelineStageFlagBits::eComputeShader,
                                      vk::DependencyFlags(), computeWrites, nullptr, nullptr);
    }} else if (this->mBarrier && (variant == 2 || variant == 5)) {{
        commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                                      vk::PipelineStageFlagBits::eComputeShader,
                                      vk::DependencyFlags(), nullptr, nullptr, nullptr);
    }} else if (this->mBarrier && variant == 3) {{
        commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                                      vk::PipelineStageFlagBits::eComputeShader,
                                      vk::DependencyFlagBits::eByRegion, computeWrites,
                                      nullptr, nullptr);
    }} else if (variant == 6) {{
    }} else if (this->mBarrier) {{"""


@contextlib.contextmanager
def script(text: str) -> Iterator[str]:
    """A probe script written to the working folder (kernels compile from a file of their
    own), removed afterwards."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", dir=".", delete=False) as f:
        f.write(text)
    try:
        yield f.name
    finally:
        os.unlink(f.name)


def run(target: str, path: str, **env: str) -> subprocess.CompletedProcess:
    """Runs a probe script against the variant in `target`, with `env` added."""
    full = {**os.environ, **env}
    full["PYTHONPATH"] = os.pathsep.join([target, full.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, path], env=full, capture_output=True, text=True)


def barrier_variant(env: str, *edits: tuple[str, str]) -> str:
    """A variant whose `OpAlgoDispatch::record` records the barrier form the environment
    variable `env` picks (`barrier_forms`), with `edits` of that file besides."""
    return build("src/OpAlgoDispatch.cpp", [
        ('#include "kompute/operations/OpAlgoDispatch.hpp"',
         '#include <cstdlib>\n#include "kompute/operations/OpAlgoDispatch.hpp"'),
        ("    if (this->mBarrier) {", barrier_forms(env)), *edits])


def run_forms(target: str, text: str, env: str, variants: dict[str, str]) -> None:
    """Runs the probe script `text` against `target` once per variant (`env` set to its
    key), the first again last to show the drift between runs, printing each one's
    output."""
    first = next(iter(variants))
    with script(text) as path:
        for key, what in [*variants.items(), (first, variants[first] + ", again")]:
            out = run(target, path, **{env: key})
            out.check_returncode()
            print(f"{what}: {out.stdout.strip()}")
