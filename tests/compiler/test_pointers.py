"""Pointers as device addresses: stored in memory (arrays of pointers, struct fields),
passed between kernels, computed with, compared, null, held in variables, passed to and
returned from device functions, captured by closures; argument blocks for kernels whose
arguments outgrow the push constants; and the errors users cause with them."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.exceptions import errc
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import build_launch, build_launch_args, compiled

HERE = __file__


@sycl.struct
class Span:
    data: sycl.ptr[sycl.float32]
    n: sycl.int32


@sycl.struct
class Pair:
    key: sycl.int32
    value: sycl.float64


@pytest.fixture
def table(q):
    t = sycl.malloc_shared(3, sycl.ptr[sycl.float32], q)
    yield t
    q.wait()
    sycl.free(t, q)


def build_error(q, body, words: str) -> str:
    with pytest.raises(sycl.exception) as info:
        q.single_task(body).wait()
    message = str(info.value)
    assert info.value.code() == errc.build, message
    assert re.search(re.escape(HERE) + r":\d+", message), message
    assert words in message, message
    return message


# -- pointers in memory ------------------------------------------------------------------------

def test_an_array_of_pointers_is_indexed_through(q, mem, table):
    a = mem.of(np.arange(8, dtype=np.float32))
    b = mem.zeros(8, np.float32)
    table[0] = a
    table[1] = b
    table[2] = None

    def body(i):
        table[1][i] = table[0][i] * 2.0

    q.parallel_for(sycl.range(8), body).wait()
    np.testing.assert_array_equal(mem.view(b, 8), np.arange(8) * 2)
    assert table[0] == a and table[2] is None


def test_a_pointer_stored_by_one_kernel_is_used_by_another(q, mem, table):
    a = mem.of(np.arange(8, dtype=np.float32))
    out = mem.zeros(4, np.float32)
    table[0] = a

    def store():
        table[1] = table[0] + 4
        table[2] = out

    def use(i):
        table[2][i] = table[1][i] + 100.0

    q.single_task(store).wait()
    assert table[1] == a + 4 and table[2] == out
    q.parallel_for(sycl.range(4), use).wait()
    np.testing.assert_array_equal(mem.view(out, 4), np.arange(4, 8) + 100)


def test_pointers_to_pointers(q, mem, table):
    a = mem.of(np.arange(4, dtype=np.float32))
    out = mem.zeros(4, np.float32)
    table[0] = a
    outer = sycl.malloc_shared(1, sycl.ptr[sycl.ptr[sycl.float32]], q)
    try:
        outer[0] = table

        def body(i):
            out[i] = outer[0][0][i] + 1.0

        q.parallel_for(sycl.range(4), body).wait()
        np.testing.assert_array_equal(mem.view(out, 4), np.arange(4) + 1)
    finally:
        sycl.free(outer, q)


def test_a_struct_with_a_pointer_field_lives_in_usm(q, mem):
    a = mem.of(np.arange(6, dtype=np.float32))
    b = mem.of(np.arange(10, 13, dtype=np.float32))
    sums = mem.zeros(3, np.float32)
    spans = sycl.malloc_shared(3, Span, q)
    try:
        assert Span.dtype.itemsize == 16 and Span.dtype.fields["n"][1] == 8
        view = np.asarray(spans)
        view["data"][:2] = [a.address, b.address]
        view["n"][:2] = [6, 3]

        def build():  # a struct holding a pointer, built and stored in device code
            spans[2] = Span(data=spans[0].data + 4, n=2)

        def total(k):
            s = spans[k]
            acc = 0.0
            for i in range(s.n):
                acc += s.data[i]
            sums[k] = acc

        q.single_task(build).wait()
        assert int(view["data"][2]) == (a + 4).address and int(view["n"][2]) == 2
        q.parallel_for(sycl.range(3), total).wait()
        np.testing.assert_array_equal(mem.view(sums, 3), [15, 33, 9])
    finally:
        sycl.free(spans, q)


def test_a_captured_struct_with_a_pointer_field_is_an_argument(q, mem):
    a = mem.of(np.arange(4, dtype=np.float32))
    span = Span(data=a, n=4)

    def body(i):
        if i < span.n:
            span.data[i] = span.data[i] * 3.0

    q.parallel_for(sycl.range(8), body).wait()
    np.testing.assert_array_equal(mem.view(a, 4), np.arange(4) * 3)


# -- pointers as values ------------------------------------------------------------------------

def test_pointer_arithmetic_and_differences(q, mem):
    a = mem.of(np.arange(16, dtype=np.float32))
    pairs = mem.of(np.zeros(4, Pair.dtype))
    out = mem.zeros(8, np.int64)
    n = 5

    def body():
        p = a + 6
        q2 = p - 2
        out[0] = p - a
        out[1] = a - p
        out[2] = sycl.int64(q2[1])  # a[5]
        out[3] = (a + n)[-1]  # a[4]: negative indices from a pointer
        out[4] = (pairs + 3) - pairs  # in elements of 16 bytes
        out[5] = (2 + a)[0]
        out[6] = sycl.int64(p[sycl.uint8(3)])  # unsigned indices
        out[7] = (a + sycl.int64(3_000_000_000)) - a  # past 4 GiB of floats: 64-bit

    q.single_task(body).wait()
    assert mem.view(out, 8).tolist() == [6, -6, 5, 4, 3, 2, 9, 3_000_000_000]


def test_pointer_comparisons_and_null(q, mem, table):
    a = mem.zeros(8, np.float32)
    out = mem.zeros(12, np.int32)
    table[0] = a
    table[1] = None

    def body():
        p, e = a + 2, a + 5
        out[0] = p < e
        out[1] = p >= e
        out[2] = p == a + 2
        out[3] = p != a + 2
        out[4] = table[1] is None
        out[5] = table[0] is not None
        out[6] = table[1] == None  # noqa: E711 (device code compares with null)
        out[7] = table[0] != None  # noqa: E711
        out[8] = 1 if table[0] else 0
        out[9] = 1 if not table[1] else 0
        out[10] = table[0] == a
        out[11] = e - p

    q.single_task(body).wait()
    assert mem.view(out, 12).tolist() == [1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 3]


def test_pointer_variables_are_reassigned(q, mem):
    a = mem.of(np.arange(8, dtype=np.float32))
    b = mem.of(np.arange(100, 108, dtype=np.float32))
    out = mem.zeros(8, np.float32)
    flag = 1

    def body(i):
        q2 = a if i % 2 == flag else b  # a runtime choice between allocations
        p = a
        acc = 0.0
        for _ in range(3):  # walking a pointer
            acc += p[i % 4]
            p = p + 1
        if i > 5:
            p = b
        r = a if i > 100 else None
        out[i] = q2[i] + acc + p[0] * 0.0 + (r is None)

    q.parallel_for(sycl.range(8), body).wait()
    i = np.arange(8)
    expect = np.where(i % 2 == 1, i, 100 + i) + 3 * (i % 4) + 3 + 1
    np.testing.assert_array_equal(mem.view(out, 8), expect)


def _pick(p, other, first):
    return p if first else other


def _step(p, n):
    if n == 0:
        return None
    return p + n


def _first_two(p):
    return p, p + 1


def test_pointers_pass_to_and_return_from_device_functions(q, mem):
    a = mem.of(np.arange(8, dtype=np.float32))
    # one element more than x reaches: y is the element after x
    b = mem.of(np.arange(10, 19, dtype=np.float32))
    out = mem.zeros(8, np.float32)

    def body(i):
        p = _pick(a, b, i < 4)
        s = _step(p, i % 3)
        x, y = _first_two(p + i)
        out[i] = (s[0] if s is not None else -1.0) + x[0] - y[0] * 0.0

    q.parallel_for(sycl.range(8), body).wait()
    i = np.arange(8)
    base = np.where(i < 4, 0, 10)
    expect = np.where(i % 3 == 0, -1, base + i % 3) + base + i
    np.testing.assert_array_equal(mem.view(out, 8), expect)


def test_pointers_into_work_group_memory_are_values_too(q, mem):
    out = mem.zeros(8, np.int32)

    def body(it):
        tile = syclexp.work_group_memory(np.int32, 8)
        lid = it.get_local_id(0)
        tile[lid] = lid * 10
        sycl.group_barrier(it.get_group())
        p = tile + 1
        out[it.get_global_id(0)] = (p + lid % 4)[0] + (p - tile) + (p is None)

    q.parallel_for(sycl.nd_range((8,), (8,)), body).wait()
    assert mem.view(out, 8).tolist() == [10 * (1 + k % 4) + 1 for k in range(8)]


def _first_plus_one(t, out):
    def body():
        out[0] = t[0][0] + 1

    return body


def test_kernels_are_cached_apart_by_what_stored_pointers_point_to(q, mem, monkeypatch):
    from vksycl.compiler import kernel as kernel_cache
    from vksycl.kernels import plans as launch_cache

    out = mem.zeros(1, np.float32)
    floats, ints = mem.of(np.array([2.5], np.float32)), mem.of(np.array([7], np.int32))
    tables = []
    for p in (floats, ints):
        t = sycl.malloc_shared(1, sycl.ptr[p.dtype], q)
        t[0] = p
        tables.append(t)
    try:
        # numpy's dtype equality ignores what a pointer dtype points to: the memory
        # caches, and the disk cache behind them, must not
        q.single_task(_first_plus_one(tables[0], out)).wait()
        assert mem.view(out, 1)[0] == 3.5
        q.single_task(_first_plus_one(tables[1], out)).wait()
        assert mem.view(out, 1)[0] == 8
        monkeypatch.setattr(kernel_cache, "_MEMORY", {})
        monkeypatch.setattr(launch_cache, "_PREPARED", {})
        q.single_task(_first_plus_one(tables[0], out)).wait()
        assert mem.view(out, 1)[0] == 3.5
    finally:
        for t in tables:
            sycl.free(t, q)


# -- null pointer arguments --------------------------------------------------------------------

@syclexp.single_task_kernel
def _first_or_null(out: sycl.ptr[sycl.int32], src: sycl.ptr[sycl.int32]):
    out[0] = src[0] if src is not None else -1


def test_none_is_a_null_pointer_argument(q, mem):
    out, src = mem.zeros(1, np.int32), mem.of(np.array([42], np.int32))
    syclexp.single_task(q, syclexp.kernel_function(_first_or_null), out, src).wait()
    assert mem.view(out, 1)[0] == 42
    syclexp.single_task(q, syclexp.kernel_function(_first_or_null), out, None).wait()
    assert mem.view(out, 1)[0] == -1


# -- 64-bit addresses --------------------------------------------------------------------------

def test_element_addresses_are_computed_in_64_bits(q, mem):
    a = mem.zeros(16, np.float32)

    def body(it):
        a[it[0] * 4 + it[1]] = 1.0

    asm = compiled(q.get_device(), body, sycl.range(4, 4)).spirv_asm()
    # the 32-bit index is widened before it is scaled by the element size, so an index
    # into an array past 4 GiB (a 6 GiB float32 array indexed by a global id) is exact
    widen = re.search(r"(%\w+) = OpSConvert %long %\w+", asm)
    assert widen is not None, asm
    scaled = re.search(rf"(%\w+) = OpIMul %ulong {widen.group(1)} %ulong_4", asm)
    assert scaled is not None, asm
    added = re.search(rf"(%\w+) = OpIAdd %ulong %\w+ {scaled.group(1)}", asm)
    assert added is not None, asm
    pointer = re.search(rf"(%\w+) = OpConvertUToPtr %_ptr_PhysicalStorageBuffer_float "
                        rf"{added.group(1)}\n", asm)
    assert pointer is not None, asm
    assert re.search(rf"OpStore {pointer.group(1)} %float_1 Aligned 4", asm), asm
    assert "OpCapability PhysicalStorageBufferAddresses" in asm
    assert 'OpExtension "SPV_KHR_physical_storage_buffer"' in asm


def test_loads_and_stores_say_their_alignment(q, mem):
    pairs = mem.of(np.zeros(4, Pair.dtype))
    bytes_ = mem.zeros(4, np.uint8)

    def body(i):
        pairs[i].value = pairs[i].key + 0.5
        bytes_[i] = 7

    asm = compiled(q.get_device(), body, sycl.range(4)).spirv_asm()
    assert re.search(r"OpLoad %int %\w+ Aligned 4", asm), asm
    assert re.search(r"OpStore %\w+ %\w+ Aligned 8", asm), asm
    assert re.search(r"OpStore %\w+ %\w+ Aligned 1", asm), asm
    q.parallel_for(sycl.range(4), body).wait()
    assert mem.view(bytes_, 4).tolist() == [7] * 4


# -- errors ------------------------------------------------------------------------------------

def test_an_unaligned_pointer_argument_is_refused(q, mem):
    a = mem.zeros(8, np.float32)
    odd = (a.astype(np.uint8) + 2).astype(np.float32)

    def body(i):
        odd[i] = 1.0

    with pytest.raises(sycl.exception) as ei:
        q.parallel_for(sycl.range(4), body)
    assert ei.value.code() == errc.kernel_argument
    assert "odd is not aligned to its element type float32" in str(ei.value)


def test_a_pointer_from_another_context_is_refused(q):
    dev = q.get_device()
    other = sycl.queue(sycl.context(dev), dev)
    a = sycl.malloc_shared(4, sycl.float32, other)
    try:
        def body(i):
            a[i] = 1.0

        with pytest.raises(sycl.exception) as ei:
            build_launch(dev, body, sycl.range(4), context=q.get_context())
        assert ei.value.code() == errc.invalid
        assert "kernel argument a: pointer from another context" in str(ei.value)
    finally:
        sycl.free(a, other)


def test_a_non_pointer_where_a_pointer_is_expected(q, mem):
    ints, floats = mem.zeros(1, np.int32), mem.zeros(1, np.float32)
    k = syclexp.kernel_function(_first_or_null)
    with pytest.raises(sycl.exception) as ei:
        syclexp.single_task(q, k, ints, 3.0)
    assert ei.value.code() == errc.invalid
    assert "argument 1 (src) of _first_or_null is a pointer to int32, got float" in \
        str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        syclexp.single_task(q, k, floats, ints)
    assert ei.value.code() == errc.invalid
    assert "(out) of _first_or_null is a pointer to int32, got a pointer to float32" in \
        str(ei.value)
    # a launch that bypasses the checks of free function kernels still checks pointers
    with pytest.raises(sycl.exception) as ei:
        build_launch_args(q.get_device(), _first_or_null, None, [ints, 7])
    assert ei.value.code() == errc.kernel_argument
    assert "kernel argument #1 must be a USM pointer, got int" in str(ei.value)


def test_pointer_misuse_is_a_build_error_naming_the_line(q, mem, table):
    a = mem.zeros(4, np.float32)
    ints = mem.zeros(4, np.int32)
    table[0] = a

    def stores_an_int_pointer():
        table[1] = ints

    def stores_work_group_memory():
        table[1] = syclexp.work_group_memory(np.float32, 4)

    def compares_types():
        a[0] = a == ints

    def adds_pointers():
        table[1] = a + a

    def orders_null():
        a[0] = a < None

    build_error(q, stores_an_int_pointer, "cannot take a pointer to int32")
    build_error(q, stores_work_group_memory, "in local memory")
    build_error(q, compares_types, "point into different memory")
    build_error(q, adds_pointers, "cannot add two pointers")
    build_error(q, orders_null, "compares with a pointer, or with None")


# -- closures ----------------------------------------------------------------------------------

def _scaler(out, scale):
    def helper(i):
        out[i] = i * scale

    def body(i):
        helper(i)

    return body


def test_a_device_function_closure_captures_usm_pointers(q, mem):
    first, second = mem.zeros(4, np.float32), mem.zeros(4, np.float32)
    q.parallel_for(sycl.range(4), _scaler(first, 2.0)).wait()
    q.parallel_for(sycl.range(4), _scaler(second, 3.0)).wait()
    np.testing.assert_array_equal(mem.view(first, 4), np.arange(4) * 2)
    np.testing.assert_array_equal(mem.view(second, 4), np.arange(4) * 3)
    ck = compiled(q.get_device(), _scaler(second, 3.0), sycl.range(4))
    paths = sorted(a["path"] for a in ck.reflection()["args"] if a["kind"] != "launch")
    assert paths == [("fncell", ("cell", "helper"), "out"),
                     ("fncell", ("cell", "helper"), "scale")]


def test_closures_nest_and_capture_structs(q, mem):
    data = mem.of(np.arange(4, dtype=np.float32))
    out = mem.zeros(4, np.float32)
    span = Span(data=data, n=4)

    def inner(i):
        return span.data[i] + 1.0

    def outer(i):
        out[i] = inner(i) * 2.0

    def body(i):
        outer(i)

    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(mem.view(out, 4), (np.arange(4) + 1) * 2)
    span.data = out  # attributes are read at each launch
    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(mem.view(out, 4), ((np.arange(4) + 1) * 2 + 1) * 2)


def test_a_closure_passed_around_in_device_code_keeps_its_captures(q, mem):
    out, more = mem.zeros(4, np.int32), mem.zeros(4, np.int32)

    def helper(i):
        out[i] = i + 1

    def other(i):
        more[i] = i + 2

    def run(f, i):
        f(i)

    def body(i):
        f, g = helper, other  # a tuple built here keeps how each was reached
        run(f, i)
        run(g, i)

    q.parallel_for(sycl.range(4), body).wait()
    assert mem.view(out, 4).tolist() == [1, 2, 3, 4]
    assert mem.view(more, 4).tolist() == [2, 3, 4, 5]


def test_closures_made_at_each_call_share_one_prepared_kernel(q, mem):
    from vksycl.kernels import plans as launch_cache

    outs = [mem.zeros(4, np.float32) for _ in range(3)]
    q.parallel_for(sycl.range(4), _scaler(outs[0], 1.0)).wait()
    before = len(launch_cache._PREPARED)
    for k, out in enumerate(outs):
        q.parallel_for(sycl.range(4), _scaler(out, 1.0 + k)).wait()
    assert len(launch_cache._PREPARED) == before
    for k, out in enumerate(outs):
        np.testing.assert_array_equal(mem.view(out, 4), np.arange(4) * (1.0 + k))


def _offset_writer(out, offset):
    def helper(i, add=offset):  # a default is compiled in
        out[i] = i + add

    def body(i):
        helper(i)

    return body


def test_a_closure_default_is_part_of_the_kernel_key(q, mem, monkeypatch):
    from vksycl.compiler import kernel as kernel_cache
    from vksycl.kernels import plans as launch_cache

    out = mem.zeros(4, np.int32)
    for offset in (10, 20):
        q.parallel_for(sycl.range(4), _offset_writer(out, offset)).wait()
        assert mem.view(out, 4).tolist() == [offset + k for k in range(4)]
    monkeypatch.setattr(kernel_cache, "_MEMORY", {})  # the disk cache keys it too
    monkeypatch.setattr(launch_cache, "_PREPARED", {})
    q.parallel_for(sycl.range(4), _offset_writer(out, 30)).wait()
    assert mem.view(out, 4).tolist() == [30 + k for k in range(4)]


def test_a_closure_the_kernel_reaches_by_no_path_must_take_memory_as_an_argument(q, mem):
    out = mem.zeros(4, np.int32)

    def helper():
        out[0] = 1

    helpers = (helper,)  # a captured tuple is compiled in, by value

    def body():
        for f in helpers:
            f()

    message = build_error(q, body, "pass it as an argument")
    assert "'out'" in message


# -- argument blocks ---------------------------------------------------------------------------

def test_a_kernel_with_more_arguments_than_push_constants(q, mem):
    ptrs = [mem.of(np.full(4, k, np.float32)) for k in range(20)]
    (p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18,
     p19) = ptrs
    out = mem.zeros(4, np.float32)
    scale = 2.0

    def body(i):
        out[i] = scale * (p0[i] + p1[i] + p2[i] + p3[i] + p4[i] + p5[i] + p6[i] + p7[i] +
                          p8[i] + p9[i] + p10[i] + p11[i] + p12[i] + p13[i] + p14[i] +
                          p15[i] + p16[i] + p17[i] + p18[i] + p19[i]) + i

    dev = q.get_device()
    ck = compiled(dev, body, sycl.range(4))
    refl = ck.reflection()
    if dev.vulkan.max_push_constants_size < 21 * 8:
        assert refl["args_in_memory"] and refl["push_size"] == 8
        assert refl["args_size"] >= 21 * 8
        assert "OpConvertUToPtr %_ptr_PhysicalStorageBuffer_Args" in ck.spirv_asm()
    for run in range(3):  # each launch packs its own block
        scale = 2.0 + run
        q.parallel_for(sycl.range(4), body).wait()
        np.testing.assert_array_equal(mem.view(out, 4), scale * 190 + np.arange(4))


@syclexp.nd_range_kernel(1)
def _many(a0: sycl.ptr[sycl.int32], a1: sycl.ptr[sycl.int32], a2: sycl.ptr[sycl.int32],
          a3: sycl.ptr[sycl.int32], a4: sycl.ptr[sycl.int32], a5: sycl.ptr[sycl.int32],
          a6: sycl.ptr[sycl.int32], a7: sycl.ptr[sycl.int32], a8: sycl.ptr[sycl.int32],
          a9: sycl.ptr[sycl.int32], a10: sycl.ptr[sycl.int32], a11: sycl.ptr[sycl.int32],
          a12: sycl.ptr[sycl.int32], a13: sycl.ptr[sycl.int32], a14: sycl.ptr[sycl.int32],
          a15: sycl.ptr[sycl.int32], a16: sycl.ptr[sycl.int32], a17: sycl.ptr[sycl.int32],
          a18: sycl.ptr[sycl.int32], a19: sycl.ptr[sycl.int32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    a19[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i] + a9[i] + \
        a10[i] + a11[i] + a12[i] + a13[i] + a14[i] + a15[i] + a16[i] + a17[i] + a18[i]


def test_a_free_function_kernel_with_twenty_pointers(q, mem):
    ptrs = [mem.of(np.full(8, k, np.int32)) for k in range(20)]
    syclexp.nd_launch(q, sycl.nd_range((8,), (8,)), syclexp.kernel_function(_many),
                      *ptrs).wait()
    assert mem.view(ptrs[19], 8).tolist() == [sum(range(19))] * 8
