"""Device-side time of copies and STREAM kernels, from Vulkan timestamps (profiling events),
beside the host's submit-to-completion time: separates kernel speed from launch overhead.

    .venv/bin/python benchmarks/device_times.py [--mib 256] [--repeat 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import vksycl as sycl
from vksycl import info


def measure(q, submit, repeat: int) -> tuple[float, float]:
    """(best device time, best host submit-to-completion time), in microseconds."""
    submit().wait()
    device, host = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        e = submit()
        e.wait()
        host.append(time.perf_counter() - t0)
        device.append(e.get_profiling_info(info.event_profiling.command_end)
                      - e.get_profiling_info(info.event_profiling.command_start))
    return min(device) / 1e3, min(host) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    nbytes = args.mib << 20
    n = nbytes // 4
    a = sycl.malloc_device(n, sycl.float32, q)
    b = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(n, sycl.float32, q)
    for p in (a, b, c):
        q.fill(p, np.float32(1.0), n)
    q.wait()
    s = np.float32(3.0)

    def copy(it):
        i = it.get_global_id(0)
        c[i] = a[i]

    def triad(it):
        i = it.get_global_id(0)
        a[i] = b[i] + s * c[i]

    def copy_range(i):
        c[i] = a[i]

    rows = {
        "memcpy d2d": (lambda: q.memcpy(b, a, nbytes), 2),
        "memcpy d2d +4 B": (lambda: q.memcpy(b + 1, a, nbytes - 4), 2),
        "memcpy d2d +1 B": (lambda: q.memcpy(b.astype(sycl.uint8) + 1, a, nbytes - 4), 2),
        "fill": (lambda: q.fill(b, np.float32(2.0), n), 1),
        "memset +3 B": (lambda: q.memset(b.astype(sycl.uint8) + 3, 7, nbytes - 4), 1),
        "copy nd_range 256": (lambda: q.parallel_for(sycl.nd_range((n,), (256,)), copy), 2),
        "copy range": (lambda: q.parallel_for(sycl.range(n), copy_range), 2),
        "triad nd_range 256": (lambda: q.parallel_for(sycl.nd_range((n,), (256,)), triad), 3),
    }
    print(f"device: {q.get_device().get_info(info.device.name)}; {args.mib} MiB arrays")
    print(f"{'operation':>20} {'device us':>10} {'GB/s dev':>9} {'host us':>9} {'GB/s host':>9}")
    for name, (submit, arrays) in rows.items():
        dev_us, host_us = measure(q, submit, args.repeat)
        moved = arrays * nbytes
        print(f"{name:>20} {dev_us:>10.1f} {moved / dev_us / 1e3:>9.1f} {host_us:>9.1f} "
              f"{moved / host_us / 1e3:>9.1f}")
    for p in (a, b, c):
        sycl.free(p, q)


if __name__ == "__main__":
    main()
