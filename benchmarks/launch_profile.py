"""Where the microseconds of an eager launch go: the tiny kernel of `eager_launch.py`
(`x[i] += 1` over 64 items) taken apart stage by stage on the current device. Each stage
is timed alone, in a loop, as the median of rounds:

- python: `q.parallel_for(range, body)` with Kompute's submission replaced by a no-op
  (the queue, handler, launch glue, scheduler, event and the engine's own Python);
- build_launch: the launch glue alone (for this repeated launch, the identity checks that
  find the last launch's command);
- submit alone: `Engine.submit` of the kernel's dispatch, one submission each (record
  skipped for a repeated launch, `vkQueueSubmit`), waited for once per round;
- join a batch: `Engine.submit` while a batch is open (recording into it);
- record: Kompute's `Sequence.record` of the dispatch alone, into an open sequence;
- vkQueueSubmit: Kompute's `eval_async` of a pre-recorded sequence, its completion polled
  at once; and the same 5, 10 and 20 µs after the last completion (a driver whose
  submission thread sleeps when idle, like lavapipe's, must wake it);
- completion query: `Sequence.fence_signaled()` of a running submission (the timeline
  semaphore's counter, or the fence's status);
- wait: from a submission to its fence seen signalled, polling as the engine does;
- device time per dispatch: a pre-recorded batch of 100 dispatches (each behind its
  barrier, as in a batch of eager launches), submitted and polled to completion.

    python3 benchmarks/launch_profile.py [--n 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from timing import engine_stubbed

import vksycl as sycl
from vksycl.kernels.launch import build_launch

N = 64


def per_call(fn: Callable[[], object], n: int, after: Callable[[], object] | None = None
             ) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    if after is not None:
        after()
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    q = sycl.queue()
    x = sycl.malloc_device(N, sycl.float32, q)
    q.fill(x, np.float32(0), N).wait()
    rng = sycl.range(N)

    def body(i):
        x[i] = x[i] + 1.0

    dev, ctx = q.get_device(), q.get_context()
    engine = q._scheduler.engine
    command = build_launch(dev, body, rng, None, context=ctx)
    dispatch = command.dispatch(engine)
    for _ in range(100):
        q.parallel_for(rng, body)
    q.wait()

    def python_path() -> float:
        with engine_stubbed(engine):
            return per_call(lambda: q.parallel_for(rng, body), args.n)

    def submit_alone() -> float:
        window, engine.batch_window_s = engine.batch_window_s, 0.0
        try:
            return per_call(lambda: engine.submit((dispatch,)), args.n, engine.synchronize)
        finally:
            engine.batch_window_s = window

    def long_submission():
        """400 dispatches submitted at once: the device is busy for a while."""
        window, engine.batch_window_s = engine.batch_window_s, 0.0
        try:
            return engine.submit((dispatch,) * 400)
        finally:
            engine.batch_window_s = window

    def join_batch() -> float:
        long_submission()
        subs = []
        engine.batch_window_s, window = 1.0, engine.batch_window_s  # keep it open
        try:
            t0 = time.perf_counter()
            for _ in range(args.n):
                subs.append(engine.submit((dispatch,)))
            t = (time.perf_counter() - t0) / args.n
        finally:
            engine.batch_window_s = window
        engine.synchronize()
        return t

    seq = engine.spare_sequence()
    seq.record(dispatch.op)

    def record_alone() -> float:
        rec = engine.spare_sequence()
        total = 0.0
        for _ in range(args.n // 500 or 1):
            t0 = time.perf_counter()
            for _ in range(500):
                rec.record(dispatch.op)
            total += time.perf_counter() - t0
            rec.clear()
        engine.recycle(rec, False)
        return total / ((args.n // 500 or 1) * 500)

    def queue_submit(idle_s: float = 0.0) -> float:
        total = 0.0
        for _ in range(args.n // 10):
            until = time.perf_counter() + idle_s
            while time.perf_counter() < until:
                pass
            t0 = time.perf_counter()
            seq.eval_async()
            total += time.perf_counter() - t0
            while not seq.finish_if_signaled():
                pass
        return total / (args.n // 10)

    def fence_query() -> float:
        busy = long_submission()
        seq = busy._sequence
        t0 = time.perf_counter()
        for _ in range(200):
            seq.fence_signaled()
        t = (time.perf_counter() - t0) / 200
        busy.wait()
        return t

    chain = engine.spare_sequence()
    for _ in range(100):
        chain.record(dispatch.op)

    def device_per_dispatch() -> float:
        """What a batch costs the device per dispatch: the floor of asynchronous launches
        once the host submits faster than the device runs them."""
        total = 0.0
        for _ in range(args.n // 300 or 1):
            t0 = time.perf_counter()
            chain.eval_async()
            while not chain.finish_if_signaled():
                pass
            total += time.perf_counter() - t0
        return total / ((args.n // 300 or 1) * 100)

    def wait_latency() -> float:
        window, engine.batch_window_s = engine.batch_window_s, 0.0
        total = 0.0
        try:
            for _ in range(args.n // 10):
                sub = engine.submit((dispatch,))
                t0 = time.perf_counter()
                sub.wait()
                total += time.perf_counter() - t0
        finally:
            engine.batch_window_s = window
        return total / (args.n // 10)

    stages = {
        "python (queue to Vulkan)": python_path,
        "build_launch (glue alone)": lambda: per_call(
            lambda: build_launch(dev, body, rng, None, context=ctx), args.n),
        "engine submit, one submission each": submit_alone,
        "engine submit, joining an open batch": join_batch,
        "record one dispatch (kp Sequence.record)": record_alone,
        "vkQueueSubmit (kp eval_async)": queue_submit,
        "vkQueueSubmit, 5 us after the last completion": lambda: queue_submit(5e-6),
        "vkQueueSubmit, 10 us after the last completion": lambda: queue_submit(10e-6),
        "vkQueueSubmit, 20 us after the last completion": lambda: queue_submit(20e-6),
        "completion query": fence_query,
        "wait: submit to fence seen signalled": wait_latency,
        "device time per dispatch, in a batch of 100": device_per_dispatch,
    }
    results: dict[str, list[float]] = {k: [] for k in stages}
    for _ in range(args.rounds):
        for name, fn in stages.items():
            results[name].append(fn())
    print(f"device: {dev.get_info(sycl.info.device.name)}; median of {args.rounds} rounds")
    print("| stage | µs |")
    print("|---|---:|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values) * 1e6:.2f} |")


if __name__ == "__main__":
    main()
