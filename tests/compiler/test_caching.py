"""Reflection, `spirv()` / `spirv_asm()`, `VKSYCL_DUMP_SPIRV`, and the disk cache shared
between processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.compiler import kernel as kernel_cache
from vksycl.kernels import plans as launch_cache
from vksycl.kernels.launch import compiled

ROOT = Path(__file__).resolve().parents[2]


def test_spirv_reflection_and_disassembly(q, mem):
    a = mem.zeros(16, np.float32)
    scale = 3.0

    def doubler(i):
        a[i] = a[i] * scale

    ck = compiled(q.get_device(), doubler, sycl.range(16))
    blob = ck.spirv()
    assert blob[:4] == (0x07230203).to_bytes(4, "little")
    asm = ck.spirv_asm()
    assert 'OpEntryPoint GLCompute %' in asm and '"__sycl_kernel_doubler"' in asm
    refl = ck.reflection()
    assert refl["entry"] == "__sycl_kernel_doubler"
    # 16 items: one work-group of 16, or of a sub-group where that is wider
    assert refl["local_size"] == (max(16, q.get_device().vulkan.subgroup_size), 1, 1)
    kinds = {a["path"][1] if a["kind"] != "launch" else "range": a for a in refl["args"]}
    # a pointer is a 64-bit device address among the push constants: no descriptor bindings
    assert kinds["a"]["kind"] == "ptr" and kinds["a"]["push_offset"] % 8 == 0
    assert kinds["a"]["dtype"] == "float32"
    assert "Binding" not in asm and "OpMemoryModel PhysicalStorageBuffer64 GLSL450" in asm
    assert kinds["scale"]["kind"] == "scalar" and kinds["scale"]["dtype"] == "float32"
    assert refl["device_globals"] == [] and refl["virtual_tables"] == []
    assert ck.aspects == frozenset()


def test_aspects_are_recorded_only_when_used(q, mem):
    d = mem.zeros(4, np.float64)
    f = mem.zeros(4, np.float32)

    def uses_fp64(i):
        d[i] = d[i] + 1.0

    def no_fp64(i):
        f[i] = f[i] + 1.0

    assert compiled(q.get_device(), uses_fp64, sycl.range(4)).aspects == {"fp64"}
    assert compiled(q.get_device(), no_fp64, sycl.range(4)).aspects == frozenset()
    assert "Float64" not in compiled(q.get_device(), no_fp64, sycl.range(4)).spirv_asm()


def test_dump_spirv(q, mem, tmp_path, monkeypatch):
    monkeypatch.setenv("VKSYCL_DUMP_SPIRV", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "_MEMORY", {})
    monkeypatch.setattr(launch_cache, "_PREPARED", {})
    out = mem.zeros(8, np.int32)

    def dumped(i):
        out[i] = i * 7

    q.parallel_for(sycl.range(8), dumped).wait()
    np.testing.assert_array_equal(mem.view(out, 8), np.arange(8) * 7)
    names = sorted(p.suffix for p in tmp_path.iterdir() if p.name.startswith("dumped_"))
    assert names == [".spv", ".spvasm"]


SCRIPT = textwrap.dedent("""
    import numpy as np
    import vksycl as sycl
    from vksycl.compiler import kernel

    calls = []
    original = kernel.compile_kernel
    kernel.compile_kernel = lambda *a: calls.append(1) or original(*a)

    def helper(x):
        return x * x + 1

    q = sycl.queue()
    out = sycl.malloc_shared(32, np.int32, q)

    def body(i):
        out[i] = helper(i)

    q.parallel_for(sycl.range(32), body).wait()
    ok = np.array_equal(np.asarray(out)[:32], np.arange(32) ** 2 + 1)
    print(len(calls), ok)
""")


def test_disk_cache_is_shared_between_processes(tmp_path):
    script = tmp_path / "cached_kernel.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, VKSYCL_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run() -> str:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        return done.stdout.strip()

    assert run() == "1 True"   # compiled
    assert run() == "0 True"   # loaded from disk
    script.write_text(SCRIPT.replace("x * x + 1", "x * x + 2").replace("** 2 + 1", "** 2 + 2"))
    assert run() == "1 True"   # a device function changed: compiled again


def test_missing_device_features_are_reported_before_launch(q, mem, monkeypatch):
    d = mem.zeros(4, np.float64)

    def doubles(i):
        d[i] = d[i] * 2.0

    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp64")
    launch_cache._PREPARED.clear()
    with pytest.raises(sycl.exception) as info:
        q.parallel_for(sycl.range(4), doubles).wait()
    assert info.value.code() == sycl.errc.kernel_not_supported
    assert "fp64" in str(info.value)
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    launch_cache._PREPARED.clear()
    q.parallel_for(sycl.range(4), doubles).wait()
    caps = compiled(q.get_device(), doubles, sycl.range(4)).capabilities
    assert "Float64" in caps


def test_short_loops_of_constant_count_ask_to_be_unrolled(q, mem):
    """A range loop of constant bounds and at most 64 iterations carries the Unroll loop
    control (a register tile indexed by its counter stays in registers); a loop of a
    runtime count, or a longer one, leaves the choice to the driver. Each still runs."""
    out = mem.zeros(4, np.int32)
    n = 5

    def loops(i):
        s = 0
        for j in range(16):  # constant: unrolled
            s += j
        for j in range(0, 64, 2):  # constant, 32 iterations: unrolled
            s += j
        for j in range(n):  # a runtime count
            s += j
        for _ in range(100):  # constant but long
            s += 1
        out[i] = s

    q.parallel_for(sycl.range(4), loops).wait()
    assert list(mem.view(out, 4)) == [120 + 992 + 10 + 100] * 4
    merges = [line.split()[-1] for line in
              compiled(q.get_device(), loops, sycl.range(4)).spirv_asm().splitlines()
              if "OpLoopMerge" in line]
    assert merges == ["Unroll", "Unroll", "None", "None"]
