"""`VKSYCL_SPIRV_OPT=1`: every kernel's SPIR-V goes through spirv-opt's performance passes
and still validates and computes what it did, on the default device (lavapipe in CI).
The setting is read when vksycl is imported, so each run is a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vksycl as sycl
from vksycl import config
from vksycl.compiler import kernel
from vksycl.kernels.launch import compiled

ROOT = Path(__file__).resolve().parents[2]

# float4 loads and stores, local memory, barriers and an unrolled loop (the float32 GEMM
# example); a group reduction, a while loop and a math function
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import vksycl as sycl
    from vksycl import config

    sys.path.insert(0, sys.argv[1])
    import matrix_gemm_fp32

    matrix_gemm_fp32.main()
    q = sycl.queue()
    n, wg = 64, 32
    x = sycl.malloc_shared(n, sycl.float32, q)
    out = sycl.malloc_shared(n, sycl.float32, q)
    np.asarray(x)[:] = np.linspace(-2, 2, n, dtype=np.float32)

    def body(it):
        i = it.get_global_id(0)
        m = sycl.reduce_over_group(it.get_group(), x[i], sycl.maximum())
        v = x[i]
        k = 0
        while v < m and k < 100:
            v += 0.5
            k += 1
        out[i] = sycl.exp(x[i] - m) + k

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    h = np.asarray(x).reshape(-1, wg)
    m = h.max(1, keepdims=True)
    steps = np.ceil((m - h) / 0.5)
    want = (np.exp(h - m) + steps).ravel()
    np.testing.assert_allclose(np.asarray(out)[:n], want, rtol=1e-5, atol=1e-5)
    print("optimised" if config.SPIRV_OPT else "as emitted", "and correct")
""")


def run(tmp_path: Path, optimise: str) -> tuple[str, int]:
    """The script's last line and the bytes of SPIR-V its kernels compiled to."""
    dump = tmp_path / f"spirv{optimise}"
    env = dict(os.environ, VKSYCL_SPIRV_OPT=optimise, VKSYCL_DUMP_SPIRV=str(dump),
               VKSYCL_CACHE_DIR=str(tmp_path / f"cache{optimise}"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = tmp_path / "kernels.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(ROOT / "examples")], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1], sum(
        p.stat().st_size for p in dump.glob("*.spv"))


def test_optimised_modules_validate_and_compute_the_same(tmp_path):
    plain, plain_bytes = run(tmp_path, "0")
    optimised, optimised_bytes = run(tmp_path, "1")
    assert plain == "as emitted and correct"
    assert optimised == "optimised and correct"
    assert optimised_bytes != plain_bytes  # the passes ran


def test_the_setting_is_0_or_1(monkeypatch):
    monkeypatch.setenv("VKSYCL_SPIRV_OPT", "yes")
    with pytest.raises(sycl.exception, match="VKSYCL_SPIRV_OPT takes 0 or 1"):
        config._spirv_opt()


def test_an_invalid_optimised_module_is_not_used(q, monkeypatch, caplog):
    out = sycl.malloc_shared(4, sycl.float32, q)

    def body(i):
        out[i] = 1.0

    emitted = compiled(q.get_device(), body, sycl.range(4)).binary
    monkeypatch.setattr(kernel, "SPIRV_OPT", True)
    monkeypatch.setattr(kernel.spirv_gen.tools, "optimize", lambda *a: emitted[:-4])
    assert kernel.finished(emitted) == emitted
    assert "not valid SPIR-V" in caplog.text
    sycl.free(out, q)
