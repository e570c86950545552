"""Kernels from GLSL and SPIR-V source: bundles, builds, reflection of bindings and push
constants, enqueues by argument index, and every error a user can cause."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import compiled
from vksycl.runtime.glsl import compile_glsl

GLSL = syclexp.source_language.glsl
SPIRV = syclexp.source_language.spirv

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

GRID = """#version 450
layout(local_size_x = 4, local_size_y = 2) in;
layout(std430, binding = 0) buffer Out { int v[]; };
layout(push_constant) uniform Args { ivec2 base; int width; } args;
void main() {
    uvec3 g = gl_GlobalInvocationID;
    v[g.y * args.width + g.x] = args.base.x * int(g.y) + args.base.y * int(g.x);
}
"""

SCALED = """#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer Out { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = float(gl_GlobalInvocationID.x) * SCALE; }
"""

ONE = """#version 450
#extension GL_ARB_gpu_shader_int64 : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Out { double v[]; };
layout(push_constant) uniform Args { double d; int64_t big; } args;
void main() { v[0] = args.d * 2.0; v[1] = double(args.big); }
"""


@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)


@pytest.fixture
def shared(mem):
    """Shared USM holding values: shared(values, dtype)."""
    return lambda values, dtype: mem.of(np.asarray(values, dtype))


def built(ctx, lang, source, *args):
    return syclexp.build(syclexp.create_kernel_bundle_from_source(ctx, lang, source), *args)


def test_glsl_kernel_by_index(q, ctx, shared):
    src_bundle = syclexp.create_kernel_bundle_from_source(ctx, GLSL, SAXPY)
    assert src_bundle.state is sycl.bundle_state.ext_oneapi_source
    bundle = syclexp.build(src_bundle)
    assert bundle.state is sycl.bundle_state.executable
    assert bundle.ext_oneapi_has_kernel("main") and not bundle.ext_oneapi_has_kernel("other")
    k = bundle.ext_oneapi_get_kernel("main")
    assert k.get_info(sycl.info.kernel.num_args) == 4
    assert syclexp.kernel_args(k) == ["X: buffer (binding 0, float32 elements)",
                                      "Y: buffer (binding 1, float32 elements)",
                                      "a: float32 (push constant at 0)",
                                      "n: uint32 (push constant at 4)"]
    x = shared(np.arange(64), np.float32)
    y = shared(np.ones(64), np.float32)

    def cgf(h):
        h.set_arg(0, x)
        h.set_arg(1, y)
        h.set_arg(2, 2.0)
        h.set_arg(3, 60)
        h.parallel_for(sycl.nd_range((64,), (16,)), k)

    q.submit(cgf).wait()
    expect = np.ones(64, np.float32)
    expect[:60] += 2 * np.arange(60, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(y)[:64], expect)


def test_bindings_start_at_the_pointer_inside_its_allocation(q, ctx, shared):
    """A binding covers the bytes from the pointer to the end of its allocation, which
    lives inside a larger block of the caching allocator."""
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    x = shared(np.arange(64), np.float32)
    y = shared(np.zeros(64), np.float32)
    q.submit(lambda h: (h.set_args(x + 16, y + 32, 3.0, 16),
                        h.parallel_for(sycl.nd_range((16,), (16,)), k))).wait()
    expect = np.zeros(64, np.float32)
    expect[32:48] = 3 * np.arange(16, 32, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(y), expect)


def test_repeated_launches_see_changed_arguments_and_memory(q, ctx):
    """A launch with the arguments of the previous one submits its command again; any
    change (a scalar, another pointer, memory freed and allocated again) makes a new one."""
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    ndr = sycl.nd_range((32,), (16,))
    x = sycl.malloc_shared(32, sycl.float32, q)
    np.asarray(x)[:] = np.arange(32, dtype=np.float32)
    ys = [sycl.malloc_shared(32, sycl.float32, q) for _ in range(2)]
    for y in ys:
        np.asarray(y)[:] = 0
    for a, y in ((1.0, ys[0]), (1.0, ys[0]), (2.0, ys[0]), (1.0, ys[1]), (1.0, ys[1])):
        q.submit(lambda h, a=a, y=y: (h.set_args(x, y, a, 32), h.parallel_for(ndr, k))).wait()
    np.testing.assert_array_equal(np.asarray(ys[0]), 4 * np.arange(32, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(ys[1]), 2 * np.arange(32, dtype=np.float32))
    for y in ys:
        sycl.free(y, q)
    for round_ in range(3):  # fresh memory each time, often at a freed allocation's address
        y = sycl.malloc_shared(32, sycl.float32, q)
        np.asarray(y)[:] = round_
        q.submit(lambda h, y=y: (h.set_args(x, y, 1.0, 32), h.parallel_for(ndr, k))).wait()
        np.testing.assert_array_equal(np.asarray(y), np.arange(32, dtype=np.float32) + round_)
        sycl.free(y, q)
    sycl.free(x, q)


def test_launches_on_fresh_memory_build_no_pipeline(q, ctx):
    """Every set of bound ranges runs the kernel's one pipeline with a descriptor set of
    its own: launches on fresh allocations build no new pipeline."""
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    ndr = sycl.nd_range((32,), (16,))
    x = sycl.malloc_shared(32, sycl.float32, q)
    np.asarray(x)[:] = np.arange(32, dtype=np.float32)
    engine = q._scheduler.engine
    first = sycl.malloc_shared(32, sycl.float32, q)
    np.asarray(first)[:] = 0
    q.submit(lambda h: (h.set_args(x, first, 1.0, 32), h.parallel_for(ndr, k))).wait()
    built_before = engine.pipelines_built
    for round_ in range(6):
        y = sycl.malloc_shared(32 + 16 * round_, sycl.float32, q)  # new buffers, new ranges
        np.asarray(y)[:] = round_
        q.submit(lambda h, y=y, r=round_: (h.set_args(x, y, float(r), 32),
                                           h.parallel_for(ndr, k))).wait()
        want = np.full(32 + 16 * round_, round_, np.float32)
        want[:32] += round_ * np.arange(32, dtype=np.float32)
        np.testing.assert_array_equal(np.asarray(y), want)
        sycl.free(y, q)
    assert engine.pipelines_built == built_before
    np.testing.assert_array_equal(np.asarray(first), np.arange(32, dtype=np.float32))
    sycl.free(first, q)
    sycl.free(x, q)


def test_a_binding_past_the_device_range_is_refused(q, ctx, shared, monkeypatch):
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    x = shared(np.arange(1024), np.float32)
    y = shared(np.zeros(1024), np.float32)
    monkeypatch.setenv("VKSYCL_MAX_BUFFER_RANGE", "2048")
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: (h.set_args(x, y, 1.0, 16),
                            h.parallel_for(sycl.nd_range((16,), (16,)), k)))
    assert ei.value.code() == sycl.errc.invalid
    assert "4096 bytes exceeds this device's storage buffer range (2048 bytes)" in str(ei.value)
    q.submit(lambda h: (h.set_args(x + 512, y + 512, 1.0, 16),
                        h.parallel_for(sycl.nd_range((16,), (16,)), k))).wait()
    assert np.asarray(y)[512] == 512 and not np.asarray(y)[:512].any()


def test_two_dimensional_kernel_and_vector_push_constants(q, ctx, shared):
    k = built(ctx, GLSL, {"grid": GRID}).ext_oneapi_get_kernel("grid")
    out = shared(np.zeros(6 * 8), np.int32)
    # SYCL order: dimension 0 is the slowest (GLSL y), dimension 1 the fastest (GLSL x)
    q.submit(lambda h: (h.set_args(out, np.array([100, 1], np.int32), 8),
                        h.parallel_for(sycl.nd_range((6, 8), (2, 4)), k))).wait()
    i, j = np.meshgrid(np.arange(6), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(np.asarray(out)[:48].reshape(6, 8), 100 * i + j)
    info = sycl.info.kernel_device_specific
    assert tuple(k.get_info(info.compile_work_group_size, q.get_device())) == (1, 2, 4)
    assert k.get_info(info.work_group_size, q.get_device()) == 8


def test_several_named_kernels_and_build_options(q, ctx, shared):
    log: list[str] = []
    bundle = built(ctx, GLSL, {"saxpy": SAXPY, "scaled": SCALED},
                   syclexp.properties(syclexp.build_options(["-DSCALE=3.0"]),
                                      syclexp.save_log(log)))
    assert bundle.ext_oneapi_has_kernel("saxpy") and bundle.ext_oneapi_has_kernel("scaled")
    assert len(log) == 2
    out = shared(np.zeros(16), np.float32)
    k = bundle.ext_oneapi_get_kernel("scaled")
    q.submit(lambda h: (h.set_args(out), h.parallel_for(sycl.nd_range((16,), (8,)), k))).wait()
    np.testing.assert_array_equal(np.asarray(out)[:16], 3 * np.arange(16, dtype=np.float32))


def test_build_errors_carry_the_glslang_log(ctx):
    log: list[str] = []
    src = syclexp.create_kernel_bundle_from_source(ctx, GLSL, SCALED)  # SCALE undefined
    with pytest.raises(sycl.exception) as ei:
        syclexp.build(src, [syclexp.save_log(log)])
    assert ei.value.code() == sycl.errc.build
    assert "SCALE" in str(ei.value) and "ERROR" in str(ei.value)
    assert log and "SCALE" in log[0]
    with pytest.raises(sycl.exception) as ei:
        built(ctx, GLSL, "#version 450\nvoid main() { syntax error }\n")
    assert ei.value.code() == sycl.errc.build


def test_spirv_from_glslang_and_from_the_python_compiler(q, ctx, shared):
    spirv = compile_glsl(SAXPY)
    k = built(ctx, SPIRV, spirv).ext_oneapi_get_kernel("main")
    x = shared(np.arange(16), np.float32)
    y = shared(np.zeros(16), np.float32)
    q.submit(lambda h: (h.set_args(x, y, 0.5, 16),
                        h.parallel_for(sycl.nd_range((16,), (16,)), k))).wait()
    np.testing.assert_array_equal(np.asarray(y)[:16], 0.5 * np.arange(16, dtype=np.float32))

    # a free function kernel's SPIR-V: entry __sycl_kernel_<name>; its push constants hold
    # `start`, the pointer's device address, and the global range the compiler passes
    binary = compiled(q.get_device(), iota, sycl.nd_range((16,), (16,))).binary
    b = built(ctx, SPIRV, {"iota": binary})
    k2 = b.ext_oneapi_get_kernel("__sycl_kernel_iota")
    assert k2 is b.ext_oneapi_get_kernel("iota")
    assert b.ext_oneapi_get_raw_kernel_name("iota") == "__sycl_kernel_iota"
    assert syclexp.kernel_args(k2) == ["args.0: float32 (push constant at 0)",
                                       "args.1: uint64 (push constant at 8)",
                                       "args.2: uint32 (push constant at 16)"]
    out = shared(np.zeros(16), np.float32)
    q.submit(lambda h: (h.set_args(1.5, out.address, 16),
                        h.parallel_for(sycl.nd_range((16,), (16,)), k2))).wait()
    np.testing.assert_array_equal(np.asarray(out)[:16], 1.5 + np.arange(16, dtype=np.float32))


def test_invalid_spirv_is_a_build_error(ctx):
    spirv = bytearray(compile_glsl(SAXPY))
    with pytest.raises(sycl.exception) as ei:
        built(ctx, SPIRV, bytes(spirv[:40]))
    assert ei.value.code() == sycl.errc.build
    with pytest.raises(sycl.exception) as ei:
        built(ctx, SPIRV, b"\x00" * 64)
    assert ei.value.code() == sycl.errc.build


@pytest.mark.parametrize(("source", "needle"), [
    ("#version 450\nlayout(local_size_x=1) in;\nlayout(binding=1) buffer B { float v[]; };\n"
     "void main() { v[0] = 1.0; }\n", "bindings 0, 1, 2"),
    ("#version 450\nlayout(local_size_x=1) in;\nlayout(set=1, binding=0) buffer B { float v[]; };"
     "\nvoid main() { v[0] = 1.0; }\n", "descriptor set 1"),
    ("#version 450\nlayout(local_size_x=1) in;\nlayout(binding=0) uniform U { float u; };\n"
     "layout(binding=1) buffer B { float v[]; };\nvoid main() { v[0] = u; }\n",
     "uniform buffer"),
])
def test_layouts_kompute_cannot_bind_are_build_errors(ctx, source, needle):
    with pytest.raises(sycl.exception) as ei:
        built(ctx, GLSL, source)
    assert ei.value.code() == sycl.errc.build and needle in str(ei.value)


def test_sixty_four_bit_push_constants(q, ctx, shared):
    dev = q.get_device()
    if not (dev.has(sycl.aspect.fp64) and dev.vulkan.features.get("shaderInt64")):
        with pytest.raises(sycl.exception) as ei:
            built(ctx, GLSL, ONE)
        assert ei.value.code() == sycl.errc.build
        return
    k = built(ctx, GLSL, ONE).ext_oneapi_get_kernel("main")
    out = shared(np.zeros(2), np.float64)
    q.submit(lambda h: (h.set_args(out, 1.25, -(2**40)), h.single_task(k))).wait()
    np.testing.assert_array_equal(np.asarray(out)[:2], [2.5, -(2.0**40)])


def test_bad_bundle_requests(ctx):
    cases = [
        lambda: syclexp.create_kernel_bundle_from_source(ctx, "opencl", "kernel void f() {}"),
        lambda: syclexp.create_kernel_bundle_from_source(ctx, GLSL, b"bytes"),
        lambda: syclexp.create_kernel_bundle_from_source(ctx, SPIRV, "text"),
        lambda: syclexp.create_kernel_bundle_from_source(ctx, GLSL, {"not a name": SAXPY}),
        lambda: syclexp.create_kernel_bundle_from_source(ctx, GLSL, {}),
        lambda: syclexp.build(sycl.get_kernel_bundle(ctx, [], sycl.bundle_state.input)),
        lambda: syclexp.build(syclexp.create_kernel_bundle_from_source(ctx, GLSL, SAXPY),
                              [syclexp.work_group_size(4)]),
        lambda: syclexp.create_kernel_bundle_from_source(ctx, GLSL, SAXPY)
        .ext_oneapi_get_kernel("main"),
        lambda: built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("missing"),
    ]
    for case in cases:
        with pytest.raises(sycl.exception) as ei:
            case()
        assert ei.value.code() == sycl.errc.invalid


def test_undefined_enqueues_raise(q, ctx, shared):
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    x = shared(np.zeros(32), np.float32)
    y = shared(np.zeros(32), np.float32)
    i32 = shared(np.zeros(32), np.int32)
    ndr = sycl.nd_range((32,), (16,))
    cases = [
        (lambda h: (h.set_args(x, y, 1.0), h.parallel_for(ndr, k)), "argument 3 (n)"),
        (lambda h: (h.set_args(x, y, 1.0, 3, 4), h.parallel_for(ndr, k)), "set index 4"),
        (lambda h: (h.set_args(x, y, 1, 3), h.parallel_for(ndr, k)), "float32, got int"),
        (lambda h: (h.set_args(x, y, 1.0, -3), h.parallel_for(ndr, k)), "does not fit"),
        (lambda h: (h.set_args(x, 2.0, 1.0, 3), h.parallel_for(ndr, k)), "USM pointer"),
        (lambda h: (h.set_args(x, i32, 1.0, 3), h.parallel_for(ndr, k)), "holds float32"),
        (lambda h: (h.set_args(x, y + 1, 1.0, 3), h.parallel_for(ndr, k)), "4 bytes into"),
        (lambda h: (h.set_args(x, y, 1.0, 3), h.parallel_for(sycl.range(32), k)), "sycl.range"),
        (lambda h: (h.set_args(x, y, 1.0, 3), h.single_task(k)), "parallel_for(nd_range"),
        (lambda h: (h.set_args(x, y, 1.0, 3),
                    h.parallel_for(sycl.nd_range((32,), (16,), (16,)), k)), "offset"),
    ]
    for cgf, needle in cases:
        with pytest.raises(sycl.exception) as ei:
            q.submit(cgf)
        assert ei.value.code() == sycl.errc.invalid, needle
        assert needle in str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: (h.set_args(x, y, 1.0, 3),
                            h.parallel_for(sycl.nd_range((32,), (8,)), k)))
    assert ei.value.code() == sycl.errc.nd_range and "(16,)" in str(ei.value)


def test_reflection_of_shared_memory_and_nested_push_constants(q, ctx):
    src = """#version 450
layout(local_size_x = 16, local_size_y = 2) in;
layout(std430, binding = 0) buffer Out { float data[]; } outb;
struct Box { vec2 lo; float pad[2]; };
layout(push_constant) uniform Args { float scale; Box box; } args;
shared float tile[32];
void main() {
    uint l = gl_LocalInvocationIndex;
    tile[l] = args.scale;
    barrier();
    outb.data[gl_GlobalInvocationID.x] = tile[31 - l] + args.box.lo.y + args.box.pad[1];
}
"""
    from vksycl.kernels.reflect import reflect

    r = reflect(compile_glsl(src))
    assert [a.name for a in r.args] == ["outb", "scale", "box"]
    assert r.entry_points[0].local_size == (16, 2, 1)
    assert r.workgroup_bytes == 32 * 4
    assert r.push_size == 24
    assert [(lf.offset, str(lf.dtype)) for lf in r.args[2].leaves] == [
        (8, "float32"), (12, "float32"), (16, "float32"), (20, "float32")]
    k = built(ctx, GLSL, src).ext_oneapi_get_kernel("main")
    ds = sycl.info.kernel_device_specific
    assert k.get_info(ds.ext_vksycl_local_mem_size, q.get_device()) == 128
    assert k.get_info(ds.work_group_size, q.get_device()) == 32
    out = sycl.malloc_shared(32, sycl.float32, q)
    try:
        q.submit(lambda h: (h.set_args(out, 1.0, [0.0, 2.0, 0.0, 4.0]),
                            h.parallel_for(sycl.nd_range((1, 2, 16), (1, 2, 16)), k))).wait()
        np.testing.assert_array_equal(np.asarray(out)[:16], np.full(16, 7.0, np.float32))
    finally:
        sycl.free(out, q)


def test_kernel_objects_reject_pointers_from_another_context(q, ctx, shared):
    k = built(ctx, GLSL, SAXPY).ext_oneapi_get_kernel("main")
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    foreign = sycl.malloc_shared(64, sycl.float32, other)
    y = shared(np.ones(64), np.float32)

    def cgf(h):
        h.set_args(foreign, y, 2.0, 64)
        h.parallel_for(sycl.nd_range((64,), (16,)), k)

    with pytest.raises(sycl.exception) as err:
        q.submit(cgf)
    assert err.value.code() == sycl.errc.invalid and "another context" in str(err.value)
    sycl.free(foreign, other)
