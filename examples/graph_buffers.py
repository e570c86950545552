"""Buffers in command graphs (sycl_ext_oneapi_graph): recorded command groups whose
accessors alone give the graph its edges, replays ordered with eager work and host
accessors on the same buffers, and what happens to host data when a command is recorded
(9.1.1: copied then, unless the graph is promised the data outlives the buffer).

    .venv/bin/python examples/graph_buffers.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 1024
ITERATIONS = 4
outlives = syclexp.property.graph.assume_buffer_outlives_graph


def diamond(q: sycl.queue) -> bool:
    """A diamond recorded from an out-of-order queue with no events: the accessors order
    it. Replays interleave with an eager kernel; a host accessor sees the last one."""
    a, b, c = (sycl.buffer(np.arange(s, s + N, dtype=np.int32)) for s in (1, 10, 1000))
    for buf in (a, b, c):
        buf.set_write_back(False)  # graphs take no buffer that writes back (7.11.3)

    def inc_a(h):
        da = sycl.accessor(a, h, sycl.read_write)

        def k(i):
            da[i] += 1
        h.parallel_for(N, k)

    def add_b(h):
        da, db = sycl.accessor(a, h, sycl.read_only), sycl.accessor(b, h)

        def k(i):
            db[i] += da[i]
        h.parallel_for(N, k)

    def sub_c(h):
        da, dc = sycl.accessor(a, h, sycl.read_only), sycl.accessor(c, h)

        def k(i):
            dc[i] -= da[i]
        h.parallel_for(N, k)

    def double_a(h):
        da = sycl.accessor(a, h)

        def k(i):
            da[i] *= 2
        h.parallel_for(N, k)

    g = syclexp.command_graph(q, [outlives()])
    with g.recording(q):
        for cgf in (inc_a, add_b, sub_c):
            q.submit(cgf)
    root, left, right = g.get_nodes()
    ok = left.get_predecessors() == [root] and right.get_predecessors() == [root]
    exe = g.finalize()

    ra, rb, rc = (np.arange(s, s + N, dtype=np.int64) for s in (1, 10, 1000))
    for _ in range(ITERATIONS):
        q.ext_oneapi_graph(exe)
        q.submit(double_a)  # eager: after the replay's readers of a, before the next
        ra += 1
        rb += ra
        rc -= ra
        ra *= 2
    with sycl.host_accessor(a, sycl.read_only) as va, \
            sycl.host_accessor(b, sycl.read_only) as vb, \
            sycl.host_accessor(c, sycl.read_only) as vc:  # no wait: they follow the work
        ok = ok and all(np.array_equal(v, r) for v, r in ((va, ra), (vb, rb), (vc, rc)))
        print(f"diamond x{ITERATIONS}: a[:4]={va[:4]} b[:4]={vb[:4]} c[:4]={vc[:4]}")
    return ok


def record_read(q: sycl.queue, promised: bool) -> int:
    """The specification's example (9.1.1): a buffer over host data read by a recorded
    command. The host data changes after recording: a graph without the promise copied it
    when the command was recorded; one with it reads the data when it first runs."""
    data = np.full(N, 1, np.float32)
    buf = sycl.buffer(data)
    buf.set_write_back(False)
    total = sycl.buffer(np.zeros(1, np.float32))
    total.set_write_back(False)
    props = [outlives()]
    if promised:
        props.append(syclexp.property.graph.assume_data_outlives_buffer())
    g = syclexp.command_graph(q, props)

    def sum_all(h):
        src = sycl.accessor(buf, h, sycl.read_only)
        dst = sycl.accessor(total, h, sycl.write_only)

        def k():
            s = 0.0
            for i in range(N):
                s += src[i]
            dst[0] = s
        h.single_task(k)

    with g.recording(q):
        q.submit(sum_all)
    data[:] = 2  # after recording, before the first run
    q.ext_oneapi_graph(g.finalize())
    with sycl.host_accessor(total, sycl.read_only) as v:
        return int(v[0])


def main() -> int:
    q = sycl.queue()
    ok = diamond(q)

    copied, read_late = record_read(q, False), record_read(q, True)
    print(f"sum recorded without the promise: {copied}; with "
          f"assume_data_outlives_buffer: {read_late}")
    ok = ok and copied == N and read_late == 2 * N

    buf = sycl.buffer(sycl.range(N), np.int32)
    try:  # a graph made without assume_buffer_outlives_graph takes no buffer
        syclexp.command_graph(q).add(lambda h: h.fill(sycl.accessor(buf, h), 0))
        ok = False
    except sycl.exception as e:
        print(f"without assume_buffer_outlives_graph: errc.{e.code().name}")
        ok = ok and e.code() == sycl.errc.invalid

    print("graph buffers:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
