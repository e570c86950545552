"""Kompute variants for probes: the patched sdist in `.gpu/` with a probe's edits to one
of its source files, installed into a folder of its own, and probe scripts run with that
folder first on the path."""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator


def build(source: str, edits: list[tuple[str, str]]) -> str:
    """The folder a variant is installed in: `source` (a path inside the sdist) with each
    (old, new) of `edits` made, every old text found exactly once."""
    work, target = tempfile.mkdtemp(), tempfile.mkdtemp()
    (sdist,) = glob.glob(".gpu/kp-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(work)
    path = os.path.join(work, "kp-0.9.0", source)
    with open(path) as f:
        src = f.read()
    for old, new in edits:
        assert src.count(old) == 1, f"not found once in {source}: {old[:60]!r}"
        src = src.replace(old, new)
    with open(path, "w") as f:
        f.write(src)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                    "--no-deps", "--target", target, os.path.join(work, "kp-0.9.0")],
                   check=True)
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
