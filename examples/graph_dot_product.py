"""A dot product as a command graph built with the explicit API (sycl_ext_oneapi_graph,
usage guide "Dot Product"): three kernels fill the vectors, two combine them, one sums
the products; edges come from `property.node.depends_on`. The graph is finalized once
and submitted again and again.

    .venv/bin/python examples/graph_dot_product.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 1024
ALPHA, BETA, GAMMA = 1.0, 2.0, 3.0


def main() -> int:
    q = sycl.queue()
    g = syclexp.command_graph(q.get_context(), q.get_device())
    dotp = sycl.malloc_shared(1, sycl.float32, q)
    x = sycl.malloc_device(N, sycl.float32, q)
    y = sycl.malloc_device(N, sycl.float32, q)
    z = sycl.malloc_device(N, sycl.float32, q)

    def init(i):
        x[i] = 1.0
        y[i] = 2.0
        z[i] = 3.0

    def axpy_x(i):
        x[i] = ALPHA * x[i] + BETA * y[i]

    def axpy_z(i):
        z[i] = GAMMA * z[i] + BETA * y[i]

    def dot():
        total = sycl.float32(0.0)
        for i in range(N):
            total += x[i] * z[i]
        dotp[0] = total

    after = syclexp.property.node.depends_on
    node_i = g.add(lambda h: h.parallel_for(sycl.range(N), init))
    node_a = g.add(lambda h: h.parallel_for(sycl.range(N), axpy_x), [after(node_i)])
    node_b = g.add(lambda h: h.parallel_for(sycl.range(N), axpy_z), [after(node_i)])
    g.add(lambda h: h.single_task(dot), [after(node_a, node_b)])

    exe = g.finalize()
    expected = N * (ALPHA * 1.0 + BETA * 2.0) * (GAMMA * 3.0 + BETA * 2.0)
    ok = True
    for _ in range(10):  # each submission starts from init again
        q.ext_oneapi_graph(exe).wait()
        ok = ok and float(np.asarray(dotp)[0]) == expected
    print(f"dot product {float(np.asarray(dotp)[0])} (expected {expected})")
    for p in (dotp, x, y, z):
        sycl.free(p, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
