"""device_global against the plain alternatives, in device time (profiling events):

- (a) a kernel whose loop reads a device_global scalar every iteration, against the same
  kernel reading a kernel argument (`y[i] = y[i] * 0.999 + s` repeated `--iters` times);
  the target is a ratio within 5%;
- (b) a host copy into a device_global array, against a `memcpy` of the same bytes into
  device USM (from device USM: both are one copy kernel); the target is a ratio <= 1.

    python3 benchmarks/device_global.py [--small] [--n 4194304] [--iters 64] [--repeat 10]
"""

from __future__ import annotations

import argparse

import numpy as np

import vksycl as sycl
from vksycl import info
from vksycl.ext.oneapi import experimental as syclexp

SMALL = {"n": 1 << 14, "iters": 16, "copy_kib": 64}
FULL = {"n": 1 << 22, "iters": 64, "copy_kib": 64 << 10}

step = syclexp.device_global(sycl.float32)
COPY_BYTES = FULL["copy_kib"] << 10
landing = syclexp.device_global(sycl.uint8, shape=(COPY_BYTES,))


def device_us(first, second, repeat: int) -> tuple[float, float]:
    """The best device times of two submissions run in turns `repeat` times (after a
    warm-up each), in microseconds: taking turns keeps clock and load drift out of the
    ratio."""
    best = [float("inf"), float("inf")]
    first().wait()
    second().wait()
    for _ in range(repeat):
        for k, submit in enumerate((first, second)):
            e = submit()
            e.wait()
            best[k] = min(best[k], e.get_profiling_info(info.event_profiling.command_end)
                          - e.get_profiling_info(info.event_profiling.command_start))
    return best[0] / 1e3, best[1] / 1e3


def read_loop(q: sycl.queue, n: int, iters: int, repeat: int) -> tuple[float, float, bool]:
    """(device_global us, argument us, same results)."""
    y = sycl.malloc_device(n, sycl.float32, q)
    s = np.float32(0.25)
    q.copy(np.array([s], np.float32), step).wait()

    def with_global(i):
        v = y[i]
        for _ in range(iters):
            v = v * 0.999 + step.get()
        y[i] = v

    def with_argument(i):
        v = y[i]
        for _ in range(iters):
            v = v * 0.999 + s
        y[i] = v

    rng = sycl.range(n)
    results = []
    for kernel in (with_global, with_argument):
        q.fill(y, np.float32(1.0), n).wait()
        q.parallel_for(rng, kernel).wait()
        out = np.zeros(n, np.float32)
        q.memcpy(out, y, n * 4).wait()
        results.append(out)
    g_us, a_us = device_us(lambda: q.parallel_for(rng, with_global),
                           lambda: q.parallel_for(rng, with_argument), repeat)
    sycl.free(y, q)
    return g_us, a_us, bool(np.array_equal(results[0], results[1]))


def copies(q: sycl.queue, nbytes: int, repeat: int) -> tuple[float, float, bool]:
    """(copy to a device_global us, memcpy us, bytes arrived)."""
    src = sycl.malloc_device(nbytes, sycl.uint8, q)
    dst = sycl.malloc_device(nbytes, sycl.uint8, q)
    pattern = (np.arange(nbytes) % 251).astype(np.uint8)
    q.memcpy(src, pattern, nbytes).wait()
    to_global, plain = device_us(lambda: q.copy(src, landing, nbytes),
                                 lambda: q.memcpy(dst, src, nbytes), repeat)
    back = np.zeros(nbytes, np.uint8)
    q.copy(landing, back, nbytes).wait()
    sycl.free(src, q)
    sycl.free(dst, q)
    return to_global, plain, bool(np.array_equal(back, pattern))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="sizes for a CPU device (lavapipe)")
    ap.add_argument("--n", type=int, help="work-items of the read loop")
    ap.add_argument("--iters", type=int, help="device_global reads per work-item")
    ap.add_argument("--copy-kib", type=int, help=f"KiB copied (at most {COPY_BYTES >> 10})")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    sizes = SMALL if args.small else FULL
    n = args.n or sizes["n"]
    iters = args.iters or sizes["iters"]
    nbytes = min(args.copy_kib or sizes["copy_kib"], COPY_BYTES >> 10) << 10
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    print(f"device: {q.get_device().get_info(info.device.name)}")

    g_us, a_us, same = read_loop(q, n, iters, args.repeat)
    print(f"(a) {n} work-items x {iters} reads: device_global {g_us:.1f} us, kernel argument "
          f"{a_us:.1f} us; ratio {g_us / a_us:.3f} (target <= 1.05; results "
          f"{'equal' if same else 'DIFFER'})")

    c_us, m_us, ok = copies(q, nbytes, args.repeat)
    print(f"(b) {nbytes >> 10} KiB: copy to a device_global {c_us:.1f} us, memcpy "
          f"{m_us:.1f} us; ratio {c_us / m_us:.3f} (target <= 1.0; bytes "
          f"{'checked' if ok else 'WRONG'})")


if __name__ == "__main__":
    main()
