"""Timing helpers the benchmark scripts share (they run with this folder on sys.path)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from vksycl.runtime.submission import Submission


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def median_us(fn: Callable[[], object], n: int) -> float:
    """The median of n calls in microseconds, after 20 warm-up calls."""
    for _ in range(20):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


@contextlib.contextmanager
def engine_stubbed(engine: Any) -> Iterator[None]:
    """The engine's submissions stubbed for the block: what remains of a launch is the
    host's Python, up to the hand-off to Vulkan. A dispatch whose owner follows its
    submissions (an argument ring's slot) is told of its finished one, as the engine
    tells it, so the ring reuses its slots as it does while the device keeps up."""
    done = Submission(engine, None, False)  # a finished one: no sequence to wait for
    real = engine.submit

    def submit(dispatches: Any, timed: bool = False, report: Any = None) -> Submission:
        for d in dispatches:
            if d.part is not None:
                d.part = done
        return done
    engine.submit = submit
    try:
        yield
    finally:
        engine.submit = real
