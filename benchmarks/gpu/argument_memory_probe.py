"""What a kernel pays per launch + wait for reading its arguments from host memory over
the bus, and so where an argument ring's slots should lie (Kompute patch 0017): a tiny
kernel (`x[i] += a[0]`, 64 items) reading `a` from device USM, from host USM, and not at
all; and a launch bringing a new captured number each time, whose ring lies in the
device's own host-visible memory (what vksycl does) or in host memory (the ring forced
there for this probe). Torch's `x.add_(1)` runs beside them. Medians of rounds of 300
single launches each waited for, results checked.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/argument_memory_probe.py
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import WARM_UP, median_us

import vksycl as sycl
from vksycl.kernels import plans
from vksycl.runtime import engine as engine_module

N, SINGLES, ROUNDS = 64, 300, 7


def reading(q: sycl.queue, x: sycl.ptr, a: sycl.ptr | None) -> Callable[[], object]:
    rng = sycl.range(N)
    if a is None:
        def plain(i):
            x[i] = x[i] + 1.0
        return lambda: q.parallel_for(rng, plain)

    def body(i):
        x[i] = x[i] + a[0]
    return lambda: q.parallel_for(rng, body)


def stepping(q: sycl.queue, x: sycl.ptr, ring_in_host_memory: bool
             ) -> tuple[Callable[[], object], list[float]]:
    """A new captured step each launch; its ring made during the warm-up, in host memory
    when asked (Kompute's device-local host-visible tensor type taken for its host one)."""
    step, steps = 1.0, []

    def ring_as_made(i):
        x[i] = x[i] + step

    def ring_in_host(i):  # code of its own: a plan, and a ring, of its own
        x[i] = x[i] + step

    body = ring_in_host if ring_in_host_memory else ring_as_made

    def launch() -> object:
        nonlocal step
        step = 1.0 + len(steps) % 64 / 64
        steps.append(step)
        return q.parallel_for(N, body)

    types = engine_module.kp.TensorTypes
    device_local = types.host_device_local
    if ring_in_host_memory:
        types.host_device_local = types.host
    try:
        for _ in range(20):
            launch()
            q.wait()
    finally:
        types.host_device_local = device_local
    plan = plans._PLANS[(id(body.__code__), id(q.get_device()))]
    kinds = {b.tensor.tensor_type().name for b in plan.ring[1].buffers}
    print(f"ring {'forced into host memory' if ring_in_host_memory else 'as made'}: "
          f"Kompute tensors of type {', '.join(sorted(kinds))}")
    return launch, steps


def main() -> None:
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}")
    arrays = {name: sycl.malloc_device(N, sycl.float32, q) for name in
              ("none", "device", "host", "ring", "ring in host memory")}
    for x in arrays.values():
        q.fill(x, np.float32(0), N).wait()
    a_device = sycl.malloc_device(1, sycl.float32, q)
    q.fill(a_device, np.float32(1), 1).wait()
    a_host = sycl.malloc_host(1, sycl.float32, q)
    a_host[0] = 1
    ring, ring_steps = stepping(q, arrays["ring"], False)
    host_ring, host_steps = stepping(q, arrays["ring in host memory"], True)
    cases: dict[str, tuple[Callable[[], object], Callable[[], None]]] = {
        "no argument read": (reading(q, arrays["none"], None), q.wait),
        "argument in device USM": (reading(q, arrays["device"], a_device), q.wait),
        "argument in host USM": (reading(q, arrays["host"], a_host), q.wait),
        "new captured step, ring in device-local host-visible memory": (ring, q.wait),
        "new captured step, ring in host memory": (host_ring, q.wait),
    }
    try:
        import torch
        if torch.cuda.is_available():
            t = torch.zeros(N, device="cuda")
            cases["torch x.add_(1)"] = (lambda: t.add_(1.0), torch.cuda.synchronize)
    except ImportError:
        pass
    waited = {name: (lambda launch=launch, wait=wait: (launch(), wait()))
              for name, (launch, wait) in cases.items()}
    for once in waited.values():
        for _ in range(50):
            once()
    rounds: dict[str, list[float]] = {k: [] for k in waited}
    for _ in range(ROUNDS):
        for name, once in waited.items():
            rounds[name].append(median_us(once, SINGLES))
    launched = 50 + ROUNDS * (WARM_UP + SINGLES)
    for name in ("none", "device", "host"):
        assert np.all(_read(q, arrays[name]) == launched), name
    for name, steps in (("ring", ring_steps), ("ring in host memory", host_steps)):
        expected = np.float32(0)
        for s in steps:
            expected = np.float32(expected + np.float32(s))
        assert np.all(_read(q, arrays[name]) == expected), name
    print(f"median of {ROUNDS} rounds of {SINGLES} launches, each waited for (results "
          "checked)")
    print("| | launch + wait µs |")
    print("|---|---:|")
    for name, r in rounds.items():
        print(f"| {name} | {statistics.median(r):.2f} |")


def _read(q: sycl.queue, x: sycl.ptr) -> np.ndarray:
    out = np.zeros(N, np.float32)
    q.memcpy(out, x, N * 4).wait()
    return out


if __name__ == "__main__":
    main()
