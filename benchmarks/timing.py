"""Timing helpers the benchmark scripts share (they run with this folder on sys.path)."""

from __future__ import annotations

import contextlib
import os
import statistics
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from vksycl.runtime import engine as engine_module


def seconds(fn: Callable[[], object], repeat: int) -> list[float]:
    """The time of each of `repeat` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` calls, after one warm-up call."""
    return min(seconds(fn, repeat))


WARM_UP = 20  # calls `median_us` makes before it times any


def median_us(fn: Callable[[], object], n: int) -> float:
    """The median of n calls in microseconds, after `WARM_UP` warm-up calls."""
    for _ in range(WARM_UP):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


@contextlib.contextmanager
def sequence_methods(**methods: Callable[..., Any]) -> Iterator[None]:
    """Kompute's sequence methods named by `methods` replaced by them for the block."""
    sequence = engine_module.kp.Sequence
    real = {name: getattr(sequence, name) for name in methods}
    for name, method in methods.items():
        setattr(sequence, name, method)
    try:
        yield
    finally:
        for name, method in real.items():
            setattr(sequence, name, method)


@contextlib.contextmanager
def engine_stubbed(engine: Any) -> Iterator[None]:
    """Kompute's submissions stubbed for the block: what remains of a launch is the
    host's Python, the engine's included, down to the hand-off to Vulkan. The engine
    submits each command at once, as to an idle device, and finds each submission done
    when it asks."""
    window, engine.batch_window_s = engine.batch_window_s, 0.0
    try:
        with sequence_methods(eval_async=lambda self: self,
                              finish_if_signaled=lambda self: True,
                              is_running=lambda self: False):
            yield
    finally:
        engine.batch_window_s = window


@contextlib.contextmanager
def cpus_awake(on: bool) -> Iterator[None]:
    """With `on`, a Linux PM QoS request of zero wake-up latency held for the block
    (`/dev/cpu_dma_latency`, root only): idle CPUs poll rather than halt, so that waking a
    driver thread costs nothing. A diagnostic of the machine, never how a measure is
    taken: on a virtual machine whose halted vCPUs wake slowly, it shows what the
    measure is without that cost."""
    if not on:
        yield
        return
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    except OSError as err:
        raise SystemExit(f"--awake needs /dev/cpu_dma_latency (Linux, root): {err}") from None
    try:
        os.write(fd, struct.pack("<i", 0))
        yield
    finally:
        os.close(fd)
