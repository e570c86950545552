"""Command graphs (sycl_ext_oneapi_graph): building explicitly and by recording, queries,
finalize into pre-recorded sequences, replay. Scenarios after DPC++'s
sycl/test-e2e/Graph tests, values checked on the device."""

from __future__ import annotations

import gc
import itertools
import threading

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 256
ITERATIONS = 5
nt = syclexp.node_type


def invalid(call) -> str:
    with pytest.raises(sycl.exception) as ei:
        call()
    assert ei.value.code() == sycl.errc.invalid, ei.value
    return str(ei.value)


def abc(mem):
    return (mem.of(np.arange(1, N + 1, dtype=np.int32)),
            mem.of(np.arange(10, N + 10, dtype=np.int32)),
            mem.of(np.arange(1000, N + 1000, dtype=np.int32)))


def diamond_kernels(a, b, c):
    def inc_a(i):
        a[i] = a[i] + 1

    def add_b(i):
        b[i] = b[i] + a[i]

    def sub_c(i):
        c[i] = c[i] - a[i]

    def dec_bc(i):
        b[i] = b[i] - 1
        c[i] = c[i] - 1

    return inc_a, add_b, sub_c, dec_bc


def add_diamond(g, a, b, c):
    """The four kernels of DPC++'s add_kernels_usm: a diamond, explicitly."""
    k0, k1, k2, k3 = diamond_kernels(a, b, c)
    r = sycl.range(N)
    n0 = g.add(lambda h: h.parallel_for(r, k0))
    dep = syclexp.property.node.depends_on
    n1 = g.add(lambda h: h.parallel_for(r, k1), [dep(n0)])
    n2 = g.add(lambda h: h.parallel_for(r, k2), [dep(n0)])
    n3 = g.add(lambda h: h.parallel_for(r, k3), [dep(n1, n2)])
    return n0, n1, n2, n3


def record_diamond(q, a, b, c):
    """The same four kernels, recorded from a queue with event dependencies."""
    k0, k1, k2, k3 = diamond_kernels(a, b, c)
    r = sycl.range(N)
    e0 = q.parallel_for(r, k0)
    e1 = q.parallel_for(r, k1, depends_on=e0)
    e2 = q.submit(lambda h: (h.depends_on(e0), h.parallel_for(r, k2)))
    return q.parallel_for(r, k3, depends_on=[e1, e2])


def host_values(*ptrs):
    return [np.asarray(p)[:N].copy() for p in ptrs]


@pytest.fixture(params=["explicit", "record"])
def mode(request):
    return request.param


def build_diamond(mode, g, q, a, b, c):
    if mode == "explicit":
        add_diamond(g, a, b, c)
    else:
        with g.recording(q):
            record_diamond(q, a, b, c)


# -- building and queries ------------------------------------------------------------------

def test_basic_usm_replays(q, mem, mode, diamond_reference):
    a, b, c = abc(mem)
    want = diamond_reference(ITERATIONS, *host_values(a, b, c))
    g = syclexp.command_graph(q.get_context(), q.get_device())
    build_diamond(mode, g, q, a, b, c)
    assert host_values(a, b, c)[0][0] == 1  # nothing ran while building
    exe = g.finalize()
    assert isinstance(exe, syclexp.command_graph[syclexp.graph_state.executable])
    assert syclexp.command_graph[syclexp.graph_state.modifiable] is syclexp.command_graph
    e = None
    for _ in range(ITERATIONS):
        e = q.submit(lambda h, e=e: (h.depends_on(e) if e else None, h.ext_oneapi_graph(exe)))
        e.wait()
    for got, ref in zip(host_values(a, b, c), want, strict=True):
        np.testing.assert_array_equal(got, ref)


def test_topology_queries(q, mem, mode):
    a, b, c = abc(mem)
    g = syclexp.command_graph(q)
    build_diamond(mode, g, q, a, b, c)
    nodes = g.get_nodes()
    assert len(nodes) == 4 and all(n.get_type() is nt.kernel for n in nodes)
    assert g.get_root_nodes() == [nodes[0]]
    assert nodes[0].get_successors() == [nodes[1], nodes[2]]
    assert nodes[3].get_predecessors() == [nodes[1], nodes[2]]
    assert nodes[1].get_predecessors() == [nodes[0]]
    assert nodes[3].get_successors() == []


def test_node_types_of_every_command(q, mem):
    src = mem.of(np.arange(16, dtype=np.int32))
    dst = mem.zeros(16, np.int32)
    g = syclexp.command_graph(q)

    def k(i):
        dst[i] = dst[i] + 1

    sub = syclexp.command_graph(q)
    sub.add(lambda h: h.single_task(lambda: None))
    sub_exe = sub.finalize()
    with g.recording(q):
        events = [q.parallel_for(sycl.range(16), k), q.memcpy(dst, src, 64),
                  q.copy(src, dst, 16), q.memset(dst, 0, 64),
                  q.fill(dst, np.int32(3), 16), q.prefetch(dst, 64),
                  q.mem_advise(dst, 64, 0), q.ext_oneapi_submit_barrier(),
                  q.submit(lambda h: h.host_task(lambda: None)),
                  q.submit(lambda h: None), q.ext_oneapi_graph(sub_exe)]
    types = [syclexp.node.get_node_from_event(e).get_type() for e in events]
    assert types == [nt.kernel, nt.memcpy, nt.memcpy, nt.memset, nt.memfill, nt.prefetch,
                     nt.memadvise, nt.ext_oneapi_barrier, nt.host_task, nt.empty,
                     nt.subgraph]
    assert g.add().get_type() is nt.empty
    assert g.add(lambda h: h.memset(dst, 1, 4)).get_type() is nt.memset


def test_every_command_type_replays(q, mem):
    """Copies, fills, memsets and kernels recorded once, each replay doing all of them."""
    src = mem.of(np.arange(64, dtype=np.int32))
    mid = sycl.malloc_device(64, np.int32, q)
    out = mem.zeros(64, np.int32)
    host_in = np.arange(100, 164, dtype=np.int32)
    host_out = np.zeros(64, np.int32)
    g = syclexp.command_graph(q, [syclexp.property.graph.assume_buffer_outlives_graph()])
    q2 = sycl.queue(q.get_context(), q.get_device(),
                    property_list=[sycl.property.queue.in_order()])

    def twice(i):
        out[i] = out[i] * 2

    with g.recording(q2):
        q2.memset(mid, 0, 256)
        q2.fill(out, np.int32(5), 64)
        q2.memcpy(mid, src, 128)               # the first 32 elements
        q2.copy(mid, out, 32)
        q2.parallel_for(sycl.range(64), twice)
        q2.copy(host_in, mid + 32, 32)          # numpy to device memory
        q2.copy(mid + 32, out + 32, 32)
        q2.copy(out, host_out, 64)              # and back to numpy
    exe = g.finalize()
    for k in range(3):
        np.asarray(out)[:] = -1
        host_in += 1
        q.ext_oneapi_graph(exe).wait()
        want = np.concatenate([np.arange(32) * 2, np.full(32, 10)]).astype(np.int32)
        want[32:] = host_in[:32]
        np.testing.assert_array_equal(np.asarray(out)[:64], want, err_msg=str(k))
        np.testing.assert_array_equal(host_out, want)
    sycl.free(mid, q)


def test_empty_graph_and_empty_nodes(q, mem):
    g = syclexp.command_graph(q)
    q.ext_oneapi_graph(g.finalize()).wait()  # finalizing an empty graph is valid
    a = mem.zeros(N, np.int32)

    def one(i):
        a[i] = a[i] + 1

    def two(i):
        a[i] = a[i] * 2

    n1 = g.add(lambda h: h.parallel_for(sycl.range(N), one))
    e = g.add()
    g.make_edge(n1, e)
    n2 = g.add(lambda h: h.parallel_for(sycl.range(N), two),
               [syclexp.property.node.depends_on(e)])
    assert n2.get_predecessors() == [e] and e.get_type() is nt.empty
    exe = g.finalize()
    for _ in range(4):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert np.asarray(a)[0] == 30  # ((((0+1)*2+1)*2+1)*2+1)*2


def test_depends_on_all_leaves(q, mem):
    a = mem.zeros(4, np.int32)
    g = syclexp.command_graph(q)
    leaves = []
    def setter(k):
        def put():
            a[k] = k + 1
        return put

    for k in range(3):
        put = setter(k)
        leaves.append(g.add(lambda h, put=put: h.single_task(put)))
    join = g.add([syclexp.property.node.depends_on_all_leaves()])
    assert join.get_predecessors() == leaves

    def total():
        a[3] = a[0] + a[1] + a[2]
    last = g.add(lambda h: h.single_task(total),
                 [syclexp.property.node.depends_on_all_leaves()])
    assert last.get_predecessors() == [join]
    q.ext_oneapi_graph(g.finalize()).wait()
    assert list(np.asarray(a)[:4]) == [1, 2, 3, 6]


# -- errors ---------------------------------------------------------------------------------

def test_make_edge_errors(q):
    g = syclexp.command_graph(q)
    other = syclexp.command_graph(q)
    a, b, c = g.add(), g.add(), g.add()
    foreign = other.add()
    assert "itself" in invalid(lambda: g.make_edge(a, a))
    assert "not part" in invalid(lambda: g.make_edge(a, foreign))
    assert "not part" in invalid(lambda: g.make_edge(foreign, a))
    g.make_edge(a, b)
    g.make_edge(b, c)
    assert "cycle" in invalid(lambda: g.make_edge(c, a))
    g.make_edge(a, b)  # an edge made again is no new edge
    assert b.get_predecessors() == [a]
    g.begin_recording(q)
    try:
        assert "recording" in invalid(lambda: g.make_edge(a, c))
        assert "recording" in invalid(lambda: g.add())
        assert "recording" in invalid(lambda: g.add(lambda h: None))
    finally:
        g.end_recording()
    unchecked = syclexp.command_graph(q, [syclexp.property.graph.no_cycle_check()])
    x, y = unchecked.add(), unchecked.add()
    unchecked.make_edge(x, y)
    unchecked.make_edge(y, x)  # not checked, as the property promises
    invalid(lambda: g.add([syclexp.property.node.depends_on(foreign)]))


def test_constructor_errors(q):
    other_ctx = sycl.context(q.get_device())
    invalid(lambda: syclexp.command_graph(q, [sycl.property.queue.in_order()]))
    invalid(lambda: syclexp.command_graph(42))
    invalid(lambda: syclexp.command_graph(q.get_device(), other_ctx))
    invalid(lambda: syclexp.command_graph(q).finalize([syclexp.property.graph.no_cycle_check()]))
    g = syclexp.command_graph(q)
    q2 = sycl.queue(other_ctx, q.get_device())
    invalid(lambda: g.begin_recording(q2))  # another context
    assert q2.ext_oneapi_get_state() is syclexp.queue_state.executing


def _refused_by_the_compiler():
    import os
    os.getcwd()  # a module function call: kernels cannot call into Python


def test_foreign_dependency_refused_before_the_kernel_builds(q):
    rq = sycl.queue(q.get_context(), q.get_device())
    eager = q.single_task(lambda: None)
    eager.wait()
    with pytest.raises(sycl.exception) as err:
        rq.single_task(_refused_by_the_compiler)
    assert err.value.code() is not sycl.errc.invalid  # the kernel alone fails to build
    g = syclexp.command_graph(q)
    with g.recording(rq):
        message = invalid(lambda: rq.single_task(_refused_by_the_compiler, depends_on=eager))
        assert "same graph" in message
        message = invalid(lambda: rq.submit(
            lambda h: (h.depends_on([eager]), h.single_task(_refused_by_the_compiler))))
        assert "same graph" in message
        recorded = rq.single_task(lambda: None)
    assert len(g.get_nodes()) == 1
    # once the recording ended, its events are no dependency of eager work either
    message = invalid(lambda: q.single_task(_refused_by_the_compiler, depends_on=recorded))
    assert "finished command_graph recording" in message
    assert q.ext_oneapi_get_state() is syclexp.queue_state.executing
    message = invalid(lambda: g.add(
        lambda h: (h.depends_on(eager), h.single_task(_refused_by_the_compiler))))
    assert "same graph" in message
    assert len(g.get_nodes()) == 1


def test_recording_states_and_errors(q):
    g, g2 = syclexp.command_graph(q), syclexp.command_graph(q)
    rq = sycl.queue(q.get_context(), q.get_device())
    assert rq.ext_oneapi_get_state() is syclexp.queue_state.executing
    invalid(rq.ext_oneapi_get_graph)
    g.begin_recording(rq)
    assert rq.ext_oneapi_get_state() is syclexp.queue_state.recording
    assert rq.ext_oneapi_get_graph() is g
    assert "already" in invalid(lambda: g.begin_recording(rq))
    invalid(lambda: g2.begin_recording(rq))
    invalid(lambda: g2.end_recording(rq))
    ev = rq.single_task(lambda: None)
    invalid(ev.wait)
    invalid(lambda: ev.get_info(sycl.info.event.command_execution_status))
    invalid(lambda: ev.get_profiling_info(sycl.info.event_profiling.command_start))
    invalid(rq.wait)  # a host wait on a recording queue
    eager = q.single_task(lambda: None)
    invalid(lambda: rq.single_task(lambda: None, depends_on=eager))  # not a recorded event
    g.end_recording(rq)
    g.end_recording(rq)  # a no-op
    assert rq.ext_oneapi_get_state() is syclexp.queue_state.executing
    invalid(lambda: rq.single_task(lambda: None, depends_on=ev))  # outside the recording
    invalid(lambda: syclexp.node.get_node_from_event(eager))
    assert syclexp.node.get_node_from_event(ev).get_type() is nt.kernel
    g.begin_recording([rq, q])
    g.end_recording()
    assert q.ext_oneapi_get_state() is syclexp.queue_state.executing
    assert len(g.get_nodes()) == 1


def test_excluded_commands(q, mem):
    """7.12: device_global copies, scratch memory and barriers through the explicit API."""
    from tests.test_device_global import counter  # a module-scope device_global

    g = syclexp.command_graph(q)
    ptr = mem.zeros(1, np.int32)
    invalid(lambda: g.add(lambda h: h.memcpy(counter, ptr, 4)))
    invalid(lambda: g.add(lambda h: h.copy(ptr, counter, 1)))
    invalid(lambda: g.add(lambda h: h.ext_oneapi_barrier()))
    scratch = [syclexp.work_group_scratch_size(64)]
    invalid(lambda: g.add(lambda h: h.parallel_for(sycl.nd_range((16,), (16,)),
                                                   lambda it: None, scratch)))
    with g.recording(q):
        invalid(lambda: q.copy(ptr, counter, 1))
    assert g.get_nodes() == []


# -- record & replay ------------------------------------------------------------------------

def test_in_order_queue_records_a_chain(ordered_q, mem):
    a = mem.zeros(1, np.int32)
    g = syclexp.command_graph(ordered_q)

    def inc():
        a[0] = a[0] * 3 + 1

    with g.recording(ordered_q):
        for _ in range(4):
            ordered_q.single_task(inc)
    nodes = g.get_nodes()
    for prev, n in itertools.pairwise(nodes):
        assert n.get_predecessors() == [prev]
    exe = g.finalize()
    ordered_q.ext_oneapi_graph(exe)
    ordered_q.ext_oneapi_graph(exe)
    ordered_q.wait()
    v = 0
    for _ in range(8):
        v = v * 3 + 1
    assert np.asarray(a)[0] == v


def test_transitive_recording(q, mem):
    """7.6.2: a queue depending on a recorded event records too, until end_recording."""
    a = mem.zeros(1, np.int32)
    q1 = sycl.queue(q.get_context(), q.get_device())
    q2 = sycl.queue(q.get_context(), q.get_device())
    g = syclexp.command_graph(q)

    def first():
        a[0] = a[0] + 5

    def second():
        a[0] = a[0] * 2

    g.begin_recording(q1)
    e1 = q1.single_task(first)
    e2 = q2.single_task(second, depends_on=e1)
    assert q2.ext_oneapi_get_state() is syclexp.queue_state.recording
    assert q2.ext_oneapi_get_graph() is g
    assert syclexp.node.get_node_from_event(e2).get_predecessors() == \
        [syclexp.node.get_node_from_event(e1)]
    g.end_recording()
    assert q2.ext_oneapi_get_state() is syclexp.queue_state.executing
    exe = g.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert np.asarray(a)[0] == ((5 * 2 + 5) * 2 + 5) * 2


def test_barrier_recording(q):
    """7.12.6: a barrier with no wait list depends on the queue's leaves; later commands of
    that queue depend on it, other queues' commands do not."""
    q1 = sycl.queue(q.get_context(), q.get_device())
    q2 = sycl.queue(q.get_context(), q.get_device())
    g = syclexp.command_graph(q)
    with g.recording([q1, q2]):
        e1 = q1.single_task(lambda: None)
        e2 = q1.single_task(lambda: None)
        e3 = q2.single_task(lambda: None)
        b = q1.ext_oneapi_submit_barrier()
        e4 = q1.single_task(lambda: None)
        e5 = q2.single_task(lambda: None)
        b2 = q2.ext_oneapi_submit_barrier([e3])
    node = syclexp.node.get_node_from_event
    assert node(b).get_predecessors() == [node(e1), node(e2)]
    assert node(e4).get_predecessors() == [node(b)]
    assert node(e5).get_predecessors() == []
    assert node(b2).get_predecessors() == [node(e3)]
    q.ext_oneapi_graph(g.finalize()).wait()


def test_get_graph_multi_queue(q):
    g = syclexp.command_graph(q)
    q1 = sycl.queue(q.get_context(), q.get_device())
    q2 = sycl.queue(q.get_context(), q.get_device())
    g.begin_recording([q1, q2])
    assert q1.ext_oneapi_get_graph() is g and q2.ext_oneapi_get_graph() is g
    g.end_recording(q1)
    assert q1.ext_oneapi_get_state() is syclexp.queue_state.executing
    assert q2.ext_oneapi_get_state() is syclexp.queue_state.recording
    g.end_recording([q2])


def test_recording_ends_when_the_graph_goes(q):
    """7.8: dropping the last reference to a modifiable graph ends its recordings."""
    rq = sycl.queue(q.get_context(), q.get_device())
    g = syclexp.command_graph(q)
    g.begin_recording(rq)
    rq.single_task(lambda: None)
    del g
    gc.collect()
    assert rq.ext_oneapi_get_state() is syclexp.queue_state.executing
    rq.single_task(lambda: None).wait()


def test_context_manager_ends_recording_on_error(q):
    g = syclexp.command_graph(q)
    with pytest.raises(ZeroDivisionError), g.recording(q):
        q.single_task(lambda: None)
        1 / 0  # noqa: B018
    assert q.ext_oneapi_get_state() is syclexp.queue_state.executing
    assert len(g.get_nodes()) == 1


def test_recorded_commands_are_not_run(q, mem):
    a = mem.of(np.full(4, 7, np.int32))
    g = syclexp.command_graph(q)

    def zero(i):
        a[i] = 0

    with g.recording(q):
        q.parallel_for(sycl.range(4), zero)
        q.fill(a, np.int32(9), 4)
    q.wait()
    assert list(np.asarray(a)[:4]) == [7] * 4


# -- finalize and submission ----------------------------------------------------------------

def test_accumulation_over_many_back_to_back_replays(q, mem):
    """Hundreds of submissions without waits: each replay adds on what the last left."""
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    def mul(i):
        a[i] = (a[i] * 3) % 1000003

    def dec(i):
        a[i] = a[i] - 1

    g = syclexp.command_graph(q)
    n1 = g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    n2 = g.add(lambda h: h.parallel_for(sycl.range(N), mul), [syclexp.property.node.depends_on(n1)])
    g.add(lambda h: h.parallel_for(sycl.range(N), dec), [syclexp.property.node.depends_on(n2)])
    exe = g.finalize()
    v = 0
    for _ in range(200):
        q.ext_oneapi_graph(exe)
        v = (v + 1) * 3 % 1000003 - 1
    q.wait()
    assert (np.asarray(a)[:N] == v).all()


def test_replays_interleaved_with_eager_work(ordered_q, mem):
    q = ordered_q
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 3

    def dbl(i):
        a[i] = a[i] * 2

    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    exe = g.finalize()
    v = 0
    for k in range(50):
        q.ext_oneapi_graph(exe)
        v += 3
        if k % 3 == 0:
            q.parallel_for(sycl.range(N), dbl)
            v *= 2
        if k % 7 == 0:
            q.fill(a + 1, np.int32(0), 1)
            q.fill(a + 1, np.int32(v), 1)
    q.wait()
    assert (np.asarray(a)[:N] == v).all()


def test_graph_events_and_dependencies(q, mem):
    a = mem.zeros(N, np.int32)
    b = mem.zeros(N, np.int32)

    def copy(i):
        b[i] = a[i] + 1

    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(N), copy))
    exe = g.finalize()
    e1 = q.fill(a, np.int32(41), N)
    e2 = q.ext_oneapi_graph(exe, e1)
    e2.wait()
    assert e2.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    assert (np.asarray(b)[:N] == 42).all()
    e3 = q.fill(a, np.int32(1), N)
    q.ext_oneapi_graph(exe, [e3]).wait()
    assert (np.asarray(b)[:N] == 2).all()


def test_graph_on_a_queue_of_another_context(q):
    g = syclexp.command_graph(q)
    exe = g.finalize()
    q2 = sycl.queue(sycl.context(q.get_device()), q.get_device())
    invalid(lambda: q2.ext_oneapi_graph(exe))
    invalid(lambda: q2.submit(lambda h: h.ext_oneapi_graph(g)))  # not executable


def test_add_nodes_after_finalize(q, mem):
    a = mem.zeros(1, np.int32)

    def inc():
        a[0] = a[0] + 1

    def ten():
        a[0] = a[0] + 10

    g = syclexp.command_graph(q)
    n = g.add(lambda h: h.single_task(inc))
    first = g.finalize()
    g.add(lambda h: h.single_task(ten), [syclexp.property.node.depends_on(n)])
    second = g.finalize()
    q.ext_oneapi_graph(first).wait()
    q.ext_oneapi_graph(second).wait()
    assert np.asarray(a)[0] == 12


def test_multiple_executable_graphs(q, mem, mode, diamond_reference):
    a, b, c = abc(mem)
    want = diamond_reference(2 * ITERATIONS, *host_values(a, b, c))
    g = syclexp.command_graph(q)
    build_diamond(mode, g, q, a, b, c)
    execs = [g.finalize() for _ in range(2)]
    for _ in range(ITERATIONS):
        for exe in execs:
            q.ext_oneapi_graph(exe).wait()
    for got, ref in zip(host_values(a, b, c), want, strict=True):
        np.testing.assert_array_equal(got, ref)


# -- sub-graphs -----------------------------------------------------------------------------

def test_sub_graph(q, mem, mode):
    """DPC++'s sub_graph: a finalized graph run as a node of another, many times."""
    mod = 7
    a, b, c = (mem.of(np.arange(s, s + N, dtype=np.int32)) for s in (1, 10, 1000))
    out = mem.of(np.arange(1000, 1000 + N, dtype=np.int32))
    ra, rb, rc, ro = host_values(a, b, c, out)
    for _ in range(ITERATIONS):
        ra += mod
        rb += mod
        rc = ra + rb - mod
        ro = rc + mod

    def add(i):
        c[i] = a[i] + b[i]

    def sub_mod(i):
        c[i] = c[i] - mod

    def add_mod(i):
        a[i] = a[i] + mod
        b[i] = b[i] + mod

    def out_k(i):
        out[i] = c[i] + mod

    r = sycl.range(N)
    sub = syclexp.command_graph(q)
    main = syclexp.command_graph(q)
    if mode == "explicit":
        s0 = sub.add(lambda h: h.parallel_for(r, add))
        sub.add(lambda h: h.parallel_for(r, sub_mod), [syclexp.property.node.depends_on(s0)])
        sub_exe = sub.finalize()
        m0 = main.add(lambda h: h.parallel_for(r, add_mod))
        m1 = main.add(lambda h: h.ext_oneapi_graph(sub_exe), [syclexp.property.node.depends_on(m0)])
        main.add(lambda h: h.parallel_for(r, out_k), [syclexp.property.node.depends_on(m1)])
    else:
        with sub.recording(q):
            q.parallel_for(r, sub_mod, depends_on=q.parallel_for(r, add))
        sub_exe = sub.finalize()
        with main.recording(q):
            e = q.parallel_for(r, add_mod)
            e = q.submit(lambda h: (h.depends_on(e), h.ext_oneapi_graph(sub_exe)))
            q.parallel_for(r, out_k, depends_on=e)
    assert main.get_nodes()[1].get_type() is nt.subgraph
    exe = main.finalize()
    for _ in range(ITERATIONS):
        q.ext_oneapi_graph(exe)
    q.wait()
    for got, ref in zip(host_values(a, b, c, out), (ra, rb, rc, ro), strict=True):
        np.testing.assert_array_equal(got, ref)
    q.ext_oneapi_graph(sub_exe).wait()  # the sub-graph still runs on its own
    np.testing.assert_array_equal(host_values(c)[0], ra + rb - mod)


def test_nested_sub_graphs(q, mem):
    a = mem.zeros(1, np.int32)

    def inc():
        a[0] = a[0] + 1

    def dbl():
        a[0] = a[0] * 2

    inner = syclexp.command_graph(q)
    inner.add(lambda h: h.single_task(inc))
    inner_exe = inner.finalize()
    middle = syclexp.command_graph(q)
    n = middle.add(lambda h: h.ext_oneapi_graph(inner_exe))
    middle.add(lambda h: h.single_task(dbl), [syclexp.property.node.depends_on(n)])
    middle_exe = middle.finalize()
    outer = syclexp.command_graph(q)
    n = outer.add(lambda h: h.ext_oneapi_graph(middle_exe))
    outer.add(lambda h: h.ext_oneapi_graph(inner_exe), [syclexp.property.node.depends_on(n)])
    exe = outer.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    q.wait()
    v = 0
    for _ in range(3):
        v = (v + 1) * 2 + 1
    assert np.asarray(a)[0] == v


# -- host tasks -----------------------------------------------------------------------------

def test_host_task_between_kernels(q, mem, mode):
    """DPC++'s host_task: kernel, host task, kernel, replayed back to back."""
    mod = 7
    a = mem.of(np.arange(1, N + 1, dtype=np.int32))
    b = mem.of(np.arange(10, N + 10, dtype=np.int32))
    c = mem.of(np.arange(1000, N + 1000, dtype=np.int32))
    ra, rb, rc = host_values(a, b, c)
    for _ in range(ITERATIONS):
        rc += ra + rb + mod + 1

    def add(i):
        c[i] = c[i] + a[i] + b[i]

    def on_host():
        view = np.asarray(c)[:N]
        view += mod

    def inc(i):
        c[i] = c[i] + 1

    r = sycl.range(N)
    g = syclexp.command_graph(q)
    if mode == "explicit":
        n0 = g.add(lambda h: h.parallel_for(r, add))
        n1 = g.add(lambda h: h.host_task(on_host), [syclexp.property.node.depends_on(n0)])
        g.add(lambda h: h.parallel_for(r, inc), [syclexp.property.node.depends_on(n1)])
    else:
        with g.recording(q):
            e = q.parallel_for(r, add)
            e = q.submit(lambda h: (h.depends_on(e), h.host_task(on_host)))
            q.parallel_for(r, inc, depends_on=e)
    exe = g.finalize()
    for _ in range(ITERATIONS):
        q.submit(lambda h: h.ext_oneapi_graph(exe))
    q.wait_and_throw()
    np.testing.assert_array_equal(host_values(c)[0], rc)


def test_host_tasks_split_only_where_needed(q, mem):
    """Independent GPU nodes go before a host task; the graph is two segments."""
    a = mem.zeros(3, np.int32)
    seen = []

    def k0():
        a[0] = a[0] + 1

    def k1():
        a[1] = a[1] + 1

    g = syclexp.command_graph(q)
    n0 = g.add(lambda h: h.single_task(k0))
    g.add(lambda h: h.host_task(lambda: seen.append(int(np.asarray(a)[0]))),
          [syclexp.property.node.depends_on(n0)])
    g.add(lambda h: h.single_task(k1))
    exe = g.finalize()
    kinds = [type(s).__name__ for s in exe._steps]
    assert kinds == ["GpuStep", "HostStep"]
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert seen == [1, 2, 3] and list(np.asarray(a)[:2]) == [3, 3]


# -- profiling ------------------------------------------------------------------------------

def test_profiling():
    pq = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    a = sycl.malloc_shared(N, np.int32, pq)
    pq.fill(a, np.int32(0), N).wait()

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(pq)
    first = g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    # an edge: nodes without one may run at once, and both write `a`
    g.add(lambda h: h.parallel_for(sycl.range(N), inc),
          [syclexp.property.node.depends_on(first)])
    plain = g.finalize()
    timed = g.finalize([syclexp.property.graph.enable_profiling()])
    e = pq.ext_oneapi_graph(plain)
    e.wait()
    invalid(lambda: e.get_profiling_info(sycl.info.event_profiling.command_start))
    for _ in range(3):
        e = pq.ext_oneapi_graph(timed)
        e.wait()
        submit, start, end = (e.get_profiling_info(p) for p in (
            sycl.info.event_profiling.command_submit, sycl.info.event_profiling.command_start,
            sycl.info.event_profiling.command_end))
        assert submit <= start < end
    assert (np.asarray(a)[:N] == 8).all()
    sycl.free(a, pq)


# -- threads --------------------------------------------------------------------------------

def test_threads_add_record_and_submit(q, mem):
    """7.7: nodes added from several threads at once all land; replays from several
    threads all run."""
    a = mem.zeros(8, np.int32)
    g = syclexp.command_graph(q)

    def adder(k):
        def put():  # the nodes have no edges and may run at once: add atomically
            sycl.atomic_ref(a + k).fetch_add(k)
        for _ in range(5):
            g.add(lambda h: h.single_task(put))

    threads = [threading.Thread(target=adder, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(g.get_nodes()) == 40
    exe = g.finalize()

    def submit():
        for _ in range(5):
            q.ext_oneapi_graph(exe)

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.wait()
    assert list(np.asarray(a)[:8]) == [k * 5 * 20 for k in range(8)]


# -- barriers only where the DAG has edges ---------------------------------------------------

def barriers(exe):
    return [d.barrier for s in exe._steps if hasattr(s, "recording") for d in s.dispatches]


def test_independent_nodes_share_a_barrier(q, mem):
    """Eight independent kernels then a join: one barrier before the eight, one before the
    join; results hold over replays."""

    parts = [mem.zeros(N, np.int32) for _ in range(8)]
    total = mem.zeros(N, np.int32)

    def adder(p, k):
        def body(i):
            p[i] = p[i] + k
        return body

    g = syclexp.command_graph(q)
    bodies = [adder(p, k + 1) for k, p in enumerate(parts)]
    nodes = [g.add(lambda h, b=b: h.parallel_for(sycl.range(N), b)) for b in bodies]
    p0, p7 = parts[0], parts[7]

    def sum2(i):
        total[i] = total[i] + p0[i] + p7[i]

    g.add(lambda h: h.parallel_for(sycl.range(N), sum2),
          [syclexp.property.node.depends_on(*nodes)])
    exe = g.finalize()
    want = [True] + [False] * 7 + [True]
    assert barriers(exe) == want
    for _ in range(20):
        q.ext_oneapi_graph(exe)
    q.wait()
    for k, p in enumerate(parts):
        assert (np.asarray(p)[:N] == 20 * (k + 1)).all()
    assert (np.asarray(total)[:N] == sum(r * 1 + r * 8 for r in range(1, 21))).all()


def test_a_dependency_through_nodes_without_gpu_work_keeps_its_barrier(q, mem):
    """kernel -> empty node -> kernel, and kernel -> recorded barrier -> kernel: the
    second kernel depends on the first through a node that records no dispatch, so it
    keeps its barrier (a GPU would otherwise run the two at once; lavapipe runs
    dispatches one by one and would not show it)."""
    a = mem.zeros(N, np.int32)

    def add(i):
        a[i] = a[i] + 1

    def double(i):
        a[i] = a[i] * 2

    g = syclexp.command_graph(q)
    first = g.add(lambda h: h.parallel_for(sycl.range(N), add))
    empty = g.add([syclexp.property.node.depends_on(first)])
    g.add(lambda h: h.parallel_for(sycl.range(N), double),
          [syclexp.property.node.depends_on(empty)])
    exe = g.finalize()
    assert barriers(exe) == [True, True]
    q.ext_oneapi_graph(exe).wait()
    assert (np.asarray(a)[:N] == 2).all()

    recorded = syclexp.command_graph(q)
    ordered = sycl.queue(q.get_context(), q.get_device())
    with recorded.recording(ordered):
        e = ordered.parallel_for(sycl.range(N), add)
        b = ordered.ext_oneapi_submit_barrier([e])
        ordered.parallel_for(sycl.range(N), double, depends_on=b)
    exe = recorded.finalize()
    assert barriers(exe) == [True, True]
    q.ext_oneapi_graph(exe).wait()
    assert (np.asarray(a)[:N] == 6).all()


def test_diamond_levels_and_sub_graph_chains(q, mem, diamond_reference):
    a, b, c = abc(mem)
    g = syclexp.command_graph(q)
    add_diamond(g, a, b, c)
    exe = g.finalize()
    assert barriers(exe) == [True, True, False, True]
    parent = syclexp.command_graph(q)
    x = mem.zeros(1, np.int32)

    def other():
        x[0] = x[0] + 1

    parent.add(lambda h: h.ext_oneapi_graph(exe))
    parent.add(lambda h: h.single_task(other))
    pexe = parent.finalize()
    # the sub-graph's own nodes keep their order: its steps are levels of their own
    assert barriers(pexe) == [True, False, True, True, True]
    want = diamond_reference(3, *host_values(a, b, c))
    for _ in range(3):
        q.ext_oneapi_graph(pexe)
    q.wait()
    for got, ref in zip(host_values(a, b, c), want, strict=True):
        np.testing.assert_array_equal(got, ref)
    assert np.asarray(x)[0] == 3


def test_devices_without_graph_support(tmp_path):
    """Devices reporting neither graph aspect refuse graphs; with ext_oneapi_limited_graph
    alone, graphs work but cannot be updatable (VKSYCL_HIDE_ASPECTS emulates both)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "probe.py"
    script.write_text(
        "import vksycl as sycl\n"
        "from vksycl.ext.oneapi import experimental as syclexp\n"
        "q = sycl.queue()\n"
        "try:\n"
        "    g = syclexp.command_graph(q)\n"
        "except sycl.exception as e:\n"
        "    print('graph', e.code() == sycl.errc.invalid); raise SystemExit\n"
        "g.finalize()\n"
        "try:\n"
        "    g.finalize([syclexp.property.graph.updatable()])\n"
        "    print('updatable')\n"
        "except sycl.exception as e:\n"
        "    print('update', e.code() == sycl.errc.invalid)\n")
    root = str(Path(__file__).parent.parent)

    def run(hidden: str) -> str:
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "VKSYCL_HIDE_ASPECTS": hidden, "PYTHONPATH": path}
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env, timeout=120, check=True).stdout.strip()

    assert run("ext_oneapi_graph,ext_oneapi_limited_graph") == "graph True"
    assert run("ext_oneapi_graph") == "update True"
    assert run("") == "updatable"
    invalid(lambda: syclexp.command_graph(sycl.queue()).begin_recording(
        sycl.queue(), [syclexp.property.graph.updatable()]))


def test_threads_record_from_their_own_queues(q, mem):
    """7.7: queues recorded from several threads at once into one graph."""
    a = mem.zeros(4, np.int32)
    g = syclexp.command_graph(q)
    queues = [sycl.queue(q.get_context(), q.get_device(),
                         property_list=[sycl.property.queue.in_order()]) for _ in range(4)]
    g.begin_recording(queues)

    def record(k):
        def bump():
            a[k] = a[k] * 2 + 1
        for _ in range(10):
            queues[k].single_task(bump)

    threads = [threading.Thread(target=record, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    g.end_recording()
    assert len(g.get_nodes()) == 40 and len(g.get_root_nodes()) == 4
    q.ext_oneapi_graph(g.finalize()).wait()
    assert list(np.asarray(a)[:4]) == [2 ** 10 - 1] * 4


def test_a_failing_command_group_adds_nothing(q, mem):
    """7.8: an exception in a command group leaves the graph as it was."""
    a = mem.zeros(1, np.int32)
    g = syclexp.command_graph(q)
    first = g.add()

    def broken(h):
        h.memset(a, 0, 4)
        raise RuntimeError("user error")

    with pytest.raises(RuntimeError):
        g.add(broken, [syclexp.property.node.depends_on(first)])
    invalid(lambda: g.add(lambda h: h.memset(a, 0, 1 << 20)))  # out of bounds
    assert g.get_nodes() == [first] and first.get_successors() == []
    with g.recording(q), pytest.raises(sycl.exception):
        q.memset(a, 0, 1 << 20)
    assert g.get_nodes() == [first]
    q.ext_oneapi_graph(g.finalize()).wait()


REPLAYED = syclexp.device_global(sycl.int32)


def test_kernels_using_a_device_global_replay_and_copies_to_one_are_refused(q, mem):
    """Kernels in a graph reach device_globals as eager ones do; copies to and from a
    device_global cannot be nodes (7.12.4), recorded or added, and nothing is added."""
    out = mem.zeros(1, np.int32)
    q.copy(np.zeros(1, np.int32), REPLAYED, 1).wait()

    def bump():
        REPLAYED.set(REPLAYED.get() + 1)
        out[0] = REPLAYED.get()

    g = syclexp.command_graph(q)
    with g.recording(q):
        q.single_task(bump)
    exe = g.finalize()
    for _ in range(7):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert out[0] == 7
    got = np.zeros(1, np.int32)
    q.copy(REPLAYED, got, 1).wait()
    assert got[0] == 7

    src = np.array([42], np.int32)
    g2 = syclexp.command_graph(q)
    with g2.recording(q):
        assert "device_global" in invalid(lambda: q.copy(src, REPLAYED, 1))
        assert "device_global" in invalid(lambda: q.memcpy(got, REPLAYED))
    assert "device_global" in invalid(lambda: g2.add(lambda h: h.copy(src, REPLAYED, 1)))
    assert g2.get_nodes() == []
    q.copy(REPLAYED, got, 1).wait()
    assert got[0] == 7
