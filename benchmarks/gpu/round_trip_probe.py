"""What a tiny eager launch waits for, taken apart through the engine directly:

- fence: from `vkQueueSubmit` returning to the fence seen signalled;
- marker: the same kernel followed by a dispatch that bumps a word of host memory, from
  the submission to the host seeing the word change, and from then to the fence;
- submit: `Engine.submit` of one dispatch, to the call returning;
- chain: 100 tiny dispatches recorded in one sequence and replayed, per dispatch, with a
  barrier before each (a dependent chain) and without (independent dispatches);
- floor: the Vulkan floor of a launch + wait, one Kompute sequence recorded once and
  submitted again, its fence polled (`vkQueueSubmit` + `vkGetFenceStatus`) or blocked on
  (`vkWaitForFences`), no engine in between; against it,
  `q.parallel_for(sycl.range(64), body).wait()` as a user writes it, and torch's
  `x.add_(1)` + `torch.cuda.synchronize()` where torch is installed, in the same process.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/round_trip_probe.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import vksycl as sycl
from vksycl.kernels.launch import build_launch


def main() -> None:
    q = sycl.queue()
    dev, ctx = q.get_device(), q.get_context()
    engine = q._scheduler.engine
    engine.batch_window_s = 0.0  # every submission on its own
    x = sycl.malloc_device(64, sycl.float32, q)
    flag = sycl.malloc_host(16, sycl.uint32, q)
    view = np.asarray(flag)
    view[:] = 0

    def body(i):
        x[i] = x[i] + 1.0

    def mark():
        flag[0] = flag[0] + sycl.uint32(1)

    tiny = build_launch(dev, body, sycl.range(64), None, context=ctx).dispatch(engine)
    marker = build_launch(dev, mark, None, None, context=ctx).dispatch(engine)
    for _ in range(200):
        engine.submit((tiny, marker)).wait()

    def fence(n: int = 2000) -> float:
        times = []
        for _ in range(n):
            sub = engine.submit((tiny,))
            t0 = time.perf_counter()
            seq = sub._sequence
            while not seq.fence_signaled():
                pass
            times.append(time.perf_counter() - t0)
            sub.wait()
        return statistics.median(times)

    def marker_word(n: int = 2000) -> tuple[float, float]:
        seen, gap = [], []
        for _ in range(n):
            before = int(view[0])
            sub = engine.submit((tiny, marker))
            t0 = time.perf_counter()
            while int(view[0]) == before:
                pass
            t1 = time.perf_counter()
            seq = sub._sequence
            while seq is not None and not seq.fence_signaled():
                pass
            seen.append(t1 - t0)
            gap.append(time.perf_counter() - t1)
            sub.wait()
        return statistics.median(seen), statistics.median(gap)

    def submit(n: int = 2000) -> float:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            sub = engine.submit((tiny,))
            times.append(time.perf_counter() - t0)
            sub.wait()
        return statistics.median(times)

    def chain(barrier: bool, n: int = 100, reps: int = 200) -> float:
        dispatches = [tiny] + [tiny if barrier else engine.without_barrier(tiny)] * (n - 1)
        rec = engine.record(dispatches)
        for _ in range(5):
            engine.replay(rec).wait()
        t0 = time.perf_counter()
        for _ in range(reps):
            engine.replay(rec)
        engine.synchronize()
        return (time.perf_counter() - t0) / reps / n

    raw = engine.spare_sequence()  # Kompute alone: one recorded sequence, no engine
    raw.record(tiny.op)

    def floor(block: bool, n: int = 2000) -> float:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            raw.eval_async()
            if block:
                raw.eval_await(engine.wait_timeout_ns)
            else:
                while not raw.finish_if_signaled():
                    pass
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def user(n: int = 2000) -> float:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            q.parallel_for(sycl.range(64), body).wait()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def peer(n: int = 2000) -> float | None:
        try:
            import torch
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None
        t = torch.zeros(64, device="cuda")
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            t.add_(1)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    print(f"device: {dev.get_info(sycl.info.device.name)}")
    for r in range(3):
        polled, blocked, launch = floor(False), floor(True), user()
        torch_s = peer()
        against = "" if torch_s is None else \
            f"; torch add_ + synchronize {torch_s * 1e6:.2f} us ({launch / torch_s:.2f}x)"
        print(f"round {r}: floor polled {polled * 1e6:.2f} us, blocked {blocked * 1e6:.2f} "
              f"us; q.parallel_for(...).wait() {launch * 1e6:.2f} us "
              f"({launch / polled:.2f}x the polled floor){against}")
    for r in range(3):
        seen, gap = marker_word()
        print(f"round {r}: fence {fence() * 1e6:.2f} us; marker word seen {seen * 1e6:.2f} "
              f"us, fence {gap * 1e6:.2f} us later; submit {submit() * 1e6:.2f} us; "
              f"chain with barriers {chain(True) * 1e6:.2f} us/dispatch, without "
              f"{chain(False) * 1e6:.2f} us/dispatch")


if __name__ == "__main__":
    main()
