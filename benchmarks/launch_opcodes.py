"""Interpreter opcodes per launch, spelling by spelling: the host's Python cost of a
launch counted rather than timed, so that it reads the same on any machine and a change
of a few percent shows (wall-clock figures move by more between hosts, and between runs
on this 2-core VM). The engine's submission is stubbed, as in `launch_profile.py`: what
is counted is the queue, handler, launch glue, scheduler and event, and the benchmark's
own lines (a new range or closure each launch, as users write them); a second column
counts those of vksycl's own files alone. With `--wait` the
engine is real and each launch is waited for: what the engine's submission and the wait
add, the wait's polling included (how long it polls is the device's). Launches not waited
for are not counted through the real engine: tracing slows them so much that the engine
never sees a burst, and it submits each at once rather than in a batch.

Spellings: every one of `eager_launch.py`, and `buffers.py`'s command groups (one of a
chain over a buffer, and over USM with `depends_on`). For each: opcodes per launch, and
with `--top N` the N functions that run the most of them. As in `eager_launch.py` the
spellings run in one process and several launch one kernel over arrays of their own, so
its plan carries what the earlier ones did (an argument ring, once pointers kept
changing): a spelling run alone (`--spellings`) can count fewer.

Each spelling's line also says how many of its counted launches went past the checks of
a repeat, by way (`plans.WAYS`: plans made, repacks tried, kept launches or commands kept
by accessors looked among); a streak or a repeat goes past none.

With `--time ROUNDS` the launches are timed instead of counted: the launch path's
modules compiled by mypyc (`vksycl/mypyc_modules.py`) run no opcodes to count. With
`--batching` too, every launch of a round joins one open batch, as on a GPU the host
cannot outpace, so what a burst leaves alive until its wait (and the collector scans)
counts as well.

    python3 benchmarks/launch_opcodes.py [--launches 50] [--top 0] [--spellings ...] [--wait]
                                         [--time ROUNDS [--batching]]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from buffers import buffer_step, buffers, usm_arrays, usm_step
from eager_launch import SPELLINGS, vksycl_case
from timing import engine_stubbed

import vksycl as sycl
from vksycl import mypyc_modules
from vksycl.kernels import plans

BUFFER_CHAIN, USM_CHAIN = "buffer command group (chain)", "USM command group, depends_on"


def command_groups(q: sycl.queue) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """`buffers.py`'s two chain forms, one command group a launch."""
    n = 4096
    [buf] = buffers(1, n)
    [x] = usm_arrays(q, 1, n)
    last: list[sycl.event | None] = [None]

    def usm() -> None:
        last[0] = q.submit(usm_step(x, n, last[0]))
    return {BUFFER_CHAIN: (lambda: q.submit(buffer_step(buf, n)), q.wait),
            USM_CHAIN: (usm, q.wait)}


# where vksycl's own code lies: opcodes there are the library's, the rest the spelling's
PACKAGE = os.path.dirname(sycl.__file__) + os.sep


def count(launch: Callable[[], Any], launches: int) -> collections.Counter:
    """Opcodes run by `launches` calls of `launch`, by (file, function, whether the file
    is vksycl's)."""
    counts: collections.Counter = collections.Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        if event == "opcode":
            code = frame.f_code
            path = code.co_filename
            file = path.rsplit("/", 1)[-1]
            if file != "timing.py":  # the stubbed engine is not the launch's
                counts[(file, code.co_name, path.startswith(PACKAGE))] += 1
        return trace
    # Python 3.12 reports no opcodes in the first tracing session of a process: one
    # launch traced alone first
    sys.settrace(trace)
    launch()
    sys.settrace(None)
    counts.clear()
    sys.settrace(trace)
    try:
        for _ in range(launches):
            launch()
    finally:
        sys.settrace(None)
    return counts


def timed_us(cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], launches: int,
             rounds: int) -> dict[str, float]:
    """µs per launch of each case: the median over `rounds` of `launches` launches, the
    cases taking turns within each round (a slow spell of the host falls on all)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (launch, wait) in cases.items():
            t0 = time.perf_counter()
            for _ in range(launches):
                launch()
            times[name].append((time.perf_counter() - t0) / launches)
            wait()
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--top", type=int, default=0, help="functions to list per spelling")
    ap.add_argument("--spellings", nargs="*", default=[*SPELLINGS, BUFFER_CHAIN, USM_CHAIN])
    ap.add_argument("--wait", action="store_true",
                    help="each launch through the real engine, waited for")
    ap.add_argument("--time", type=int, default=0, metavar="ROUNDS",
                    help="time the launches instead (µs per launch, the median of ROUNDS "
                    "rounds): what compiled modules cost, which have no opcodes to count")
    ap.add_argument("--batching", action="store_true",
                    help="with --time: every launch of a round joins one open batch")
    args = ap.parse_args()
    if args.time and args.wait:
        ap.error("--time times launches with the engine stubbed, not waited for")
    if args.batching and not args.time:
        ap.error("--batching goes with --time")
    q = sycl.queue()
    groups = command_groups(q)
    cases = {s: groups[s] if s in groups else vksycl_case(q, s)[:2] for s in args.spellings}
    for launch, wait in cases.values():  # compile, pipelines, upload the buffer's data
        for _ in range(30):
            launch()
        wait()
    what = "µs per launch" if args.time else "interpreter opcodes per launch"
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; Python "
          f"{sys.version.split()[0]}; {what}"
          f"{', each waited for' if args.wait else ', engine stubbed'}"
          f"{', batching' if args.batching else ''}, {args.launches} "
          f"launches; compiled by mypyc: {len(mypyc_modules.loaded())} of "
          f"{len(mypyc_modules.MODULES)} launch-path modules"
          f"{'' if args.time else '; all, then in vksycl itself'}")
    with contextlib.nullcontext() if args.wait else engine_stubbed(q._scheduler.engine):
        if args.time:
            if args.batching:  # restored with the rest when the stub ends
                q._scheduler.engine.batch_window_s = 10.0
            for name, us in timed_us(cases, args.launches, args.time).items():
                print(f"  {name:52s} {us:7.2f}")
            return
        for name, (launch, wait) in cases.items():
            step = (lambda launch=launch, wait=wait: (launch(), wait())) if args.wait \
                else launch
            for _ in range(20):  # settle what a run of launches settles (rings, streaks)
                step()
            before = plans.WAYS.counts()
            counts = count(step, args.launches)
            wait()
            ways = ", ".join(f"{way} {n - before[way]}" for way, n in plans.WAYS.counts().items()
                             if n != before[way])
            ours = sum(n for (_, _, inside), n in counts.items() if inside)
            print(f"  {name:52s} {sum(counts.values()) / args.launches:7.1f}"
                  f" {ours / args.launches:7.1f}"
                  f"{'  (past the repeat checks: ' + ways + ')' if ways else ''}")
            for (file, fn, _), n in counts.most_common(args.top):
                print(f"      {n / args.launches:7.1f}  {file}:{fn}")

if __name__ == "__main__":
    main()
