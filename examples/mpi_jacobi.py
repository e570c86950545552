"""A 2-D heat equation solved by Jacobi iteration across MPI ranks, one device per rank.

The grid's rows are split among the ranks (a 1-D row decomposition): each rank keeps its
rows plus one halo row above and below in USM on its device, runs one kernel per
iteration, and exchanges its edge rows with its neighbours' halos through mpi4py. Host
and shared USM goes to MPI as it is; device USM through `vksycl.ext.vksycl.mpi.staging`.
Rank 0 then runs the whole grid alone and checks the distributed result equals it to
the bit, and is close to numpy's.

    mpiexec -n 4 .venv/bin/python -m mpi4py examples/mpi_jacobi.py [--n 128] [--m 128]
                           [--iters 200] [--memory device|shared] [--no-check] [--json]

(`-m mpi4py` aborts every rank when one raises, where the others would wait for it.)

Each rank takes the device `VKSYCL_DEVICE_SELECTOR=local_rank` gives it (set here unless
the environment says otherwise): on a host with several GPUs, one GPU per rank. Open MPI
needs `--oversubscribe` to start more ranks than cores (MPICH, the `mpi` extra, does not).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

try:  # MPI starts first: a rank that fails later is then an MPI failure, ending the job
    from mpi4py import MPI
except ImportError:
    sys.exit("mpi_jacobi needs mpi4py and an MPI library: pip install -e '.[mpi]'")

import vksycl as sycl
from vksycl.ext.vksycl import mpi as vkmpi

HOT = 1.0  # the top edge of the plate; the other edges stay at 0


def rows_of(rank: int, size: int, n: int) -> tuple[int, int]:
    """The interior rows [first, end) rank `rank` of `size` owns, in 0..n."""
    base, extra = divmod(n, size)
    first = rank * base + min(rank, extra)
    return first, first + base + (rank < extra)


def solve(q: sycl.queue, comm: MPI.Comm, n: int, m: int, iters: int, memory: str
          ) -> tuple[np.ndarray, float, float]:
    """This rank's rows after `iters` iterations over an (n + 2) x m plate (n interior
    rows between the fixed top and bottom edges), and the seconds spent in all and in
    halo exchanges."""
    rank, size = comm.Get_rank(), comm.Get_size()
    first, end = rows_of(rank, size, n)
    rows = end - first
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    start = np.zeros((rows + 2, m), np.float32)  # owned rows and the halos around them
    if rank == 0:
        start[0] = HOT  # the top edge: rank 0's upper halo, never exchanged
    malloc = sycl.malloc_device if memory == "device" else sycl.malloc_shared
    u, v = (malloc(start.size, sycl.float32, q) for _ in range(2))
    for p in (u, v):
        q.memcpy(p, start, start.nbytes)
    q.wait()

    def step_uv(it):
        i, j = it[0] + 1, it[1] + 1
        v[i * m + j] = 0.25 * (((u[(i - 1) * m + j] + u[(i + 1) * m + j]) + u[i * m + j - 1])
                               + u[i * m + j + 1])

    def step_vu(it):
        i, j = it[0] + 1, it[1] + 1
        u[i * m + j] = 0.25 * (((v[(i - 1) * m + j] + v[(i + 1) * m + j]) + v[i * m + j - 1])
                               + v[i * m + j + 1])

    shape = sycl.range(rows, m - 2)
    stage = vkmpi.staging(q)
    exchange = 0.0
    comm.Barrier()
    began = time.perf_counter()
    for k in range(iters):
        new = v if k % 2 == 0 else u
        q.parallel_for(shape, step_uv if k % 2 == 0 else step_vu).wait()
        t = time.perf_counter()
        # my first row to the rank above and my lower halo from the rank below; my last
        # row to the rank below and my upper halo from the rank above
        stage.exchange(comm, [(new + m, up, new + (rows + 1) * m, down, m),
                              (new + rows * m, down, new, up, m)])
        exchange += time.perf_counter() - t
    total = time.perf_counter() - began
    last = v if iters % 2 else u
    out = np.empty((rows + 2, m), np.float32)
    q.memcpy(out, last, out.nbytes).wait()
    stage.free()
    for p in (u, v):
        sycl.free(p, q)
    return out[1:-1], total, exchange


def numpy_jacobi(n: int, m: int, iters: int) -> np.ndarray:
    """The same iteration in numpy, in the kernel's order of additions."""
    g = np.zeros((n + 2, m), np.float32)
    g[0] = HOT
    for _ in range(iters):
        nxt = g.copy()
        nxt[1:-1, 1:-1] = np.float32(0.25) * (((g[:-2, 1:-1] + g[2:, 1:-1]) + g[1:-1, :-2])
                                              + g[1:-1, 2:])
        g = nxt
    return g[1:-1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=128, help="interior rows")
    ap.add_argument("--m", type=int, default=128, help="columns, edges included")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--memory", choices=("device", "shared"), default="device")
    ap.add_argument("--no-check", action="store_true", help="skip the single-rank run")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if args.n < size or args.m < 3:
        sys.exit(f"a grid of {args.n} rows by {args.m} columns is too small for {size} ranks")
    os.environ.setdefault("VKSYCL_DEVICE_SELECTOR", "local_rank")  # one device per rank
    q = sycl.queue()
    mine, total, exchange = solve(q, comm, args.n, args.m, args.iters, args.memory)
    pieces = comm.gather(mine, root=0)
    figures = comm.gather((total, exchange), root=0)
    ok = True
    if rank == 0:
        grid = np.concatenate(pieces)
        if not args.no_check:
            alone, _, _ = solve(q, MPI.COMM_SELF, args.n, args.m, args.iters, args.memory)
            ok = bool(np.array_equal(grid, alone)) and bool(np.allclose(
                grid, numpy_jacobi(args.n, args.m, args.iters), rtol=1e-5, atol=1e-6))
        slowest = max(t for t, _ in figures)
        share = max(e / t for t, e in figures if t > 0)
        result = {"ranks": size, "n": args.n, "m": args.m, "iters": args.iters,
                  "memory": args.memory, "device": q.get_device().get_info(
                      sycl.info.device.name), "seconds_per_iter": slowest / args.iters,
                  "exchange_per_iter": max(e for _, e in figures) / args.iters,
                  "communication_share": share, "checked": not args.no_check, "ok": ok,
                  "mean_temperature": float(grid.mean(dtype=np.float64))}
        if args.json:
            print(json.dumps(result))
        else:
            verdict = ("equals the single-rank run" if ok else "DIFFERS from the single-rank "
                       "run") if not args.no_check else "not checked"
            print(f"{size} ranks, {args.n}x{args.m} plate, {args.iters} iterations on "
                  f"{args.memory} USM: {1e3 * slowest / args.iters:.3f} ms per iteration, "
                  f"{100 * share:.0f}% in halo exchanges; mean temperature "
                  f"{result['mean_temperature']:.6f}; "
                  f"{verdict}")
    ok = comm.bcast(ok, root=0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
