"""Command graphs against eager vksycl and torch's CUDA graphs, in one run:

(a) a chain of 100 tiny dependent kernels: replay + wait per node, and the speedup over
    submitting the same 100 launches eagerly to an in-order queue;
(b) 8 independent kernels, each sized to fill 1/8 of the GPU (`--items` work-items of
    `--work` dependent multiply-adds): one graph replay against the same 8 launches on an
    in-order queue (ratio graph / queue);
(c) the update of one scalar dynamic parameter (in the chain's first node) plus a replay
    + wait of the 100-node graph, and the update's own time within it, and when made
    while the replay before it still runs (replays submitted, not waited for);
(d) finalize of the 100-node graph;
(a') the chain of (a) finalized with `perform_fusion`: one fused kernel, against the
    unfused replay; (c') the update + replay of (c) in that fused graph;
(e) a chain of 8 elementwise operations over `--e-items` float32 (64M by default): the
    graph fused, unfused, and torch.compile of the same chain where torch and CUDA are.

torch's figures (where torch and CUDA are available): (a) a captured chain of 100
`x.add_(1)` on one element; (b) 8 `x.sin_()` of `--items` elements on 8 streams forked
inside the capture, against the same 8 on one stream; (c) `fill_` of the scalar tensor
the graph reads plus a replay; (d) the capture and instantiation of (a). Every figure is
a median; results are checked on the host.

`--csv FILE` writes (a') and (e), with torch's CUDA graph and torch.compile, for
docs/plots.py (`record.py`; `--append` adds this process's as the next run).

    python3 benchmarks/graph.py [--small] [--n 200] [--e-items N] [--csv FILE [--append]]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import record
from timing import median_us

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

NODES = 100
BRANCHES = 8
# (a, b) of each of (e)'s 8 operations x * a + b
OPS = [(1.01, 0.5), (0.99, -0.25), (1.5, 0.0), (0.5, 1.0), (1.25, -1.0), (0.8, 0.125),
       (1.1, 0.0), (0.9, 0.75)]
FUSE = syclexp.property.graph.perform_fusion


@syclexp.nd_range_kernel(1)
def bump(ptr: sycl.ptr[sycl.int32], value: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = ptr[i] + value


@syclexp.nd_range_kernel(1)
def affine(src: sycl.ptr[sycl.float32], dst: sycl.ptr[sycl.float32], a: sycl.float32,
           b: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    dst[i] = src[i] * a + b


@syclexp.nd_range_kernel(1)
def spin(ptr: sycl.ptr[sycl.float32], work: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    v = ptr[i]
    for _ in range(work):
        v = v * sycl.float32(0.999) + sycl.float32(0.001)
    ptr[i] = v


def chain(q: sycl.queue, ptr: sycl.ptr, wg: int) -> tuple:
    """The 100-node chain; the first node's increment is a dynamic parameter."""
    k = syclexp.get_kernel_bundle(q.get_context(), bump, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(bump)
    g = syclexp.command_graph(q)
    step = syclexp.dynamic_parameter(g, 1)
    r = sycl.nd_range((wg,), (wg,))
    first = g.add(lambda h: (h.set_args(ptr, step), h.parallel_for(r, k)))
    last = first
    for _ in range(NODES - 1):
        last = g.add(lambda h: (h.set_args(ptr, 1), h.parallel_for(r, k)),
                     [syclexp.property.node.depends_on(last)])
    return g, step, first


def bench_chain(q: sycl.queue, n: int, wg: int) -> dict[str, float]:
    ptr = sycl.malloc_device(wg, sycl.int32, q)
    q.fill(ptr, np.int32(0), wg).wait()
    g, _, _ = chain(q, ptr, wg)
    exe = g.finalize([syclexp.property.graph.updatable()])
    runs = 0

    def replay() -> None:
        nonlocal runs
        q.ext_oneapi_graph(exe).wait()
        runs += 1

    replay_us = median_us(replay, n)
    eager_q = sycl.queue(q.get_context(), q.get_device(),
                         property_list=[sycl.property.queue.in_order()])
    kf = syclexp.kernel_function(bump)
    r = sycl.nd_range((wg,), (wg,))

    def eager() -> None:
        nonlocal runs
        for _ in range(NODES):
            syclexp.nd_launch(eager_q, r, kf, ptr, 1)
        eager_q.wait()
        runs += 1

    eager_us = median_us(eager, max(n // 10, 5))
    total = runs * NODES
    got = np.zeros(wg, np.int32)
    q.memcpy(got, ptr, wg * 4).wait()
    finalize_us = median_us(lambda: g.finalize([syclexp.property.graph.updatable()]),
                            max(n // 10, 5))
    sycl.free(ptr, q)
    return {"replay": replay_us, "eager": eager_us, "finalize": finalize_us,
            "ok": bool((got == total).all())}


def bench_update(q: sycl.queue, n: int, wg: int, fuse: bool) -> dict[str, float]:
    """(c): the update of the chain's first node's scalar + a replay + wait; (c') the
    same with the chain finalized with `perform_fusion`, the update repacking the first
    member's arguments into the fused kernel's."""
    ptr = sycl.malloc_device(wg, sycl.int32, q)
    q.fill(ptr, np.int32(0), wg).wait()
    g, step, first = chain(q, ptr, wg)
    exe = g.finalize([syclexp.property.graph.updatable()] +
                     ([syclexp.property.graph.perform_fusion()] if fuse else []))
    updates = 0

    def timed_update(times: list[float]) -> None:
        """The next update, its own time appended to `times`."""
        nonlocal updates
        updates += 1
        t0 = time.perf_counter()
        step.update(1 + updates % 2)
        exe.update(first)
        times.append(time.perf_counter() - t0)

    alone: list[float] = []  # the update's own time, replay aside
    update_us = median_us(lambda: (timed_update(alone), q.ext_oneapi_graph(exe).wait()), n)
    # the same updates made while the replay before each one still runs (a loop that
    # never waits): each replay is submitted, not waited for
    pending: list[float] = []
    for _ in range(n):
        timed_update(pending)
        q.ext_oneapi_graph(exe)
    q.wait()
    # each update's replay adds 1 + updates % 2 in the first node
    total = updates * (NODES - 1) + sum(1 + k % 2 for k in range(1, updates + 1))
    got = np.zeros(wg, np.int32)
    q.memcpy(got, ptr, wg * 4).wait()
    sycl.free(ptr, q)
    fused_as_asked = len(exe.fusion_report().groups) == (1 if fuse else 0)
    return {"update": update_us, "alone": statistics.median(alone[-n:]) * 1e6,
            "pending": statistics.median(pending) * 1e6,
            "ok": bool((got == total).all()) and fused_as_asked}


def bench_fused_chain(q: sycl.queue, n: int, wg: int) -> dict[str, float]:
    """(a'): the chain of (a) as one fused kernel against the same graph unfused."""
    ptr = sycl.malloc_device(wg, sycl.int32, q)
    q.fill(ptr, np.int32(0), wg).wait()
    g, _, _ = chain(q, ptr, wg)
    fused = g.finalize([syclexp.property.graph.updatable(), FUSE()])
    plain = g.finalize([syclexp.property.graph.updatable()])
    groups = fused.fusion_report().groups
    runs = 0

    def replay(exe: object) -> None:
        nonlocal runs
        q.ext_oneapi_graph(exe).wait()
        runs += 1

    fused_us = median_us(lambda: replay(fused), n)
    plain_us = median_us(lambda: replay(plain), max(n // 4, 5))
    got = np.zeros(wg, np.int32)
    q.memcpy(got, ptr, wg * 4).wait()
    sycl.free(ptr, q)
    return {"fused": fused_us, "plain": plain_us, "ok": bool((got == runs * NODES).all()),
            "one": groups == [list(range(NODES))]}


def bench_elementwise(q: sycl.queue, n: int, items: int, wg: int) -> dict[str, float]:
    """(e): y = op7(...op0(x)) over `items` float32, each op a node writing y."""
    k = syclexp.get_kernel_bundle(q.get_context(), affine, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(affine)
    x = sycl.malloc_device(items, sycl.float32, q)
    y = sycl.malloc_device(items, sycl.float32, q)
    host = np.random.default_rng(1).random(items, dtype=np.float32)
    q.memcpy(x, host, items * 4).wait()
    r = sycl.nd_range((items,), (wg,))
    g = syclexp.command_graph(q)
    last = None
    for j, (a, b) in enumerate(OPS):
        src = x if j == 0 else y
        deps = [] if last is None else [syclexp.property.node.depends_on(last)]
        last = g.add(lambda h, src=src, a=a, b=b: (
            h.set_args(src, y, np.float32(a), np.float32(b)), h.parallel_for(r, k)), deps)
    fused, plain = g.finalize([FUSE()]), g.finalize()
    fused_us = median_us(lambda: q.ext_oneapi_graph(fused).wait(), n)
    plain_us = median_us(lambda: q.ext_oneapi_graph(plain).wait(), n)
    got = np.zeros(items, np.float32)
    q.memcpy(got, y, items * 4).wait()
    want = host.copy()
    for a, b in OPS:
        want = want * np.float32(a) + np.float32(b)
    sycl.free(x, q)
    sycl.free(y, q)
    return {"fused": fused_us, "plain": plain_us, "ok": bool(np.allclose(got, want, 1e-5)),
            "one": fused.fusion_report().groups == [list(range(len(OPS)))]}


def torch_elementwise(n: int, items: int) -> float:
    """torch.compile of (e)'s chain on CUDA."""
    import torch

    def ops(t: torch.Tensor) -> torch.Tensor:
        for a, b in OPS:
            t = t * a + b
        return t

    f = torch.compile(ops)
    x = torch.rand(items, device="cuda")
    f(x)
    torch.cuda.synchronize()

    def run() -> None:
        f(x)
        torch.cuda.synchronize()

    return median_us(run, n)


def bench_branches(q: sycl.queue, n: int, items: int, work: int, wg: int) -> dict:
    k = syclexp.get_kernel_bundle(q.get_context(), spin, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(spin)
    ptrs = [sycl.malloc_device(items, sycl.float32, q) for _ in range(BRANCHES)]
    for p in ptrs:
        q.fill(p, np.float32(1.0), items)
    q.wait()
    r = sycl.nd_range((items,), (wg,))
    g = syclexp.command_graph(q)
    for p in ptrs:
        g.add(lambda h, p=p: (h.set_args(p, work), h.parallel_for(r, k)))
    exe = g.finalize()
    graph_us = median_us(lambda: q.ext_oneapi_graph(exe).wait(), n)
    oq = sycl.queue(q.get_context(), q.get_device(),
                    property_list=[sycl.property.queue.in_order()])

    def in_order() -> None:
        for p in ptrs:
            oq.submit(lambda h, p=p: (h.set_args(p, work), h.parallel_for(r, k)))
        oq.wait()

    queue_us = median_us(in_order, n)
    got = np.zeros(4, np.float32)
    q.memcpy(got, ptrs[0], 16).wait()
    ok = bool(np.all((got > 0) & (got <= 1.0)))
    for p in ptrs:
        sycl.free(p, q)
    return {"graph": graph_us, "queue": queue_us, "ok": ok}


def torch_figures(n: int, items: int) -> dict[str, float]:
    import torch

    x = torch.zeros(1, dtype=torch.int32, device="cuda")
    inc = torch.ones(1, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()

    def capture() -> torch.cuda.CUDAGraph:
        cg = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cg):
            for _ in range(NODES):
                x.add_(inc)
        return cg

    capture_us = median_us(capture, max(n // 10, 5))
    cg = capture()

    def replay() -> None:
        cg.replay()
        torch.cuda.synchronize()

    replay_us = median_us(replay, n)

    def eager() -> None:
        for _ in range(NODES):
            x.add_(inc)
        torch.cuda.synchronize()

    eager_us = median_us(eager, max(n // 10, 5))

    def update() -> None:
        inc.fill_(1)
        replay()

    update_us = median_us(update, n)
    xs = [torch.ones(items, device="cuda") for _ in range(BRANCHES)]
    streams = [torch.cuda.Stream() for _ in range(BRANCHES)]
    forked, serial = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm-up outside the capture
        for t in xs:
            t.sin_()
    torch.cuda.synchronize()
    with torch.cuda.graph(forked):
        main = torch.cuda.current_stream()
        for s, t in zip(streams, xs, strict=True):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                t.sin_()
        for s in streams:
            main.wait_stream(s)
    with torch.cuda.graph(serial):
        for t in xs:
            t.sin_()

    def run(cg: torch.cuda.CUDAGraph) -> None:
        cg.replay()
        torch.cuda.synchronize()

    return {"replay": replay_us, "eager": eager_us, "update": update_us,
            "finalize": capture_us, "forked": median_us(lambda: run(forked), n),
            "serial": median_us(lambda: run(serial), n)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="sizes a CPU device runs quickly")
    ap.add_argument("--n", type=int, default=200, help="timed calls per figure")
    ap.add_argument("--items", type=int, default=None,
                    help="work-items of each independent kernel (default: GPU-sized)")
    ap.add_argument("--work", type=int, default=None, help="loop iterations per work-item")
    ap.add_argument("--e-items", type=int, default=None,
                    help="float32 elements of (e)'s chain (default 64M, 1M with --small)")
    record.add_arguments(ap)
    args = ap.parse_args()
    q = sycl.queue()
    dev = q.get_device()
    print(f"device: {dev.get_info(sycl.info.device.name)}")
    wg = 32
    items = args.items or (1024 if args.small else 32768)
    work = args.work or (20 if args.small else 4000)
    n = min(args.n, 30) if args.small else args.n

    e_items = args.e_items or ((1 << 20) if args.small else (64 << 20))
    c = bench_chain(q, n, wg)
    b = bench_branches(q, n, items, work, 64)
    f = bench_fused_chain(q, n, wg)
    u, fu = bench_update(q, n, wg, False), bench_update(q, n, wg, True)
    e = bench_elementwise(q, max(n // 10, 5), e_items, 256)
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    t = torch_figures(n, items) if cuda else None
    te = torch_elementwise(max(n // 10, 5), e_items) if cuda else None

    per_node = c["replay"] / NODES
    line = (f"(a) chain of {NODES} kernels: replay {per_node:.2f} us/node, eager "
            f"{c['eager'] / NODES:.2f} us/node, speedup {c['eager'] / c['replay']:.1f}x "
            f"(target <= 1.5 us/node, >= 10x)")
    if t:
        line += (f"; torch CUDA graph {t['replay'] / NODES:.2f} us/node, eager "
                 f"{t['eager'] / NODES:.2f} us/node")
    print(line + f" [{'checked' if c['ok'] else 'WRONG'}]")
    line = (f"(b) {BRANCHES} independent kernels of {items} work-items x {work}: graph "
            f"{b['graph']:.0f} us, in-order queue {b['queue']:.0f} us, ratio "
            f"{b['graph'] / b['queue']:.2f} (target <= 0.35)")
    if t:
        line += (f"; torch 8 streams {t['forked']:.0f} us, one stream {t['serial']:.0f} us, "
                 f"ratio {t['forked'] / t['serial']:.2f}")
    print(line + f" [{'checked' if b['ok'] else 'WRONG'}]")
    line = (f"(c) update one scalar dynamic parameter + replay of {NODES} nodes: "
            f"{u['update']:.0f} us, of which the update {u['alone']:.1f} us (target <= 100); "
            f"the update with the replay before it still running {u['pending']:.1f} us")
    if t:
        line += f"; torch fill_ + replay {t['update']:.0f} us"
    print(line + f" [{'checked' if u['ok'] else 'WRONG'}]")
    line = (f"(c') the same, the graph fused: {fu['update']:.0f} us, of which the update "
            f"{fu['alone']:.1f} us; with the replay before it still running "
            f"{fu['pending']:.1f} us"
            + (f", {fu['update'] / t['update']:.2f}x torch's" if t else "")
            + f" [{'checked' if fu['ok'] else 'WRONG'}]")
    print(line)
    line = f"(d) finalize of {NODES} nodes: {c['finalize'] / 1000:.2f} ms (target <= 20)"
    if t:
        line += f"; torch capture + instantiate {t['finalize'] / 1000:.2f} ms"
    print(line)
    ok = f["ok"] and f["one"]
    print(f"(a') chain of {NODES} kernels fused: replay {f['fused'] / NODES:.3f} us/node, "
          f"unfused {f['plain'] / NODES:.2f} us/node, speedup "
          f"{f['plain'] / f['fused']:.1f}x (target <= 0.5 us/node on an H100; >= 10x on "
          f"lavapipe) [{'checked' if ok else 'WRONG'}]")
    line = (f"(e) {len(OPS)} elementwise ops over {e_items} float32: fused "
            f"{e['fused']:.0f} us, unfused {e['plain']:.0f} us, speedup "
            f"{e['plain'] / e['fused']:.1f}x (target >= 4x)")
    if te:
        line += (f"; torch.compile {te:.0f} us, fused / torch.compile "
                 f"{e['fused'] / te:.2f} (target <= 1.1)")
    print(line + f" [{'checked' if e['ok'] and e['one'] else 'WRONG'}]")
    chain, ops = f"chain of {NODES} (per node)", f"{len(OPS)} elementwise ops"
    rows = [(chain, "vksycl fused", f["fused"] / NODES),
            (chain, "vksycl unfused", f["plain"] / NODES)]
    if t:
        rows.append((chain, "torch CUDA graph", t["replay"] / NODES))
    rows += [(ops, "vksycl fused", e["fused"]), (ops, "vksycl unfused", e["plain"])]
    if te:
        rows.append((ops, "torch.compile", te))
    torch_version = {"torch": torch.__version__} if cuda else None
    record.write(args, f"Command graphs: (a') replay of a chain of {NODES} tiny dependent "
                 f"kernels, µs per node; (e) {len(OPS)} elementwise ops over {e_items} float32, "
                 "µs per replay", [{"figure": figure, "variant": variant, "run": None,
                                    "value_us": value} for figure, variant, value in rows],
                 dev, torch_version)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
