"""Kernel fusion in command graphs (sycl_ext_oneapi_graph_fusion's perform_fusion) on
lavapipe: fused results equal unfused ones, every case the compiler cannot prove stays
unfused (the report says why) and still correct, internalization, and updates of fused
nodes' parameters."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

sys.path.append(str(Path(__file__).parent))
import fusion_kernels as fk
from busy_kernel import busy

N = 1000
FUSE = [syclexp.property.graph.perform_fusion()]


@pytest.fixture
def q(ordered_q):
    """Recorded on an in-order queue, each kernel node depends on the one before."""
    return ordered_q


def record(q, steps):
    g = syclexp.command_graph(q)
    g.begin_recording(q)
    for launch, body in steps:
        q.parallel_for(launch, body)
    g.end_recording(q)
    return g


def both(q, g, outputs, n, props=()):
    """Runs the graph unfused, then fused (outputs zeroed between), and returns the fused
    executable graph and the unfused results."""
    plain = g.finalize(list(props))
    q.ext_oneapi_graph(plain).wait()
    want = [np.asarray(p)[:n].copy() for p in outputs]
    for p in outputs:
        np.asarray(p)[:n] = 0
    exe = g.finalize(FUSE + list(props))
    q.ext_oneapi_graph(exe).wait()
    for p, w in zip(outputs, want, strict=True):
        np.testing.assert_array_equal(np.asarray(p)[:n], w)
    return exe, want


def test_elementwise_chain_fuses_and_forwards(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, u, y = (mem.zeros(N, np.float32) for _ in range(3))
    r = sycl.range(N)
    g = record(q, [(r, fk.scale(x, t, np.float32(2))), (r, fk.scale(t, u, np.float32(3))),
                   (r, fk.add(u, x, y))])
    exe, want = both(q, g, [t, u, y], N)
    np.testing.assert_array_equal(want[2], np.arange(N, dtype=np.float32) * 7)
    report = exe.fusion_report()
    assert report.groups == [[0, 1, 2]] and not report.unfused
    assert any("forwarded" in note for note in report.notes[0])


def test_read_modify_write_chain_keeps_one_store(q, mem):
    x = mem.of(np.ones(N, np.float32))
    r = sycl.range(N)
    g = record(q, [(r, fk.axpb(x, np.float32(2), np.float32(1))) for _ in range(5)])
    exe = g.finalize(FUSE)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(x, N), np.full(N, 63, np.float32))
    notes = " ".join(exe.fusion_report().notes[0])
    assert "4 load(s) forwarded" in notes and "4 overwritten store(s) dropped" in notes


def test_returns_end_only_their_own_body(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    r = sycl.range(N)
    g = record(q, [(r, fk.early_exit(x, t, 10)), (r, fk.scale(x, y, np.float32(2)))])
    exe, want = both(q, g, [t, y], N)
    assert exe.fusion_report().groups == [[0, 1]]
    np.testing.assert_array_equal(want[1], np.arange(N, dtype=np.float32) * 2)


def test_nd_range_with_work_group_memory_and_barriers(q, mem):
    wg, n = 8, 64
    x = mem.of(np.arange(n, dtype=np.float32))
    t, y = mem.zeros(n, np.float32), mem.zeros(n, np.float32)
    r = sycl.nd_range((n,), (wg,))
    g = record(q, [(r, fk.tile_reverse(x, t, wg)), (r, fk.nd_scale(t, y, np.float32(2)))])
    exe, want = both(q, g, [t, y], n)
    expect = np.arange(n).reshape(-1, wg)[:, ::-1].reshape(-1) * 2
    np.testing.assert_array_equal(want[1], expect)
    assert exe.fusion_report().groups == [[0, 1]]


def test_same_work_group_reads_get_a_barrier(q, mem):
    wg, n = 16, 128
    x = mem.of(np.arange(n, dtype=np.float32))
    t, y = mem.zeros(n, np.float32), mem.zeros(n, np.float32)
    r = sycl.nd_range((n,), (wg,))
    g = record(q, [(r, fk.nd_scale(x, t, np.float32(3))), (r, fk.group_mirror(t, y))])
    exe, want = both(q, g, [t, y], n)
    np.testing.assert_array_equal(
        want[1], np.arange(n).reshape(-1, wg)[:, ::-1].reshape(-1) * 3 + 1)
    report = exe.fusion_report()
    assert report.groups == [[0, 1]]
    assert any("barrier" in note for note in report.notes[0])


def test_different_ranges_are_a_boundary(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    g = record(q, [(sycl.range(N), fk.scale(x, t, np.float32(2))),
                   (sycl.range(N // 2), fk.scale(x, y, np.float32(2)))])
    exe, _ = both(q, g, [t, y], N)
    report = exe.fusion_report()
    assert report.groups == [] and "launch" in report.unfused[1]


@pytest.mark.parametrize("case", ["stencil", "gather", "atomic", "alias"])
def test_unproven_accesses_stay_unfused(q, mem, case):
    x = mem.of(np.arange(N + 1, dtype=np.float32))
    t, y = mem.zeros(N + 1, np.float32), mem.zeros(N + 1, np.float32)
    r = sycl.range(N)
    first = fk.scale(x, t, np.float32(2))
    if case == "stencil":
        second = fk.neighbour(t, y)
    elif case == "gather":
        idx = mem.of(np.arange(N, dtype=np.int32)[::-1].copy())
        second = fk.gather(t, idx, y)
    elif case == "atomic":
        counter = mem.zeros(1, np.int32)
        g = record(q, [(r, fk.count(counter, t)), (r, fk.count(counter, y))])
        exe, _ = both(q, g, [y], N)
        assert exe.fusion_report().groups == []
        assert "atomically" in exe.fusion_report().unfused[1]
        return
    else:  # two pointers into one allocation, one element apart
        second = fk.scale(t + 1, y, np.float32(1))
    g = record(q, [(r, first), (r, second)])
    exe, _ = both(q, g, [t, y], N)
    report = exe.fusion_report()
    assert report.groups == [], report
    assert "work-item" in report.unfused[1]


def test_disjoint_halves_of_one_allocation_fuse(q, mem):
    half = 512
    x = mem.of(np.arange(2 * half, dtype=np.float32))
    r = sycl.range(half)
    g = record(q, [(r, fk.scale(x, x + half, np.float32(2))),
                   (r, fk.scale(x, x, np.float32(3)))])
    exe = g.finalize(FUSE)
    q.ext_oneapi_graph(exe).wait()
    base = np.arange(2 * half, dtype=np.float32)
    np.testing.assert_array_equal(mem.view(x, 2 * half),
                                  np.concatenate([base[:half] * 3, base[:half] * 2]))
    assert exe.fusion_report().groups == [[0, 1]]


def test_host_tasks_copies_and_reductions_are_boundaries(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, u, y = (mem.zeros(N, np.float32) for _ in range(3))
    total = mem.zeros(1, np.float32)
    r = sycl.range(N)
    seen = []
    g = syclexp.command_graph(q)
    g.begin_recording(q)
    q.parallel_for(r, fk.scale(x, t, np.float32(2)))
    q.submit(lambda h: h.host_task(lambda: seen.append(1)))
    q.parallel_for(r, fk.scale(t, u, np.float32(2)))
    q.memcpy(y, u, N * 4)
    q.parallel_for(r, fk.scale(y, u, np.float32(2)))
    q.parallel_for(r, sycl.reduction(total, sycl.plus()), fk_sum(u))
    g.end_recording(q)
    exe = g.finalize(FUSE)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(u, N), np.arange(N, dtype=np.float32) * 8)
    assert mem.view(total, 1)[0] == np.arange(N).sum() * 8 and seen == [1]
    report = exe.fusion_report()
    assert report.groups == []
    assert "host task" in report.unfused[1] and "copy" in report.unfused[3]
    assert "reduction" in report.unfused[5]


def fk_sum(src):
    def k(item, acc):
        acc += src[item.get_id(0)]
    return k


def test_device_globals_and_virtual_calls(q, mem):
    q.copy(np.array([2.5], np.float32), fk.scale_by).wait()
    obj = mem.zeros(1, syclexp.storage_for(fk.Shape, fk.Circle))
    fk.Circle.construct_at(obj, side=2.0)
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    r = sycl.range(N)
    g = syclexp.command_graph(q)
    g.begin_recording(q)
    q.parallel_for(r, fk.with_global(x, t))
    q.parallel_for(r, fk.virtual_scale(obj, t, y),
                   properties=[syclexp.assume_indirect_calls])
    g.end_recording(q)
    exe, want = both(q, g, [t, y], N)
    np.testing.assert_allclose(want[1], np.arange(N, dtype=np.float32) * 2.5 * 12)
    assert exe.fusion_report().groups == [[0, 1]]


@pytest.mark.parametrize("promote", ["promote_private", "promote_local"])
def test_promoted_intermediate_stays_in_registers(q, mem, promote):
    x = mem.of(np.arange(N, dtype=np.float32))
    tmp = sycl.malloc_shared(N, sycl.float32, q,
                             property_list=[getattr(syclexp.property, promote)()])
    np.asarray(tmp)[:N] = -1
    y = mem.zeros(N, np.float32)
    r = sycl.range(N)
    g = record(q, [(r, fk.scale(x, tmp, np.float32(2))), (r, fk.scale(tmp, y, np.float32(3)))])
    exe = g.finalize(FUSE)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(y, N), np.arange(N, dtype=np.float32) * 6)
    np.testing.assert_array_equal(np.asarray(tmp)[:N], -1)  # never written
    assert any("registers" in note for note in exe.fusion_report().notes[0])
    sycl.free(tmp, q)


def test_allocation_properties_are_checked(q):
    with pytest.raises(sycl.exception) as err:
        sycl.malloc_shared(4, sycl.float32, q, property_list=[sycl.property.queue.in_order()])
    assert err.value.code() == sycl.errc.invalid


def bundle_kernel(q, fn):
    """Free function kernel `fn` as a kernel object of the queue's context."""
    return syclexp.get_kernel_bundle(q.get_context(), fn, sycl.bundle_state.executable
                                     ).ext_oneapi_get_kernel(fn)


def test_update_scalar_and_pointer_of_fused_node(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    other = mem.of(np.full(N, 10, np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N + 1, np.float32)
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, np.float32(2))
    source = syclexp.dynamic_parameter(g, x)
    k = bundle_kernel(q, fk.free_scale)
    nd = sycl.nd_range((N,), (8,))
    first = g.add(lambda h: (h.set_args(source, t, factor), h.parallel_for(nd, k)))
    g.add(lambda h: (h.set_args(t, y, np.float32(3)), h.parallel_for(nd, k)),
          [syclexp.property.node.depends_on(first)])
    exe = g.finalize([*FUSE, syclexp.property.graph.updatable()])
    assert exe.fusion_report().groups == [[0, 1]]
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(y, N), np.arange(N) * 6)
    factor.update(np.float32(5))
    source.update(other)
    exe.update(first)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(y, N), np.full(N, 150))
    assert exe.fusion_report().groups == [[0, 1]]
    # the first node now reads the second's output one element on: the proof fails, the
    # group runs unfused
    source.update(y + 1)
    exe.update(first)
    q.ext_oneapi_graph(exe).wait()
    report = exe.fusion_report()
    assert report.groups == [] and "unfused after an update" in report.unfused[0]
    np.testing.assert_array_equal(mem.view(t, N)[:-1], np.full(N - 1, 750))
    source.update(other)
    exe.update(first)
    q.ext_oneapi_graph(exe).wait()
    assert exe.fusion_report().groups == [[0, 1]]
    np.testing.assert_array_equal(mem.view(y, N), np.full(N, 150))


def test_updating_a_scalar_in_a_long_fused_chain_checks_only_its_node(q, mem,
                                                                        monkeypatch):
    """A chain of 12 fused kernels whose middle node takes a dynamic scalar: each update
    repacks that node's arguments into the fused kernel's, and since none of its
    addresses move, the fusion's facts are not proven again (`Facts.hold` is never
    called); the results follow every update."""
    from vksycl.compiler import fusion as compiler_fusion

    proofs = []
    hold = compiler_fusion.Facts.hold
    monkeypatch.setattr(compiler_fusion.Facts, "hold",
                        lambda self, *a: proofs.append(1) or hold(self, *a))
    bufs = [mem.of(np.arange(N, dtype=np.float32))] + [mem.zeros(N, np.float32)
                                                      for _ in range(12)]
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, np.float32(1))
    k = bundle_kernel(q, fk.free_scale)
    nd = sycl.nd_range((N,), (8,))
    last, middle = None, None
    for j in range(12):
        s = factor if j == 6 else np.float32(1)
        dep = [] if last is None else [syclexp.property.node.depends_on(last)]
        last = g.add(lambda h, a=bufs[j], b=bufs[j + 1], s=s: (h.set_args(a, b, s),
                                                               h.parallel_for(nd, k)), dep)
        middle = last if j == 6 else middle
    exe = g.finalize([*FUSE, syclexp.property.graph.updatable()])
    assert exe.fusion_report().groups == [list(range(12))]
    for value in (2, 3, 0.5, 7):
        factor.update(np.float32(value))
        exe.update(middle)
        q.ext_oneapi_graph(exe).wait()
        np.testing.assert_array_equal(mem.view(bufs[12], N),
                                      np.arange(N, dtype=np.float32) * np.float32(value))
    assert exe.fusion_report().groups == [list(range(12))] and not proofs


def test_an_update_rewrites_a_fused_argument_block_only_where_no_run_can_read_it(q, mem):
    """A fused kernel reading its arguments from a block (15 members' arguments outgrow
    the push constants): an update while no submission of the graph is pending writes the
    new arguments into that block from the host, the recorded dispatch staying as it is;
    an update while one is pending on the device (behind a slow kernel) keeps the block
    too, the next submission writing the changed field into it on the device first; one
    while a submission waits for its dependencies makes a new block. Each run keeps the
    value it was submitted with (7.5.2), as does one once another graph took the graph in
    as a sub-graph."""
    import threading

    x = mem.of(np.arange(N, dtype=np.float32))
    acc, slow = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    ts = [mem.zeros(N, np.float32) for _ in range(14)]
    scale, accumulate, spin = (bundle_kernel(q, fn) for fn in (
        fk.free_scale, fk.free_accumulate, fk.free_spin))
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, np.float32(2))
    nd = sycl.nd_range((N,), (8,))
    last = g.add(lambda h: (h.set_args(slow, np.int32(200000)), h.parallel_for(
        sycl.nd_range((8,), (8,)), spin)))
    middle = None
    for j, (src, dst) in enumerate(zip([x, *ts[:-1]], ts, strict=True)):
        s = factor if j == 7 else np.float32(1)
        last = g.add(lambda h, src=src, dst=dst, s=s: (h.set_args(src, dst, s),
                                                       h.parallel_for(nd, scale)),
                     [syclexp.property.node.depends_on(last)])
        middle = last if j == 7 else middle
    g.add(lambda h: (h.set_args(ts[-1], acc, np.float32(1)), h.parallel_for(nd, accumulate)),
          [syclexp.property.node.depends_on(last)])
    exe = g.finalize([*FUSE, syclexp.property.graph.updatable()])
    report = exe.fusion_report()
    assert report.groups == [list(range(1, 16))]
    assert "argument block" in report.notes[0][0]
    fused = exe._fusion.groups[0].command
    factor.update(np.float32(3))
    exe.update(middle)
    q.ext_oneapi_graph(exe).wait()
    assert exe._fusion.groups[0].command is fused  # rewritten in place
    expected = np.arange(N, dtype=np.float32) * 3
    np.testing.assert_array_equal(mem.view(acc, N), expected)
    pending = q.ext_oneapi_graph(exe)  # behind the slow kernel
    factor.update(np.float32(5))
    exe.update(middle)
    assert exe._fusion.groups[0].command is fused  # written on the device, in order
    q.ext_oneapi_graph(exe).wait()
    pending.wait()
    expected = expected + np.arange(N) * 3 + np.arange(N) * 5
    np.testing.assert_array_equal(mem.view(acc, N), expected)
    gate = threading.Event()
    held = q.submit(lambda h: h.host_task(lambda: gate.wait(30)))
    waiting = q.submit(lambda h: (h.depends_on(held), h.ext_oneapi_graph(exe)))
    factor.update(np.float32(4))
    exe.update(middle)
    assert exe._fusion.groups[0].command is not fused  # a block of its own
    gate.set()
    waiting.wait()
    q.ext_oneapi_graph(exe).wait()
    expected = expected + np.arange(N) * 5 + np.arange(N) * 4
    np.testing.assert_array_equal(mem.view(acc, N), expected)
    factor.update(np.float32(5))
    exe.update(middle)
    # as a sub-graph, its steps are recorded in the outer graph: updates no longer write
    # in place, and the outer graph keeps what it was finalized with
    outer = syclexp.command_graph(q)
    outer.add(lambda h: h.ext_oneapi_graph(exe))
    outer_exe = outer.finalize()
    fused = exe._fusion.groups[0].command
    factor.update(np.float32(7))
    exe.update(middle)
    assert exe._fusion.groups[0].command is not fused
    q.ext_oneapi_graph(outer_exe).wait()
    np.testing.assert_array_equal(mem.view(acc, N), expected + np.arange(N) * 5)
    q.ext_oneapi_graph(exe).wait()
    np.testing.assert_array_equal(mem.view(acc, N), expected + np.arange(N) * 12)


def factor_chain(q, mem):
    """A graph of 15 scale kernels and an accumulation fused into one kernel reading its
    arguments from a block, the eighth scale's factor a dynamic parameter (1 at first):
    the executable graph, the parameter, its node and the accumulator."""
    x = mem.of(np.arange(N, dtype=np.float32))
    acc = mem.zeros(N, np.float32)
    ts = [mem.zeros(N, np.float32) for _ in range(15)]
    scale, accumulate = (bundle_kernel(q, fn) for fn in (fk.free_scale, fk.free_accumulate))
    g = syclexp.command_graph(q)
    factor = syclexp.dynamic_parameter(g, np.float32(1))
    nd = sycl.nd_range((N,), (8,))
    last = middle = None
    for j, (src, dst) in enumerate(zip([x, *ts[:-1]], ts, strict=True)):
        s = factor if j == 7 else np.float32(1)
        dep = [] if last is None else [syclexp.property.node.depends_on(last)]
        last = g.add(lambda h, src=src, dst=dst, s=s: (h.set_args(src, dst, s),
                                                       h.parallel_for(nd, scale)), dep)
        middle = last if j == 7 else middle
    g.add(lambda h: (h.set_args(ts[-1], acc, np.float32(1)), h.parallel_for(nd, accumulate)),
          [syclexp.property.node.depends_on(last)])
    exe = g.finalize([*FUSE, syclexp.property.graph.updatable()])
    assert exe.fusion_report().groups == [list(range(16))]
    assert "argument block" in exe.fusion_report().notes[0][0]
    return exe, factor, middle, acc


def test_updates_of_a_fused_graph_in_a_loop_that_never_waits_record_nothing(q, mem,
                                                                           monkeypatch):
    """A fused kernel reading its arguments from a block, updated before each of a run of
    submissions that are never waited for: each update's changed field goes into the
    block on the device, ahead of the next submission; nothing is recorded, the fused
    command stays, and every submission adds the factor it was submitted with."""
    exe, factor, middle, acc = factor_chain(q, mem)
    fused = exe._fusion.groups[0].command
    busy(q, mem.zeros(4, np.uint32), 64)
    q.ext_oneapi_graph(exe)  # pending from here on
    [step] = exe._steps

    def no_recording(*args, **kwargs):
        raise AssertionError("an update recorded a segment")

    monkeypatch.setattr(exe, "_record", no_recording)
    total = 1.0
    for k, v in enumerate((2, 3, 0.5, 7, 4, 6)):
        factor.update(np.float32(v))
        exe.update(middle)
        # the first behind the busy kernel for sure; later ones may find the graph idle
        assert k or ("group", 0) in exe._writes
        q.ext_oneapi_graph(exe)
        total += v
    q.wait()
    assert exe._fusion.groups[0].command is fused and exe._steps == [step]
    np.testing.assert_array_equal(mem.view(acc, N), np.arange(N, dtype=np.float32) *
                                  np.float32(total))


def test_a_fused_graph_taken_in_as_a_sub_graph_runs_its_queued_writes(q, mem):
    """A fused block's new field queued as a device write when another graph takes the
    graph in: that graph writes it before the fused kernel runs."""
    exe, factor, middle, acc = factor_chain(q, mem)
    busy(q, mem.zeros(4, np.uint32), 64)
    q.ext_oneapi_graph(exe)
    factor.update(np.float32(5))
    exe.update(middle)
    assert ("group", 0) in exe._writes
    outer = syclexp.command_graph(q)
    outer.add(lambda h: h.ext_oneapi_graph(exe))
    outer_exe = outer.finalize()
    q.ext_oneapi_graph(outer_exe).wait()
    np.testing.assert_array_equal(mem.view(acc, N), np.arange(N, dtype=np.float32) * 6)


def test_print_graph_shows_fused_groups(q, mem, tmp_path):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    r = sycl.range(N)
    g = record(q, [(r, fk.scale(x, t, np.float32(2))), (r, fk.scale(t, y, np.float32(2)))])
    exe = g.finalize(FUSE)
    path = tmp_path / "fused.dot"
    exe.print_graph(str(path))
    text = path.read_text()
    assert "subgraph cluster_fused0" in text and "n0; n1;" in text
    assert "finalized without" in str(g.finalize().fusion_report())


def test_fused_graph_as_sub_graph_and_profiling(q, mem):
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    r = sycl.range(N)
    g = record(q, [(r, fk.scale(x, t, np.float32(2))), (r, fk.scale(t, y, np.float32(2)))])
    inner = g.finalize(FUSE)
    outer = syclexp.command_graph(q)
    outer.add(lambda h: h.ext_oneapi_graph(inner))
    pq = sycl.queue(q.get_context(), q.get_device(),
                    property_list=[sycl.property.queue.enable_profiling()])
    exe = outer.finalize([syclexp.property.graph.enable_profiling()])
    ev = pq.ext_oneapi_graph(exe)
    ev.wait()
    assert ev.get_profiling_info(sycl.info.event_profiling.command_end) >= \
        ev.get_profiling_info(sycl.info.event_profiling.command_start)
    np.testing.assert_array_equal(mem.view(y, N), np.arange(N, dtype=np.float32) * 4)


@pytest.mark.parametrize("n", [1, 1000, 1024, 1024 * 4 + 1, 1000003])
def test_independent_straight_line_bodies_fuse_coarsened(q, mem, n):
    """Fused bodies of independent work-items run four ids per work-item (as one such
    kernel alone does, from one work-group's 1024 ids up), their loads first where all
    four are in range and one by one at the range's end: every element once, whatever
    the size."""
    x = mem.of(np.arange(n, dtype=np.float32))
    t, y = mem.zeros(n, np.float32), mem.zeros(n, np.float32)
    r = sycl.range(n)
    g = record(q, [(r, fk.scale(x, t, np.float32(2))), (r, fk.add(t, x, y)),
                   (r, fk.axpb(y, np.float32(2), np.float32(1)))])
    exe, want = both(q, g, [t, y], n)
    np.testing.assert_array_equal(want[1], np.arange(n, dtype=np.float32) * 6 + 1)
    notes = " ".join(exe.fusion_report().notes[0])
    assert ("4 ids per work-item" in notes) == (n >= 1024)


def test_bodies_with_barriers_are_not_coarsened(q, mem):
    x = mem.of(np.arange(256, dtype=np.float32))
    y = mem.zeros(256, np.float32)
    r = sycl.nd_range((256,), (64,))
    g = record(q, [(r, fk.tile_reverse(x, y, 64)), (r, fk.nd_scale(y, y, np.float32(2)))])
    exe, _ = both(q, g, [y], 256)
    for notes in exe.fusion_report().notes:
        assert not any("ids per work-item" in note for note in notes)


def test_promote_local_memory_read_across_the_work_group_stays_written(q, mem):
    """promote_local memory that other work-items of the group read (a tile reversed
    behind a barrier) keeps its stores: only what a work-item alone reads back can stay
    in its registers."""
    x = mem.of(np.arange(256, dtype=np.float32))
    tmp = sycl.malloc_shared(256, sycl.float32, q,
                             property_list=[syclexp.property.promote_local()])
    y = mem.zeros(256, np.float32)
    r = sycl.nd_range((256,), (64,))
    g = record(q, [(r, fk.nd_scale(x, tmp, np.float32(2))), (r, fk.group_mirror(tmp, y))])
    exe, want = both(q, g, [y], 256)
    i = np.arange(256)
    np.testing.assert_array_equal(want[0], 2 * ((i // 64) * 64 + 63 - i % 64) + 1.0)
    np.testing.assert_array_equal(np.asarray(tmp)[:256], np.arange(256, dtype=np.float32) * 2)
    assert exe.fusion_report().groups == [[0, 1]]


def test_a_command_reused_from_a_gone_closure_still_fuses(q, mem):
    """An eager launch before recording, of the same code over the same arrays: the graph
    is handed that launch's command, built from a closure gone since; fusion lowers the
    kernel the node was launched with."""
    x = mem.of(np.arange(N, dtype=np.float32))
    t, y = mem.zeros(N, np.float32), mem.zeros(N, np.float32)
    r = sycl.range(N)
    q.parallel_for(r, fk.scale(x, t, np.float32(2))).wait()  # its closure goes here
    q.parallel_for(r, fk.scale(t, y, np.float32(2))).wait()
    others = [mem.zeros(N, np.float32) for _ in range(9)]
    for o in others:  # launches enough to forget the first two closures, not their commands
        q.parallel_for(r, fk.scale(o, o, np.float32(1)))
    q.wait()
    g = record(q, [(r, fk.scale(x, t, np.float32(2))), (r, fk.scale(t, y, np.float32(2)))])
    exe, want = both(q, g, [t, y], N)
    np.testing.assert_array_equal(want[1], np.arange(N, dtype=np.float32) * 4)
    assert exe.fusion_report().groups == [[0, 1]]
