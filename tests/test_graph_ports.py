"""More of DPC++'s sycl/test-e2e/Graph scenarios: kernels from GLSL source and free
function kernels as nodes, double buffering by whole-graph update, update ordering
against eager work, event status, and an executable graph dropped while it runs."""

from __future__ import annotations

import gc

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

N = 128
GLSL = syclexp.source_language.glsl
SAXPY = """#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Args { float a; uint n; } args;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < args.n) y[i] = args.a * x[i] + y[i];
}
"""
updatable = syclexp.property.graph.updatable
dep = syclexp.property.node.depends_on


@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)


@syclexp.single_task_kernel
def total(ptr: sycl.ptr[sycl.float32], n: sycl.int32, out: sycl.ptr[sycl.float32]):
    s = sycl.float32(0)
    for i in range(n):
        s += ptr[i]
    out[0] = s


@syclexp.nd_range_kernel(1)
def add_into(src: sycl.ptr[sycl.int32], dst: sycl.ptr[sycl.int32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    dst[i] = dst[i] + src[i]


def test_glsl_source_kernel_node_with_dynamic_scalar(q, mem):
    """DPC++'s kernel_bundle_spirv: a kernel from source is a node like any other."""
    bundle = syclexp.build(syclexp.create_kernel_bundle_from_source(q.get_context(), GLSL,
                                                                    SAXPY))
    k = bundle.ext_oneapi_get_kernel("main")
    x = mem.of(np.arange(64, dtype=np.float32))
    y = mem.of(np.ones(64, np.float32))
    g = syclexp.command_graph(q)
    a = syclexp.dynamic_parameter(g, 2.0)

    def cgf(h):
        h.set_args(x, y, a, 60)
        h.parallel_for(sycl.nd_range((64,), (16,)), k)

    n = g.add(cgf)
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe)
    q.ext_oneapi_graph(exe)
    q.wait()
    a.update(-1.0)
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    want = np.ones(64, np.float32)
    want[:60] += (2 + 2 - 1) * np.arange(60, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(y)[:64], want)


def test_glsl_node_pointer_update_builds_no_pipeline(q, mem):
    """A USM pointer dynamic parameter of a kernel with descriptor bindings: the update
    binds the new memory through a descriptor set, with the kernel's one pipeline."""
    bundle = syclexp.build(syclexp.create_kernel_bundle_from_source(q.get_context(), GLSL,
                                                                    SAXPY))
    k = bundle.ext_oneapi_get_kernel("main")
    x = mem.of(np.arange(64, dtype=np.float32))
    ys = [mem.of(np.full(64, v, np.float32)) for v in (1.0, 5.0)]
    g = syclexp.command_graph(q)
    y = syclexp.dynamic_parameter(g, ys[0])
    n = g.add(lambda h: (h.set_args(x, y, 2.0, 64), h.parallel_for(sycl.nd_range((64,),
                                                                                (16,)), k)))
    exe = g.finalize([updatable()])
    q.ext_oneapi_graph(exe).wait()
    engine = q._scheduler.engine
    built = engine.pipelines_built
    y.update(ys[1])
    exe.update(n)
    q.ext_oneapi_graph(exe).wait()
    assert engine.pipelines_built == built
    twice = 2 * np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(ys[0])[:64], 1.0 + twice)
    np.testing.assert_array_equal(np.asarray(ys[1])[:64], 5.0 + twice)


def test_free_function_kernels_recorded(q, mem):
    """DPC++'s free_function_kernels: nd_launch and single_task recorded from a queue."""
    ptr = mem.zeros(N, np.float32)
    out = mem.zeros(1, np.float32)
    g = syclexp.command_graph(q)
    with g.recording(q):
        e = syclexp.nd_launch(q, sycl.nd_range((N,), (32,)), syclexp.kernel_function(iota),
                              1.5, ptr)
        q.submit(lambda h: (h.depends_on(e), syclexp.single_task(
            h, syclexp.kernel_function(total), ptr, N, out)))
    assert [n.get_type() for n in g.get_nodes()] == [syclexp.node_type.kernel] * 2
    exe = g.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert float(np.asarray(out)[0]) == float(np.sum(1.5 + np.arange(N, dtype=np.float32)))
    node = g.get_nodes()[0]
    node.update_nd_range(sycl.nd_range((N // 2,), (32,)))  # its arguments are kept
    q.memset(ptr, 0, N * 4).wait()
    q.ext_oneapi_graph(g.finalize()).wait()
    half = 1.5 + np.arange(N // 2, dtype=np.float32)
    assert float(np.asarray(out)[0]) == float(np.sum(half))


def kernel(q, f):
    return syclexp.get_kernel_bundle(q.get_context(), f, sycl.bundle_state.executable
                                     ).ext_oneapi_get_kernel(f)


def test_whole_update_double_buffer(q, mem):
    """DPC++'s whole_update_double_buffer: two graphs of one shape over swapped buffers;
    whole-graph updates flip the executable graph between them."""
    k = kernel(q, add_into)
    ones = mem.of(np.ones(N, np.int32))
    bufs = [mem.zeros(N, np.int32), mem.zeros(N, np.int32)]

    def build(src, dst):
        g = syclexp.command_graph(q)
        first = g.add(lambda h: (h.set_args(src, dst), h.parallel_for(
            sycl.nd_range((N,), (32,)), k)))
        g.add(lambda h: (h.set_args(ones, dst), h.parallel_for(sycl.nd_range((N,), (32,)), k)),
              [dep(first)])
        return g

    ga, gb = build(bufs[0], bufs[1]), build(bufs[1], bufs[0])
    exe = ga.finalize([updatable()])
    ref = [np.zeros(N, np.int64), np.zeros(N, np.int64)]
    for it in range(8):
        exe.update(gb if it % 2 else ga)
        q.ext_oneapi_graph(exe)  # no wait: each update follows the submissions before
        src, dst = (1, 0) if it % 2 else (0, 1)
        ref[dst] += ref[src] + 1
    q.wait()
    for got, want in zip(bufs, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(got)[:N], want)


def test_update_ordering_with_eager_work(ordered_q, mem):
    """DPC++'s executable_graph_update_ordering: on an in-order queue, eager commands,
    graph submissions and updates interleave in submission order."""
    q = ordered_q
    k = kernel(q, add_into)
    src = mem.of(np.full(N, 2, np.int32))
    dst = mem.zeros(N, np.int32)
    g = syclexp.command_graph(q)
    p = syclexp.dynamic_parameter(g, src)
    n = g.add(lambda h: (h.set_args(p, dst), h.parallel_for(sycl.nd_range((N,), (32,)), k)))
    exe = g.finalize([updatable()])
    other = mem.of(np.full(N, 5, np.int32))
    want = 0
    for it in range(10):
        q.ext_oneapi_graph(exe)
        want += 5 if it % 2 else 2
        q.fill(src, np.int32(2), N)  # eager work between the replays
        p.update(src if it % 2 else other)
        exe.update(n)
    q.wait()
    assert (np.asarray(dst)[:N] == want).all()


def test_event_status_of_graph_submissions(q, mem):
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    exe = g.finalize()
    events = [q.ext_oneapi_graph(exe) for _ in range(5)]
    status = sycl.info.event.command_execution_status
    for e in events:
        assert e.get_info(status) in (sycl.info.event_command_status.submitted,
                                      sycl.info.event_command_status.running,
                                      sycl.info.event_command_status.complete)
    sycl.event.wait(events)
    assert all(e.get_info(status) is sycl.info.event_command_status.complete for e in events)
    assert (np.asarray(a)[:N] == 5).all()


def test_release_while_executing(q, mem):
    """DPC++'s release_while_executing: the graphs may go while submissions run."""
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(N), inc))
    g.add(lambda h: h.host_task(lambda: None))
    exe = g.finalize()
    events = [q.ext_oneapi_graph(exe) for _ in range(4)]
    del g, exe
    gc.collect()
    sycl.event.wait(events)
    assert (np.asarray(a)[:N] == 4).all()


def test_prefetch_and_mem_advise_nodes_replay(q, mem):
    """DPC++'s prefetch and memadvise: nodes with no work on Vulkan, edges kept."""
    a = mem.zeros(N, np.int32)

    def inc(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    with g.recording(q):
        e = q.prefetch(a, N * 4)
        e = q.mem_advise(a, N * 4, 0, depends_on=e)
        q.parallel_for(sycl.range(N), inc, depends_on=e)
    exe = g.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe)
    q.wait()
    assert (np.asarray(a)[:N] == 3).all()
