"""Reductions of N float32 written as a user writes them with `sycl.reduction`, against
torch and cupy on the same GPU, in the same process:

- sum: `q.parallel_for(sycl.range(n), red, body)` with `def body(i, s): s += x[i]`;
- max: `q.parallel_for(sycl.range(n), red, lambda i, s: s.combine(x[i]))`;
- sum again as a `q.submit` command group on an in-order queue;
- sum+max: both reductions in one kernel (one read of x), against torch's and cupy's
  `x.sum()` then `x.max()` (two passes over x).

Every call makes its range and reductions anew, as user code does; each reduction has
`initialize_to_identity`, so every launch computes the whole result.
Time is launch + wait of one call (the result in device memory, not copied back), the
median of `--repeat` calls in each of `--rounds` rounds; the variants alternate within a
round so a change in the machine's load hits all alike, and the median over rounds is
reported. GB/s counts the bytes read (4 N; the pair reads x once in vksycl, twice in the
peers' two calls). For context, a STREAM-like copy: torch `y.copy_(x)` and a vksycl copy
kernel `y[i] = x[i]`, counting read + write. Every result is checked against numpy (sum:
relative 1e-4 of the float64 sum; max: exactly).

    .venv/bin/python benchmarks/reduction.py [--sizes 16M,256M] [--rounds 5] [--repeat 20]
    .venv/bin/python benchmarks/reduction.py --sizes 1M,4M --rounds 2 --repeat 3  # lavapipe

`--csv FILE` writes vksycl's and torch's time per reduction and size for docs/plots.py
(`record.py`; `--append` adds this process's as the next run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import record

import vksycl as sycl

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = UNITS.get(part[-1:], 1)
        sizes.append(int(part[:-1] if scale != 1 else part) * scale)
    return sizes


def init_to_identity() -> list:
    return [sycl.property.reduction.initialize_to_identity()]


class Case:
    """A timed call and the check of what it computed."""

    def __init__(self, name: str, impl: str, run: Callable[[], object], bytes_read: int,
                 check: Callable[[], str] | None = None) -> None:
        self.name, self.impl, self.run = name, impl, run
        self.bytes_read = bytes_read
        self.check = check
        self.medians: list[float] = []


def vksycl_cases(q: sycl.queue, host: np.ndarray) -> tuple[list[Case], Callable[[], None]]:
    n = host.size
    x = sycl.malloc_device(n, sycl.float32, q)
    y = sycl.malloc_device(n, sycl.float32, q)
    q.memcpy(x, host, host.nbytes).wait()
    out = sycl.malloc_device(5, sycl.float32, q)
    ordered = sycl.queue(q.get_context(), q.get_device(),
                         property_list=[sycl.property.queue.in_order()])

    def red(k: int, combiner) -> sycl.reduction:  # a new reduction per call, as users write
        return sycl.reduction(out + k, combiner, property_list=init_to_identity())

    def body_sum(i, s):
        s += x[i]

    def body_pair(i, s, m):
        v = x[i]
        s += v
        m.combine(v)

    def copy(i):
        y[i] = x[i]

    def results() -> np.ndarray:
        got = np.zeros(5, np.float32)
        q.memcpy(got, out, 20).wait()
        return got

    cases = [
        Case("sum", "vksycl", lambda: q.parallel_for(
            sycl.range(n), red(0, sycl.plus()), body_sum).wait(), 4 * n,
            lambda: check_sum(results()[0], host)),
        Case("sum", "vksycl, in-order q.submit", lambda: ordered.submit(
            lambda h: h.parallel_for(sycl.range(n), red(4, sycl.plus()), body_sum)).wait(),
            4 * n, lambda: check_sum(results()[4], host)),
        Case("max", "vksycl", lambda: q.parallel_for(
            sycl.range(n), red(1, sycl.maximum()), lambda i, s: s.combine(x[i])).wait(),
            4 * n, lambda: check_max(results()[1], host)),
        Case("sum+max", "vksycl", lambda: q.parallel_for(
            sycl.range(n), red(2, sycl.plus()), red(3, sycl.maximum()), body_pair).wait(),
            4 * n, lambda: check_sum(results()[2], host) + "; " + check_max(results()[3], host)),
        Case("copy", "vksycl", lambda: q.parallel_for(sycl.range(n), copy).wait(), 8 * n,
             lambda: check_copy(q, y, host)),
    ]

    def free() -> None:
        q.wait()
        for p in (x, y, out):
            sycl.free(p, q)

    return cases, free


def peer_reductions(impl: str, x, sync, host: np.ndarray) -> list[Case]:
    """sum, max and both, as `impl` spells them on its array `x`: `x.sum()`, `x.max()`."""
    n = host.size
    got: dict[str, object] = {}

    def run(name: str, fn):
        def call() -> None:
            got[name] = fn()
            sync()
        return call

    return [
        Case("sum", impl, run("sum", x.sum), 4 * n, lambda: check_sum(float(got["sum"]), host)),
        Case("max", impl, run("max", x.max), 4 * n, lambda: check_max(float(got["max"]), host)),
        Case("sum+max", impl, run("pair", lambda: (x.sum(), x.max())), 8 * n,
             lambda: check_sum(float(got["pair"][0]), host) + "; "
             + check_max(float(got["pair"][1]), host)),
    ]


def torch_cases(host: np.ndarray) -> list[Case]:
    try:
        import torch
    except ImportError:
        print("torch: not importable, skipped")
        return []
    if not torch.cuda.is_available():
        print("torch: no CUDA device, skipped")
        return []
    x = torch.from_numpy(host).cuda()
    y = torch.empty_like(x)

    def run_copy():
        y.copy_(x)
        torch.cuda.synchronize()

    return [*peer_reductions("torch", x, torch.cuda.synchronize, host),
            Case("copy", "torch", run_copy, 8 * host.size,
                 lambda: "ok" if bool((y == x).all()) else "copy differs")]


def cupy_cases(host: np.ndarray) -> list[Case]:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, or no CUDA device
        print("cupy: not importable or no CUDA device, skipped")
        return []
    return peer_reductions("cupy", cupy.asarray(host), cupy.cuda.Device().synchronize, host)


_REFERENCE: dict[int, tuple[float, float]] = {}


def reference(host: np.ndarray) -> tuple[float, float]:
    key = id(host)
    if key not in _REFERENCE:
        _REFERENCE[key] = (float(host.sum(dtype=np.float64)), float(host.max()))
    return _REFERENCE[key]


def check_sum(value: float, host: np.ndarray) -> str:
    want = reference(host)[0]
    rel = abs(float(value) - want) / abs(want)
    assert rel <= 1e-4, f"sum {value} differs from numpy's {want} by {rel:.2e}"
    return f"sum rel. err. {rel:.1e}"


def check_max(value: float, host: np.ndarray) -> str:
    want = reference(host)[1]
    assert float(value) == want, f"max {value} differs from numpy's {want}"
    return "max exact"


def check_copy(q: sycl.queue, y, host: np.ndarray) -> str:
    tail = np.zeros(min(host.size, 1 << 16), np.float32)
    q.memcpy(tail, y + (host.size - tail.size), tail.nbytes).wait()
    assert np.array_equal(tail, host[-tail.size:]), "the copy differs"
    return "ok"


def one_round(cases: list[Case], repeat: int) -> None:
    for case in cases:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            case.run()
            times.append(time.perf_counter() - t0)
        case.medians.append(statistics.median(times))


def report(n: int, label: str, cases: list[Case]) -> list[dict[str, object]]:
    """Prints the table of one size; returns its rows for the data file (µs)."""
    med = {(c.name, c.impl): statistics.median(c.medians) for c in cases}
    print(f"\n### N = {n:,} float32 ({4 * n / 2**20:.0f} MiB)\n")
    print("| reduction | impl | time µs | GB/s | time vs torch | check |")
    print("|---|---|---:|---:|---:|---|")
    for c in cases:
        if c.name == "copy":
            continue
        t = med[(c.name, c.impl)]
        vs = f"{t / med[(c.name, 'torch')]:.2f}x" if (c.name, "torch") in med else "—"
        print(f"| {c.name} | {c.impl} | {t * 1e6:.1f} | {c.bytes_read / t / 1e9:.1f} | "
              f"{vs} | {c.check() if c.check else ''} |")
    refs = [f"{c.impl} {c.bytes_read / med[(c.name, c.impl)] / 1e9:.1f} GB/s"
            for c in cases if c.name == "copy"]
    print(f"\nSTREAM-like copy (read + write): {', '.join(refs)}; "
          + "; ".join(f"{c.impl}: {c.check()}" for c in cases if c.name == "copy"))
    names = dict.fromkeys(c.name for c in cases if c.name != "copy")
    return [{"n": label, "reduction": name, "run": None,
             "vksycl_us": med[(name, "vksycl")] * 1e6,
             "torch_us": med[(name, "torch")] * 1e6 if (name, "torch") in med else None}
            for name in names]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16M,256M",
                    help="element counts, comma-separated, with K/M/G (powers of 2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20, help="timed calls of each per round")
    ap.add_argument("--warmup", type=int, default=3)
    record.add_arguments(ap)
    args = ap.parse_args()
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}")
    print(f"launch + wait of one call, median of {args.repeat} calls per round, median of "
          f"{args.rounds} rounds")
    rng = np.random.default_rng(0)
    rows = []
    for label, n in zip(args.sizes.split(","), parse_sizes(args.sizes), strict=True):
        host = rng.random(n, dtype=np.float32)
        ours, free = vksycl_cases(q, host)
        cases = ours + torch_cases(host) + cupy_cases(host)
        for case in cases:  # warm-up: compile, pipelines, pools, peers' caches
            for _ in range(args.warmup):
                case.run()
        for _ in range(args.rounds):
            one_round(cases, args.repeat)
        rows += report(n, label.strip(), cases)
        del cases
        free()
        _REFERENCE.clear()
    torch = sys.modules.get("torch")
    record.write(args, "Reductions over float32 with a new range and reduction every call, µs; "
                 "torch x.sum() / x.max() in the same process", rows, q.get_device(),
                 {"torch": torch.__version__} if torch else None)


if __name__ == "__main__":
    main()
