"""What Python's cyclic garbage collector costs eager launches, spelling by spelling: each
`eager_launch.py` spelling launched asynchronously in rounds of 1000 (one wait per
round), every collection timed through `gc.callbacks`. A launch allocates objects the
collector tracks (its event, its batch part, a ring launch); those still alive at a young
collection are scanned, and those alive at two are promoted to the oldest generation,
whose full collection scans the whole heap once promotions reach a quarter of it. With
torch imported (`--torch`, as in most users' processes) the heap is large and a full
collection takes tens of milliseconds: the figure per launch is what the launches' own
objects bring on, amortized.

The engine batches as it does on a GPU the host cannot outpace (`--batching`, the
default: every launch in a burst joins the open batch).

    python3 benchmarks/collector.py [--torch] [--launches 60000] [--spellings ...]
"""

from __future__ import annotations

import argparse
import collections
import gc
import time

from eager_launch import SPELLINGS, vksycl_case

import vksycl as sycl


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", action="store_true", help="import torch first (a large heap)")
    ap.add_argument("--launches", type=int, default=60000)
    ap.add_argument("--spellings", nargs="*", default=SPELLINGS, metavar="SPELLING")
    ap.add_argument("--no-batching", dest="batching", action="store_false",
                    help="leave the engine's batch window as it is")
    args = ap.parse_args()
    if args.torch:
        import torch  # noqa: F401
    q = sycl.queue()
    engine = q._scheduler.engine
    if args.batching:
        engine.batch_window_s = 10.0
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; tracked objects "
          f"{len(gc.get_objects())}; {args.launches} launches per spelling")
    print("| spelling | collector µs per launch | young (count, ms each) | middle | full |")
    print("|---|---:|---:|---:|---:|")
    timed: list[tuple[int, int]] = []
    started = [0]

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter_ns()
        else:
            timed.append((info["generation"], time.perf_counter_ns() - started[0]))

    gc.callbacks.append(note)
    for spelling in args.spellings:
        launch, wait, _ = vksycl_case(q, spelling)
        for _ in range(2000):
            launch()
        wait()
        timed.clear()
        for _ in range(args.launches // 1000):
            for _ in range(1000):
                launch()
            wait()
        by = collections.defaultdict(lambda: [0, 0])
        for generation, ns in timed:
            by[generation][0] += 1
            by[generation][1] += ns
        cells = [f"{n}, {ns / max(n, 1) / 1e6:.2f}" for n, ns in (by[g] for g in range(3))]
        total = sum(ns for _, ns in timed) / args.launches / 1000
        print(f"| {spelling} | {total:.3f} | {' | '.join(cells)} |", flush=True)
    gc.callbacks.remove(note)


if __name__ == "__main__":
    main()
