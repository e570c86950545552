"""Ports of DPC++'s Graph E2E buffer scenarios (sycl/test-e2e/Graph: Inputs/ run as
Explicit and RecordReplay, Update/): each scenario is rewritten for vksycl and run through
both APIs where DPC++ runs it through both. As in DPC++'s `add_node`, recording ignores
the node dependencies the explicit API is given: there the edges come from the
accessors alone. Values computed on the device."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

SIZE = 1024
ITERATIONS = 5
OFFSET = 100
OUTLIVES = syclexp.property.graph.assume_buffer_outlives_graph
DATA_OUTLIVES = syclexp.property.graph.assume_data_outlives_buffer
WRITE = sycl.access_mode.write


class Builder:
    """DPC++'s `add_node` / `add_nodes`: a node added through the explicit API (with its
    dependencies) or recorded from a queue (where accessors give the edges)."""

    def __init__(self, mode: str, q: sycl.queue) -> None:
        self.mode, self.q = mode, q

    def add(self, g, cgf, *deps):
        if self.mode == "explicit":
            props = [syclexp.property.node.depends_on(*deps)] if deps else None
            return g.add(cgf, props)
        with g.recording(self.q):
            return self.q.submit(cgf)


@pytest.fixture(params=["explicit", "record"])
def build(request, q) -> Builder:
    return Builder(request.param, q)


def no_write_back(values) -> sycl.buffer:
    buf = sycl.buffer(np.array(values))
    buf.set_write_back(False)
    return buf


def contents(buf) -> np.ndarray:
    with sycl.host_accessor(buf, sycl.read_only) as v:
        return np.array(v)


def diamond(build, g, a, b, c):
    """graph_common's add_nodes over buffers: a read-write node on A, two nodes reading A
    and writing B or C, and one writing B and C."""
    def inc_a(h):
        da = sycl.accessor(a, h, sycl.read_write)

        def k(i):
            da[i] += 1
        h.parallel_for(SIZE, k)

    def add_b(h):
        da, db = sycl.accessor(a, h, sycl.read_only), sycl.accessor(b, h, sycl.read_write)

        def k(i):
            db[i] += da[i]
        h.parallel_for(SIZE, k)

    def sub_c(h):
        da, dc = sycl.accessor(a, h, sycl.read_only), sycl.accessor(c, h, sycl.read_write)

        def k(i):
            dc[i] -= da[i]
        h.parallel_for(SIZE, k)

    def dec_bc(h):
        db, dc = sycl.accessor(b, h, sycl.read_write), sycl.accessor(c, h, sycl.read_write)

        def k(i):
            db[i] -= 1
            dc[i] -= 1
        h.parallel_for(SIZE, k)

    if build.mode == "explicit":
        for cgf in (inc_a, add_b, sub_c, dec_bc):
            g.add(cgf)
        return
    with g.recording(build.q):
        for cgf in (inc_a, add_b, sub_c, dec_bc):
            build.q.submit(cgf)


def abc(dtype):
    return (np.arange(1, SIZE + 1, dtype=dtype), np.arange(10, SIZE + 10, dtype=dtype),
            np.arange(1000, SIZE + 1000, dtype=dtype))


def run_chained(q, exe, times=ITERATIONS):
    ev = sycl.event()
    for _ in range(times):
        ev = q.submit(lambda h, ev=ev: (h.depends_on(ev), h.ext_oneapi_graph(exe)))
    q.wait_and_throw()


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_basic_buffer(build, q, dtype, diamond_reference):
    """basic_buffer.cpp: the diamond over three buffers, run ITERATIONS times; the edges
    come from the accessors (the readers of A do not follow each other)."""
    data = abc(dtype)
    want = diamond_reference(ITERATIONS, *data)
    a, b, c = (no_write_back(d) for d in data)
    g = syclexp.command_graph(q, [OUTLIVES()])
    diamond(build, g, a, b, c)
    n_a, n_b, n_c, n_d = g.get_nodes()
    assert n_b.get_predecessors() == [n_a] and n_c.get_predecessors() == [n_a]
    assert {id(p) for p in n_d.get_predecessors()} == {id(n_b), id(n_c)}
    run_chained(q, g.finalize())
    for buf, w in zip((a, b, c), want, strict=True):
        np.testing.assert_array_equal(contents(buf), w)


def test_buffer_copy(build, q):
    """buffer_copy.cpp: copy nodes between buffers (handler.copy of two accessors) and
    kernels modifying them, in a chain the accessors order."""
    mod = 7
    data_a, data_b, data_c = abc(np.int32)
    ref_a, ref_b, ref_c = data_a.copy(), data_b.copy(), data_c.copy()
    for _ in range(ITERATIONS):
        ref_a[:] = ref_b + mod
        ref_b[:] = ref_a + mod
        ref_c[:] = ref_b
    a, b, c = no_write_back(data_a), no_write_back(data_b), no_write_back(data_c)

    def copy(src, dst):
        return lambda h: h.copy(sycl.accessor(src, h, sycl.read_only),
                                sycl.accessor(dst, h, sycl.write_only))

    def add_mod(buf):
        def cg(h):
            acc = sycl.accessor(buf, h)

            def k(it):
                acc[it.get_linear_id()] += mod
            h.parallel_for(sycl.range(SIZE), k)
        return cg

    g = syclexp.command_graph(q, [OUTLIVES()])
    node_a = build.add(g, copy(b, a))
    node_b = build.add(g, add_mod(a), node_a)
    node_mod_b = build.add(g, add_mod(b), node_a)
    node_c = build.add(g, copy(a, b), node_b, node_mod_b)
    node_d = build.add(g, add_mod(b), node_c)
    build.add(g, copy(b, c), node_d)
    run_chained(q, g.finalize())
    np.testing.assert_array_equal(contents(a), ref_a)
    np.testing.assert_array_equal(contents(b), ref_b)
    np.testing.assert_array_equal(contents(c), ref_c)


def test_buffer_copy_host2target_offset(build, q):
    """buffer_copy_host2target_offset.cpp: host memory copied into a write-only ranged
    accessor at an offset; the rest of the buffer keeps its data."""
    data_a = np.arange(1, SIZE + OFFSET + 1, dtype=np.int32)
    data_b = np.arange(1000, SIZE + 1000, dtype=np.int32)
    want = data_a.copy()
    want[OFFSET:] = data_b
    a = no_write_back(data_a)
    g = syclexp.command_graph(q, [OUTLIVES()])
    build.add(g, lambda h: h.copy(data_b, sycl.accessor(
        a, h, sycl.write_only, sycl.range(SIZE), sycl.id(OFFSET))))
    q.submit(lambda h: h.ext_oneapi_graph(g.finalize())).wait()
    np.testing.assert_array_equal(contents(a), want)


def test_buffer_copy_target2host_offset(build, q):
    """buffer_copy_target2host_offset.cpp: a ranged read accessor copied to host memory,
    once per run."""
    data_a = np.arange(1, SIZE + OFFSET + 1, dtype=np.int32)
    host = np.full(SIZE, -1, np.int32)
    a = no_write_back(data_a)
    g = syclexp.command_graph(q, [OUTLIVES()])
    build.add(g, lambda h: h.copy(sycl.accessor(a, h, sycl.read_only, sycl.range(SIZE),
                                                sycl.id(OFFSET)), host))
    q.ext_oneapi_graph(g.finalize()).wait()
    np.testing.assert_array_equal(host, data_a[OFFSET:])


def test_buffer_fill(build, q):
    """buffer_fill.cpp: a fill node over a buffer's accessor."""
    a = no_write_back(np.zeros(SIZE, np.float32))
    g = syclexp.command_graph(q, [OUTLIVES()])
    build.add(g, lambda h: h.fill(sycl.accessor(a, h, sycl.write_only), np.float32(3.5)))
    q.ext_oneapi_graph(g.finalize()).wait()
    np.testing.assert_array_equal(contents(a), np.full(SIZE, 3.5, np.float32))


def test_temp_buffer_reinterpret(build, q, diamond_reference):
    """temp_buffer_reinterpret.cpp: the nodes use reinterpretations of the buffers that
    are gone before the graph is finalized and run."""
    data = abc(np.int32)
    want = diamond_reference(ITERATIONS, *data)
    a, b, c = (no_write_back(d) for d in data)
    g = syclexp.command_graph(q, [OUTLIVES()])
    diamond(build, g, *(x.reinterpret(np.int32, x.get_range()) for x in (a, b, c)))
    run_chained(q, g.finalize())
    for buf, w in zip((a, b, c), want, strict=True):
        np.testing.assert_array_equal(contents(buf), w)


def test_dotp_buffer(q):
    """RecordReplay/dotp_buffer.cpp: x, y and z initialized, two axpy kernels and a
    single-task dot product over buffers, recorded with no event dependencies."""
    n = 10
    alpha, beta, gamma = 1.0, 2.0, 3.0
    dotp = no_write_back(np.zeros(1, np.float32))
    x, y, z = (no_write_back(np.zeros(n, np.float32)) for _ in range(3))
    g = syclexp.command_graph(q, [OUTLIVES()])

    def init(h):
        ax, ay, az = (sycl.accessor(b, h) for b in (x, y, z))

        def k(i):
            ax[i] = 1.0
            ay[i] = 2.0
            az[i] = 3.0
        h.parallel_for(n, k)

    def axpy_x(h):
        ax, ay = sycl.accessor(x, h), sycl.accessor(y, h)

        def k(i):
            ax[i] = alpha * ax[i] + beta * ay[i]
        h.parallel_for(n, k)

    def axpy_z(h):
        ay, az = sycl.accessor(y, h), sycl.accessor(z, h)

        def k(i):
            az[i] = gamma * az[i] + beta * ay[i]
        h.parallel_for(n, k)

    def dot(h):
        d, ax, az = sycl.accessor(dotp, h), sycl.accessor(x, h), sycl.accessor(z, h)

        def k():
            for j in range(n):
                d[0] += ax[j] * az[j]
        h.single_task(k)

    with g.recording(q):
        for cgf in (init, axpy_x, axpy_z, dot):
            q.submit(cgf)
    q.submit(lambda h: h.ext_oneapi_graph(g.finalize())).wait()
    want = n * (alpha * 1.0 + beta * 2.0) * (gamma * 3.0 + beta * 2.0)
    assert contents(dotp)[0] == pytest.approx(want)


def _kernel(buf, body):
    def cg(h):
        acc = sycl.accessor(buf, h)
        h.parallel_for(10, body(acc))
    return cg


def _set(value):
    def body(acc):
        def k(i):
            acc[i] = value
        return k
    return body


def _add(value):
    def body(acc):
        def k(i):
            acc[i] += value
        return k
    return body


def _mul(value):
    def body(acc):
        def k(i):
            acc[i] *= value
        return k
    return body


def test_buffer_ordering(build, q):
    """buffer_ordering.cpp: eager submissions on the buffer before, around and after the
    graph's construction and between its two runs keep their order."""
    n = 10
    buf = sycl.buffer(sycl.range(n), np.float32)
    buf.set_write_back(False)
    g = syclexp.command_graph(q, [OUTLIVES()])
    q.submit(_kernel(buf, _set(0.5)))
    build.add(g, _kernel(buf, _add(0.25)))
    q.submit(_kernel(buf, _add(1.0)))       # 1.5
    exe = g.finalize()
    q.submit(_kernel(buf, _mul(2.0)))       # 3.0
    q.submit(lambda h: h.ext_oneapi_graph(exe))  # 3.25
    q.submit(_kernel(buf, _mul(2.0)))       # 6.5
    q.submit(lambda h: h.ext_oneapi_graph(exe))  # 6.75
    out = np.zeros(n, np.float32)
    q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out))
    q.wait()
    np.testing.assert_array_equal(out, np.full(n, 6.75, np.float32))


def test_buffer_interleave_eager(build, q):
    """buffer_interleave_eager.cpp: an eager submission, then two runs of a graph using
    the same buffer, then an eager copy out."""
    n = 10
    buf = sycl.buffer(sycl.range(n), np.int32)
    buf.set_write_back(False)
    q.submit(_kernel(buf, _set(8)))
    g = syclexp.command_graph(q, [OUTLIVES()])
    build.add(g, _kernel(buf, _add(2)))
    exe = g.finalize()
    q.ext_oneapi_graph(exe)
    q.ext_oneapi_graph(exe)
    out = np.zeros(n, np.int32)
    q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out))
    q.wait()
    np.testing.assert_array_equal(out, np.full(n, 12))


def _touch(buf):
    def cg(h):
        sycl.accessor(buf, h)
        h.single_task(_noop)
    return cg


def _noop():
    pass


def test_assume_buffer_outlives_graph_property(build, q):
    """assume_buffer_outlives_graph_property.cpp: a buffer in a graph is errc.invalid
    without the property, accepted with it."""
    buf = sycl.buffer(sycl.range(1), np.uint16)
    buf.set_write_back(False)
    build.add(syclexp.command_graph(q, [OUTLIVES()]), _touch(buf))
    g = syclexp.command_graph(q)
    with pytest.raises(sycl.exception) as e:
        build.add(g, _touch(buf))
    assert e.value.code() == sycl.errc.invalid
    assert g.get_nodes() == []


@pytest.mark.parametrize("promised", [False, True])
def test_assume_data_outlives_buffer_property(build, q, promised):
    """assume_data_outlives_buffer_property.cpp, after the specification this runtime
    follows (9.1.1): a buffer over host data is accepted either way; without the promise
    its data is copied when the node is added, with it the first run reads it."""
    host = np.zeros(1, np.uint16)
    with_host = sycl.buffer(host)
    with_host.set_write_back(False)
    no_host = sycl.buffer(sycl.range(1), np.uint16)
    no_host.set_write_back(False)
    props = [OUTLIVES(), DATA_OUTLIVES()] if promised else [OUTLIVES()]
    g = syclexp.command_graph(q, props)
    build.add(g, lambda h: h.copy(sycl.accessor(with_host, h, sycl.read_only),
                                  sycl.accessor(no_host, h, sycl.write_only)))
    host[0] = 9
    q.ext_oneapi_graph(g.finalize())
    assert contents(no_host)[0] == (9 if promised else 0)


def test_dyn_cgf_accessor_deps(q, mem):
    """Update/dyn_cgf_accessor_deps.cpp: a dynamic command group between a root and a
    leaf node, its edges from accessors; switching the active group changes the leaf's
    result."""
    ptr = mem.zeros(SIZE, np.int32)
    buf = sycl.buffer(sycl.range(SIZE), np.int32)
    buf.set_write_back(False)
    g = syclexp.command_graph(q, [OUTLIVES()])

    def root(h):
        acc = sycl.accessor(buf, h, sycl.write_only)

        def k(it):
            acc[it.get_id()] = 1
        h.parallel_for(sycl.range(SIZE), k)

    def adds(pattern):
        def cgf(h):
            acc = sycl.accessor(buf, h, sycl.read_write)

            def k(it):
                acc[it.get_id()] += pattern
            h.parallel_for(sycl.range(SIZE), k)
        return cgf

    def leaf(h):
        acc = sycl.accessor(buf, h, sycl.read_only)

        def k(it):
            ptr[it.get_id()] = acc[it.get_id()]
        h.parallel_for(sycl.range(SIZE), k)

    root_node = g.add(root)
    dcg = syclexp.dynamic_command_group(g, [adds(42), adds(0xA)])
    dcg_node = g.add(dcg)
    leaf_node = g.add(leaf)
    assert dcg_node.get_predecessors() == [root_node]
    assert leaf_node.get_predecessors() == [dcg_node]
    exe = g.finalize([syclexp.property.graph.updatable()])
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(ptr, SIZE), np.full(SIZE, 43))
    dcg.set_active_index(1)
    exe.update(dcg_node)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(ptr, SIZE), np.full(SIZE, 11))


@syclexp.single_task_kernel
def iota(acc: sycl.accessor[np.int32, 1, WRITE]):
    for i in range(acc.get_range()[0]):
        acc[i] = i


def test_update_with_indices_accessor(q):
    """Update/update_with_indices_accessor.cpp: a node's accessor argument, held by a
    dynamic parameter the node requires, switched from one buffer to another."""
    a = no_write_back(np.zeros(SIZE, np.int32))
    b = no_write_back(np.zeros(SIZE, np.int32))
    k = syclexp.get_kernel_bundle(q.get_context(), iota, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(iota)
    g = syclexp.command_graph(q, [OUTLIVES()])
    param = syclexp.dynamic_parameter(g, a.get_access(sycl.write_only))

    def cg(h):
        h.require(param)
        h.set_arg(0, param)
        h.single_task(k)
    node = g.add(cg)
    exe = g.finalize([syclexp.property.graph.updatable()])
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(contents(a), np.arange(SIZE))
    np.testing.assert_array_equal(contents(b), np.zeros(SIZE))
    param.update(b.get_access(sycl.write_only))
    exe.update(node)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(contents(a), np.arange(SIZE))
    np.testing.assert_array_equal(contents(b), np.arange(SIZE))


def test_sub_graph_with_buffers(build, q, diamond_reference):
    """sub_graph.cpp over buffers: the diamond as a sub-graph between two nodes of the
    parent, ordered by the buffers the sub-graph's nodes use."""
    data = abc(np.int32)
    a, b, c = (no_write_back(d) for d in data)
    child = syclexp.command_graph(q, [OUTLIVES()])
    diamond(build, child, a, b, c)
    sub = child.finalize()
    parent = syclexp.command_graph(q, [OUTLIVES()])
    build.add(parent, _scale_all(a, 2))
    build.add(parent, lambda h: h.ext_oneapi_graph(sub))
    build.add(parent, _scale_all(c, -1))
    first, node, last = parent.get_nodes()
    assert node.get_predecessors() == [first] and last.get_predecessors() == [node]
    q.ext_oneapi_graph(parent.finalize()).wait()
    want_a, want_b, want_c = diamond_reference(1, data[0] * 2, data[1], data[2])
    np.testing.assert_array_equal(contents(a), want_a)
    np.testing.assert_array_equal(contents(b), want_b)
    np.testing.assert_array_equal(contents(c), -want_c)


def _scale_all(buf, factor):
    def cg(h):
        acc = sycl.accessor(buf, h)

        def k(i):
            acc[i] *= factor
        h.parallel_for(SIZE, k)
    return cg
