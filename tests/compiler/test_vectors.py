"""`sycl.vec`: the types and SYCL 2020's aliases, host values, construction, swizzles and
their assignment, element-wise arithmetic, comparisons and math functions, loads and
stores (USM at every alignment, memory of vectors, accessors, work-group memory) and the
SPIR-V they compile to, vectors as kernel arguments, struct fields and device-function
values, and the build errors (each naming this file and the line, found by its marker
comment)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import compiled


def marker_line(marker: str) -> int:
    with open(__file__) as f:
        lines = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def build_error(q, body, n: int = 4) -> str:
    with pytest.raises(sycl.exception) as info:
        q.parallel_for(sycl.range(n), body).wait()
    assert info.value.code() == sycl.errc.build
    return str(info.value)


@sycl.struct
class Particle:
    pos: sycl.float4
    mass: sycl.float32


@sycl.struct
class Two:
    a: sycl.float32
    b: sycl.float32


# -- types and host values -------------------------------------------------------------------

def test_types_and_aliases():
    assert sycl.vec(sycl.float32, 4) is sycl.float4
    assert sycl.vec(np.int32, 2) is sycl.int2
    for name, (t, n) in {"float2": (np.float32, 2), "float3": (np.float32, 3),
                         "float8": (np.float32, 8), "half16": (np.float16, 16),
                         "half8": (np.float16, 8), "double4": (np.float64, 4),
                         "int4": (np.int32, 4), "uint4": (np.uint32, 4),
                         "char4": (np.int8, 4), "uchar4": (np.uint8, 4),
                         "short2": (np.int16, 2), "ushort8": (np.uint16, 8),
                         "long2": (np.int64, 2), "ulong4": (np.uint64, 4)}.items():
        cls = getattr(sycl, name)
        assert cls is sycl.vec(t, n)
        assert cls.element_type is t and cls.count == n
    # the aliases that would shadow scalar types' names are vec(T, N) only
    assert sycl.float16 is np.float16 and sycl.uint8 is np.uint8 and sycl.int16 is np.int16
    assert sycl.vec(sycl.float32, 16).__name__ == "float16"
    assert sycl.float4.byte_size() == 16 and sycl.float3.byte_size() == 16
    assert sycl.half2.byte_size() == 4
    with pytest.raises(sycl.exception):
        sycl.vec(np.float32, 5)


def test_host_values():
    v = sycl.float4(1, 2, 3, 4)
    assert isinstance(v, sycl.float4) and v.dtype == np.float32
    assert sycl.float4(2.5).tolist() == [2.5] * 4
    assert sycl.float4().tolist() == [0] * 4
    assert sycl.float4(sycl.float2(1, 2), 3, 4).tolist() == [1, 2, 3, 4]
    assert v.x == 1 and v.w == 4 and v.s2 == 3
    assert v.wzyx.tolist() == [4, 3, 2, 1] and isinstance(v.wzyx, sycl.float4)
    assert v.rgba.tolist() == v.tolist() and v.lo.tolist() == [1, 2]
    assert v.odd.tolist() == [2, 4] and v.swizzle(3, 0).tolist() == [4, 1]
    assert (v * 2 + 1).tolist() == [3, 5, 7, 9]
    assert (v < 3).tolist() == [-1, -1, 0, 0] and (v < 3).dtype == np.int32
    assert isinstance(v == v, sycl.int4)
    assert sycl.sqrt(sycl.float4(4, 9, 16, 25)).tolist() == [2, 3, 4, 5]
    v.xy = sycl.float2(7, 8)
    v.w = 0
    assert v.tolist() == [7, 8, 3, 0]
    assert v.convert(sycl.int32).dtype == np.int32
    memory = np.arange(8, dtype=np.float32)
    v.load(1, memory)
    assert v.tolist() == [4, 5, 6, 7]
    v.store(0, memory)
    assert memory[:4].tolist() == [4, 5, 6, 7]


def test_a_kernel_runs_as_python_on_the_host():
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)

    def body(i):
        v = sycl.float4()
        v.load(i, a)
        w = v.wzyx * 2.0
        w.x = sycl.sqrt(v.y)
        w.store(i, out)

    for i in range(4):
        body(i)
    ref = a.reshape(4, 4)[:, ::-1] * 2
    ref[:, 0] = np.sqrt(a.reshape(4, 4)[:, 1])
    assert np.allclose(out.reshape(4, 4), ref)


def test_usm_of_vectors_on_the_host(q, mem):
    p = sycl.malloc_shared(8, sycl.float4, q)
    try:
        view = np.asarray(p)
        assert view.shape == (8, 4) and view.dtype == np.float32
        p[2] = sycl.float4(1, 2, 3, 4)
        assert view[2].tolist() == [1, 2, 3, 4] and p[2].tolist() == [1, 2, 3, 4]
        assert (p + 1).byte_offset == 16
    finally:
        sycl.free(p, q)
    p3 = sycl.malloc_shared(4, sycl.float3, q)
    try:
        assert np.asarray(p3).shape == (4, 4)  # a 3-element vector takes 4 elements' room
    finally:
        sycl.free(p3, q)


# -- operations in kernels ---------------------------------------------------------------

def test_arithmetic_swizzles_and_element_assignment(q, mem):
    n = 8
    src = np.random.default_rng(1).uniform(-4, 4, (n, 4)).astype(np.float32)
    a = mem.of(src.reshape(-1))
    out = mem.zeros(n * 4 * 4, np.float32)

    def body(i):
        v = sycl.float4()
        v.load(i, a)
        w = sycl.float4(v.xy, 1.0, v.w)
        r1 = v * 2.0 - w / 4.0 + 1.0
        r2 = v.wzyx + sycl.float4(v.x)
        r3 = -v
        r3.xz = v.yw
        r3[3] = 5.0
        r4 = sycl.float4(0.5)
        r4[i % 4] = v.x + v.y + v.z + v.w
        r4.g += 1.0
        r1.store(4 * i, out)
        r2.store(4 * i + 1, out)
        r3.store(4 * i + 2, out)
        r4.store(4 * i + 3, out)

    q.parallel_for(sycl.range(n), body).wait()
    got = mem.view(out, n * 16).reshape(n, 4, 4)
    w = src.copy()
    w[:, 2] = 1
    assert np.allclose(got[:, 0], src * 2 - w / 4 + 1, rtol=1e-6)
    assert np.allclose(got[:, 1], src[:, ::-1] + src[:, :1])
    r3 = -src
    r3[:, 0], r3[:, 2], r3[:, 3] = src[:, 1], src[:, 3], 5
    assert np.allclose(got[:, 2], r3)
    r4 = np.full((n, 4), 0.5, np.float32)
    r4[np.arange(n), np.arange(n) % 4] = src.sum(axis=1)
    r4[:, 1] += 1
    assert np.allclose(got[:, 3], r4, rtol=1e-5)


def test_an_assignment_reads_every_element_before_it_stores_one(q, mem):
    out = mem.zeros(10, np.float32)

    def body():
        v = sycl.float4(1, 2, 3, 4)
        v = v.wzyx
        v.store(0, out)
        w = sycl.float4(1, 2, 3, 4)
        w.xy = w.yx
        w.zw = w.wz + w.xx
        w.store(1, out)
        t = Two(5.0, 6.0)
        t = Two(t.b, t.a)  # a struct too
        out[8] = t.a
        out[9] = t.b

    q.single_task(body).wait()
    assert mem.view(out, 10).tolist() == [4, 3, 2, 1, 2, 1, 6, 5, 6, 5]


def test_iterating_over_a_vector(q, mem):
    out = mem.zeros(1, np.float32)

    def body():
        total = 0.0
        for x in sycl.float4(1, 2, 3, 4):
            total += x * x
        out[0] = total

    q.single_task(body).wait()
    body_on_host = sum(x * x for x in sycl.float4(1, 2, 3, 4))
    assert mem.view(out, 1)[0] == body_on_host == 30


def test_integer_vectors_comparisons_and_masks(q, mem):
    n = 6
    src = np.random.default_rng(2).integers(-50, 50, (n, 4)).astype(np.int32)
    a = mem.of(src.reshape(-1))
    out = mem.zeros(n * 16, np.int32)
    fout = mem.zeros(n * 4, np.int32)
    f = mem.of(np.array([1.0, np.nan, -2.0, 3.0] * n, np.float32))

    def body(i):
        v = sycl.int4()
        v.load(i, a)
        (v // 3 + v % 7).store(4 * i, out)
        ((v << 2) ^ sycl.int4(5)).store(4 * i + 1, out)
        (v < 0).store(4 * i + 2, out)
        (v == v.yxwz).store(4 * i + 3, out)
        x = sycl.float4()
        x.load(i, f)
        m = sycl.isnan(x) | (x > 0.0)
        m.store(i, fout)

    q.parallel_for(sycl.range(n), body).wait()
    got = mem.view(out, n * 16).reshape(n, 4, 4)
    assert (got[:, 0] == src // 3 + src % 7).all()
    assert (got[:, 1] == (src << 2) ^ 5).all()
    assert (got[:, 2] == -(src < 0).astype(np.int32)).all()
    assert (got[:, 3] == -(src == src[:, [1, 0, 3, 2]]).astype(np.int32)).all()
    assert mem.view(fout, n * 4).reshape(n, 4).tolist() == [[-1, -1, 0, -1]] * n


def test_math_functions_and_builtins_per_element(q, mem):
    a = mem.of(np.array([1, 4, 9, 16, -1, 2, -3, 4], np.float32))
    out = mem.zeros(16, np.float32)

    def body():
        v = sycl.float4()
        v.load(0, a)
        w = sycl.float4()
        w.load(1, a)
        sycl.sqrt(v).store(0, out)
        sycl.fmax(w, 0.0).store(1, out)
        abs(w).store(2, out)
        (min(v, w) + sycl.fma(v, w, sycl.float4(1.0))).store(3, out)

    q.single_task(body).wait()
    got = mem.view(out, 16).reshape(4, 4)
    v, w = np.array([1, 4, 9, 16.0]), np.array([-1, 2, -3, 4.0])
    assert np.allclose(got, [np.sqrt(v), np.maximum(w, 0), abs(w), np.minimum(v, w) + v * w + 1])


def test_half_and_double_vectors(q, mem):
    out16 = mem.zeros(8, np.float16)
    has64 = q.get_device().has(sycl.aspect.fp64)
    out64 = mem.zeros(4, np.float64)

    def halves():
        h = sycl.half8(1.5) * sycl.half8(1, 2, 3, 4, 5, 6, 7, 8)
        h.store(0, out16)

    def doubles():
        d = sycl.double4(1, 2, 3, 4) / 3.0
        d.store(0, out64)

    q.single_task(halves).wait()
    assert mem.view(out16, 8).tolist() == [1.5 * k for k in range(1, 9)]
    if has64:
        q.single_task(doubles).wait()
        assert np.allclose(mem.view(out64, 4), np.arange(1, 5) / 3.0, rtol=1e-15)


def test_wide_vectors_and_conversions(q, mem):
    out = mem.zeros(16, np.int32)
    fout = mem.zeros(16, np.float32)

    def k():
        v = sycl.vec(sycl.float32, 16)(0.0)
        for j in range(16):
            v[j] = j * 1.5
        v.hi.convert(sycl.int32).store(0, out)
        v.lo.convert(sycl.int32).store(1, out)
        v.even.store(1, fout)
        v.odd.store(0, fout)
        out[15] = len(v) + v.byte_size()

    q.single_task(k).wait()
    v = np.arange(16) * 1.5
    assert mem.view(out, 15).tolist() == \
        v[8:].astype(int).tolist() + v[:7].astype(int).tolist()
    assert mem.view(out, 16)[15] == 16 + 64
    assert mem.view(fout, 16).tolist() == v[1::2].tolist() + v[0::2].tolist()


# -- memory ----------------------------------------------------------------------------------

def test_aligned_accesses_are_single_16_byte_loads_and_stores(q, mem):
    a = mem.of(np.arange(64, dtype=np.float32))
    b = mem.zeros(64, np.float32)

    def body(i):
        v = sycl.float4()
        v.load(i, a)
        (v + 1.0).store(i, b)

    asm = compiled(q.get_device(), body, sycl.range(16)).spirv_asm()
    load = re.search(r"(%\w+) = OpConvertUToPtr %_ptr_PhysicalStorageBuffer_v4float", asm)
    assert load is not None, asm
    assert re.search(rf"OpLoad %v4float {load.group(1)} Aligned 16", asm), asm
    assert re.search(r"OpStore %\w+ %\w+ Aligned 16", asm), asm
    assert not re.search(r"OpLoad %float %\w+ Aligned", asm), asm  # no scalar loads
    q.parallel_for(sycl.range(16), body).wait()
    assert mem.view(b, 64).tolist() == (np.arange(64) + 1.0).tolist()


@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_loads_and_stores_at_every_alignment(q, mem, shift):
    a = mem.of(np.arange(80, dtype=np.float32))
    b = mem.zeros(80, np.float32)

    def body(i):
        v = sycl.float4()
        v.load(0, a + (4 * i + shift))  # a runtime offset: aligned to the elements only
        v.store(0, b + (4 * i + shift))

    asm = compiled(q.get_device(), body, sycl.range(16)).spirv_asm()
    assert re.search(r"OpLoad %v4float %\w+ Aligned 4", asm), asm
    q.parallel_for(sycl.range(16), body).wait()
    expect = np.zeros(80, np.float32)
    expect[shift:64 + shift] = np.arange(shift, 64 + shift)
    assert mem.view(b, 80).tolist() == expect.tolist()


def test_a_constant_offset_keeps_what_it_proves(q, mem):
    a = mem.of(np.arange(64, dtype=np.float32))
    b = mem.zeros(64, np.float32)

    def body(i):
        v = sycl.float4()
        v.load(0, a + 4 * i + 8)  # two vectors on: still 16-byte aligned
        v.store(i, b)

    asm = compiled(q.get_device(), body, sycl.range(8)).spirv_asm()
    assert re.search(r"OpLoad %v4float %\w+ Aligned 16", asm), asm
    q.parallel_for(sycl.range(8), body).wait()
    assert mem.view(b, 32).tolist() == list(range(8, 40))


def test_a_provably_misaligned_access_is_refused(q, mem):
    a = mem.zeros(64, np.float32)

    def body(i):
        v = sycl.float4(1.0)
        for k in range(0, 8, 2):
            v.store(k, a + 4 * i + 1)  # E:misaligned

    msg = build_error(q, body)
    assert f"test_vectors.py:{marker_line('E:misaligned')}" in msg
    assert "never aligned to 16 bytes" in msg


def test_a_pointer_not_aligned_to_its_vectors_is_refused_at_launch(q, mem):
    a = mem.zeros(64, np.float32)
    off = a + 1

    def body(i):
        v = sycl.float4(1.0)
        v.store(i, off)

    with pytest.raises(sycl.exception) as info:
        q.parallel_for(sycl.range(4), body)
    assert info.value.code() == sycl.errc.kernel_argument
    assert "aligned to 16 bytes, as the vectors the kernel accesses" in str(info.value)


def test_memory_of_vectors(q, mem):
    p = sycl.malloc_shared(8, sycl.float4, q)
    out = mem.zeros(8, np.float32)
    np.asarray(p)[:] = np.arange(32, dtype=np.float32).reshape(8, 4)

    def body(i):
        v = p[i]
        out[i] = v.x + v.w
        p[i] = v.wzyx
        p[i].y = 100.0

    try:
        asm = compiled(q.get_device(), body, sycl.range(8)).spirv_asm()
        assert re.search(r"OpLoad %v4float %\w+ Aligned 16", asm), asm
        q.parallel_for(sycl.range(8), body).wait()
        ref = np.arange(32, dtype=np.float32).reshape(8, 4)
        assert mem.view(out, 8).tolist() == (ref[:, 0] + ref[:, 3]).tolist()
        expect = ref[:, ::-1].copy()
        expect[:, 1] = 100
        assert np.asarray(p).tolist() == expect.tolist()
    finally:
        sycl.free(p, q)


def test_accessors(q):
    buf = sycl.buffer(np.arange(32, dtype=np.float32))
    dst = sycl.buffer(np.zeros(32, np.float32))

    def cg(h):
        src = buf.get_access(h, sycl.read_only)
        out = sycl.accessor(dst, h, sycl.write_only, sycl.no_init)

        def k(i):
            v = sycl.float4()
            v.load(i, src)
            (v * 3.0).store(i, out)

        h.parallel_for(sycl.range(8), k)

    q.submit(cg).wait()
    with sycl.host_accessor(dst, sycl.read_only) as v:
        assert np.array(v).tolist() == (np.arange(32) * 3.0).tolist()


def test_work_group_memory(q, mem):
    a = mem.of(np.arange(64, dtype=np.float32))
    out = mem.zeros(64, np.float32)
    out4 = mem.zeros(64, np.float32)

    def body(it):
        tile = syclexp.work_group_memory(sycl.float32, (64,))
        tile4 = syclexp.work_group_memory(sycl.float4, (16,))
        i = it.get_global_id(0)
        lid = it.get_local_id(0)
        v = sycl.float4()
        v.load(i, a)
        v.store(lid, tile)
        tile4[lid] = v * 2.0
        sycl.group_barrier(it.get_group())
        w = sycl.float4()
        w.load(15 - lid, tile)
        w.store(i, out)
        tile4[15 - lid].store(i, out4)

    q.parallel_for(sycl.nd_range((16,), (16,)), body).wait()
    ref = np.arange(64, dtype=np.float32).reshape(16, 4)
    assert mem.view(out, 64).reshape(16, 4).tolist() == ref[::-1].tolist()
    assert mem.view(out4, 64).reshape(16, 4).tolist() == (ref[::-1] * 2).tolist()


# -- arguments, structs and functions --------------------------------------------------------

def scale(v, s):
    return v * s + sycl.float4(v.w)


@syclexp.nd_range_kernel(1)
def offset_kernel(delta: sycl.float4, p: sycl.ptr[sycl.float4]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    p[i] = p[i] + delta


def test_captured_and_free_function_arguments(q, mem):
    delta = sycl.float4(1, 2, 3, 4)
    out = mem.zeros(16, np.float32)

    def body(i):
        (delta + sycl.float32(i)).store(i, out)

    q.parallel_for(sycl.range(4), body).wait()
    assert mem.view(out, 16).reshape(4, 4).tolist() == [
        [1 + i, 2 + i, 3 + i, 4 + i] for i in range(4)]
    p = sycl.malloc_shared(4, sycl.float4, q)
    try:
        np.asarray(p)[:] = 1
        syclexp.nd_launch(q, sycl.nd_range((4,), (4,)),
                          syclexp.kernel_function(offset_kernel), delta, p)
        q.wait()
        assert np.asarray(p).tolist() == [[2, 3, 4, 5]] * 4
    finally:
        sycl.free(p, q)


def test_struct_fields_and_device_functions(q, mem):
    parts = mem.of(np.zeros(4, Particle.dtype))
    out = mem.zeros(16, np.float32)

    def body(i):
        p = Particle(pos=sycl.float4(sycl.float32(i), 1.0, 2.0, 3.0), mass=2.0)
        parts[i] = p
        parts[i].pos.z = 7.0  # a swizzle of a field in memory: its element
        back = parts[i]
        scale(back.pos, back.mass).store(i, out)

    q.parallel_for(sycl.range(4), body).wait()
    got = mem.view(out, 16).reshape(4, 4)
    for i in range(4):
        pos = np.array([i, 1, 7, 3], np.float32)
        assert got[i].tolist() == (pos * 2 + 3).tolist()


# -- errors ------------------------------------------------------------------------------------

def test_integer_true_division_is_refused(q):
    def body(i):
        v = sycl.int4(i)
        w = v / 2  # E:intdiv
        w.store(i, None)

    msg = build_error(q, body)
    assert f"test_vectors.py:{marker_line('E:intdiv')}" in msg and "use //" in msg


def test_mixed_vector_types_are_refused(q):
    def body(i):
        v = sycl.float4(1.0) + sycl.int4(1)  # E:mixed
        v.x = 1.0

    msg = build_error(q, body)
    assert f"test_vectors.py:{marker_line('E:mixed')}" in msg


def test_unknown_swizzles_and_truth_values_are_refused(q):
    def bad_swizzle(i):
        v = sycl.float2(1.0)
        v.z = 2.0  # E:swizzle

    def truth(i):
        v = sycl.float4(1.0)
        if v:  # E:truth
            v.x = 2.0

    def repeated(i):
        v = sycl.float4(1.0)
        v.xx = sycl.float2(1.0)  # E:repeat

    msg = build_error(q, bad_swizzle)
    assert f"test_vectors.py:{marker_line('E:swizzle')}" in msg and "'z'" in msg
    msg = build_error(q, truth)
    assert f"test_vectors.py:{marker_line('E:truth')}" in msg
    msg = build_error(q, repeated)
    assert f"test_vectors.py:{marker_line('E:repeat')}" in msg and "repeats" in msg
