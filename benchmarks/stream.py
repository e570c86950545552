"""STREAM-style copy, scale and triad written as Python kernels, against torch on the GPU.

Bandwidth counts the bytes each kernel reads and writes (copy and scale: 2 arrays, triad:
3). Each kernel is launched `--repeat` times; the best time counts.

    .venv/bin/python benchmarks/stream.py [--mib 256] [--repeat 10]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_seconds

import vksycl as sycl


def best(fn, wait, repeat: int) -> float:
    return best_seconds(lambda: (fn(), wait()), repeat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256, help="size of each array")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--local", type=int, default=256, help="work-group size")
    args = ap.parse_args()

    q = sycl.queue()
    n = args.mib * (1 << 20) // 4
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; "
          f"{n} float32 per array ({args.mib} MiB)")
    a = sycl.malloc_device(n, sycl.float32, q)
    b = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(n, sycl.float32, q)
    q.fill(a, np.float32(1.0), n)
    q.fill(b, np.float32(2.0), n)
    q.fill(c, np.float32(0.0), n).wait()
    s = np.float32(3.0)
    launch = sycl.nd_range((n,), (args.local,))

    def copy(it):
        i = it.get_global_id(0)
        c[i] = a[i]

    def scale(it):
        i = it.get_global_id(0)
        b[i] = s * c[i]

    def triad(it):
        i = it.get_global_id(0)
        a[i] = b[i] + s * c[i]

    kernels = {"copy": (copy, 2), "scale": (scale, 2), "triad": (triad, 3)}
    ours = {name: best(lambda k=k: q.parallel_for(launch, k), q.wait, args.repeat)
            for name, (k, _) in kernels.items()}

    # Check one pass of each against numpy on a sample.
    q.fill(a, np.float32(1.0), n)
    q.fill(b, np.float32(2.0), n)
    q.fill(c, np.float32(0.0), n).wait()
    for k, _ in kernels.values():
        q.parallel_for(launch, k).wait()
    sample = np.zeros(1024, np.float32)
    q.memcpy(sample, a + (n - 1024), 4096).wait()
    assert np.allclose(sample, 3.0 + 3.0 * 1.0), sample[:4]

    peer = {}
    try:
        import torch
        if torch.cuda.is_available():
            ta = torch.ones(n, device="cuda")
            tb = torch.full((n,), 2.0, device="cuda")
            tc = torch.zeros(n, device="cuda")
            sync = torch.cuda.synchronize
            peer = {
                "copy": best(lambda: tc.copy_(ta), sync, args.repeat),
                "scale": best(lambda: torch.mul(tc, 3.0, out=tb), sync, args.repeat),
                "triad": best(lambda: torch.add(tb, tc, alpha=3.0, out=ta), sync, args.repeat),
            }
            print(f"peer: torch {torch.__version__}")
    except ImportError:
        pass

    print(f"{'kernel':>6} {'vksycl GB/s':>12} {'torch GB/s':>11} {'ratio':>6}")
    for name, (_, arrays) in kernels.items():
        moved = arrays * n * 4
        gbs = moved / ours[name] / 1e9
        t_gbs = moved / peer[name] / 1e9 if name in peer else float("nan")
        print(f"{name:>6} {gbs:>12.1f} {t_gbs:>11.1f} {gbs / t_gbs:>6.2f}")
    for p in (a, b, c):
        sycl.free(p, q)


if __name__ == "__main__":
    main()
