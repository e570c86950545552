"""Executable graph update (sycl_ext_oneapi_graph 7.4, 7.5.2): dynamic parameters
(scalars and USM pointers), ranges, dynamic command groups and whole-graph update, after
DPC++'s sycl/test-e2e/Graph/Update tests. An update never compiles: it writes a node's
new arguments into the graph's memory, from the host where nothing can still read the old
ones, on the device ahead of the next submission where every submission that may read
them is already on its way to the device, else records again."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import plans
from vksycl.runtime.context import scheduler_for

sys.path.append(str(Path(__file__).parent))  # the busy kernel beside this file
from busy_kernel import busy

N = 256
WG = 32
dep = syclexp.property.node.depends_on
updatable = syclexp.property.graph.updatable


@syclexp.nd_range_kernel(1)
def add_scalar(ptr: sycl.ptr[sycl.int32], value: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = ptr[i] + value


@syclexp.nd_range_kernel(1)
def mul_scalar(ptr: sycl.ptr[sycl.int32], value: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = ptr[i] * value


@syclexp.single_task_kernel
def store(ptr: sycl.ptr[sycl.int32], value: sycl.int32):
    ptr[0] = value


def kernel(q, f):
    b = syclexp.get_kernel_bundle(q.get_context(), f, sycl.bundle_state.executable)
    return b.ext_oneapi_get_kernel(f)


def invalid(call) -> str:
    with pytest.raises(sycl.exception) as ei:
        call()
    assert ei.value.code() == sycl.errc.invalid, ei.value
    return str(ei.value)


def values(p, n=N):
    return np.asarray(p)[:n].copy()


def adding_node(q, a):
    """An updatable graph of one node adding a dynamic parameter (1 at first) to `a`:
    the parameter, the node and the executable graph."""
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 1)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_args(a, value), h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    return value, n, g.finalize([updatable()])


def pending_run(q, mem, exe) -> sycl.event:
    """A submission of `exe` on the device behind a busy kernel: pending for as long as
    a test's updates take."""
    busy(q, mem.zeros(4, np.uint32), 64)
    return q.ext_oneapi_graph(exe)


def queued_write(q, mem):
    """A one-node graph (`adding_node`) submitted behind a busy kernel, then updated to 5
    while that submission is pending: the update waits as a device write for the next
    submission. (a, value, node, exe)."""
    a = mem.zeros(N, np.int32)
    value, n, exe = adding_node(q, a)
    pending_run(q, mem, exe)
    value.update(5)
    exe.update(n)
    assert list(exe._writes) == [0]
    return a, value, n, exe


def test_scalar_dynamic_parameter(q, mem):
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 3)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_arg(0, a), h.set_arg(1, value),
                         h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    exe = g.finalize([updatable()])
    frozen = g.finalize([updatable()])  # never updated: keeps 3
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 3).all()
    value.update(10)
    q.ext_oneapi_graph(exe).wait()  # not updated yet: still 3
    assert (values(a) == 6).all()
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 16).all()
    q.ext_oneapi_graph(frozen).wait()
    assert (values(a) == 19).all()
    q.ext_oneapi_graph(g.finalize()).wait()  # a new executable graph: the current value
    assert (values(a) == 29).all()


def test_pointer_dynamic_parameter_shared_by_nodes(q, mem):
    """One dynamic parameter registered with two nodes (a pointer both use): one update
    keeps them consistent (7.5.2, Parameter Updates)."""
    a, b = mem.zeros(N, np.int32), mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    target = syclexp.dynamic_parameter(g, a)
    add, mul = kernel(q, add_scalar), kernel(q, mul_scalar)
    r = sycl.nd_range((N,), (WG,))
    n1 = g.add(lambda h: (h.set_args(target, 5), h.parallel_for(r, add)))
    n2 = g.add(lambda h: (h.set_args(target, 3), h.parallel_for(r, mul)), [dep(n1)])
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 15).all() and (values(b) == 0).all()
    target.update(b)
    exe.update([n1, n2])
    for _ in range(2):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert (values(a) == 15).all() and (values(b) == 60).all()  # (0+5)*3, then (15+5)*3


def test_update_between_replays_in_flight(q, mem):
    """Submissions made before an update keep the old value; the update does not wait
    for them to run (7.5.2)."""
    a = mem.zeros(N, np.int32)
    value, n, exe = adding_node(q, a)
    total = 0
    for step in range(1, 21):
        for _ in range(10):
            q.ext_oneapi_graph(exe)
            total += step
        value.update(step + 1)
        exe.update(n)
    q.wait()
    assert (values(a) == total).all()


def test_update_never_compiles(q, mem, monkeypatch):
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 1)
    ptr = syclexp.dynamic_parameter(g, a)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_args(ptr, value), h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    engine = scheduler_for(q.get_device()).engine
    pipelines = len(engine._pipelines)

    def no_compiling(*args, **kwargs):
        raise AssertionError("an update compiled a kernel")

    monkeypatch.setattr(plans, "load_or_compile", no_compiling)
    b = mem.zeros(N, np.int32)
    for v in range(2, 12):
        value.update(v)
        ptr.update(b if v % 2 else a)
        exe.update(n)
        q.ext_oneapi_graph(exe)
    q.wait()
    assert len(engine._pipelines) == pipelines
    assert (values(a) == 1 + 2 + 4 + 6 + 8 + 10).all()
    assert (values(b) == 3 + 5 + 7 + 9 + 11).all()


def test_update_range_and_nd_range(q, mem):
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    n = g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    k = kernel(q, add_scalar)
    m = g.add(lambda h: (h.set_args(a, 10), h.parallel_for(sycl.nd_range((N,), (WG,)), k)),
              [dep(n)])
    exe = g.finalize([updatable()])
    n.update_range(sycl.range(N // 2))
    m.update_nd_range(sycl.nd_range((N // 4,), (WG,)))
    exe.update([n, m])
    q.ext_oneapi_graph(exe).wait()
    want = np.zeros(N, np.int32)
    want[: N // 2] += 1
    want[: N // 4] += 10
    np.testing.assert_array_equal(values(a), want)
    invalid(lambda: n.update_range(sycl.range(4, 4)))       # other dimensions
    invalid(lambda: n.update_nd_range(sycl.range(4)))       # not an nd_range
    invalid(lambda: m.update_range(sycl.nd_range((4,), (4,))))
    empty = g.add()
    invalid(lambda: empty.update_range(sycl.range(4)))      # not a kernel node
    single = g.add(lambda h: h.single_task(lambda: None))
    invalid(lambda: single.update_range(sycl.range(4)))


def test_update_nd_range_of_free_function_kernel_nodes(q, mem):
    """Nodes from `syclexp.nd_launch`, added explicitly and recorded, take a new nd_range
    with the arguments they were launched with; nothing is compiled again (both new ranges
    still hold `coarsen.COARSEN` work-groups or more: a smaller one runs the kernel's
    variant without coarsening, which the first launch of such a range compiles)."""
    a = mem.zeros(N, np.int32)
    b = mem.zeros(N, np.int32)
    kf = syclexp.kernel_function(add_scalar)
    full = sycl.nd_range((N,), (WG,))
    g = syclexp.command_graph(q)
    n = g.add(lambda h: syclexp.nd_launch(h, full, kf, a, 3))
    with g.recording(q):
        syclexp.nd_launch(q, full, kf, b, 5)
    (m,) = [x for x in g.get_nodes() if x is not n]
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    compiles = plans._PREPARED.copy()
    n.update_nd_range(sycl.nd_range((N // 2,), (WG,)))
    m.update_nd_range(sycl.nd_range((5 * N // 8,), (WG,)))
    exe.update([n, m])
    q.ext_oneapi_graph(exe).wait()
    assert compiles == plans._PREPARED
    want_a = np.full(N, 3, np.int32)
    want_a[: N // 2] += 3
    want_b = np.full(N, 5, np.int32)
    want_b[: 5 * N // 8] += 5
    np.testing.assert_array_equal(values(a), want_a)
    np.testing.assert_array_equal(values(b), want_b)
    invalid(lambda: n.update_nd_range(sycl.nd_range((4, 4), (2, 2))))  # other dimensions


def test_dynamic_command_group(q, mem):
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 2)
    add, mul = kernel(q, add_scalar), kernel(q, mul_scalar)
    r = sycl.nd_range((N,), (WG,))

    def twice(i):
        a[i] = a[i] + a[i]

    dcg = syclexp.dynamic_command_group(g, [
        lambda h: (h.set_args(a, value), h.parallel_for(r, add)),
        lambda h: (h.set_args(a, value), h.parallel_for(r, mul)),
        lambda h: h.parallel_for(sycl.range(N // 2), twice),
    ])
    assert dcg.get_active_index() == 0
    n = g.add(dcg)
    assert n.get_type() is syclexp.node_type.kernel
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 2).all()
    dcg.set_active_index(1)
    dcg.set_active_index(1)  # the active one again: nothing
    value.update(5)  # reaches the inactive command groups too
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 10).all()
    dcg.set_active_index(2)
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a)[: N // 2] == 20).all() and (values(a)[N // 2:] == 10).all()
    n.update_range(sycl.range(N))  # the active command group's range
    dcg.set_active_index(0)
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a)[: N // 2] == 25).all()
    dcg.set_active_index(2)  # keeps the range it was updated to
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a)[: N // 2] == 50).all() and (values(a)[N // 2:] == 30).all()
    invalid(lambda: dcg.set_active_index(3))
    invalid(lambda: dcg.set_active_index(-1))


def test_dynamic_command_group_errors(q, mem):
    a = mem.zeros(N, np.int32)
    g, other = syclexp.command_graph(q), syclexp.command_graph(q)
    invalid(lambda: syclexp.dynamic_command_group(g, []))
    invalid(lambda: syclexp.dynamic_command_group(g, [lambda h: h.memset(a, 0, 4)]))
    invalid(lambda: syclexp.dynamic_command_group(g, [lambda h: None]))
    dcg = syclexp.dynamic_command_group(other, [lambda h: h.single_task(lambda: None)])
    invalid(lambda: g.add(dcg))
    with g.recording(q):
        e1 = q.single_task(lambda: None)
        e2 = q.single_task(lambda: None)
    mixed = syclexp.dynamic_command_group(g, [
        lambda h: (h.depends_on(e1), h.single_task(lambda: None)),
        lambda h: (h.depends_on(e2), h.single_task(lambda: None))])
    invalid(lambda: g.add(mixed))
    same = syclexp.dynamic_command_group(g, [
        lambda h: (h.depends_on(e1), h.single_task(lambda: None)),
        lambda h: (h.depends_on(e1), h.single_task(lambda: None))])
    assert g.add(same).get_predecessors() == [syclexp.node.get_node_from_event(e1)]


def test_dynamic_parameter_errors(q, mem):
    a = mem.zeros(N, np.int32)
    g, other = syclexp.command_graph(q), syclexp.command_graph(q)
    dp = syclexp.dynamic_parameter(g, 1)
    k = kernel(q, add_scalar)
    r = sycl.nd_range((N,), (WG,))
    invalid(lambda: syclexp.dynamic_parameter(q, 1))
    # in a normal submission, and in a recorded one
    invalid(lambda: q.submit(lambda h: (h.set_args(a, dp), h.parallel_for(r, k))))
    with g.recording(q):
        invalid(lambda: q.submit(lambda h: (h.set_args(a, dp), h.parallel_for(r, k))))
    # the node's graph is not the parameter's
    invalid(lambda: other.add(lambda h: (h.set_args(a, dp), h.parallel_for(r, k))))
    # a command group that is no kernel
    invalid(lambda: g.add(lambda h: (h.set_arg(0, dp), h.memset(a, 0, 4))))
    assert g.get_nodes() == [] and other.get_nodes() == []


def test_update_errors(q, mem):
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_args(a, 1), h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    m = g.add(lambda h: h.memset(a, 0, 4))
    fixed = g.finalize()
    assert "updatable" in invalid(lambda: fixed.update(n))
    invalid(lambda: fixed.update(g))
    exe = g.finalize([updatable()])
    invalid(lambda: exe.update(m))  # not a kernel node
    later = g.add(lambda h: h.single_task(lambda: None))
    assert "not part" in invalid(lambda: exe.update(later))
    other = syclexp.command_graph(q)
    foreign = other.add(lambda h: h.single_task(lambda: None))
    invalid(lambda: exe.update([n, foreign]))
    invalid(lambda: exe.update("n"))
    exe.update(n)  # nothing changed: not an error


def make_pipeline(q, g, ptr, add, scale):
    """Two kernel nodes behind an empty node: what whole-graph update pairs up."""
    k_add, k_mul = kernel(q, add_scalar), kernel(q, mul_scalar)
    r = sycl.nd_range((N,), (WG,))
    n1 = g.add(lambda h: (h.set_args(ptr, add), h.parallel_for(r, k_add)))
    e = g.add([dep(n1)])
    g.add(lambda h: (h.set_args(ptr, scale), h.parallel_for(r, k_mul)), [dep(e)])


def test_whole_graph_update(q, mem):
    a, b = mem.zeros(N, np.int32), mem.zeros(N, np.int32)
    g1, g2 = syclexp.command_graph(q), syclexp.command_graph(q)
    make_pipeline(q, g1, a, 1, 2)
    make_pipeline(q, g2, b, 3, 4)
    exe = g1.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    exe.update(g2)
    for _ in range(2):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert (values(a) == 2).all() and (values(b) == (3 * 4 + 3) * 4).all()


def test_whole_graph_update_with_dynamic_parameters(q, mem):
    """Earlier updates of a source graph's dynamic parameters come along (7.5.2)."""
    a = mem.zeros(N, np.int32)
    g1, g2 = syclexp.command_graph(q), syclexp.command_graph(q)
    make_pipeline(q, g1, a, 1, 1)
    v = syclexp.dynamic_parameter(g2, 1)
    make_pipeline(q, g2, a, v, 3)
    v.update(7)
    exe = g1.finalize([updatable()])
    exe.update(g2)
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 21).all()


def test_whole_graph_update_errors(q, mem):
    a = mem.zeros(N, np.int32)
    g1 = syclexp.command_graph(q)
    make_pipeline(q, g1, a, 1, 2)
    exe = g1.finalize([updatable()])
    fewer = syclexp.command_graph(q)
    fewer.add()
    assert "topologically" in invalid(lambda: exe.update(fewer))
    rewired = syclexp.command_graph(q)
    make_pipeline(q, rewired, a, 1, 2)
    rewired.make_edge(rewired.get_nodes()[0], rewired.get_nodes()[2])
    invalid(lambda: exe.update(rewired))
    with_host = syclexp.command_graph(q)
    make_pipeline(q, with_host, a, 1, 2)
    with_host.add(lambda h: h.host_task(lambda: None))
    assert "host_task" in invalid(lambda: exe.update(with_host))
    other_kernels = syclexp.command_graph(q)
    k_mul, k_add = kernel(q, mul_scalar), kernel(q, add_scalar)
    r = sycl.nd_range((N,), (WG,))
    n1 = other_kernels.add(lambda h: (h.set_args(a, 1), h.parallel_for(r, k_mul)))
    e = other_kernels.add([dep(n1)])
    other_kernels.add(lambda h: (h.set_args(a, 1), h.parallel_for(r, k_add)), [dep(e)])
    invalid(lambda: exe.update(other_kernels))
    elsewhere = syclexp.command_graph(sycl.context(q.get_device()), q.get_device())
    invalid(lambda: exe.update(elsewhere))


def test_recorded_graph_range_update(q, mem):
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    with g.recording(q):
        e = q.parallel_for(sycl.range(N), inc)
    exe = g.finalize([updatable()])
    node = syclexp.node.get_node_from_event(e)
    node.update_range(sycl.range(8))
    exe.update(node)
    q.ext_oneapi_graph(exe).wait()
    assert values(a)[:8].tolist() == [1] * 8 and (values(a)[8:] == 0).all()


def test_single_task_pointer_update(q, mem):
    outs = [mem.zeros(1, np.int32) for _ in range(4)]
    g = syclexp.command_graph(q)
    where = syclexp.dynamic_parameter(g, outs[0])
    what = syclexp.dynamic_parameter(g, 0)
    k = kernel(q, store)
    n = g.add(lambda h: (h.set_arg(0, where), h.set_arg(1, what), h.single_task(k)))
    exe = g.finalize([updatable()])
    for i, out in enumerate(outs):
        where.update(out)
        what.update(100 + i)
        exe.update(n)
        q.ext_oneapi_graph(exe)
    q.wait()
    assert [int(np.asarray(o)[0]) for o in outs] == [100, 101, 102, 103]


def _chain_of_20_in(g, q, a, factor):
    """20 dependent nodes of `g` adding 1 to `a`, the middle one multiplying by `factor`
    (a dynamic parameter of `g`)."""
    k_add, k_mul = kernel(q, add_scalar), kernel(q, mul_scalar)
    r = sycl.nd_range((N,), (WG,))
    nodes = []
    for j in range(20):
        props = [dep(nodes[-1])] if nodes else []
        if j == 10:
            nodes.append(g.add(lambda h: (h.set_args(a, factor), h.parallel_for(r, k_mul)),
                               props))
        else:
            nodes.append(g.add(lambda h: (h.set_args(a, 1), h.parallel_for(r, k_add)), props))
    return g, nodes


def test_updates_split_long_segments_around_the_updated_node(q, mem):
    """A 20-node chain updated in its middle node while its submissions wait, one after
    another, behind a host task: the update cannot rewrite what they will read, so the
    segment is split once into the nodes before, the node, and the nodes after, and later
    updates record one dispatch. Each submission runs the value it was submitted with."""
    import threading

    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, 1)
    g, nodes = _chain_of_20_in(g, q, a, factor)
    exe = g.finalize([updatable()])
    assert len(exe._steps) == 1
    gate = threading.Event()
    last = q.submit(lambda h: h.host_task(lambda: gate.wait(30)))
    last = q.submit(lambda h: (h.depends_on(last), h.ext_oneapi_graph(exe)))
    want = 19
    for v in range(2, 9):
        factor.update(v)
        exe.update(nodes[10])
        last = q.submit(lambda h, e=last: (h.depends_on(e), h.ext_oneapi_graph(exe)))
        want = ((want + 10) * v + 9) % (1 << 32)
        assert [len(s.dispatches) for s in exe._steps] == [10, 1, 9]
    gate.set()
    q.wait()
    assert (values(a) == np.int64(want).astype(np.int32)).all()


def test_updates_rewrite_arguments_without_recording(q, mem, monkeypatch):
    """A node given a dynamic parameter reads its arguments from the graph's memory:
    updated between replays that completed, its new value is written there, and no
    segment is split or recorded again."""
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, 1)
    g, nodes = _chain_of_20_in(g, q, a, factor)
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    [step] = exe._steps
    recording = step.recording

    def no_recording(*args, **kwargs):
        raise AssertionError("an update recorded a segment")

    monkeypatch.setattr(exe, "_record", no_recording)
    want = 19
    for v in [3, 0, 7, -2, 5]:
        factor.update(v)
        exe.update(nodes[10])
        q.ext_oneapi_graph(exe).wait()
        want = ((want + 10) * v + 9) % (1 << 32)
        assert exe._steps == [step] and step.recording is recording
        assert (values(a) == np.int64(want).astype(np.int32)).all()


def test_update_after_a_deferred_submission(q, mem):
    """A submission waiting for a host task's predecessor still runs the graph as it was
    when submitted (7.5.2: updates do not affect previous submissions)."""
    import threading

    a = mem.zeros(N, np.int32)
    gate = threading.Event()
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 1)
    k = kernel(q, add_scalar)
    h0 = g.add(lambda h: h.host_task(lambda: gate.wait(30)))
    n = g.add(lambda h: (h.set_args(a, value), h.parallel_for(sycl.nd_range((N,), (WG,)), k)),
              [dep(h0)])
    exe = g.finalize([updatable()])
    first = q.ext_oneapi_graph(exe)  # held at its host task
    value.update(100)
    exe.update(n)
    second = q.ext_oneapi_graph(exe)
    gate.set()
    sycl.event.wait([first, second])
    assert (values(a) == 101).all()


def test_updates_reuse_command_buffers(q, mem, monkeypatch):
    """An update that records (here a range changing each time) records the changed
    segment into sequences the replaced recording gave back, not into new command
    buffers; results stay right over updates in flight."""
    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_args(a, 1), h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    exe = g.finalize([updatable()])
    engine = scheduler_for(q.get_device()).engine
    want = np.zeros(N, np.int32)

    def updates(steps) -> None:
        for v in steps:  # four submissions in flight at most
            size = N if v % 2 else N // 2
            n.update_nd_range(sycl.nd_range((size,), (WG,)))
            exe.update(n)
            q.ext_oneapi_graph(exe)
            want[:size] += 1
            if v % 4 == 0:
                q.wait()
        q.wait()

    # warm, as long as what is counted: the engine's pool (which other work shares) then
    # holds as many sequences as the pattern has in flight
    updates(range(1, 41))
    made = []

    class Counting:  # the engine's Kompute manager, counting the sequences it makes
        def __init__(self, manager):
            self._manager = manager

        def sequence(self, *args):
            made.append(args)
            return self._manager.sequence(*args)

        def __getattr__(self, name):
            return getattr(self._manager, name)

    monkeypatch.setattr(engine, "_manager", Counting(engine._manager))
    updates(range(41, 81))
    assert made == []
    np.testing.assert_array_equal(values(a), want)


def test_updates_while_submissions_run_write_the_slot_on_the_device(q, mem, monkeypatch):
    """Updates made while the graph's submissions, all handed to the device, may still
    read the node's slot: the next submission writes the new arguments there before its
    own dispatch, so nothing is recorded and no slot is taken, and every submission adds
    the values it was submitted with. Scalars and pointers both go through the slot."""
    a, b = mem.zeros(N, np.int32), mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 1)
    where = syclexp.dynamic_parameter(g, a)
    k = kernel(q, add_scalar)
    n = g.add(lambda h: (h.set_args(where, value), h.parallel_for(sycl.nd_range((N,), (WG,)),
                                                                   k)))
    exe = g.finalize([updatable()])
    pending_run(q, mem, exe)
    [step] = exe._steps
    recording = step.recording

    def no_recording(*args, **kwargs):
        raise AssertionError("an update recorded a segment")

    monkeypatch.setattr(exe, "_record", no_recording)
    want = {id(a): 1, id(b): 0}
    for v in range(2, 302):
        target = a if v % 3 else b
        value.update(v)
        where.update(target)
        exe.update(n)
        assert v > 2 or list(exe._writes) == [0]  # the first behind the busy kernel
        q.ext_oneapi_graph(exe)
        want[id(target)] += v
        if v % 50 == 0:
            q.wait()
    q.wait()
    assert (values(a) == want[id(a)]).all() and (values(b) == want[id(b)]).all()
    assert exe._steps == [step] and step.recording is recording
    assert len(exe._slots.buffers) == 1 and not exe._retired


def test_argument_slots_serve_again_once_submissions_are_done(q, mem):
    """Updates made while a submission waits for its dependencies cannot write the slot
    it will read, on the host or on the device: they take new slots. Once those
    submissions are done the old slots serve again, so the graph's argument memory stays
    one block over a hundred such updates."""
    import threading

    a = mem.zeros(N, np.int32)
    value, n, exe = adding_node(q, a)
    want = 0
    for v in range(2, 102):
        gate = threading.Event()
        held = q.submit(lambda h, gate=gate: h.host_task(lambda: gate.wait(30)))
        q.submit(lambda h, held=held: (h.depends_on(held), h.ext_oneapi_graph(exe)))
        want += v - 1  # the value it was submitted with
        value.update(v)
        exe.update(n)
        gate.set()
        if v % 8 == 0:
            q.wait()
    q.wait()
    assert (values(a) == want).all()
    assert len(exe._slots.buffers) == 1


def test_a_slot_written_from_the_host_is_not_overwritten_by_an_older_device_write(q, mem):
    """An update made while a submission ran queues its device write; the graph then goes
    idle before any submission carried it, and a newer update writes the slot from the
    host: the older write is dropped, not run by the next submission."""
    a, value, n, exe = queued_write(q, mem)
    q.wait()
    value.update(7)
    exe.update(n)  # idle: from the host
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 1 + 7).all()


def test_a_device_write_whose_submission_never_went_is_carried_by_the_next(q, mem):
    """A command group that fails after taking the graph never submits it: the slot write
    it carried goes with the next submission instead."""
    a, _, _, exe = queued_write(q, mem)

    def failing(h):
        h.ext_oneapi_graph(exe)
        raise RuntimeError("the command group fails")

    with pytest.raises(RuntimeError):
        q.submit(failing)
    q.wait()
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 1 + 5).all()


def test_a_graph_taken_in_as_a_sub_graph_runs_the_writes_its_arguments_wait_for(q, mem):
    """An update queued as a device write (a submission pending) when another graph takes
    the graph in: that graph runs the write before the graph's nodes, so it adds the new
    value; an update after that records the graph's own nodes again and leaves the other
    graph what it took in."""
    a, value, n, exe = queued_write(q, mem)
    outer = syclexp.command_graph(q)
    outer.add(lambda h: h.ext_oneapi_graph(exe))
    outer_exe = outer.finalize()
    value.update(9)
    exe.update(n)  # the other graph keeps 5
    q.wait()
    for _ in range(3):
        q.ext_oneapi_graph(outer_exe).wait()
    assert (values(a) == 1 + 3 * 5).all()
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 1 + 3 * 5 + 9).all()


def test_update_range_of_a_node_reading_its_arguments_from_memory(q, mem):
    """A range update changes the work-group counts recorded with the dispatch: the node
    is recorded again, and value updates after it (a range of the same compiled variant)
    are written in place again."""
    a = mem.zeros(N, np.int32)
    value, n, exe = adding_node(q, a)
    q.ext_oneapi_graph(exe).wait()
    n.update_nd_range(sycl.nd_range((N // 2,), (WG,)))
    exe.update(n)
    [step] = exe._steps
    q.ext_oneapi_graph(exe).wait()
    value.update(100)
    exe.update(n)
    assert exe._steps == [step]  # written in place
    q.ext_oneapi_graph(exe).wait()
    want = np.full(N, 1, np.int32)
    want[: N // 2] += 1 + 100
    np.testing.assert_array_equal(values(a), want)


def test_update_after_the_graph_became_a_sub_graph(q, mem):
    """A graph another graph took in as a node runs, in that graph, what it ran when it
    was taken in; updated afterwards, its own submissions run the new value, recorded
    again rather than rewritten where the other graph reads."""
    a = mem.zeros(N, np.int32)
    child = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(child, 1)
    k = kernel(q, add_scalar)
    n = child.add(lambda h: (h.set_args(a, value),
                             h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    child_exe = child.finalize([updatable()])
    parent = syclexp.command_graph(q)
    parent.add(lambda h: h.ext_oneapi_graph(child_exe))
    parent_exe = parent.finalize()
    for v in (5, 7):
        value.update(v)
        child_exe.update(n)
        q.ext_oneapi_graph(child_exe).wait()
        q.ext_oneapi_graph(parent_exe).wait()
    assert (values(a) == 5 + 1 + 7 + 1).all()


def test_replays_waited_for_one_by_one_record_each_segment_once(q, mem):
    """Waiting for a replay waits for its last segment; the fences of the others, done by
    then, are asked at the next replay before another copy of their segment is recorded,
    so a split graph replayed and waited for in turn records each segment once."""
    import threading

    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, 1)
    g, nodes = _chain_of_20_in(g, q, a, factor)
    exe = g.finalize([updatable()])
    gate = threading.Event()
    held = q.submit(lambda h: h.host_task(lambda: gate.wait(30)))
    q.submit(lambda h: (h.depends_on(held), h.ext_oneapi_graph(exe)))
    factor.update(2)
    exe.update(nodes[10])  # a submission pending: recorded again, split
    gate.set()
    q.wait()
    want = 19
    for _ in range(6):
        q.ext_oneapi_graph(exe).wait()
        want = (want + 10) * 2 + 9
    assert [len(s.dispatches) for s in exe._steps] == [10, 1, 9]
    assert [s.recording._count for s in exe._steps] == [1, 1, 1]
    assert (values(a) == want).all()


def test_an_update_while_a_submission_s_command_group_runs_leaves_it_its_values(q, mem):
    """A submission's command exists before its command group submits it (another thread
    may update meanwhile): an update then takes a new slot rather than rewriting the one
    that command reads."""
    a = mem.zeros(N, np.int32)
    value, n, exe = adding_node(q, a)

    def cgf(h):
        h.ext_oneapi_graph(exe)
        value.update(5)
        exe.update(n)

    q.submit(cgf).wait()
    assert (values(a) == 1).all()
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 6).all()


@syclexp.nd_range_kernel(1)
def sub_scalar(ptr: sycl.ptr[sycl.int32], value: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = ptr[i] - value


def test_switching_a_dynamic_command_group_to_a_kernel_never_compiles(q, mem, monkeypatch):
    """Finalize compiles the argument-block variant of the kernel each node runs; an
    update to a command group of another kernel records that kernel's push constants
    rather than compile its variant, and switching back finds the slot's variant. The
    rebuilds bringing new values make no argument ring (whose variant would compile):
    a graph's commands are never launched eagerly."""
    from vksycl.kernels import graph_arguments

    a = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    value = syclexp.dynamic_parameter(g, 3)
    r = sycl.nd_range((N,), (WG,))
    k_add, k_sub = kernel(q, add_scalar), kernel(q, sub_scalar)
    dcg = syclexp.dynamic_command_group(g, [
        lambda h: (h.set_args(a, value), h.parallel_for(r, k_add)),
        lambda h: (h.set_args(a, value), h.parallel_for(r, k_sub))])
    n = g.add(dcg)
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()

    def no_compiling(*args, **kwargs):
        raise AssertionError("an update compiled a kernel")

    monkeypatch.setattr(plans, "load_or_compile", no_compiling)
    monkeypatch.setattr(graph_arguments, "load_or_compile", no_compiling)
    want = 3
    for index, v in [(1, 1), (1, 2), (0, 10), (0, 20), (1, 5)]:
        dcg.set_active_index(index)
        value.update(v)
        exe.update(n)
        q.ext_oneapi_graph(exe).wait()
        want += v if index == 0 else -v
        assert (values(a) == want).all()


def test_an_update_failing_for_memory_leaves_the_node_its_slot(q, mem, monkeypatch):
    """An update that cannot take a new slot (the graph's memory runs out) raises and
    leaves the node reading the slot it had: no later update hands that slot to another
    node."""
    a, b = mem.zeros(N, np.int32), mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    pa, pb = syclexp.dynamic_parameter(g, 1), syclexp.dynamic_parameter(g, 1000)
    k = kernel(q, add_scalar)
    r = sycl.nd_range((N,), (WG,))
    n1 = g.add(lambda h: (h.set_args(a, pa), h.parallel_for(r, k)))
    n2 = g.add(lambda h: (h.set_args(b, pb), h.parallel_for(r, k)))
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    slots = exe._slots

    def out_of_memory(size):
        raise sycl.exception(sycl.errc.memory_allocation, "no memory for a slot")

    with monkeypatch.context() as m:
        m.setattr(slots, "_slot", out_of_memory)
        n1.update_nd_range(sycl.nd_range((N // 2,), (WG,)))  # other groups: a new slot
        with pytest.raises(sycl.exception) as err:
            exe.update(n1)
        assert err.value.code() == sycl.errc.memory_allocation
    n1.update_nd_range(r)
    q.ext_oneapi_graph(exe).wait()
    n2.update_nd_range(sycl.nd_range((N // 2,), (WG,)))
    exe.update(n2)  # takes a slot: never the one n1 reads
    q.ext_oneapi_graph(exe).wait()
    assert (values(a) == 3).all()
    want = np.full(N, 2000, np.int32)
    want[: N // 2] += 1000
    np.testing.assert_array_equal(values(b), want)


def test_a_replay_after_its_segment_s_submissions_failed_records_anew(q, mem):
    """Submissions a lost device failed never give their sequences back: a replay finding
    every copy of its segment failed records a new one rather than wait for them."""
    import threading
    import time

    a, out = mem.zeros(N, np.int32), mem.zeros(1, np.uint32)
    g = syclexp.command_graph(q)
    k = kernel(q, add_scalar)
    g.add(lambda h: (h.set_args(a, 1), h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    exe = g.finalize()
    busy(q, out, 256)  # the device busy: every copy of the segment stays in flight
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    recording = exe._steps[0].recording
    in_flight = list(recording._busy)
    assert len(in_flight) == 3
    deadline = time.monotonic() + 30
    while not all(s.finished or s._sequence.fence_signaled() for s in in_flight):
        assert time.monotonic() < deadline
        time.sleep(0.001)
    for s in in_flight:  # as a lost device leaves them (their work done, here)
        s.fail(sycl.errc.runtime, "the device was lost")
    replay = threading.Thread(target=lambda: q.ext_oneapi_graph(exe).wait(), daemon=True)
    replay.start()
    replay.join(30)
    assert not replay.is_alive(), "the replay waits for sequences that never come back"
    assert (values(a) == 4).all()
