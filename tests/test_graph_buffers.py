"""Buffers in command graphs (sycl_ext_oneapi_graph 7.11.3, 9.1.1): edges from accessors
by SYCL's rules in both APIs, the assume_buffer_outlives_graph and
assume_data_outlives_buffer promises, executable graphs in the buffers' eager dependency
tracking, dynamic parameters holding accessors, dynamic command groups with accessors,
and the errors, each raised before anything is recorded or runs. Values computed on the
device."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

N = 64
WG = 16
OUTLIVES = syclexp.property.graph.assume_buffer_outlives_graph
DATA_OUTLIVES = syclexp.property.graph.assume_data_outlives_buffer
updatable = syclexp.property.graph.updatable
READ, WRITE = sycl.access_mode.read, sycl.access_mode.write


def invalid(call) -> str:
    with pytest.raises(sycl.exception) as ei:
        call()
    assert ei.value.code() == sycl.errc.invalid, ei.value
    return str(ei.value)


def contents(buf) -> np.ndarray:
    with sycl.host_accessor(buf, sycl.read_only) as v:
        return np.array(v)


def graph(q, *props):
    return syclexp.command_graph(q, [p() for p in props])


def buffer_of(values, dtype=np.int32):
    """A buffer over a copy of `values` that does not write back (graphs need that of
    buffers they write)."""
    buf = sycl.buffer(np.array(values, dtype=dtype))
    buf.set_write_back(False)
    return buf


def add(buf, value, n=N):
    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_write)

        def k(i):
            acc[i] = acc[i] + value
        h.parallel_for(n, k)
    return cg


def scale(buf, factor, n=N):
    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_write)

        def k(i):
            acc[i] = acc[i] * factor
        h.parallel_for(n, k)
    return cg


def copy(src, dst, n=N):
    """dst = src, by a kernel reading src and writing dst."""
    def cg(h):
        a = sycl.accessor(src, h, sycl.read_only)
        b = sycl.accessor(dst, h, sycl.write_only)

        def k(i):
            b[i] = a[i]
        h.parallel_for(n, k)
    return cg


def preds(n) -> set[int]:
    return {id(p) for p in n.get_predecessors()}


def ids(*nodes) -> set[int]:
    return {id(n) for n in nodes}


# -- 1. edges from accessors -------------------------------------------------------------
def test_explicit_edges_follow_read_and_write_rules(q):
    a, b = buffer_of(np.arange(N)), buffer_of(np.zeros(N))
    out1, out2 = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    w1 = g.add(add(a, 1))                 # writes a
    r1 = g.add(copy(a, out1))             # reads a: after w1 (RAW)
    r2 = g.add(copy(a, out2))             # reads a: after w1, not after r1
    w2 = g.add(scale(a, 3))               # writes a: after the readers (WAR) and w1 (WAW)
    other = g.add(add(b, 5))              # another buffer: no edge
    assert preds(w1) == set() and preds(other) == set()
    assert preds(r1) == ids(w1) and preds(r2) == ids(w1)
    assert preds(w2) == ids(w1, r1, r2)
    exe = g.finalize()
    for _ in range(2):
        q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(out1), ((np.arange(N) + 1) * 3) + 1)
    np.testing.assert_array_equal(contents(out2), contents(out1))
    np.testing.assert_array_equal(contents(a), (((np.arange(N) + 1) * 3) + 1) * 3)
    np.testing.assert_array_equal(contents(b), np.full(N, 10))


def test_recorded_edges_match_explicit_ones(q):
    a, out = buffer_of(np.arange(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    with g.recording(q):  # an out-of-order queue: edges come from the accessors only
        q.submit(add(a, 1))
        q.submit(copy(a, out))
        q.submit(copy(a, out))  # writes out after the first copy wrote it (WAW)
        q.submit(scale(a, 2))
    w1, r1, r2, w2 = g.get_nodes()
    assert preds(r1) == ids(w1) and preds(r2) == ids(w1, r1) and preds(w2) == ids(w1, r1, r2)
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(out), np.arange(N) + 1)
    np.testing.assert_array_equal(contents(a), (np.arange(N) + 1) * 2)


def test_disjoint_ranges_and_sub_buffers_do_not_order(q):
    a = buffer_of(np.zeros(N))
    low = sycl.buffer(a, sycl.id(0), sycl.range(N // 2))
    high = sycl.buffer(a, sycl.id(N // 2), sycl.range(N // 2))
    g = graph(q, OUTLIVES)
    n_low = g.add(add(low, 1, N // 2))
    n_high = g.add(add(high, 2, N // 2))

    def ranged(h):  # the upper quarter through a ranged accessor: overlaps high only
        acc = sycl.accessor(a, h, sycl.read_write, access_range=sycl.range(N // 4),
                            access_offset=sycl.id(3 * N // 4))

        def k(i):
            acc[i] = acc[i] * 10
        h.parallel_for(N // 4, k)
    n_ranged = g.add(ranged)
    n_all = g.add(scale(a, 2))
    assert preds(n_low) == set() and preds(n_high) == set()
    assert preds(n_ranged) == ids(n_high)
    assert preds(n_all) == ids(n_low, n_high, n_ranged)
    q.ext_oneapi_graph(g.finalize())
    want = np.concatenate([np.full(N // 2, 2), np.full(N // 4, 4), np.full(N // 4, 40)])
    np.testing.assert_array_equal(contents(a), want)


def test_required_placeholder_accessors_give_edges(q):
    a = buffer_of(np.arange(N))
    placeholder = sycl.accessor(a, sycl.read_write)
    assert placeholder.is_placeholder()
    g = graph(q, OUTLIVES)
    first = g.add(add(a, 1))
    gate = g.add(lambda h: h.require(placeholder))  # an empty node that writes a
    assert gate.get_type() is syclexp.node_type.empty and preds(gate) == ids(first)

    def through_placeholder(h):
        h.require(placeholder)

        def k(i):
            placeholder[i] = placeholder[i] * 2
        h.parallel_for(N, k)
    last = g.add(through_placeholder)
    assert preds(last) == ids(gate)
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(a), (np.arange(N) + 1) * 2)


def test_in_order_recording_keeps_its_edges_and_adds_accessor_ones(q, ordered_q):
    a, b = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g = graph(ordered_q, OUTLIVES)
    with g.recording([ordered_q, q]):
        ordered_q.submit(add(a, 1))
        ordered_q.submit(add(b, 1))      # in-order edge, no accessor edge
        q.submit(scale(a, 5))            # the other queue: an accessor edge only
    na, nb, nscale = g.get_nodes()
    assert preds(nb) == ids(na) and preds(nscale) == ids(na)
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(a), np.full(N, 5))
    np.testing.assert_array_equal(contents(b), np.full(N, 1))


def test_sub_graph_nodes_take_the_accessors_of_their_graph(q):
    a, out = buffer_of(np.arange(N)), buffer_of(np.zeros(N))
    child = graph(q, OUTLIVES)
    child.add(add(a, 1))
    child.add(scale(a, 2))
    parent = graph(q, OUTLIVES)
    before = parent.add(add(a, 10))
    sub = parent.add(lambda h: h.ext_oneapi_graph(child.finalize()))
    after = parent.add(copy(a, out))
    assert preds(sub) == ids(before) and preds(after) == ids(sub)
    q.ext_oneapi_graph(parent.finalize())
    np.testing.assert_array_equal(contents(out), (np.arange(N) + 11) * 2)


# -- 2. what a graph must be promised, and what it refuses -------------------------------
def test_buffers_need_assume_buffer_outlives_graph(q):
    a = buffer_of(np.arange(N))
    g = graph(q)
    invalid(lambda: g.add(add(a, 1)))
    assert g.get_nodes() == []
    g.begin_recording(q)
    message = invalid(lambda: q.submit(add(a, 1)))
    assert "assume_buffer_outlives_graph" in message
    assert q.ext_oneapi_get_state() is syclexp.queue_state.recording
    q.submit(lambda h: None)  # a command group without buffers is recorded
    g.end_recording()
    assert len(g.get_nodes()) == 1
    invalid(lambda: syclexp.dynamic_command_group(g, [add(a, 1)]))
    np.testing.assert_array_equal(contents(a), np.arange(N))  # nothing ran


def test_writing_a_buffer_that_writes_back_is_refused(q):
    host = np.arange(N, dtype=np.int32)
    a = sycl.buffer(host)
    assert a.writes_back()
    g = graph(q, OUTLIVES)
    invalid(lambda: g.add(add(a, 1)))
    with g.recording(q):
        message = invalid(lambda: q.submit(add(a, 1)))
        out = buffer_of(np.zeros(N))
        q.submit(copy(a, out))  # reading it is fine: nothing written to write back
    assert "set_write_back(False)" in message
    assert len(g.get_nodes()) == 1
    a.set_final_data(None)
    g.add(add(a, 1))
    b = sycl.buffer(np.zeros(N, np.int32))
    b.set_write_back(False)
    g.add(add(b, 1))
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(out), np.arange(N))
    np.testing.assert_array_equal(contents(a), np.arange(N) + 1)


def test_host_accessors_are_refused_while_the_graph_records(q):
    a, untouched = buffer_of(np.arange(N)), buffer_of(np.arange(N))
    g = graph(q, OUTLIVES)
    g.begin_recording(q)
    q.submit(add(a, 1))
    assert "recording" in invalid(lambda: sycl.host_accessor(a))
    np.testing.assert_array_equal(contents(untouched), np.arange(N))  # not in the graph
    g.end_recording(q)
    np.testing.assert_array_equal(contents(a), np.arange(N))  # recorded, not run
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(a), np.arange(N) + 1)


def test_a_released_buffer_cannot_be_added_or_run(q):
    a = buffer_of(np.arange(N))
    g = graph(q, OUTLIVES)
    g.add(add(a, 1))
    exe = g.finalize()
    cg = add(a, 1)
    a.release()
    invalid(lambda: q.ext_oneapi_graph(exe))
    invalid(lambda: g.add(cg))


# -- 3. host data: copied when recorded, or read at the first run -------------------------
def _record_copy(q, host, *props, begin_props=()):
    """A graph copying a buffer over `host` into `out`; `host` changes after recording."""
    buf = sycl.buffer(host)
    buf.set_write_back(False)
    out = buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES, *props)
    with g.recording(q, [p() for p in begin_props]):
        q.submit(copy(buf, out))
    host[:] = 99
    q.ext_oneapi_graph(g.finalize())
    return contents(out)


def test_host_data_is_copied_when_recorded_without_the_promise(q):
    got = _record_copy(q, np.arange(N, dtype=np.int32))
    np.testing.assert_array_equal(got, np.arange(N))


@pytest.mark.parametrize("where", ["graph", "begin_recording"])
def test_assume_data_outlives_buffer_reads_host_data_at_the_first_run(q, where):
    host = np.arange(N, dtype=np.int32)
    if where == "graph":
        got = _record_copy(q, host, DATA_OUTLIVES)
    else:
        got = _record_copy(q, host, begin_props=[DATA_OUTLIVES])
    np.testing.assert_array_equal(got, np.full(N, 99))


def test_the_begin_recording_promise_ends_with_the_recording(q):
    host1, host2 = np.arange(N, dtype=np.int32), np.arange(N, dtype=np.int32)
    bufs = [sycl.buffer(h) for h in (host1, host2)]
    outs = [buffer_of(np.zeros(N)), buffer_of(np.zeros(N))]
    for b in bufs:
        b.set_write_back(False)
    g = graph(q, OUTLIVES)
    with g.recording(q, [DATA_OUTLIVES()]):
        q.submit(copy(bufs[0], outs[0]))  # promised: not copied
    with g.recording(q):
        q.submit(copy(bufs[1], outs[1]))  # copied now
    host1[:] = 7
    host2[:] = 7
    q.ext_oneapi_graph(g.finalize())
    np.testing.assert_array_equal(contents(outs[0]), np.full(N, 7))
    np.testing.assert_array_equal(contents(outs[1]), np.arange(N))


def test_write_only_and_no_init_accessors_copy_no_host_data(q):
    """Without the promise, a command that only writes a buffer copies nothing when it is
    recorded: the host data the unwritten half shows is read when the graph runs."""
    host = np.arange(N, dtype=np.int32)
    buf = sycl.buffer(host)
    buf.set_write_back(False)
    whole = sycl.buffer(np.arange(N, dtype=np.int32))
    whole.set_write_back(False)
    g = graph(q, OUTLIVES)

    def write_low_half(h):
        acc = sycl.accessor(buf, h, sycl.write_only, access_range=sycl.range(N // 2))

        def k(i):
            acc[i] = -1
        h.parallel_for(N // 2, k)

    def overwrite(h):
        acc = sycl.accessor(whole, h, sycl.write_only, sycl.no_init)

        def k(i):
            acc[i] = i * 2
        h.parallel_for(N, k)
    with g.recording(q):
        q.submit(write_low_half)
        q.submit(overwrite)
    host[:] = 5
    q.ext_oneapi_graph(g.finalize())
    want = np.concatenate([np.full(N // 2, -1), np.full(N // 2, 5)])
    np.testing.assert_array_equal(contents(buf), want)
    np.testing.assert_array_equal(contents(whole), np.arange(N) * 2)


# -- 4. executable graphs in eager dependency tracking ------------------------------------
def test_graph_runs_order_with_eager_work_and_host_accessors(q):
    a = buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    g.add(add(a, 3))
    g.add(scale(a, 2))
    exe = g.finalize()
    q.submit(add(a, 1))                  # 1
    q.ext_oneapi_graph(exe)              # (1 + 3) * 2 = 8
    q.submit(scale(a, 10))               # 80
    q.ext_oneapi_graph(exe)              # (80 + 3) * 2 = 166
    np.testing.assert_array_equal(contents(a), np.full(N, 166))  # no wait before
    with sycl.host_accessor(a) as v:     # the host writes: the next run uploads it
        v[:] = 1
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(a), np.full(N, 8))


def test_an_eager_reader_follows_the_graph_and_a_writer_waits_for_its_reads(q):
    a, out = buffer_of(np.arange(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    g.add(copy(a, out))
    exe = g.finalize()
    for k in range(3):
        q.ext_oneapi_graph(exe)          # reads a into out
        q.submit(add(a, 100))            # may not start before the graph read a
        np.testing.assert_array_equal(contents(out), np.arange(N) + 100 * k)


def test_whole_graph_update_moves_the_run_to_the_new_buffers(q):
    a, b = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g1, g2 = graph(q, OUTLIVES), graph(q, OUTLIVES)
    g1.add(add(a, 1))
    g2.add(add(b, 1))
    exe = g1.finalize([updatable()])
    q.ext_oneapi_graph(exe)
    exe.update(g2)
    q.ext_oneapi_graph(exe)
    q.submit(scale(b, 3))  # after the run writing b
    np.testing.assert_array_equal(contents(a), np.ones(N))
    np.testing.assert_array_equal(contents(b), np.full(N, 3))


def test_update_host_node_refreshes_the_host_data(q):
    host = np.zeros(N, np.int32)
    buf = sycl.buffer(host)
    buf.set_write_back(False)
    g = graph(q, OUTLIVES)
    g.add(add(buf, 4))
    g.add(lambda h: h.update_host(sycl.accessor(buf, h, sycl.read_only)))
    q.ext_oneapi_graph(g.finalize()).wait()
    np.testing.assert_array_equal(host, np.full(N, 4))  # the buffer's own host array


# -- 5. dynamic parameters holding accessors ----------------------------------------------
@syclexp.nd_range_kernel(1)
def write_ids(acc: sycl.accessor[np.int32, 1, WRITE], base: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    acc[i] = i + base


def _write_ids(q):
    return syclexp.get_kernel_bundle(q.get_context(), write_ids, sycl.bundle_state.executable
                                     ).ext_oneapi_get_kernel(write_ids)


def test_dynamic_parameter_holding_an_accessor(q):
    a, b = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    out = buffer_of(np.zeros(N))
    k = _write_ids(q)
    g = graph(q, OUTLIVES)
    param = syclexp.dynamic_parameter(g, sycl.accessor(a, sycl.write_only))
    first = g.add(add(a, 1000))

    def cg(h):
        h.require(param)
        h.set_arg(0, param)
        h.set_arg(1, 1)
        h.parallel_for(sycl.nd_range((N,), (WG,)), k)
    n = g.add(cg)
    reader = g.add(copy(a, out))
    assert preds(n) == ids(first) and preds(reader) == ids(n)
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(a), np.arange(N) + 1)
    param.update(sycl.accessor(b, sycl.write_only))
    assert preds(n) == ids(first) and preds(reader) == ids(n)  # edges unchanged
    later = g.add(add(b, 5))  # follows the node that now writes b
    assert preds(later) == ids(n)
    q.ext_oneapi_graph(exe)  # not updated yet: writes a again
    np.testing.assert_array_equal(contents(b), np.zeros(N))
    exe.update(n)
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(b), np.arange(N) + 1)
    # the run after the update is ordered with eager work on b through the new accessor
    q.submit(add(b, 10))
    np.testing.assert_array_equal(contents(b), np.arange(N) + 11)
    q.ext_oneapi_graph(g.finalize())  # a new executable graph: b, then b + 5
    np.testing.assert_array_equal(contents(b), np.arange(N) + 6)


def test_require_dynamic_parameter_errors(q):
    a, other_buf = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g, other = graph(q, OUTLIVES), graph(q, OUTLIVES)
    param = syclexp.dynamic_parameter(g, sycl.accessor(a, sycl.write_only))
    scalar = syclexp.dynamic_parameter(g, 3)
    invalid(lambda: q.submit(lambda h: h.require(param)))  # a normal submission
    with g.recording(q):
        invalid(lambda: q.submit(lambda h: h.require(param)))  # a recorded one
    invalid(lambda: other.add(lambda h: h.require(param)))  # another graph's
    invalid(lambda: g.add(lambda h: h.require(scalar)))  # no accessor in it
    invalid(lambda: g.add(lambda h: h.require(param)))  # not a kernel node
    assert g.get_nodes() == [] and other.get_nodes() == []
    k = _write_ids(q)
    n = g.add(lambda h: (h.require(param), h.set_args(param, 7),
                         h.parallel_for(sycl.nd_range((N,), (WG,)), k)))
    invalid(lambda: param.update(5))
    invalid(lambda: scalar.update(sycl.accessor(a)))
    writes_back = sycl.buffer(np.zeros(N, np.int32))
    invalid(lambda: param.update(sycl.accessor(writes_back, sycl.write_only)))
    invalid(lambda: param.update(sycl.accessor(other_buf, sycl.read_only)))  # rebuild fails
    exe = g.finalize([updatable()])
    exe.update(n)  # the failed updates changed nothing: the node still writes a
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(a), np.arange(N) + 7)
    np.testing.assert_array_equal(contents(writes_back), np.zeros(N))
    param.update(sycl.accessor(other_buf, sycl.write_only))
    exe.update(n)
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(other_buf), np.arange(N) + 7)


@syclexp.single_task_kernel
def copy_all(src: sycl.accessor[np.int32, 1, READ], dst: sycl.accessor[np.int32, 1, WRITE]):
    for i in range(src.get_range()[0]):
        dst[i] = src[i]


def test_an_updated_accessor_copies_host_data_as_a_recorded_one_does(q):
    """Without assume_data_outlives_buffer, the host data of a buffer an update brings in
    is copied at the update, as it is when a command is added."""
    k = syclexp.get_kernel_bundle(q.get_context(), copy_all, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(copy_all)
    first, out = buffer_of(np.arange(N)), buffer_of(np.zeros(N))
    host = np.full(N, 5, np.int32)
    second = sycl.buffer(host)
    second.set_write_back(False)
    g = graph(q, OUTLIVES)
    src = syclexp.dynamic_parameter(g, sycl.accessor(first, sycl.read_only))
    dst = sycl.accessor(out, sycl.write_only)
    n = g.add(lambda h: (h.require(src), h.require(dst), h.set_args(src, dst),
                         h.single_task(k)))
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(out), np.arange(N))
    src.update(sycl.accessor(second, sycl.read_only))
    host[:] = 6  # after the update: the graph copied 5s
    exe.update(n)
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(out), np.full(N, 5))


# -- dynamic command groups with accessors ------------------------------------------------
def test_dynamic_command_group_with_accessors(q):
    a, out = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    root = g.add(add(a, 1))
    dcg = syclexp.dynamic_command_group(g, [add(a, 42), scale(a, 7)])
    node = g.add(dcg)
    leaf = g.add(copy(a, out))
    assert preds(node) == ids(root) and preds(leaf) == ids(node)
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe)
    np.testing.assert_array_equal(contents(out), np.full(N, 43))
    dcg.set_active_index(1)
    exe.update(node)
    q.ext_oneapi_graph(exe)  # (43 + 1) * 7
    np.testing.assert_array_equal(contents(out), np.full(N, 308))


def test_dynamic_command_groups_need_identical_accessor_dependencies(q):
    a, b = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    g.add(add(a, 1))
    dcg = syclexp.dynamic_command_group(g, [add(a, 1), add(b, 1)])
    message = invalid(lambda: g.add(dcg))
    assert "same dependencies" in message and len(g.get_nodes()) == 1
    same = syclexp.dynamic_command_group(g, [add(a, 1), scale(a, 2)])
    g.add(same)
    writes_back = sycl.buffer(np.zeros(N, np.int32))
    invalid(lambda: syclexp.dynamic_command_group(g, [add(writes_back, 1)]))


# -- 6. DOT output ------------------------------------------------------------------------
def test_print_graph_with_buffer_nodes(q, tmp_path):
    a, out = buffer_of(np.zeros(N)), buffer_of(np.zeros(N))
    g = graph(q, OUTLIVES)
    g.add(add(a, 1))
    g.add(copy(a, out))

    def to_host(h):
        acc = sycl.accessor(out, h, sycl.read_only)
        h.copy(acc, np.zeros(N, np.int32))
    g.add(to_host)
    plain, verbose = tmp_path / "g.dot", tmp_path / "v.dot"
    g.print_graph(plain)
    g.print_graph(verbose, True)
    text = plain.read_text()
    assert "n0 -> n1;" in text and "n1 -> n2;" in text and "ACCESSOR" not in text
    detailed = verbose.read_text()
    assert "ACCESSOR = read_write int32 range(64,) offset(0,) of buffer range(64,)" in detailed
    assert "ACCESSOR = write int32" in detailed and "TYPE = memcpy" in detailed


def test_host_task_accessors_are_not_graph_nodes(q):
    buf = buffer_of(range(N))
    g = graph(q, OUTLIVES)

    def on_host(h):
        x = sycl.accessor(buf, h, sycl.read_write, sycl.host_task)
        h.host_task(lambda: np.asarray(x).fill(0))
    with pytest.raises(sycl.exception, match="host_task") as ei:
        g.add(on_host)
    assert ei.value.code() == sycl.errc.feature_not_supported
    assert g.get_nodes() == []
    np.testing.assert_array_equal(contents(buf), np.arange(N))
