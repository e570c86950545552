"""Two devices in one process: copies between their USM (staged through the host) against
copies on one device and from host memory, and one kernel's work split over both devices'
queues against all of it on one.

Run on a machine with one device, the script exposes it twice
(`VKSYCL_DEVICE_INSTANCES=2`, unless the environment sets devices already); on a host
with two GPUs, `VKSYCL_DEVICE_SELECTOR=gpu` picks them. Each figure is the best of
`--repeat` runs.

    python benchmarks/multidevice.py [--sizes-mib 0.0625,1,16,64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable

import numpy as np

import vksycl as sycl


def best(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def copy_once(q: sycl.queue, dst: object, src: object, n: int) -> None:
    q.memcpy(dst, src, n).wait()


def copies(q0: sycl.queue, q1: sycl.queue, sizes: list[int], repeat: int) -> None:
    print("| bytes | device 0 -> device 0 | host (numpy) -> device 0 | device 1 -> device 0 "
          "(q0) | device 0 -> device 1 (q0) | shared 0 -> device 1 (q0) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        a0, b0 = (sycl.malloc_device(n, sycl.uint8, q0) for _ in range(2))
        s0 = sycl.malloc_shared(n, sycl.uint8, q0)
        a1 = sycl.malloc_device(n, sycl.uint8, q1)
        host = np.ones(n, np.uint8)
        cells = []
        for dst, src in ((b0, a0), (a0, host), (a0, a1), (a1, a0), (a1, s0)):
            s = best(functools.partial(copy_once, q0, dst, src, n), repeat)
            cells.append(f"{n / s / 1e9:.2f} GB/s ({1e6 * s:.0f} µs)")
        print(f"| {n} | " + " | ".join(cells) + " |")
        for p, q in ((a0, q0), (b0, q0), (s0, q0), (a1, q1)):
            sycl.free(p, q)


def split_kernel(q0: sycl.queue, q1: sycl.queue, n: int, repeat: int) -> None:
    x0 = sycl.malloc_device(n, sycl.float32, q0)
    x1 = sycl.malloc_device(n, sycl.float32, q1)

    def work0(i):
        v = i * 1.0
        for _ in range(200):
            v = v * 0.999 + 1.0
        x0[i] = v

    def work1(i):
        v = i * 1.0
        for _ in range(200):
            v = v * 0.999 + 1.0
        x1[i] = v

    half = sycl.range(n // 2)
    one = best(lambda: q0.parallel_for(sycl.range(n), work0).wait(), repeat)
    both = best(lambda: sycl.event.wait([q0.parallel_for(half, work0),
                                         q1.parallel_for(half, work1)]), repeat)
    print(f"\n{n} work-items of 200 multiply-adds: all on device 0 {1e3 * one:.2f} ms; "
          f"half on each device, launched together then waited {1e3 * both:.2f} ms "
          f"({one / both:.2f}x)")
    sycl.free(x0, q0)
    sycl.free(x1, q1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mib", default="0.0625,1,16,64")
    ap.add_argument("--items", type=int, default=1 << 22)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if "VKSYCL_DEVICE_INSTANCES" not in os.environ and \
            "VKSYCL_DEVICE_SELECTOR" not in os.environ:
        os.environ["VKSYCL_DEVICE_INSTANCES"] = "2"
    devices = sycl.device.get_devices()[:2]
    if len(devices) < 2:
        raise SystemExit(f"two devices needed, found {devices}")
    ctx = sycl.context(devices)
    q0, q1 = (sycl.queue(ctx, d) for d in devices)
    print("devices:", "; ".join(repr(d) for d in devices), f"({os.cpu_count()} CPU cores)")
    copies(q0, q1, [int(float(s) * (1 << 20)) for s in args.sizes_mib.split(",")],
           args.repeat)
    split_kernel(q0, q1, args.items, args.repeat)


if __name__ == "__main__":
    main()
