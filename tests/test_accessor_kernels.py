"""Accessors in kernels: elements by indices, ids and items in one to three dimensions,
ranged accessors, the range and offset queries, atomics, device functions taking
accessors, local accessors in nd_range kernels, free function kernels with accessor
parameters, the compiled kernel reused by a new accessor each command group, and the
build errors (each naming this file and the line, found by its marker comment)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import plans

READ = sycl.access_mode.read
WRITE = sycl.access_mode.write


@pytest.fixture
def buffers():
    """`sycl.buffer` for a test that expects an error, each released when it ends: the
    error's traceback keeps the test's frame, and so its buffers, until the collector
    finds the cycle."""
    made = []

    def make(*args, **kwargs):
        made.append(sycl.buffer(*args, **kwargs))
        return made[-1]
    yield make
    for b in made:
        b.release()


def contents(buf) -> np.ndarray:
    with sycl.host_accessor(buf, sycl.read_only) as v:
        return np.array(v)


# -- elements -----------------------------------------------------------------------------
def test_one_dimension_reads_and_writes_by_int_and_by_item(q):
    src = sycl.buffer(np.arange(64, dtype=np.float32))
    dst = sycl.buffer(sycl.range(64), np.float32)
    both = sycl.buffer(np.zeros(64, np.int32))

    def cg(h):
        a = src.get_access(h, sycl.read_only)
        b = sycl.accessor(dst, h, sycl.write_only, sycl.no_init)
        c = sycl.accessor(both, h, sycl.read_write)

        def k(it):
            i = it.get_id(0)
            b[i] = a[it] * 2.0 + 1.0
            c[it.get_id()] = c[i] + i
            c[i] += 1
        h.parallel_for(sycl.range(64), k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(dst), np.arange(64, dtype=np.float32) * 2 + 1)
    np.testing.assert_array_equal(contents(both), np.arange(64) + 1)


def test_two_dimensions_by_indices_id_and_item(q):
    a = np.arange(6 * 5, dtype=np.int32).reshape(6, 5)
    buf = sycl.buffer(a.copy())
    out = sycl.buffer(sycl.range(6, 5), np.int32)
    out2 = sycl.buffer(sycl.range(6, 5), np.int32)

    def cg(h):
        x = sycl.accessor(buf, h, sycl.read_only)
        y = sycl.accessor(out, h, sycl.write_only, sycl.no_init)
        z = sycl.accessor(out2, h, sycl.write_only, sycl.no_init)

        def k(it):
            i, j = it[0], it[1]
            y[i, j] = x[it.get_id()] * 10 + x[(i, 0)]
            z[it] = x[i, j] + 1
        h.parallel_for(sycl.range(6, 5), k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(out), a * 10 + a[:, :1])
    np.testing.assert_array_equal(contents(out2), a + 1)


def test_ranged_accessors_with_offsets_in_two_and_three_dimensions(q):
    a2 = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
    b2 = sycl.buffer(a2.copy())

    def cg2(h):
        acc = sycl.accessor(b2, h, sycl.read_write, access_range=sycl.range(3, 4),
                            access_offset=sycl.id(2, 3))

        def k(it):
            acc[it] *= 2.0
        h.parallel_for(sycl.range(3, 4), k)
    q.submit(cg2).wait()
    want = a2.copy()
    want[2:5, 3:7] *= 2
    np.testing.assert_array_equal(contents(b2), want)

    a3 = np.arange(4 * 5 * 6, dtype=np.int64).reshape(4, 5, 6)
    b3 = sycl.buffer(a3.copy())
    out = sycl.buffer(np.full((2, 3, 4), -1, np.int64))

    def cg(h):
        src = sycl.accessor(b3, h, sycl.read_only, access_range=sycl.range(2, 3, 4),
                            access_offset=sycl.id(1, 2, 1))
        dst = sycl.accessor(out, h, sycl.write_only)

        def k(it):
            i, j, m = it[0], it[1], it[2]
            dst[i, j, m] = src[i, j, m] + src[it] - src[0, 0, 0]
        h.parallel_for(sycl.range(2, 3, 4), k)
    q.submit(cg).wait()
    region = a3[1:3, 2:5, 1:5]
    np.testing.assert_array_equal(contents(out), 2 * region - region[0, 0, 0])


def test_one_dimensional_ranged_accessor_sees_its_region_from_index_zero(q):
    buf = sycl.buffer(np.zeros(32, np.int32))

    def cg(h):
        acc = sycl.accessor(buf, h, sycl.write_only, access_range=sycl.range(8),
                            access_offset=sycl.id(20))

        def k(i):
            acc[i] = i + 100
        h.parallel_for(sycl.range(8), k)
    q.submit(cg).wait()
    want = np.zeros(32, np.int32)
    want[20:28] = np.arange(8) + 100
    np.testing.assert_array_equal(contents(buf), want)


# -- queries ------------------------------------------------------------------------------
def test_range_offset_and_sizes_written_out(q):
    buf = sycl.buffer(np.zeros((6, 10), np.float32))
    one = sycl.buffer(np.zeros(50, np.int16))
    out = sycl.buffer(np.zeros(16, np.int64))

    def cg(h):
        a = sycl.accessor(buf, h, sycl.read_only, access_range=sycl.range(3, 4),
                          access_offset=sycl.id(2, 5))
        b = sycl.accessor(one, h, sycl.read_only, access_range=sycl.range(30),
                          access_offset=sycl.id(7))
        o = sycl.accessor(out, h, sycl.write_only)

        def k():
            r = a.get_range()
            o[0] = r[0]
            o[1] = r[1]
            o[2] = a.get_offset()[0]
            o[3] = a.get_offset().get(1)
            o[4] = a.size()
            o[5] = a.get_count()
            o[6] = a.byte_size()
            o[7] = r.size()
            o[8] = len(b)
            o[9] = b.get_range() * 2  # a one-dimensional range is a number
            o[10] = b.get_offset()[0]
            o[11] = b.byte_size()
            o[12] = 1 if a.empty() else 2
            rows, cols = a.get_range()
            o[13] = rows * 100 + cols
            for d in range(2):
                o[14 + d] = r[d] + 1000  # a dimension chosen at run time
        h.single_task(k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(out), [3, 4, 2, 5, 12, 12, 48, 12, 30, 60, 7, 60,
                                                  2, 304, 1003, 1004])


# -- atomics ------------------------------------------------------------------------------
def test_atomic_ref_on_accessor_elements(q):
    hist = sycl.buffer(np.zeros(4, np.int32))
    grid = sycl.buffer(np.zeros((2, 3), np.uint32))
    total = sycl.buffer(np.zeros(1, np.float32))

    def cg(h):
        hh = sycl.accessor(hist, h, sycl.read_write)
        g = sycl.accessor(grid, h, sycl.read_write)
        t = sycl.accessor(total, h, sycl.read_write)

        def k(i):
            sycl.atomic_ref(hh[i % 4]).fetch_add(1)
            sycl.atomic_ref(g[i % 2, i % 3]).fetch_add(sycl.uint32(i))
            sycl.atomic_ref(t[0]).fetch_add(1.0)
        h.parallel_for(sycl.range(120), k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(hist), [30, 30, 30, 30])
    want = np.zeros((2, 3), np.uint32)
    for i in range(120):
        want[i % 2, i % 3] += i
    np.testing.assert_array_equal(contents(grid), want)
    assert contents(total)[0] == 120


def test_atomic_ref_on_a_pointer_element(q, mem):
    counts = mem.zeros(3, np.int32)

    def k(i):
        sycl.atomic_ref(counts[i % 3]).fetch_add(2)
    q.parallel_for(sycl.range(30), k).wait()
    np.testing.assert_array_equal(mem.view(counts, 3), [20, 20, 20])


# -- device functions ---------------------------------------------------------------------
def axpy_at(y, x, a, i):
    y[i] = a * x[i] + y[i]


def last_of(acc):
    return acc[acc.get_range()[0] - 1]


def area(r):
    return r[0] * r.get(1)


def fill_row(acc, i):
    r = acc.get_range()
    for j in range(r[1]):
        acc[i, j] = i * 10 + j + acc.get_offset()[1]


def test_device_functions_take_accessors(q):
    x = sycl.buffer(np.arange(16, dtype=np.float32))
    y = sycl.buffer(np.ones(16, np.float32))
    z = sycl.buffer(np.full(16, 5, np.float32))
    w = sycl.buffer(np.arange(10, dtype=np.float32) * 3)
    tail = sycl.buffer(np.zeros(3, np.float32))
    rows = sycl.buffer(np.zeros((4, 6), np.int32))

    def cg(h):
        xa = sycl.accessor(x, h, sycl.read_only)
        ya = sycl.accessor(y, h, sycl.read_write)
        za = sycl.accessor(z, h, sycl.read_write)
        wa = sycl.accessor(w, h, sycl.read_only)
        ta = sycl.accessor(tail, h, sycl.write_only)
        ra = sycl.accessor(rows, h, sycl.write_only, access_range=sycl.range(4, 3),
                           access_offset=sycl.id(0, 2))

        def k(i):
            axpy_at(ya, xa, 2.0, i)
            axpy_at(za, xa, -1.0, i)  # another accessor: another instance
            if i == 0:
                ta[0] = last_of(xa)
            if i == 1:
                ta[1] = last_of(wa)
            if i == 2:
                ta[2] = area(ra.get_range())
            if i < 4:
                fill_row(ra, i)
        h.parallel_for(sycl.range(16), k)
    q.submit(cg).wait()
    xs = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(contents(y), 2 * xs + 1)
    np.testing.assert_array_equal(contents(z), 5 - xs)
    np.testing.assert_array_equal(contents(tail), [15, 27, 12])
    want = np.zeros((4, 6), np.int32)
    for i in range(4):
        want[i, 2:5] = i * 10 + np.arange(3) + 2
    np.testing.assert_array_equal(contents(rows), want)


# -- local accessors ----------------------------------------------------------------------
def mirrored(tile, i):
    return tile[len(tile) - 1 - i]


def test_local_accessor_tile_reverses_each_work_group(q):
    data = np.arange(64, dtype=np.int32)
    buf = sycl.buffer(data.copy())

    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_write)
        tile = sycl.local_accessor(np.int32, sycl.range(16), h)

        def k(it):
            lid = it.get_local_id(0)
            tile[lid] = acc[it.get_global_id(0)]
            it.barrier()
            acc[it.get_global_id(0)] = mirrored(tile, lid)
        h.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(16)), k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(buf), data.reshape(4, 16)[:, ::-1].reshape(-1))


def test_a_repeated_command_group_runs_the_kernel_of_its_own_local_accessor_shape(q):
    """Command groups repeating one kernel over one buffer and launch, with a new local
    accessor each: one of the same shape repeats the last command, one of another shape
    runs a kernel of its own (each writes the length of the tile it got)."""
    out = np.zeros(64, np.int32)
    with sycl.buffer(out) as buf:
        def launch(elements):
            def cg(h):
                acc = sycl.accessor(buf, h, sycl.write_only)
                tile = sycl.local_accessor(np.int32, sycl.range(elements), h)

                def k(it):
                    tile[it.get_local_id(0)] = len(tile)
                    it.barrier()
                    acc[it.get_global_id(0)] = tile[it.get_local_id(0)]
                h.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(16)), k)
            q.submit(cg).wait()
            with sycl.host_accessor(buf, sycl.read_only) as v:
                return v.copy()
        for elements in (16, 16, 32, 16, 48, 48):
            np.testing.assert_array_equal(launch(elements), np.full(64, elements, np.int32))


def test_work_group_memory_past_the_devices_is_refused_before_anything_runs(q):
    """Local accessors needing more work-group memory than the device has
    (info.device.local_mem_size) raise errc.memory_allocation at submission, as
    sycl_ext_oneapi_work_group_static says, and nothing is written; one that fits runs."""
    size = q.get_device().get_info(sycl.info.device.local_mem_size)
    out = np.zeros(64, np.float64)
    with sycl.buffer(out) as buf:
        def launch(elements):
            def cg(h):
                acc = sycl.accessor(buf, h, sycl.write_only)
                tile = sycl.local_accessor(np.float64, sycl.range(elements), h)

                def k(it):
                    lid = it.get_local_id(0)
                    tile[elements - 1 - lid] = 1.0 + lid
                    it.barrier()
                    acc[it.get_global_id(0)] = tile[elements - 1 - lid]
                h.parallel_for(sycl.nd_range(sycl.range(64), sycl.range(16)), k)
            return q.submit(cg)
        with pytest.raises(sycl.exception, match=f"needs {size + 8} bytes of work-group "
                           f"memory; .* has {size}") as e:
            launch(size // 8 + 1)
        assert e.value.code() == sycl.errc.memory_allocation
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert (v == 0).all()
        launch(size // 8).wait()
    np.testing.assert_array_equal(out, 1.0 + np.arange(64) % 16)


def test_two_dimensional_local_accessor_transposes_tiles(q):
    a = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
    src = sycl.buffer(a.copy())
    dst = sycl.buffer(sycl.range(8, 8), np.float32)
    sizes = sycl.buffer(np.zeros(3, np.int32))

    def cg(h):
        s = sycl.accessor(src, h, sycl.read_only)
        d = sycl.accessor(dst, h, sycl.write_only, sycl.no_init)
        o = sycl.accessor(sizes, h, sycl.write_only)
        tile = sycl.local_accessor(np.float32, sycl.range(4, 4), h)

        def k(it):
            tile[it.get_local_id()] = s[it.get_global_id()]
            sycl.group_barrier(it.get_group())
            i, j = it.get_local_id(0), it.get_local_id(1)
            gi, gj = it.get_global_id(0), it.get_global_id(1)
            d[gi, gj] = tile[j, i]
            if it.get_global_linear_id() == 0:
                o[0] = tile.get_range()[1]
                o[1] = tile.size()
                o[2] = tile.byte_size()
        h.parallel_for(sycl.nd_range(sycl.range(8, 8), sycl.range(4, 4)), k)
    q.submit(cg).wait()
    want = a.reshape(2, 4, 2, 4).transpose(0, 3, 2, 1).reshape(8, 8)
    np.testing.assert_array_equal(contents(dst), want)
    np.testing.assert_array_equal(contents(sizes), [4, 16, 64])


def test_atomics_on_a_local_accessor(q):
    out = sycl.buffer(np.zeros(4, np.int32))

    def cg(h):
        o = sycl.accessor(out, h, sycl.write_only)
        count = sycl.local_accessor(np.int32, sycl.range(1), h)

        def k(it):
            if it.get_local_id(0) == 0:
                count[0] = 0
            it.barrier()
            sycl.atomic_ref(count[0]).fetch_add(it.get_local_id(0))
            it.barrier()
            if it.get_local_id(0) == 0:
                o[it.get_group(0)] = count[0]
        h.parallel_for(sycl.nd_range(sycl.range(128), sycl.range(32)), k)
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(out), [sum(range(32))] * 4)


# -- a new accessor per command group -----------------------------------------------------
def test_a_new_accessor_each_command_group_reuses_the_kernel_with_fresh_values(q,
                                                                               monkeypatch):
    compiles = []
    real = plans.load_or_compile
    monkeypatch.setattr(plans, "load_or_compile",
                        lambda *a, **k: compiles.append(1) or real(*a, **k))
    bufs = [sycl.buffer(np.zeros(40, np.int32)) for _ in range(3)]

    def submit(buf, offset, value):
        def cg(h):
            acc = sycl.accessor(buf, h, sycl.read_write, access_range=sycl.range(10),
                                access_offset=sycl.id(offset))

            def k(i):
                acc[i] = acc[i] + value + acc.get_offset()[0] * 1000
            h.parallel_for(sycl.range(10), k)
        q.submit(cg).wait()

    for n in range(4):
        for k, buf in enumerate(bufs):
            submit(buf, 10 * k, n)
    # one compile at most (none when the disk cache has it), whatever the accessor
    assert len(compiles) <= 1
    for k, buf in enumerate(bufs):
        want = np.zeros(40, np.int32)
        want[10 * k:10 * k + 10] = 4 * 10000 * k + sum(range(4))
        np.testing.assert_array_equal(contents(buf), want)


def test_one_placeholder_accessor_in_every_command_group(q):
    out = sycl.buffer(np.zeros(8, np.int32))
    acc = sycl.accessor(out)

    def k(i):
        acc[i] += 1

    def cg(h):
        h.require(acc)
        h.parallel_for(sycl.range(8), k)

    for _ in range(3):
        q.submit(cg).wait()
    np.testing.assert_array_equal(contents(out), np.full(8, 3))


def test_launches_keep_no_buffer_alive(q):
    """A buffer writes back when it goes: no plan or cache of a launch may keep the
    accessors it captured or was passed, and so their buffers."""
    def closure(a, n):
        buf = sycl.buffer(a)

        def cg(h):
            acc = sycl.accessor(buf, h)

            def k(i):
                acc[i] = n
            h.parallel_for(sycl.range(8), k)
        q.submit(cg).wait()
        return weakref.ref(buf)

    def free_function(a, n):
        buf = sycl.buffer(a)
        q.submit(lambda h: syclexp.nd_launch(
            h, sycl.nd_range(sycl.range(8), sycl.range(8)), syclexp.kernel_function(
                reverse_ff), sycl.accessor(buf, h),
            sycl.local_accessor(np.int32, sycl.range(8), h))).wait()
        return weakref.ref(buf)

    for n in (5, 6):
        a = np.zeros(8, np.int32)
        gone = closure(a, n)
        gc.collect()
        assert gone() is None
        np.testing.assert_array_equal(a, np.full(8, n))
        b = np.arange(8, dtype=np.int32) * n
        gone = free_function(b, n)
        gc.collect()
        assert gone() is None
        np.testing.assert_array_equal(b, np.arange(8)[::-1] * n)


# -- free function kernels ----------------------------------------------------------------
@syclexp.nd_range_kernel(1)
def scale_ff(src: sycl.accessor[np.float32, 1, READ],
             dst: sycl.accessor[np.float32, 1, WRITE], k: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    dst[i] = src[i] * k + src.get_range()[0]


@syclexp.nd_range_kernel(1)
def reverse_ff(data: sycl.accessor[np.int32, 1], tile: sycl.local_accessor[np.int32, 1]):
    it = this_work_item.get_nd_item(1)
    lid = it.get_local_id(0)
    n = tile.get_range()[0]
    tile[lid] = data[it.get_global_id(0)]
    it.barrier()
    data[it.get_global_id(0)] = tile[n - 1 - lid]


@syclexp.single_task_kernel
def corner_ff(grid: sycl.accessor[np.int32, 2]):
    r = grid.get_range()
    grid[r[0] - 1, r[1] - 1] = grid.get_offset()[0] * 100 + grid.get_offset()[1]


def test_free_function_kernel_with_accessor_parameters(q):
    src = sycl.buffer(np.arange(32, dtype=np.float32))
    dst = sycl.buffer(sycl.range(32), np.float32)

    def cg(h):
        syclexp.nd_launch(h, sycl.nd_range(sycl.range(32), sycl.range(8)),
                          syclexp.kernel_function(scale_ff),
                          sycl.accessor(src, h, sycl.read_write),  # converts to read
                          sycl.accessor(dst, h, sycl.write_only, sycl.no_init),
                          np.float32(3))
    q.submit(cg).wait()
    np.testing.assert_array_equal(contents(dst), np.arange(32, dtype=np.float32) * 3 + 32)

    grid = sycl.buffer(np.zeros((5, 6), np.int32))
    q.submit(lambda h: syclexp.single_task(
        h, syclexp.kernel_function(corner_ff),
        sycl.accessor(grid, h, access_range=sycl.range(2, 3),
                      access_offset=sycl.id(1, 2)))).wait()
    want = np.zeros((5, 6), np.int32)
    want[2, 4] = 102
    np.testing.assert_array_equal(contents(grid), want)


def test_free_function_kernel_takes_only_accessors_its_command_group_requires(q):
    """A free function kernel launched in a command group (`nd_launch(h, ...)`) checks
    its accessors as a closure's are checked: one of another command group, or one passed
    to a launch outside a command group (`single_task(q, ...)`), would reach its buffer
    untracked (the host's data never uploaded, the kernel's writes never read back)."""
    grid = sycl.buffer(np.zeros((5, 6), np.int32))
    with sycl.host_accessor(grid) as v:
        v[0, 0] = 9
    kept = []
    q.submit(lambda h: kept.append(sycl.accessor(grid, h))).wait()
    with pytest.raises(sycl.exception, match="does not require") as e:
        q.submit(lambda h: syclexp.single_task(h, syclexp.kernel_function(corner_ff),
                                               kept[0]))
    assert e.value.code() == sycl.errc.kernel_argument
    with pytest.raises(sycl.exception, match="outside a command group") as e:
        syclexp.single_task(q, syclexp.kernel_function(corner_ff), kept[0])
    assert e.value.code() == sycl.errc.kernel_argument
    placeholder = sycl.accessor(grid, sycl.read_write)

    def cg(h):
        h.require(placeholder)
        syclexp.single_task(h, syclexp.kernel_function(corner_ff), placeholder)
    q.submit(cg).wait()
    want = np.zeros((5, 6), np.int32)
    want[0, 0], want[4, 5] = 9, 0
    np.testing.assert_array_equal(contents(grid), want)
    q.submit(lambda h: syclexp.single_task(
        h, syclexp.kernel_function(corner_ff),
        sycl.accessor(grid, h, access_range=sycl.range(2, 3),
                      access_offset=sycl.id(3, 3)))).wait()
    want[4, 5] = 303
    np.testing.assert_array_equal(contents(grid), want)


@pytest.mark.parametrize("local", [8, 16])
def test_free_function_kernel_with_a_local_accessor_of_each_shape(q, local):
    data = np.arange(64, dtype=np.int32)
    buf = sycl.buffer(data.copy())

    def cg(h):
        syclexp.nd_launch(h, sycl.nd_range(sycl.range(64), sycl.range(local)),
                          syclexp.kernel_function(reverse_ff),
                          sycl.accessor(buf, h),
                          sycl.local_accessor(np.int32, sycl.range(local), h))
    q.submit(cg).wait()
    want = data.reshape(-1, local)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(contents(buf), want)


def test_kernel_object_with_accessors_set_by_index(q):
    ctx = q.get_context()
    k = syclexp.get_kernel_bundle(ctx, reverse_ff, sycl.bundle_state.executable
                                  ).ext_oneapi_get_kernel(reverse_ff)
    data = np.arange(32, dtype=np.int32)
    buf = sycl.buffer(data.copy())

    def cg(h):
        h.set_arg(0, sycl.accessor(buf, h))
        h.set_arg(1, sycl.local_accessor(np.int32, sycl.range(8), h))
        h.parallel_for(sycl.nd_range(sycl.range(32), sycl.range(8)), k)
    q.submit(cg).wait()
    first = data.reshape(4, 8)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(contents(buf), first)

    def cg_args(h):
        h.set_args(sycl.accessor(buf, h), sycl.local_accessor(np.int32, sycl.range(16), h))
        h.parallel_for(sycl.nd_range(sycl.range(32), sycl.range(16)), k)
    q.submit(cg_args).wait()
    np.testing.assert_array_equal(contents(buf), first.reshape(2, 16)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("make, message", [
    (lambda h, b: sycl.accessor(b, h, sycl.write_only), "got an accessor of int32, 1 "
     "dimensions, write"),
    (lambda h, b: sycl.local_accessor(np.int32, sycl.range(8), h), "got a local accessor"),
    (lambda h, b: 3, "got int"),
])
def test_free_function_accessor_arguments_are_checked(q, buffers, make, message):
    buf = buffers(np.zeros(8, np.int32))
    src = buffers(np.zeros(8, np.float32))

    def cg(h):
        bad = make(h, buf)
        syclexp.nd_launch(h, sycl.nd_range(sycl.range(8), sycl.range(8)),
                          syclexp.kernel_function(scale_ff), bad,
                          sycl.accessor(src, h), np.float32(1))
    with pytest.raises(sycl.exception, match=message) as e:
        q.submit(cg)
    assert e.value.code() == sycl.errc.invalid


# -- build errors -------------------------------------------------------------------------
def marker_line(marker: str) -> int:
    with open(__file__) as f:
        lines = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def write_through(acc, i):
    acc[i] = 1  # E:write-in-function


def k_store(acc):
    def k(i):
        acc[i] = 1.0  # E:store
    return k


def k_augmented(acc):
    def k(i):
        acc[i] += 1.0  # E:augmented
    return k


def k_atomic(acc):
    def k(i):
        sycl.atomic_ref(acc[i]).fetch_add(1.0)  # E:atomic
    return k


def k_in_function(acc):
    def k(i):
        write_through(acc, i)
    return k


def k_indices(acc):
    def k(i):
        x = acc[i, 0]  # E:indices
        del x
    return k


def k_float_index(acc):
    def k(i):
        x = acc[1.5]  # E:float-index
        del x
    return k


def k_unknown_method(acc):
    def k(i):
        acc.foo()  # E:method
    return k


def k_nd_item_index(acc):
    def k(it):
        x = acc[it]  # E:nd-item
        del x
    return k


def k_len_2d(acc):
    def k(i):
        x = len(acc)  # E:len
        del x
    return k


@pytest.mark.parametrize("make, marker, message", [
    (k_store, "store", "acc is a read_only accessor; it cannot be written"),
    (k_augmented, "augmented", "acc is a read_only accessor; it cannot be written"),
    (k_atomic, "atomic", "acc is a read_only accessor; atomic_ref needs"),
    (k_in_function, "write-in-function", "acc is a read_only accessor; it cannot be "
     "written"),
    (k_indices, "indices", "2 indices for a 1-dimensional read_only accessor"),
    (k_float_index, "float-index", "an index must be an integer, got float32"),
    (k_unknown_method, "method", "has no method foo()"),
])
def test_build_errors_on_a_read_only_accessor(q, buffers, make, marker, message):
    buf = buffers(np.zeros(8, np.float32))

    def cg(h):
        h.parallel_for(sycl.range(8), make(sycl.accessor(buf, h, sycl.read_only)))
    with pytest.raises(sycl.exception) as e:
        q.submit(cg)
    assert e.value.code() == sycl.errc.build
    assert f"{__file__}:{marker_line(f'E:{marker}')}:" in str(e.value)
    assert message in str(e.value)


def test_build_errors_of_indexing_and_len(q, buffers):
    buf = buffers(np.zeros((4, 4), np.float32))
    cases = [(k_nd_item_index, "nd-item", sycl.nd_range(sycl.range(4, 4), sycl.range(2, 2)),
              "not a nd_item"),
             (k_len_2d, "len", sycl.range(4, 4), "len() of a 2-dimensional"),
             (k_float_index, "float-index", sycl.range(4, 4), "1 indices for a "
              "2-dimensional")]
    for make, marker, launch, message in cases:
        def cg(h, make=make, launch=launch):
            h.parallel_for(launch, make(sycl.accessor(buf, h)))
        with pytest.raises(sycl.exception) as e:
            q.submit(cg)
        assert e.value.code() == sycl.errc.build
        assert f"{__file__}:{marker_line(f'E:{marker}')}:" in str(e.value), str(e.value)
        assert message in str(e.value)


def k_local_offset(tile, out):
    def k(it):
        out[0] = tile.get_offset()[0]  # E:local-offset
    return k


def test_a_local_accessor_has_no_offset(q, buffers):
    buf = buffers(np.zeros(4, np.int32))

    def cg(h):
        tile = sycl.local_accessor(np.int32, sycl.range(4), h)
        h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(4)),
                       k_local_offset(tile, sycl.accessor(buf, h)))
    with pytest.raises(sycl.exception) as e:
        q.submit(cg)
    assert e.value.code() == sycl.errc.build
    assert f"{__file__}:{marker_line('E:local-offset')}:" in str(e.value)
    assert "local_accessor has no method get_offset()" in str(e.value)
