"""Buffers and accessors against USM with explicit dependencies, in one run, written as
users write each:

- buffers: every command group is `q.submit(cgf)` making its accessors and defining its
  kernel, with no `depends_on`: the runtime orders them by their accessors;
- USM, the same command groups over a `malloc_device` pointer, the dependencies the events
  the user passes (`h.depends_on(e)`): the buffer form's peer, which the target compares
  against (the dependency tracker's cost);
- USM, the shortest spelling: the kernel defined once, `q.parallel_for(range, e, kernel)`.

Two shapes, each ending in one `q.wait()`, on an out-of-order queue:
- chain: 10 dependent kernels (`x[i] = x[i] * 0.5 + 1`) on one array;
- independent: 10 kernels on 10 arrays, which the device may overlap.

Items per kernel: 4096 (launch-bound: what the dependency tracker costs shows) and 16M
(bandwidth-bound). Cases run in alternating rounds; medians over rounds are reported.

    python3 benchmarks/buffers.py [--rounds 7] [--reps 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import vksycl as sycl

KERNELS = 10


Case = tuple[Callable[[], None], Callable[[], None]]  # (one run, clean-up)


def buffer_step(buf: sycl.buffer, n: int) -> Callable[[sycl.handler], None]:
    """The command group users write over a buffer: its accessor and kernel made in it."""
    def cgf(h: sycl.handler) -> None:
        x = sycl.accessor(buf, h, sycl.read_write)

        def step(i):
            x[i] = x[i] * 0.5 + 1.0
        h.parallel_for(sycl.range(n), step)
    return cgf


def usm_step(x: sycl.ptr, n: int, after: sycl.event | None = None
             ) -> Callable[[sycl.handler], None]:
    """The same command group over a USM pointer, after the event the user passes."""
    def cgf(h: sycl.handler) -> None:
        if after is not None:
            h.depends_on(after)

        def step(i):
            x[i] = x[i] * 0.5 + 1.0
        h.parallel_for(sycl.range(n), step)
    return cgf


def usm_kernel(x: sycl.ptr) -> Callable:
    """The kernel defined once over a USM pointer, for `q.parallel_for`."""
    def step(i):
        x[i] = x[i] * 0.5 + 1.0
    return step


def buffers(count: int, n: int) -> list[sycl.buffer]:
    bufs = [sycl.buffer(np.zeros(n, np.float32)) for _ in range(count)]
    for b in bufs:
        b.set_write_back(False)
    return bufs


def usm_arrays(q: sycl.queue, count: int, n: int) -> list[sycl.ptr]:
    arrays = [sycl.malloc_device(n, sycl.float32, q) for _ in range(count)]
    for x in arrays:
        q.fill(x, np.float32(0), n)
    q.wait()
    return arrays


def buffer_chain(q: sycl.queue, n: int) -> Case:
    [buf] = buffers(1, n)

    def run() -> None:
        for _ in range(KERNELS):
            q.submit(buffer_step(buf, n))
        q.wait()
    return run, buf.release


def buffer_independent(q: sycl.queue, n: int) -> Case:
    bufs = buffers(KERNELS, n)

    def run() -> None:
        for buf in bufs:
            q.submit(buffer_step(buf, n))
        q.wait()
    return run, lambda: [b.release() for b in bufs]


def usm_chain(q: sycl.queue, n: int) -> Case:
    [x] = usm_arrays(q, 1, n)

    def run() -> None:
        e = None
        for _ in range(KERNELS):
            e = q.submit(usm_step(x, n, e))
        q.wait()
    return run, lambda: sycl.free(x, q)


def usm_chain_shortcut(q: sycl.queue, n: int) -> Case:
    [x] = usm_arrays(q, 1, n)
    step = usm_kernel(x)

    def run() -> None:
        e = q.parallel_for(sycl.range(n), step)
        for _ in range(KERNELS - 1):
            e = q.parallel_for(sycl.range(n), e, step)
        q.wait()
    return run, lambda: sycl.free(x, q)


def usm_independent(q: sycl.queue, n: int) -> Case:
    arrays = usm_arrays(q, KERNELS, n)

    def run() -> None:
        for x in arrays:
            q.submit(usm_step(x, n))
        q.wait()
    return run, lambda: [sycl.free(x, q) for x in arrays]


def usm_independent_shortcut(q: sycl.queue, n: int) -> Case:
    arrays = usm_arrays(q, KERNELS, n)
    steps = [usm_kernel(x) for x in arrays]

    def run() -> None:
        for step in steps:
            q.parallel_for(sycl.range(n), step)
        q.wait()
    return run, lambda: [sycl.free(x, q) for x in arrays]


CASES = {
    ("chain", "buffers"): buffer_chain,
    ("chain", "USM, depends_on"): usm_chain,
    ("chain", "USM, parallel_for"): usm_chain_shortcut,
    ("independent", "buffers"): buffer_independent,
    ("independent", "USM, depends_on"): usm_independent,
    ("independent", "USM, parallel_for"): usm_independent_shortcut,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}")
    for n in (4096, 1 << 24):
        made = {key: make(q, n) for key, make in CASES.items()}
        for run, _ in made.values():  # compile and warm up
            for _ in range(3):
                run()
        times: dict[tuple[str, str], list[float]] = {key: [] for key in made}
        for _ in range(args.rounds):
            for key, (run, _) in made.items():
                t0 = time.perf_counter()
                for _ in range(args.reps):
                    run()
                times[key].append((time.perf_counter() - t0) / args.reps * 1e6)
        print(f"\n{n} items per kernel, {KERNELS} kernels, one wait (µs per run of the "
              f"{KERNELS}, median of "
              f"{args.rounds} rounds of {args.reps})")
        median = {key: statistics.median(t) for key, t in times.items()}
        for shape in ("chain", "independent"):
            mine = median[(shape, "buffers")]
            peers = "   ".join(
                f"{form} {median[(shape, form)]:9.1f} (buffers {mine / median[(shape, form)]:.2f}x)"
                for form in ("USM, depends_on", "USM, parallel_for"))
            print(f"  {shape:12s} buffers {mine:9.1f}   {peers}")
        for form in ("buffers", "USM, depends_on", "USM, parallel_for"):
            overlap = median[("independent", form)] / median[("chain", form)]
            print(f"  {form}: independent / chain {overlap:.2f} (below 1: the device "
                  "overlaps independent kernels)")
        for _, free in made.values():
            free()


if __name__ == "__main__":
    main()
