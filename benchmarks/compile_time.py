"""Kernel compile time (cold, warm in process, warm from the disk cache) for kernels of
5 to 100 lines, and the launch overhead of an eager tiny kernel against raw `kp`
dispatching the same SPIR-V, in the same run.

    .venv/bin/python benchmarks/compile_time.py [--repeat 7] [--launches 2000]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vksycl as sycl
from vksycl.compiler import kernel as kernel_mod
from vksycl.compiler import source as source_mod
from vksycl.kernels import plans
from vksycl.kernels.launch import build_launch, compiled


def kernel_source(lines: int) -> str:
    """A kernel body of about `lines` lines: arithmetic, branches and a loop or two."""
    body = ["x = a[i]", "y = b[i]", "t0 = x * 1.5 + y"]
    k = 0
    while len(body) < lines - 1:
        k += 1
        if k % 9 == 0:
            body += [f"for j in range({k % 4 + 2}):", f"    t{k} = t{k - 1} + j * x",
                     f"    t{k - 1} = t{k} * 0.5"]
        elif k % 5 == 0:
            body += [f"if t{k - 1} > y:", f"    t{k} = t{k - 1} - y", "else:",
                     f"    t{k} = t{k - 1} + math.sqrt(abs(y))"]
        else:
            body.append(f"t{k} = t{k - 1} * {1 + k % 3}.25 - x / (abs(y) + {k})")
    body.append(f"out[i] = t{k}")
    text = "\n".join("        " + line for line in body)
    return f"import math\n\n\ndef make(a, b, out):\n    def body(i):\n{text}\n    return body\n"


def load(path: Path, text: str):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make


def forget(memory: bool = True, sources: bool = True) -> None:
    if memory:
        kernel_mod._MEMORY.clear()
        plans._PREPARED.clear()
    if sources:
        source_mod._BY_CODE.clear()
        source_mod._FILES.clear()


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def compile_times(q: sycl.queue, repeat: int, work: Path) -> list[tuple[int, float, float, float]]:
    dev = q.get_device()
    a, b, out = (sycl.malloc_shared(64, np.float32, q) for _ in range(3))
    rows = []
    for lines in (5, 10, 30, 60, 100):
        make = load(work / f"k{lines}.py", kernel_source(lines))
        body = make(a, b, out)
        launch = sycl.range(64)
        cold, warm, disk = [], [], []
        for r in range(repeat):
            os.environ["VKSYCL_CACHE_DIR"] = str(work / f"cache_{lines}_{r}")
            forget()
            t = time.perf_counter()
            compiled(dev, body, launch)
            cold.append(time.perf_counter() - t)
            for _ in range(20):
                t = time.perf_counter()
                compiled(dev, body, launch)
                warm.append(time.perf_counter() - t)
            forget()
            t = time.perf_counter()
            compiled(dev, body, launch)
            disk.append(time.perf_counter() - t)
        q.parallel_for(launch, body).wait()  # and it runs
        rows.append((lines, ms(cold), ms(warm), ms(disk)))
    for p in (a, b, out):
        sycl.free(p, q)
    return rows


def launch_overhead(q: sycl.queue, launches: int) -> tuple[float, float, float]:
    from vksycl import _kp as kp
    from vksycl.runtime.engine import rename_entry_point

    n = 64
    x = sycl.malloc_device(n, np.float32, q)

    def tiny(i):
        x[i] = x[i] + 1.0

    q.parallel_for(sycl.range(n), tiny).wait()
    for _ in range(50):
        q.parallel_for(sycl.range(n), tiny).wait()
    t = time.perf_counter()
    for _ in range(launches):
        q.parallel_for(sycl.range(n), tiny).wait()
    ours = (time.perf_counter() - t) / launches
    dev, r = q.get_device(), sycl.range(n)
    t = time.perf_counter()
    for _ in range(launches):
        build_launch(dev, tiny, r)
    share = (time.perf_counter() - t) / launches

    ck = compiled(q.get_device(), tiny, sycl.range(n))
    spirv = rename_entry_point(ck.spirv(), ck.entry, "main")
    mgr = kp.Manager(q.get_device().vulkan.index)
    tensor = mgr.tensor_t(np.zeros(n, np.float32), kp.TensorTypes.storage)
    push = np.array([0, n], np.uint32)
    algo = mgr.algorithm([tensor], spirv, [1, 1, 1], np.zeros(0, np.uint32), push)
    seq = mgr.sequence()
    for _ in range(50):
        seq.clear()
        seq.record(kp.OpAlgoDispatch(algo, push))
        seq.eval()
    t = time.perf_counter()
    for _ in range(launches):
        seq.clear()
        seq.record(kp.OpAlgoDispatch(algo, push))
        seq.eval()
    raw = (time.perf_counter() - t) / launches
    sycl.free(x, q)
    return ours, raw, share


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--launches", type=int, default=2000)
    args = ap.parse_args()
    q = sycl.queue()
    print(f"device: {q.get_device().vulkan.name}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = compile_times(q, args.repeat, Path(tmp))
    print("| kernel lines | cold (ms) | warm in-process (ms) | warm from disk (ms) |")
    print("|---:|---:|---:|---:|")
    for lines, cold, warm, disk in rows:
        print(f"| {lines} | {cold:.2f} | {warm:.4f} | {disk:.3f} |")
    ours, raw, share = launch_overhead(q, args.launches)
    print(f"\neager tiny kernel, launch + wait: vksycl {ours * 1e6:.1f} us, raw kp "
          f"{raw * 1e6:.1f} us, ratio {ours / raw:.2f}x")
    print(f"of which the launch glue's build_launch (cached kernel: fetch arguments, pack push "
          f"constants, build the command): {share * 1e6:.1f} us")


if __name__ == "__main__":
    main()
