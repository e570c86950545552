"""Eager launches of a tiny kernel (`x[i] += 1` over 64 items), in one run against the
floor Kompute allows and the CUDA peers on the same GPU:

- vksycl: a closure `q.parallel_for(range, body)`, spelled as users write it (the same
  range object, a new `sycl.range` each call, a plain int, an in-order queue, a
  `q.submit` command group), and launches whose arguments change each time (a new
  scalar captured or passed to a free function kernel or `set_args`, two pointers
  swapped, a range of another size: N down to N/2 + 1 in turn);
- raw kp: the same compiled SPIR-V as one pre-built `kp.OpAlgoDispatch`, recorded into a
  sequence and submitted per launch (sequences reused from a ring once complete);
- torch: `x.add_(1)` on a CUDA tensor;
- cupy `RawKernel`: the same kernel written in CUDA;
- numba-vulkan: the same kernel as a `@nv.jit` kernel over a device array, on the same
  Vulkan device, where numba-vulkan is importable (`numba_vulkan_peer.py`).

Two figures each: launch + wait (median of single launches), and 1000 launches without
waiting then one wait (per launch). The variants run in alternating rounds so a change in
the machine's load hits all alike; medians over rounds are reported, with each vksycl
spelling's ratio to torch and to the fastest vksycl spelling. `--items` sizes the
kernel (default 64): with millions of items each launch keeps the GPU busy for a while,
which shows whether submitting in batches ever leaves the device idle. `--awake` is a
diagnostic of the machine (root, Linux): idle CPUs poll rather than halt meanwhile, which
shows what a virtual machine's slow wake-ups of the driver's threads add. `--csv FILE`
writes each spelling's and peer's figures for docs/plots.py (`record.py`; `--append` adds
this process's as the next run).

    python3 benchmarks/eager_launch.py [--async-launches 1000] [--rounds 5] [--items 64]
                                       [--csv FILE [--append]]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from collections.abc import Callable
from typing import Any

import numba_vulkan_peer
import numpy as np
import record
from timing import cpus_awake

import vksycl as sycl
from vksycl import mypyc_modules
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

N = 64


# how a user writes the launch: the benchmark's original spelling (the same range object
# every time) and the common ones
SPELLINGS = ("same range object", "new sycl.range", "int range", "tuple range",
             "new nd_range", "in-order queue", "q.submit command group",
             "q.submit + depends_on", "module-level function", "lambda", "bound method",
             "new scalar each launch", "pointers swapped each launch",
             "nd_launch (free function)", "single_task (free function)",
             "kernel object + set_args", "nd_launch, new scalar each launch",
             "kernel object + set_args, new scalar each launch", "new size each launch")
# the spellings adding a new value each launch
NEW_SCALAR = ("new scalar each launch", "nd_launch, new scalar each launch",
              "kernel object + set_args, new scalar each launch")

# a module-level kernel over module-level USM, the spelling of most SYCL USM code
data: sycl.ptr | None = None


def bump_global(i):
    data[i] = data[i] + 1.0


def add(x: sycl.ptr, i, v):
    x[i] = x[i] + v


@syclexp.nd_range_kernel(1)
def bump_free(x: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + 1.0


@syclexp.nd_range_kernel(1)
def add_free(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v


@syclexp.single_task_kernel
def bump_first(x: sycl.ptr[sycl.float32], n: sycl.int32):
    for i in range(n):
        x[i] = x[i] + 1.0


class Simulation:
    """A kernel as a method: `q.parallel_for(n, self.step)` makes a new bound method each
    call."""

    def __init__(self, x: sycl.ptr) -> None:
        self.x = x

    def step(self, i):
        self.x[i] = self.x[i] + 1.0


def vksycl_case(q: sycl.queue, spelling: str
                ) -> tuple[Callable[[], object], Callable[[], None], Callable]:
    global data
    if spelling == "in-order queue":
        q = sycl.queue(q.get_device(), property_list=[sycl.property.queue.in_order()])
    x = sycl.malloc_device(N, sycl.float32, q)
    other = sycl.malloc_device(N, sycl.float32, q)
    q.fill(x, np.float32(0), N).wait()
    q.fill(other, np.float32(0), N).wait()
    rng = sycl.range(N)
    local = min(N, 64)
    state = {"x": x, "y": other, "step": 0, "deltas": [], "sizes": [],
             "event": q.submit(lambda h: None)}

    def body(i):
        x[i] = x[i] + 1.0

    def step_by(i):
        x[i] = x[i] + delta

    def nd_body(it):
        i = it.get_global_id(0)
        x[i] = x[i] + 1.0

    def check(launched: int) -> None:
        out = np.zeros(N, np.float32)
        q.memcpy(out, x, N * 4).wait()
        if spelling == "pointers swapped each launch":  # each launch bumped one of two
            both = np.zeros(N, np.float32)
            q.memcpy(both, other, N * 4).wait()
            out += both
        expected: Any = np.float32(launched)
        if spelling == "new size each launch":  # each launch bumped its first items
            expected = np.zeros(N, np.float32)
            for n in state["sizes"]:
                expected[:n] += 1
        if spelling in NEW_SCALAR:  # float32 sums, in launch order
            expected = np.float32(0)
            for d in state["deltas"]:
                expected = np.float32(expected + np.float32(d))
        assert np.all(out == expected), (spelling, out[:4], expected)

    delta = 1.0

    def next_delta() -> float:  # a time step: a new value every launch
        d = 1.0 + (state["step"] % 4096) / 4096
        state["deltas"].append(d)
        state["step"] += 1
        return d

    def new_scalar():
        nonlocal delta
        delta = next_delta()
        return q.parallel_for(sycl.range(N), step_by)

    def resized():  # a range of another size each launch (a shrinking active set)
        n = N - len(state["sizes"]) % max(1, N // 2)
        state["sizes"].append(n)
        return q.parallel_for(sycl.range(n), body)

    def swapped():
        a, b = state["x"], state["y"]
        state["x"], state["y"] = b, a
        return syclexp.nd_launch(q, sycl.nd_range((N,), (local,)), bump_free, a)

    def with_event():
        e = state["event"]
        state["event"] = q.submit(
            lambda h: (h.depends_on(e), h.parallel_for(sycl.range(N), body)))
        return state["event"]

    def kernel_object(fn: Callable) -> sycl.kernel:
        return syclexp.get_kernel_bundle(q.get_context(), fn, sycl.bundle_state.executable
                                         ).ext_oneapi_get_kernel(fn)

    sim = Simulation(x)
    kobj, kadd = kernel_object(bump_free), kernel_object(add_free)
    if spelling == "module-level function":
        data = x
    launch = {
        "same range object": lambda: q.parallel_for(rng, body),
        "new sycl.range": lambda: q.parallel_for(sycl.range(N), body),
        "int range": lambda: q.parallel_for(N, body),
        "tuple range": lambda: q.parallel_for((N,), body),
        "new nd_range": lambda: q.parallel_for(sycl.nd_range(sycl.range(N),
                                                             sycl.range(local)), nd_body),
        "in-order queue": lambda: q.parallel_for(sycl.range(N), body),
        "q.submit command group": lambda: q.submit(
            lambda h: h.parallel_for(sycl.range(N), body)),
        "q.submit + depends_on": with_event,
        "module-level function": lambda: q.parallel_for(sycl.range(N), bump_global),
        "lambda": lambda: q.parallel_for(sycl.range(N), lambda i: add(x, i, 1.0)),
        "bound method": lambda: q.parallel_for(sycl.range(N), sim.step),
        "new scalar each launch": new_scalar,
        "pointers swapped each launch": swapped,
        "new size each launch": resized,
        "nd_launch (free function)": lambda: syclexp.nd_launch(
            q, sycl.nd_range((N,), (local,)), bump_free, x),
        "single_task (free function)": lambda: syclexp.single_task(q, bump_first, x, N),
        "kernel object + set_args": lambda: q.submit(
            lambda h: (h.set_args(x), h.parallel_for(sycl.nd_range((N,), (local,)), kobj))),
        "nd_launch, new scalar each launch": lambda: syclexp.nd_launch(
            q, sycl.nd_range((N,), (local,)), add_free, x, next_delta()),
        "kernel object + set_args, new scalar each launch": lambda: q.submit(
            lambda h: (h.set_args(x, next_delta()),
                       h.parallel_for(sycl.nd_range((N,), (local,)), kadd))),
    }[spelling]
    return launch, q.wait, check


def bump_command(q: sycl.queue, n: int) -> tuple[Any, int]:
    """vksycl's command of `x[i] = x[i] + 1.0` over `n` items of new USM, and the offset
    of its pointer in the push constants: for a peer that runs vksycl's kernel on memory
    of its own."""
    from vksycl.kernels.launch import build_launch, compiled

    x = sycl.malloc_device(n, sycl.float32, q)

    def body(i):
        x[i] = x[i] + 1.0

    command = build_launch(q.get_device(), body, sycl.range(n))
    (slot,) = [a.push_offset for a in compiled(q.get_device(), body, sycl.range(n)).args
               if a.kind == "ptr"]
    return command, slot


def raw_kp_case(q: sycl.queue):
    from vksycl import _kp as kp
    from vksycl.runtime.engine import rename_entry_point

    command, slot = bump_command(q, N)
    mgr = kp.Manager(q.get_device().vulkan.index)
    tensor = mgr.tensor_t(np.zeros(N, np.float32), kp.TensorTypes.device)
    push = bytearray(command.push_constants)  # the kernel's pointer, to kp's own tensor
    push[slot: slot + 8] = tensor.device_address().to_bytes(8, "little")
    push = np.frombuffer(bytes(push), np.uint32)
    spirv = rename_entry_point(command.spirv, command.entry, "main")
    algo = mgr.algorithm([tensor], spirv, [1, 1, 1], np.zeros(0, np.uint32),
                         np.zeros_like(push))
    op = kp.OpAlgoDispatch(algo, push, list(command.groups))
    ring = collections.deque(mgr.sequence() for _ in range(64))
    running: collections.deque = collections.deque()

    def launch() -> None:
        if not ring:  # reuse the oldest sequence once it completed
            seq = running.popleft()
            seq.eval_await()
            ring.append(seq)
        seq = ring.popleft()
        seq.clear()
        seq.record(op)
        seq.eval_async()
        running.append(seq)

    def wait() -> None:
        while running:
            seq = running.popleft()
            seq.eval_await()
            ring.append(seq)

    launch.keep = (mgr, tensor, algo, op)  # type: ignore[attr-defined]
    return launch, wait, None


def torch_case():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    t = torch.zeros(N, device="cuda")
    return (lambda: t.add_(1.0)), torch.cuda.synchronize, None


def cupy_case():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, or no CUDA device
        return None
    k = cupy.RawKernel(r'''
extern "C" __global__ void bump(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}''', "bump")
    x = cupy.zeros(N, dtype=cupy.float32)
    blocks = (N + 255) // 256
    return (lambda: k((blocks,), (min(N, 256),), (x, np.int32(N)))), \
        cupy.cuda.Device().synchronize, None


# the names of the peers and of raw Kompute in the data file
CSV_NAMES = {"raw kp": "raw kp, blocking wait", "torch": "torch x.add_(1) (peer)",
             "cupy RawKernel": "cupy RawKernel (peer)", "numba-vulkan": "numba-vulkan (peer)"}


def one_round(launch: Callable, wait: Callable, singles: int, many: int) -> tuple[float, float]:
    times = []
    for _ in range(singles):
        t0 = time.perf_counter()
        launch()
        wait()
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(many):
        launch()
    wait()
    return statistics.median(times), (time.perf_counter() - t0) / many


def main() -> None:
    global N
    ap = argparse.ArgumentParser()
    ap.add_argument("--async-launches", type=int, default=1000)
    ap.add_argument("--singles", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--items", type=int, default=N)
    ap.add_argument("--spellings", nargs="*", default=SPELLINGS, metavar="SPELLING",
                    help="vksycl spellings to run (default: all)")
    ap.add_argument("--awake", action="store_true",
                    help="diagnostic: idle CPUs poll rather than halt (timing.cpus_awake)")
    record.add_arguments(ap)
    args = ap.parse_args()
    N = args.items
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {N} items, x += 1; "
          f"launch path compiled by mypyc: {len(mypyc_modules.loaded())} of "
          f"{len(mypyc_modules.MODULES)} modules")
    cases = {f"vksycl, {s}": vksycl_case(q, s) for s in args.spellings}
    cases |= {"raw kp": raw_kp_case(q), "torch": torch_case(), "cupy RawKernel": cupy_case()}
    nv_version = numba_vulkan_peer.version()
    if nv_version:
        cases["numba-vulkan"] = numba_vulkan_peer.launch_case(
            q.get_device().get_info(sycl.info.device.name), N)
    cases = {k: v for k, v in cases.items() if v is not None}
    launched = dict.fromkeys(cases, 0)
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    with cpus_awake(args.awake):
        for name, (launch, wait, _) in cases.items():  # warm-up: compile, pipelines, pools
            for _ in range(50):
                launch()
            wait()
            launched[name] += 50
        for _ in range(args.rounds):
            for name, (launch, wait, _) in cases.items():
                results[name].append(one_round(launch, wait, args.singles,
                                               args.async_launches))
                launched[name] += args.singles + args.async_launches
    for name, (_, _, check) in cases.items():
        if check is not None:
            check(launched[name])
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
           for k, v in results.items()}
    print(f"median of {args.rounds} rounds; async: {args.async_launches} launches, one wait"
          + ("; CPUs kept from halting (--awake, a diagnostic)" if args.awake else ""))
    # the fastest vksycl spelling of each measure: what every spelling should come close to
    ours = [v for k, v in med.items() if k.startswith("vksycl")]
    best = (min(v[0] for v in ours), min(v[1] for v in ours)) if ours else None
    print("| | launch + wait µs | async µs per launch | vs torch (wait, async) | "
          "vs the best spelling (wait, async) |")
    print("|---|---:|---:|---:|---:|")
    for name, (single, many) in med.items():
        vs = ""
        if "torch" in med:
            vs = f"{single / med['torch'][0]:.2f}x, {many / med['torch'][1]:.2f}x"
        spelled = ""
        if best is not None and name.startswith("vksycl"):
            spelled = f"{single / best[0]:.2f}x, {many / best[1]:.2f}x"
        print(f"| {name} | {single * 1e6:.1f} | {many * 1e6:.1f} | {vs} | {spelled} |")
    print("(results checked, every spelling and numba-vulkan: every launch added 1, or its "
          "scalar)")
    versions = {"numba-vulkan": nv_version} if nv_version else {}
    if "torch" in med:
        import torch
        versions["torch"] = torch.__version__
    if "cupy RawKernel" in med:
        import cupy
        versions["cupy"] = cupy.__version__
    rows = [{"spelling": CSV_NAMES.get(name, name.removeprefix("vksycl, ")), "run": None,
             "wait_us": single * 1e6, "async_us": many * 1e6}
            for name, (single, many) in med.items()]
    record.write(args, "Eager launch per spelling: a tiny kernel's launch + wait, and "
                 f"asynchronous launches, in µs (medians of {args.rounds} rounds of "
                 f"{args.singles} launch + waits and {args.async_launches} async launches)",
                 rows, q.get_device(), versions)


if __name__ == "__main__":
    main()
