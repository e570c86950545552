"""USM allocation, pointers, host access and every error path of memory operations."""

import numpy as np
import pytest

import vksycl as sycl


def code_of(fn):
    with pytest.raises(sycl.exception) as err:
        fn()
    return err.value.code()


def test_allocation_kinds_and_queries(q):
    ctx = q.get_context()
    d = sycl.malloc_device(10, sycl.float32, q)
    h = sycl.malloc_host(10, np.float32, q)
    s = sycl.malloc_shared(10, sycl.float32, q.get_device(), ctx)
    assert sycl.get_pointer_type(d, ctx) == sycl.usm.alloc.device
    assert sycl.get_pointer_type(h, ctx) == sycl.usm.alloc.host
    assert sycl.get_pointer_type(s, ctx) == sycl.usm.alloc.shared
    assert sycl.get_pointer_type(np.zeros(3), ctx) == sycl.usm.alloc.unknown
    assert sycl.get_pointer_device(d, ctx) == q.get_device()
    assert sycl.get_pointer_type(d, sycl.context(q.get_device())) == sycl.usm.alloc.unknown
    untyped = sycl.malloc_device(33, q)
    assert untyped.dtype == np.uint8 and untyped.allocation.nbytes == 33
    explicit = sycl.malloc(8, sycl.int64, q, sycl.usm.alloc.shared)
    assert sycl.get_pointer_type(explicit, ctx) == sycl.usm.alloc.shared
    aligned = sycl.aligned_alloc_device(64, 5, sycl.int32, q)
    assert aligned.allocation.nbytes == 20
    for p in (d, h, s, untyped, explicit, aligned):
        sycl.free(p, q)
    assert sycl.get_pointer_type(d, ctx) == sycl.usm.alloc.unknown


def test_zero_count_gives_null_and_free_accepts_it(q):
    assert sycl.malloc_device(0, sycl.float32, q) is None
    sycl.free(None, q)


def test_pointer_arithmetic_and_comparison(q):
    a = sycl.malloc_shared(100, sycl.float64, q)
    b = a + 10
    assert b.byte_offset == 80 and (b - a) == 10 and (b - 3) - a == 7
    assert a < b and b > a and a + 10 == b and a != b and hash(a + 10) == hash(b)
    assert isinstance(a, sycl.ptr)
    np.asarray(a)[:] = np.arange(100)
    assert b[0] == 10.0 and b[-1] == 9.0
    b[5] = -1.0
    assert np.asarray(a)[15] == -1.0
    view = np.asarray(b)
    assert view.shape == (90,) and view[0] == 10.0
    assert a.astype(sycl.uint8)[8] == np.float64(1.0).tobytes()[0]
    sycl.free(a, q)


def test_host_views_are_live(q):
    h = sycl.malloc_host(8, sycl.int32, q)
    d = sycl.malloc_device(8, sycl.int32, q)
    np.asarray(h)[:] = np.arange(8)
    q.memcpy(d, h, 32).wait()
    q.fill(h, np.int32(0), 8).wait()
    assert np.all(np.asarray(h) == 0)
    q.memcpy(h, d, 32).wait()
    assert np.array_equal(np.asarray(h), np.arange(8))
    sycl.free(h, q)
    sycl.free(d, q)


def test_device_memory_is_not_host_accessible(q):
    d = sycl.malloc_device(4, sycl.int32, q)
    assert code_of(lambda: d[0]) == sycl.errc.invalid
    assert code_of(lambda: np.asarray(d)) == sycl.errc.invalid
    sycl.free(d, q)


def test_host_indexing_is_bounds_checked(q):
    s = sycl.malloc_shared(4, sycl.int32, q)
    assert code_of(lambda: s[4]) == sycl.errc.invalid
    assert code_of(lambda: (s - 1)[0]) == sycl.errc.invalid
    sycl.free(s, q)


def test_memory_errors_run_nothing(q):
    src = sycl.malloc_shared(16, sycl.uint8, q)
    dst = sycl.malloc_shared(16, sycl.uint8, q)
    np.asarray(src)[:] = 1
    np.asarray(dst)[:] = 9
    cases = [
        lambda: q.memcpy(dst, src, 17),                       # overrun both
        lambda: q.memcpy(dst + 8, src, 9),                    # overrun the destination
        lambda: q.memcpy(dst, src + 15, 2),                   # overrun the source
        lambda: q.memcpy(dst, None, 4),                       # null
        lambda: q.memcpy(dst, src, -1),                       # negative size
        lambda: q.memcpy(dst, [1, 2, 3], 3),                  # not memory
        lambda: q.memcpy(np.zeros(4, np.uint8)[::2], src, 2),  # not contiguous
        lambda: q.fill(dst, b"", 4),                          # empty pattern
        lambda: q.fill(dst, np.uint32(1), 5),                 # 20 bytes into 16
        lambda: q.memset(dst - 1, 0, 4),                      # before the allocation
        lambda: q.copy(src, dst, 17),
    ]
    readonly = np.zeros(16, np.uint8)
    readonly.flags.writeable = False
    cases.append(lambda: q.memcpy(readonly, src, 4))
    for case in cases:
        assert code_of(case) == sycl.errc.invalid
    q.wait()
    assert np.all(np.asarray(dst) == 9)
    sycl.free(src, q)
    sycl.free(dst, q)


def test_freed_and_foreign_pointers(q):
    a = sycl.malloc_device(16, sycl.uint8, q)
    b = sycl.malloc_device(16, sycl.uint8, q)
    sycl.free(a, q)
    assert code_of(lambda: q.memcpy(b, a, 4)) == sycl.errc.invalid
    assert code_of(lambda: q.memset(a, 0, 4)) == sycl.errc.invalid
    assert code_of(lambda: sycl.free(a, q)) == sycl.errc.invalid
    assert code_of(lambda: sycl.free(b + 1, q)) == sycl.errc.invalid
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    foreign = sycl.malloc_device(16, sycl.uint8, other)
    assert code_of(lambda: q.memcpy(b, foreign, 4)) == sycl.errc.invalid
    assert code_of(lambda: sycl.free(foreign, q)) == sycl.errc.invalid
    sycl.free(foreign, other)
    sycl.free(b, q)


@pytest.mark.parametrize("malloc", [sycl.malloc_device, sycl.malloc_host, sycl.malloc_shared])
def test_allocation_too_large_for_the_device(q, malloc):
    huge = q.get_device().get_info(sycl.info.device.global_mem_size) * 4
    assert code_of(lambda: malloc(huge, sycl.uint8, q)) == sycl.errc.memory_allocation


def test_bad_allocation_arguments(q):
    assert code_of(lambda: sycl.malloc_device(-1, sycl.uint8, q)) == sycl.errc.invalid
    assert code_of(lambda: sycl.malloc_device(4, sycl.uint8)) == sycl.errc.invalid
    assert code_of(lambda: sycl.malloc(4, sycl.uint8, q)) == sycl.errc.invalid
    assert code_of(lambda: sycl.aligned_alloc_device(3, 4, q)) == sycl.errc.invalid


def test_prefetch_and_mem_advise_check_and_order(q):
    a = sycl.malloc_shared(64, sycl.uint8, q)
    q.prefetch(a, 64).wait()
    q.mem_advise(a, 64, 0).wait()
    assert code_of(lambda: q.prefetch(a, 65)) == sycl.errc.invalid
    sycl.free(a, q)


def test_one_kernel_over_an_allocation_past_the_storage_buffer_range(q):
    """Kernels reach USM by device address: 200 MiB on lavapipe (past its 128 MiB
    maxStorageBufferRange; 16 MiB past the range elsewhere) filled by one kernel, every
    element checked."""
    n = max(200 << 20, q.get_device().vulkan.max_storage_buffer_range + (16 << 20)) // 4
    x = sycl.malloc_device(n, sycl.int32, q)

    def body(i):
        x[i] = i * 3 + 1

    q.parallel_for(sycl.range(n), body).wait()
    got = np.empty(n, np.int32)
    q.memcpy(got, x, n * 4).wait()
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.int32) * 3 + 1)
    sycl.free(x, q)


# -- host stores and loads of struct values ----------------------------------------------------
@sycl.struct
class Vec2:
    x: sycl.float32
    y: sycl.float32


@sycl.struct
class View:
    origin: Vec2
    data: sycl.ptr[sycl.float32]
    n: sycl.int32


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_host_stores_and_loads_structs_with_pointer_and_struct_fields(q, kind):
    malloc = {"shared": sycl.malloc_shared, "host": sycl.malloc_host}[kind]
    data = sycl.malloc_shared(8, sycl.float32, q)
    np.asarray(data)[:] = np.arange(8)
    views = malloc(3, View, q)
    views[0] = View(origin=Vec2(1.0, 2.0), data=data + 2, n=3)
    views[1] = View(Vec2(-1.0, 0.5), None, 0)
    got = views[0]
    assert type(got) is View and type(got.origin) is Vec2
    assert (got.origin.x, got.origin.y, got.n) == (1.0, 2.0, 3)
    assert got.data == data + 2 and got.data.dtype == np.float32
    assert views[1].data is None
    out = sycl.malloc_shared(2, sycl.float32, q)

    def k():  # the device reads what the host stored
        v = views[0]
        s = 0.0
        for i in range(v.n):
            s += v.data[i]
        out[0] = s + v.origin.x * 10.0
        out[1] = views[1].origin.y
    q.single_task(k).wait()
    np.testing.assert_array_equal(np.asarray(out), [2 + 3 + 4 + 10.0, 0.5])
    for p in (data, views, out):
        sycl.free(p, q)


def test_host_store_of_a_struct_errors(q):
    views = sycl.malloc_shared(1, View, q)
    with pytest.raises(sycl.exception, match="into memory of View: it has no field 'origin'") as e:
        views[0] = Vec2(1.0, 2.0)
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception, match=r"sycl\.ptr or None"):
        views[0] = View(Vec2(0, 0), data=np.zeros(4, np.float32), n=4)
    device = sycl.malloc_device(1, View, q)
    with pytest.raises(sycl.exception, match="not accessible from the host"):
        device[0] = View(Vec2(0, 0), None, 0)
    for p in (views, device):
        sycl.free(p, q)


@pytest.mark.parametrize("kind", ["shared", "host"])
def test_host_slices_of_usm(q, kind):
    """`p[a:b]` is a numpy view of host-accessible USM, and `p[a:b] = values` stores
    numbers as numpy assigns them and structs one by one; device USM, a wrong count and
    an index that is no integer are errc.invalid."""
    malloc = {"shared": sycl.malloc_shared, "host": sycl.malloc_host}[kind]
    a = malloc(6, sycl.int32, q)
    a[:] = np.arange(6)
    a[::2] = 7
    np.testing.assert_array_equal(a[1:4], [1, 7, 3])
    a[4:] = [40, 50]
    np.testing.assert_array_equal(np.asarray(a), [7, 1, 7, 3, 40, 50])
    (a + 2)[:2] = [20, 30]  # a slice counts from the pointer
    np.testing.assert_array_equal(a[:], [7, 1, 20, 30, 40, 50])
    data = sycl.malloc_shared(4, sycl.float32, q)
    views = malloc(3, View, q)
    views[1:3] = [View(Vec2(1.0, 2.0), data + 1, 3), View(Vec2(0.0, 0.0), None, 0)]
    assert views[1].data == data + 1 and views[1].n == 3 and views[2].data is None
    for bad, what in ((lambda: a.__setitem__(slice(0, 6), [1, 2]), "6 int32 elements"),
                      (lambda: views.__setitem__(slice(0, 2), View(Vec2(0.0, 0.0), None, 1)),
                       "2 struct elements"),
                      (lambda: a[1.5], "integer or a slice"),
                      (lambda: a[True], "integer or a slice")):
        with pytest.raises(sycl.exception, match=what) as e:
            bad()
        assert e.value.code() == sycl.errc.invalid
    d = sycl.malloc_device(4, sycl.int32, q)
    with pytest.raises(sycl.exception, match="not accessible from the host"):
        d[:2] = 1
    for p in (a, data, views, d):
        sycl.free(p, q)
