"""Weak and strong scaling of examples/mpi_jacobi.py over MPI ranks, one device per rank.

Strong scaling keeps the plate (`--n` rows by `--m` columns) and splits it over more
ranks; weak scaling gives every rank `--rows` rows, so the plate grows with the ranks.
Each run is the example under mpiexec (`vksycl.ext.vksycl.mpi.run_ranks`), timed
by the example itself: seconds per iteration of the slowest rank, and the share of it in
halo exchanges (the largest among the ranks). Each figure is the median of `--repeat`
runs.

    python benchmarks/scaling.py [--ranks 1,2,4] [--n 512] [--m 512] [--rows 128]
                                 [--iters 200] [--memory device|shared] [--repeat 3]

Each rank takes the device VKSYCL_DEVICE_SELECTOR=local_rank gives it: on one device
(lavapipe) every rank shares it; on a host with several GPUs, run with
VKSYCL_DEVICE_SELECTOR=gpu,local_rank and --ranks up to the GPU count for one GPU each.
`--csv FILE` writes both tables for docs/plots.py (`record.py`); a run with the other
`--memory` and `--append` adds its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from importlib import metadata
from pathlib import Path

import record

from vksycl.ext.vksycl import mpi as vkmpi

ROOT = Path(__file__).resolve().parents[1]
JACOBI = ROOT / "examples" / "mpi_jacobi.py"


def run(ranks: int, n: int, m: int, iters: int, memory: str, mpiexec: str | None) -> dict:
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p),
           "VKSYCL_DEVICE_SELECTOR": os.environ.get("VKSYCL_DEVICE_SELECTOR", "local_rank")}
    proc = vkmpi.run_ranks(ranks, [str(JACOBI), "--json", "--no-check", "--n", str(n),
                                   "--m", str(m), "--iters", str(iters), "--memory", memory],
                           env, timeout=1800, mpiexec=mpiexec)
    if proc.returncode != 0:
        sys.exit(f"{ranks} ranks failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("{")))


def median_run(repeat: int, *args) -> dict:
    runs = [run(*args) for _ in range(repeat)]
    best = dict(runs[0])
    for key in ("seconds_per_iter", "exchange_per_iter", "communication_share"):
        best[key] = statistics.median(r[key] for r in runs)
    return best


def table(title: str, rows: list[tuple[int, int, dict]], weak: bool) -> list[dict]:
    """Prints one table; returns its rows for the data file."""
    base = rows[0][2]["seconds_per_iter"]
    print(f"\n{title}")
    print("| ranks | plate | ms per iteration | halo exchange ms | communication share | "
          f"{'efficiency' if weak else 'speed-up'} |")
    print("|---:|---|---:|---:|---:|---:|")
    for ranks, n, r in rows:
        t = r["seconds_per_iter"]
        scale = base / t
        label = f"{scale:.2f}" if weak else f"{scale:.2f}x ({scale / ranks:.0%} of ideal)"
        print(f"| {ranks} | {n}x{r['m']} | {1e3 * t:.3f} | {1e3 * r['exchange_per_iter']:.3f} "
              f"| {100 * r['communication_share']:.0f}% | {label} |")
    return [{"memory": r["memory"], "scaling": "weak" if weak else "strong", "ranks": ranks,
             "plate": f"{n}x{r['m']}", "ms_per_iteration": 1e3 * r["seconds_per_iter"],
             "exchange_ms": 1e3 * r["exchange_per_iter"]} for ranks, n, r in rows]


def mpi_version() -> dict[str, str]:
    """The MPI wheel's version, where MPI came as one."""
    try:
        return {"MPICH": metadata.version("mpich")}
    except metadata.PackageNotFoundError:
        return {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--n", type=int, default=512, help="rows of the strong-scaling plate")
    ap.add_argument("--m", type=int, default=512, help="columns of every plate")
    ap.add_argument("--rows", type=int, default=128, help="rows per rank, weak scaling")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--memory", choices=("device", "shared"), default="device")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    record.add_arguments(ap)
    args = ap.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    first = run(1, 8, 8, 1, args.memory, args.mpiexec)  # compiles the kernels once
    print(f"device: {first['device']}; {args.memory} USM; {args.iters} iterations; "
          f"median of {args.repeat} runs; {os.cpu_count()} CPU cores")
    strong = [(p, args.n, median_run(args.repeat, p, args.n, args.m, args.iters,
                                     args.memory, args.mpiexec)) for p in ranks]
    rows = table(f"strong scaling: a {args.n}x{args.m} plate", strong, weak=False)
    weak = [(p, p * args.rows, median_run(args.repeat, p, p * args.rows, args.m,
                                          args.iters, args.memory, args.mpiexec))
            for p in ranks]
    rows += table(f"weak scaling: {args.rows}x{args.m} per rank", weak, weak=True)
    record.write(args, "examples/mpi_jacobi.py over MPI ranks: ms per iteration of the "
                 f"slowest rank, medians of {args.repeat} runs of {args.iters} iterations",
                 rows, peers=mpi_version())


if __name__ == "__main__":
    main()
