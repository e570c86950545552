"""Launch overhead of free function kernels: `syclexp.nd_launch` of a free function kernel
against the same kernel written as a closure (`q.parallel_for(nd_range, body)`), a kernel
object enqueued with `set_args` + `parallel_for`, the same computation built from GLSL
source, and raw `kp` recording and evaluating the free function kernel's own SPIR-V.

Each launch is `x[i] = x[i] + 1.0` over 64 work-items (one work-group), eager, followed by
a wait on its event (`nd_launch` on a queue returns the submission's event, where SYCL
returns void): the figure is launch latency, dominated by fixed per-launch costs. The variants
run interleaved in rounds (each round: every variant `--launches` times), so a change in
the machine's load hits all of them alike; the reported figure is the median round.
A second figure, "host side", is the cost of building the launch command alone (no
submission): what the free function layer adds in Python.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

N = 64


@syclexp.nd_range_kernel(1)
def bump(x: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + 1.0


GLSL = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
void main() { uint i = gl_GlobalInvocationID.x; x[i] = x[i] + 1.0; }
"""


def variants(q: sycl.queue, x: sycl.ptr) -> dict[str, object]:
    ndr = sycl.nd_range((N,), (N,))
    kf = syclexp.kernel_function(bump)

    def body(it):
        i = it.get_global_id(0)
        x[i] = x[i] + 1.0

    kobj = syclexp.get_kernel_bundle(q.get_context(), bump,
                                     sycl.bundle_state.executable).ext_oneapi_get_kernel(bump)
    src = syclexp.create_kernel_bundle_from_source(q.get_context(),
                                                   syclexp.source_language.glsl, GLSL)
    kglsl = syclexp.build(src).ext_oneapi_get_kernel("main")

    def kernel_object():
        q.submit(lambda h: (h.set_args(x), h.parallel_for(ndr, kobj))).wait()

    def glsl():
        q.submit(lambda h: (h.set_args(x), h.parallel_for(ndr, kglsl))).wait()

    return {
        "nd_launch (free function)": lambda: syclexp.nd_launch(q, ndr, kf, x).wait(),
        "closure parallel_for": lambda: q.parallel_for(ndr, body).wait(),
        "kernel object + set_args": kernel_object,
        "GLSL source kernel": glsl,
        "raw kp": raw_kp(q),
    }


def raw_kp(q: sycl.queue):
    from vksycl import _kp as kp
    from vksycl.kernels.launch import compiled
    from vksycl.runtime.engine import rename_entry_point

    ck = compiled(q.get_device(), bump, sycl.nd_range((N,), (N,)))
    spirv = rename_entry_point(ck.spirv(), ck.entry, "main")
    mgr = kp.Manager(q.get_device().vulkan.index)
    tensor = mgr.tensor_t(np.zeros(N, np.float32), kp.TensorTypes.storage)
    push = np.zeros(ck.push_size // 4, np.uint32)
    algo = mgr.algorithm([tensor], spirv, [1, 1, 1], np.zeros(0, np.uint32), push)
    seq = mgr.sequence()

    def launch():
        seq.clear()
        seq.record(kp.OpAlgoDispatch(algo, push))
        seq.eval()

    launch.keep = (mgr, tensor, algo, seq)  # type: ignore[attr-defined]
    return launch


def host_side(q: sycl.queue, x: sycl.ptr, launches: int) -> dict[str, float]:
    """Seconds per launch to build the command only (no submission)."""
    from vksycl.kernels.free_function import launch_command, plan
    from vksycl.kernels.launch import build_launch, build_launch_args

    dev = q.get_device()
    ndr = sycl.nd_range((N,), (N,))

    def body(it):
        i = it.get_global_id(0)
        x[i] = x[i] + 1.0

    p = plan(bump)

    def ours():
        launch_command(dev, bump, ndr, p.converted((x,)), None, p)

    cases = {"nd_launch path (convert + command)": ours,
             "build_launch_args (compiler only)": lambda: build_launch_args(dev, bump, ndr,
                                                                            (x,)),
             "closure build_launch": lambda: build_launch(dev, body, ndr)}
    out = {}
    for name, fn in cases.items():
        for _ in range(50):
            fn()
        t = time.perf_counter()
        for _ in range(launches):
            fn()
        out[name] = (time.perf_counter() - t) / launches
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    q = sycl.queue()
    print(f"device: {q.get_device().vulkan.name}")
    x = sycl.malloc_device(N, np.float32, q)
    cases = variants(q, x)
    for fn in cases.values():  # compile, build pipelines, warm the pools
        for _ in range(50):
            fn()
    rounds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            t = time.perf_counter()
            for _ in range(args.launches):
                fn()
            rounds[name].append((time.perf_counter() - t) / args.launches)
    med = {name: statistics.median(v) for name, v in rounds.items()}
    raw = med["raw kp"]
    ff = med["nd_launch (free function)"]
    print(f"\nlaunch + wait, median of {args.rounds} rounds x {args.launches} launches:")
    print("| variant | µs per launch | vs raw kp | vs closure |")
    print("|---|---:|---:|---:|")
    for name, v in med.items():
        print(f"| {name} | {v * 1e6:.1f} | {v / raw:.2f}x | "
              f"{v / med['closure parallel_for']:.2f}x |")
    print(f"\nnd_launch overhead over raw kp: {(ff - raw) * 1e6:.1f} µs per launch "
          f"(ratio {ff / raw:.2f}x)")
    print(f"\nhost side only (build the command, no submission), {args.launches * 4} calls:")
    for name, v in host_side(q, x, args.launches * 4).items():
        print(f"  {name}: {v * 1e6:.2f} µs")
    sycl.free(x, q)


if __name__ == "__main__":
    main()
