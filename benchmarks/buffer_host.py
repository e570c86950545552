"""Host time per command group of `buffers.py`'s command groups, buffers against USM with
`depends_on`: what the accessor, its launch checks and the implicit dependencies cost in
Python, the device left out.

The engine's submission is replaced by a no-op (as `launch_profile.py` measures a
launch's Python), so each command group costs its Python alone: the queue, the handler,
the accessor or `depends_on`, the launch glue, the dependency tracking, the scheduler and
the event. With `--engine` the real engine submits, and only the submissions are timed
(each run of 10 is waited for untimed). The shapes run in alternating rounds as in
`buffers.py` (a chain of 10 kernels on one array, 10 kernels on 10 arrays; the same
kernel code in both shapes of a form), and each figure is the fastest round.

    python3 benchmarks/buffer_host.py [--rounds 20] [--reps 300] [--engine]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable

from buffers import KERNELS, buffer_step, buffers, usm_arrays, usm_step
from timing import engine_stubbed

import vksycl as sycl

N = 4096


def forms(q: sycl.queue) -> dict[str, Callable[[], None]]:
    """One run of each form and shape: 10 command groups, not waited for."""
    [chain_buf] = buffers(1, N)
    bufs = buffers(KERNELS, N)
    [chain_x] = usm_arrays(q, 1, N)
    arrays = usm_arrays(q, KERNELS, N)

    def buffer_chain() -> None:
        for _ in range(KERNELS):
            q.submit(buffer_step(chain_buf, N))

    def usm_chain() -> None:
        e = None
        for _ in range(KERNELS):
            e = q.submit(usm_step(chain_x, N, e))

    def buffer_independent() -> None:
        for b in bufs:
            q.submit(buffer_step(b, N))

    def usm_independent() -> None:
        for x in arrays:
            q.submit(usm_step(x, N))

    return {"chain, buffers": buffer_chain, "chain, USM depends_on": usm_chain,
            "independent, buffers": buffer_independent,
            "independent, USM depends_on": usm_independent}


def per_command_group(q: sycl.queue, run: Callable[[], None], reps: int) -> float:
    """µs per command group of `reps` runs, their waits untimed."""
    total = 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        total += time.perf_counter() - t0
        q.wait()
    return total / (reps * KERNELS) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--engine", action="store_true", help="submit to the device")
    args = ap.parse_args()
    q = sycl.queue()
    runs = forms(q)
    for run in runs.values():  # compile, upload the buffers' data, warm up
        for _ in range(3):
            run()
            q.wait()
    times: dict[str, list[float]] = {key: [] for key in runs}
    with contextlib.nullcontext() if args.engine else engine_stubbed(q._scheduler.engine):
        for _ in range(args.rounds):
            for key, run in runs.items():
                times[key].append(per_command_group(q, run, args.reps))
    where = "engine submitting" if args.engine else "engine stubbed"
    print(f"µs per command group ({where}; fastest of {args.rounds} rounds of "
          f"{args.reps} runs of {KERNELS})")
    best = {key: min(t) for key, t in times.items()}
    for shape in ("chain", "independent"):
        mine, peer = best[f"{shape}, buffers"], best[f"{shape}, USM depends_on"]
        print(f"  {shape:12s} buffers {mine:6.2f}   USM depends_on {peer:6.2f}   "
              f"buffers {mine / peer:.2f}x")


if __name__ == "__main__":
    main()
