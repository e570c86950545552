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


def buffer_chain(q: sycl.queue, n: int) -> tuple[Callable[[], None], Callable[[], None]]:
    buf = sycl.buffer(np.zeros(n, np.float32))
    buf.set_write_back(False)

    def run() -> None:
        for _ in range(KERNELS):
            def cgf(h: sycl.handler) -> None:
                x = sycl.accessor(buf, h, sycl.read_write)

                def step(i):
                    x[i] = x[i] * 0.5 + 1.0
                h.parallel_for(sycl.range(n), step)
            q.submit(cgf)
        q.wait()
    return run, buf.release


def buffer_independent(q: sycl.queue, n: int) -> tuple[Callable[[], None], Callable[[], None]]:
    bufs = [sycl.buffer(np.zeros(n, np.float32)) for _ in range(KERNELS)]
    for b in bufs:
        b.set_write_back(False)

    def run() -> None:
        for buf in bufs:
            def cgf(h: sycl.handler, buf: sycl.buffer = buf) -> None:
                x = sycl.accessor(buf, h, sycl.read_write)

                def step(i):
                    x[i] = x[i] * 0.5 + 1.0
                h.parallel_for(sycl.range(n), step)
            q.submit(cgf)
        q.wait()

    def release() -> None:
        for b in bufs:
            b.release()
    return run, release


def usm_chain(q: sycl.queue, n: int) -> tuple[Callable[[], None], Callable[[], None]]:
    x = sycl.malloc_device(n, sycl.float32, q)
    q.fill(x, np.float32(0), n).wait()

    def run() -> None:
        e = None
        for _ in range(KERNELS):
            def cgf(h: sycl.handler, e: sycl.event | None = e) -> None:
                if e is not None:
                    h.depends_on(e)

                def step(i):
                    x[i] = x[i] * 0.5 + 1.0
                h.parallel_for(sycl.range(n), step)
            e = q.submit(cgf)
        q.wait()
    return run, lambda: sycl.free(x, q)


def usm_chain_shortcut(q: sycl.queue, n: int
                       ) -> tuple[Callable[[], None], Callable[[], None]]:
    x = sycl.malloc_device(n, sycl.float32, q)
    q.fill(x, np.float32(0), n).wait()

    def step(i):
        x[i] = x[i] * 0.5 + 1.0

    def run() -> None:
        e = q.parallel_for(sycl.range(n), step)
        for _ in range(KERNELS - 1):
            e = q.parallel_for(sycl.range(n), e, step)
        q.wait()
    return run, lambda: sycl.free(x, q)


def usm_arrays(q: sycl.queue, n: int) -> list[sycl.ptr]:
    arrays = [sycl.malloc_device(n, sycl.float32, q) for _ in range(KERNELS)]
    for x in arrays:
        q.fill(x, np.float32(0), n)
    q.wait()
    return arrays


def usm_independent(q: sycl.queue, n: int) -> tuple[Callable[[], None], Callable[[], None]]:
    arrays = usm_arrays(q, n)

    def run() -> None:
        for x in arrays:
            def cgf(h: sycl.handler, x: sycl.ptr = x) -> None:
                def step(i):
                    x[i] = x[i] * 0.5 + 1.0
                h.parallel_for(sycl.range(n), step)
            q.submit(cgf)
        q.wait()
    return run, lambda: [sycl.free(x, q) for x in arrays]


def usm_independent_shortcut(q: sycl.queue, n: int
                             ) -> tuple[Callable[[], None], Callable[[], None]]:
    arrays = usm_arrays(q, n)

    def kernel_over(x: sycl.ptr) -> Callable:
        def step(i):
            x[i] = x[i] * 0.5 + 1.0
        return step
    steps = [kernel_over(x) for x in arrays]

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
