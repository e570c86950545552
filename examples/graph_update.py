"""Executable graph update (sycl_ext_oneapi_graph, usage guide "Dynamic Parameters",
"Dynamic Command Groups", "Whole Graph Update"): a finalized graph gets new kernel
arguments, a new range and another kernel without being built again. A node given a
dynamic parameter reads its arguments from the graph's memory: an update writes the new
values there and records nothing, even while earlier submissions still run (the next
submission writes them on the device first). A new range or another kernel records the
node again. Nothing is compiled.

    .venv/bin/python examples/graph_update.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

N = 1024
WG = 64


@syclexp.nd_range_kernel(1)
def axpy(alpha: sycl.float32, x: sycl.ptr[sycl.float32], y: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    y[i] = alpha * x[i] + y[i]


@syclexp.nd_range_kernel(1)
def scale(alpha: sycl.float32, x: sycl.ptr[sycl.float32], y: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    y[i] = alpha * y[i]


def main() -> int:
    q = sycl.queue()
    bundle = syclexp.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable)
    k_axpy, k_scale = bundle.ext_oneapi_get_kernel(axpy), bundle.ext_oneapi_get_kernel(scale)
    x = sycl.malloc_shared(N, sycl.float32, q)
    y1 = sycl.malloc_shared(N, sycl.float32, q)
    y2 = sycl.malloc_shared(N, sycl.float32, q)
    np.asarray(x)[:N] = np.arange(N)
    np.asarray(y1)[:N] = 0
    np.asarray(y2)[:N] = 0
    ok = True

    # dynamic parameters: a scalar and a pointer, registered through set_arg
    g = syclexp.command_graph(q)
    alpha = syclexp.dynamic_parameter(g, 1.0)
    out = syclexp.dynamic_parameter(g, y1)
    r = sycl.nd_range((N,), (WG,))
    node = g.add(lambda h: (h.set_args(alpha, x, out), h.parallel_for(r, k_axpy)))
    exe = g.finalize([syclexp.property.graph.updatable()])
    q.ext_oneapi_graph(exe).wait()                  # y1 = x
    alpha.update(3.0)
    out.update(y2)
    exe.update(node)
    q.ext_oneapi_graph(exe).wait()                  # y2 = 3x
    ok = ok and np.array_equal(np.asarray(y1)[:N], np.arange(N))
    ok = ok and np.array_equal(np.asarray(y2)[:N], 3 * np.arange(N))

    # a time-stepping loop that never waits: each submission adds x times its own alpha
    np.asarray(y1)[:N] = 0
    out.update(y1)
    for step in range(1, 11):
        alpha.update(float(step))
        exe.update(node)
        q.ext_oneapi_graph(exe)
    q.wait()                                        # y1 = (1 + 2 + ... + 10) x
    ok = ok and np.array_equal(np.asarray(y1)[:N], 55 * np.arange(N))
    np.asarray(y1)[:N] = np.arange(N)               # back to y1 = x, alpha 3 into y2
    alpha.update(3.0)
    out.update(y2)
    exe.update(node)

    # a new range for the same node
    node.update_nd_range(sycl.nd_range((N // 2,), (WG,)))
    exe.update(node)
    q.ext_oneapi_graph(exe).wait()                  # first half of y2 += 3x
    ok = ok and np.array_equal(np.asarray(y2)[: N // 2], 6 * np.arange(N // 2))
    ok = ok and np.array_equal(np.asarray(y2)[N // 2:], 3 * np.arange(N // 2, N))

    # a dynamic command group: the node runs one of several kernels
    g2 = syclexp.command_graph(q)
    dcg = syclexp.dynamic_command_group(g2, [
        lambda h: (h.set_args(2.0, x, y1), h.parallel_for(r, k_axpy)),
        lambda h: (h.set_args(0.5, x, y1), h.parallel_for(r, k_scale)),
    ])
    dnode = g2.add(dcg)
    exe2 = g2.finalize([syclexp.property.graph.updatable()])
    q.ext_oneapi_graph(exe2).wait()                 # y1 = x + 2x
    dcg.set_active_index(1)
    exe2.update(dnode)
    q.ext_oneapi_graph(exe2).wait()                 # y1 = 1.5x
    ok = ok and np.array_equal(np.asarray(y1)[:N], 1.5 * np.arange(N))

    # whole-graph update: the same topology built again over other memory
    g3 = syclexp.command_graph(q)
    g3.add(lambda h: (h.set_args(1.0, x, y1), h.parallel_for(r, k_axpy)))
    g4 = syclexp.command_graph(q)
    g4.add(lambda h: (h.set_args(-1.0, x, y2), h.parallel_for(r, k_axpy)))
    exe3 = g3.finalize([syclexp.property.graph.updatable()])
    exe3.update(g4)
    q.ext_oneapi_graph(exe3).wait()                 # y2 -= x
    ok = ok and np.array_equal(np.asarray(y2)[: N // 2], 5 * np.arange(N // 2))

    print("graph update:", "ok" if ok else "MISMATCH")
    for p in (x, y1, y2):
        sycl.free(p, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
