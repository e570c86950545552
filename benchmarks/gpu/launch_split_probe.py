"""Where a waited-for launch of each `eager_launch.py` spelling spends its time: the
launch call itself (the Python front end, the engine, `vkQueueSubmit`) against the wait
that follows it (the device's round trip), beside torch's `x.add_(1)` and its
synchronize where torch has a GPU, as medians of 300 launches per round, three
rounds per spelling after 300 untimed ones; every spelling's result is checked. A
spelling slower than another only in the launch column costs host time, one slower in
the wait costs device time.

`--async` splits asynchronous launches the same way: 1000 launches issued with no wait
between them (the host's time per launch), then the one wait for all of them (the work
the device still had queued once the host was done). Where the wait is a few µs the
host set the pace of the `async` column of `eager_launch.py`; where it is long the
device did, and host work saved there gains nothing.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/launch_split_probe.py [--async] [SPELLING...]
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
ASYNC_LAUNCHES = 1000


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


def split_async(name: str, launch: Callable[[], object], wait: Callable[[], None]) -> None:
    """Prints three rounds of issuing `ASYNC_LAUNCHES` launches (µs per launch) and of the
    wait after them (µs), after an untimed one."""
    for r in range(4):
        t0 = time.perf_counter()
        for _ in range(ASYNC_LAUNCHES):
            launch()
        t1 = time.perf_counter()
        wait()
        t2 = time.perf_counter()
        if r:
            issued = (t1 - t0) / ASYNC_LAUNCHES * 1e6
            print(f"{name:50s} {issued:10.2f} {(t2 - t1) * 1e6:8.1f} "
                  f"{(t2 - t0) / ASYNC_LAUNCHES * 1e6:9.2f}", flush=True)


def main(args: list[str]) -> None:
    asynchronous = "--async" in args
    spellings = [a for a in args if a != "--async"]
    q = sycl.queue()
    if asynchronous:
        print(f"{'spelling':50s} {'issue µs':>10s} {'wait µs':>8s} {'per launch':>9s}")
    else:
        print(f"{'spelling':50s} {'launch µs':>10s} {'wait µs':>8s} {'total µs':>9s}")
    run, launches = (split_async, ASYNC_LAUNCHES) if asynchronous else (split, LAUNCHES)
    for spelling in spellings or eager_launch.SPELLINGS:
        launch, wait, check = eager_launch.vksycl_case(q, spelling)
        run(spelling, launch, wait)
        check(4 * launches)
    torch = eager_launch.torch_case()
    if torch is not None:
        run("torch", *torch[:2])


if __name__ == "__main__":
    main(sys.argv[1:])
