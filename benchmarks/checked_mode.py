"""What checked mode (`VKSYCL_CHECK=bounds`, `bounds,nan`) costs: STREAM triad and the
tiled float32 matmul of benchmarks/matmul.py, each timed in a process of its own per mode
(the mode is read at import), and the slowdown against the unchecked kernels. Every run
checks its results, and a checked run must report nothing.

Each launch + wait is timed in wall-clock time and in the process's CPU time (best of
`--repeat`): lavapipe runs kernels on threads of the process, so on a machine whose cores
other work shares, CPU time is the steadier measure of the work a kernel costs.

    .venv/bin/python benchmarks/checked_mode.py [--mib 64] [--n 512] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODES = ("", "bounds", "bounds,nan")
TILE = 16


def best(fn, repeat: int) -> tuple[float, float]:
    """The least wall-clock and the least CPU seconds of `repeat` calls, after one."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def child(mib: int, n: int, repeat: int) -> dict[str, float]:
    """The times of this process's mode (its kernels compiled as VKSYCL_CHECK says)."""
    import vksycl as sycl

    q = sycl.queue()
    size = mib * (1 << 20) // 4
    a, b, c = (sycl.malloc_device(size, sycl.float32, q) for _ in range(3))
    q.fill(b, np.float32(2.0), size)
    q.fill(c, np.float32(1.0), size).wait()
    s = np.float32(3.0)

    def triad(it):
        i = it.get_global_id(0)
        a[i] = b[i] + s * c[i]

    launch = sycl.nd_range((size,), (256,))
    triad_s, triad_cpu = best(lambda: q.parallel_for(launch, triad).wait(), repeat)
    sample = np.zeros(1024, np.float32)
    q.memcpy(sample, a + (size - 1024), sample.nbytes).wait()
    assert np.all(sample == 5.0), sample[:4]
    for p in (a, b, c):
        sycl.free(p, q)
    rng = np.random.default_rng(0)
    ha, hb = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    a, b, c = (sycl.malloc_device(n * n, sycl.float32, q) for _ in range(3))
    q.memcpy(a, ha, ha.nbytes)
    q.memcpy(b, hb, hb.nbytes).wait()
    body = matmul_kernel(a, b, c, n)
    ndr = sycl.nd_range((n, n), (TILE, TILE))
    matmul_s, matmul_cpu = best(lambda: q.parallel_for(ndr, body).wait(), repeat)
    out = np.empty((n, n), np.float32)
    q.memcpy(out, c, out.nbytes).wait()
    np.testing.assert_allclose(out[:8], ha[:8] @ hb, rtol=1e-3, atol=1e-3)
    for p in (a, b, c):
        sycl.free(p, q)
    return {"device": q.get_device().get_info(sycl.info.device.name),
            "triad_gbs": 3 * size * 4 / triad_s / 1e9, "triad_s": triad_s,
            "triad_cpu": triad_cpu, "matmul_gflops": 2 * n ** 3 / matmul_s / 1e9,
            "matmul_s": matmul_s, "matmul_cpu": matmul_cpu}


def matmul_kernel(a, b, c, n: int):
    """benchmarks/matmul.py's tiled float32 kernel (16x16 tiles in local memory)."""
    from matmul import tiled_kernel  # imports vksycl: after the mode is set
    return tiled_kernel(a, b, c, n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64, help="size of each triad array")
    ap.add_argument("--n", type=int, default=512, help="matmul size")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.mib, args.n, args.repeat)))
        return
    here = Path(__file__).resolve().parent
    runs = {}
    for mode in MODES:
        env = {**os.environ, "VKSYCL_CHECK": mode}
        proc = subprocess.run([sys.executable, __file__, "--child", "--mib", str(args.mib),
                               "--n", str(args.n), "--repeat", str(args.repeat)],
                              capture_output=True, text=True, env=env, cwd=here, check=True)
        runs[mode] = json.loads(proc.stdout.splitlines()[-1])
    base = runs[""]
    print(f"device: {base['device']}; triad {args.mib} MiB per array, matmul n={args.n}, "
          f"best of {args.repeat}")
    print(f"{'VKSYCL_CHECK':>13} {'triad GB/s':>11} {'wall':>7} {'cpu':>7} "
          f"{'matmul GFLOP/s':>15} {'wall':>7} {'cpu':>7}   (slowdowns)")
    for mode, r in runs.items():
        print(f"{mode or '(unset)':>13} {r['triad_gbs']:>11.2f} "
              f"{r['triad_s'] / base['triad_s']:>6.2f}x "
              f"{r['triad_cpu'] / base['triad_cpu']:>6.2f}x {r['matmul_gflops']:>15.2f} "
              f"{r['matmul_s'] / base['matmul_s']:>6.2f}x "
              f"{r['matmul_cpu'] / base['matmul_cpu']:>6.2f}x")


if __name__ == "__main__":
    main()
