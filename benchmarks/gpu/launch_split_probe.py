"""Where a waited-for launch of each `eager_launch.py` spelling spends its time: the
launch call itself (the Python front end, the engine, `vkQueueSubmit`) against the wait
that follows it (the device's round trip), beside torch's `x.add_(1)` and its
synchronize where torch has a GPU, as medians of 300 launches per round, three
rounds per spelling after 300 untimed ones; every spelling's result is checked. A
spelling slower than another only in the launch column costs host time, one slower in
the wait costs device time.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/launch_split_probe.py [SPELLING...]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eager_launch

import vksycl as sycl

LAUNCHES = 300


def split(name: str, launch: Callable[[], object], wait: Callable[[], None]) -> None:
    """Prints three rounds of the launch call and the wait, after an untimed one."""
    for _ in range(LAUNCHES):
        launch()
        wait()
    for _ in range(3):
        calls, waits = [], []
        for _ in range(LAUNCHES):
            t0 = time.perf_counter()
            launch()
            t1 = time.perf_counter()
            wait()
            calls.append(t1 - t0)
            waits.append(time.perf_counter() - t1)
        c, w = statistics.median(calls) * 1e6, statistics.median(waits) * 1e6
        print(f"{name:50s} {c:10.1f} {w:8.1f} {c + w:9.1f}", flush=True)


def main(spellings: list[str]) -> None:
    q = sycl.queue()
    print(f"{'spelling':50s} {'launch µs':>10s} {'wait µs':>8s} {'total µs':>9s}")
    for spelling in spellings or eager_launch.SPELLINGS:
        launch, wait, check = eager_launch.vksycl_case(q, spelling)
        split(spelling, launch, wait)
        check(4 * LAUNCHES)
    torch = eager_launch.torch_case()
    if torch is not None:
        split("torch", *torch[:2])


if __name__ == "__main__":
    main(sys.argv[1:])
