"""What if_device / if_host cost the compiler: cold compile time of a kernel whose work
sits in device bodies (with host bodies beside them) against the same work written in
place, and the disk-cache key of each (the key analyses host bodies once per function).

    .venv/bin/python benchmarks/if_device.py [--bodies 20] [--repeat 9]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vksycl as sycl
from vksycl.compiler import host_bodies
from vksycl.compiler import kernel as kernel_mod
from vksycl.compiler import source as source_mod
from vksycl.compiler.module import KernelSpec


def module_source(bodies: int) -> str:
    marked, plain = [], []
    for k in range(bodies):
        work = f"a[i] = a[i] * {k + 2}.0 + b[i]"
        marked += [f"    def dev{k}():", f"        {work}",
                   f"    def host{k}():", f"        print('step {k}', {{'k': {k}}})",
                   f"    syclexp.if_device(dev{k}).otherwise(host{k})",
                   f"    syclexp.if_host(lambda: print({k}))"]
        plain.append(f"    {work}")
    return "\n".join([
        "from vksycl.ext.oneapi import experimental as syclexp",
        "def make(a, b):", "  def marked(i):", *("  " + s for s in marked), "  return marked",
        "def make_plain(a, b):", "  def plain(i):", *("  " + s for s in plain),
        "  return plain", ""])


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bodies", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    q = sycl.queue()
    a = sycl.malloc_shared(64, np.float32, q)
    b = sycl.malloc_shared(64, np.float32, q)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ifd_bench.py"
        path.write_text(module_source(args.bodies))
        spec_ = importlib.util.spec_from_file_location("ifd_bench", path)
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        kernels = {"device bodies + host bodies": mod.make(a, b),
                   "written in place": mod.make_plain(a, b)}
        spec = KernelSpec("k", "range", 1, (128,))
        print(f"{q.get_device().get_info(sycl.info.device.name)}; {args.bodies} bodies, "
              f"median of {args.repeat}")
        for name, fn in kernels.items():
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                fn(0)  # on the host: every host body runs, no device body
            host_runs = len(printed.getvalue().splitlines())
            cold = timed(lambda fn=fn: kernel_mod.compile_kernel(fn, spec), args.repeat)

            def first_key(fn=fn) -> None:
                host_bodies._VIEWS.clear()
                source_mod._BY_CODE.clear()
                kernel_mod.disk_key(fn, spec)

            key_first = timed(first_key, args.repeat)
            key_warm = timed(lambda fn=fn: kernel_mod.disk_key(fn, spec), args.repeat)
            size = len(kernel_mod.compile_kernel(fn, spec).binary)
            print(f"  {name:28s} compile {cold * 1e3:7.2f} ms  disk key first "
                  f"{key_first * 1e3:6.3f} ms, then {key_warm * 1e3:6.3f} ms  "
                  f"SPIR-V {size} bytes  host bodies run on the host {host_runs}")
    sycl.free(a, q)
    sycl.free(b, q)


if __name__ == "__main__":
    main()
