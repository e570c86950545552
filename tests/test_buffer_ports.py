"""DPC++'s end-to-end buffer tests (intel/llvm sycl/test-e2e/Basic/buffer/ and the buffer
cases of sycl/test-e2e/Scheduler/) as Python: write-back and set_final_data, sub-buffers,
reinterpret, copies and fills through ranged accessors, and host accessors between
kernels. Each test names the DPC++ test it ports; the values are computed on the device.
C++-only cases (iterator and shared_ptr constructors, allocators, use_mutex, hashes,
move/copy constructors, 0-dimensional accessors) have no Python counterpart."""

import numpy as np
import pytest

import vksycl as sycl


def kernel_set(buf, value, launch=None, **access):
    """A command group writing `value` to every element of an accessor of `buf`."""
    def cgf(h):
        acc = sycl.accessor(buf, h, sycl.write_only, **access)

        def k(it):
            acc[it] = value
        h.parallel_for(launch or acc.get_range(), k)
    return cgf


def contents(buf):
    with sycl.host_accessor(buf, sycl.read_only) as v:
        return np.array(v)


# -- Basic/buffer/buffer.cpp ----------------------------------------------------------------
def test_kernel_results_are_written_back_to_the_host_array(q):
    """Basic/buffer/buffer.cpp (init_a, init_b): a read_write accessor's writes reach the
    user's array when the buffer is released."""
    for make in (lambda: np.full(10, -1, np.int32), lambda: np.full((2, 5), -1, np.int32)):
        data = make()
        with sycl.buffer(data) as b:
            def cgf(h, b=b):
                acc = b.get_access(h, sycl.read_write)

                def k(i):
                    acc[i] = 0
                h.parallel_for(sycl.range(b.get_range()), k)
            q.submit(cgf)
        assert (data == 0).all()


def test_three_buffers_of_different_origins_in_one_kernel(q):
    """Basic/buffer/buffer.cpp (init_c): a host-backed read_write buffer, one without host
    data and one over a result array, all used by one kernel."""
    n = 10
    ptr1 = np.full(n, -1, np.int32)
    res = np.full(n, 7, np.int32)
    with sycl.buffer(ptr1) as b, sycl.buffer(sycl.range(n), np.int32) as d, \
            sycl.buffer(res) as e:
        def cgf(h):
            bb = b.get_access(h, sycl.read_write)
            dd = d.get_access(h, sycl.write_only)
            ee = e.get_access(h, sycl.write_only)

            def k(i):
                bb[i] += 1
                dd[i] = bb[i] + bb[i] + 1
                ee[i] = dd[i] * (bb[i] + 1) - 1
            h.parallel_for(sycl.range(n), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(d), 1)
    np.testing.assert_array_equal(ptr1, 0)
    np.testing.assert_array_equal(res, 0)


@pytest.mark.parametrize("final", ["none", "other", "slice"])
def test_set_final_data(q, final):
    """Basic/buffer/buffer.cpp (Nullptr, rawPointer, vectorIterator,
    iter_constuctor_set_final_data): set_final_data(None) writes nothing back; another
    array, or a slice of a larger one, receives the data instead of the original."""
    data = np.zeros(10, np.int32)
    big = np.full(16, -1, np.int32)
    target = {"none": None, "other": np.zeros(10, np.int32), "slice": big[3:13]}[final]
    with sycl.buffer(data) as buf:
        buf.set_final_data(target)
        q.submit(kernel_set(buf, 1))
    np.testing.assert_array_equal(data, 0)  # never the original once redirected
    if final == "other":
        np.testing.assert_array_equal(target, 1)
    if final == "slice":
        np.testing.assert_array_equal(big, [-1] * 3 + [1] * 10 + [-1] * 3)


def test_buffer_without_host_data_two_kernels_and_a_two_dimensional_final_array(q):
    """Basic/buffer/buffer.cpp (bufferByRange2Init, bufferByRange2): a 20x20 buffer made
    from a range, zeroed by one kernel; a second kernel over a 10x10 range writes ones in
    its corner; set_final_data receives the whole grid."""
    result = np.full((20, 20), -5, np.int32)
    with sycl.buffer(sycl.range(20, 20), np.int32) as buf:
        buf.set_final_data(result)
        q.submit(kernel_set(buf, 0))
        q.submit(kernel_set(buf, 1, launch=sycl.range(10, 10)))
    want = np.zeros((20, 20), np.int32)
    want[:10, :10] = 1
    np.testing.assert_array_equal(result, want)


def test_ranged_accessor_at_an_offset_writes_only_its_launch(q):
    """Basic/buffer/buffer.cpp (bufferByRangeOffset): an accessor of range (10, 10) at
    (10, 10) in a kernel over (10, 5) writes rows 10-19, columns 10-14."""
    result = np.zeros((20, 20), np.int32)
    with sycl.buffer(sycl.range(20, 20), np.int32) as buf:
        buf.set_final_data(result)
        q.submit(kernel_set(buf, 0))
        q.submit(kernel_set(buf, 1, launch=sycl.range(10, 5),
                            access_range=sycl.range(10, 10), access_offset=sycl.id(10, 10)))
    want = np.zeros((20, 20), np.int32)
    want[10:, 10:15] = 1
    np.testing.assert_array_equal(result, want)


@pytest.mark.parametrize("write_back", [True, False])
def test_set_write_back(q, write_back):
    """Basic/buffer/buffer.cpp (wb, notwb): a buffer without host data, given final data,
    writes back only while write-back is on."""
    data = np.full(10, -1, np.int32)
    with sycl.buffer(sycl.range(10), np.int32) as b:
        b.set_final_data(data)
        b.set_write_back(write_back)
        q.submit(kernel_set(b, 0))
    np.testing.assert_array_equal(data, 0 if write_back else -1)


def test_write_back_of_bool_int_and_float_buffers(q):
    """Basic/buffer/buffer.cpp (FillBuffer): three buffers of different element types,
    their final data set and write-back forced, filled by one kernel."""
    n = 32
    finals = [np.zeros(n, np.bool_), np.zeros(n, np.int32), np.zeros(n, np.float32)]
    bufs = [sycl.buffer(np.zeros(n, f.dtype)) for f in finals]
    for b, f in zip(bufs, finals, strict=True):
        b.set_final_data(f)
        b.set_write_back(True)

    def cgf(h):
        a_bool, a_int, a_float = (b.get_access(h, sycl.write_only) for b in bufs)

        def k(i):
            a_bool[i] = True
            a_int[i] = 3
            a_float[i] = 7.5
        h.parallel_for(sycl.range(n), k)
    q.submit(cgf)
    for b in bufs:
        b.release()
    assert finals[0].all() and (finals[1] == 3).all() and (finals[2] == 7.5).all()


@pytest.mark.parametrize("placeholder", [False, True])
def test_only_the_buffer_the_kernel_writes_changes(q, placeholder):
    """Basic/buffer/buffer.cpp (override_lambda, override_lambda_placeholder): two
    read_write accessors, one written: the other buffer's data stays as it was."""
    data1, data2 = np.full(10, -1, np.int32), np.full(10, -2, np.int32)
    with sycl.buffer(data1) as a, sycl.buffer(data2) as b:
        pa, pb = sycl.accessor(a), sycl.accessor(b)
        assert pa.is_placeholder() and pb.is_placeholder()

        def cgf(h):
            if placeholder:
                h.require(pa)
                h.require(pb)
                x = pa
            else:
                x = sycl.accessor(a, h)
                sycl.accessor(b, h)

            def k(i):
                x[i] = 0
            h.parallel_for(sycl.range(10), k)
        q.submit(cgf)
    np.testing.assert_array_equal(data1, 0)
    np.testing.assert_array_equal(data2, -2)


def test_buffer_and_accessor_size_queries(q):
    """Basic/buffer/buffer.cpp (get_range, get_size, get_count, size, byte_size of buffers
    and of ranged accessors to buffers of different sizes)."""
    with sycl.buffer(np.array([5], np.int32)) as one:
        assert one.get_range() == sycl.range(1) and one.size() == one.get_count() == 1
        assert one.byte_size() == one.get_size() == 4
    with sycl.buffer(sycl.range(6), np.int8) as b1, sycl.buffer(sycl.range(3), np.int8) as b2:
        sizes = sycl.buffer(np.zeros(4, np.int32))

        def cgf(h):
            x = sycl.accessor(b1, h, sycl.range(3))
            y = sycl.accessor(b2, h, sycl.range(3))
            assert x.get_size() == y.get_size() == 3 and x.get_count() == y.get_count()
            assert x.get_range() == y.get_range()
            o = sycl.accessor(sizes, h, sycl.write_only)

            def k():
                o[0] = x.size()
                o[1] = y.byte_size()
                o[2] = x.get_range()[0] + y.get_range()[0]
                o[3] = 1 if x.empty() else 0
            h.single_task(k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(sizes), [3, 3, 6, 0])
        sizes.release()


# -- Basic/buffer/subbuffer.cpp -------------------------------------------------------------
def test_ranged_accessor_inside_a_sub_buffer(q):
    """Basic/buffer/subbuffer.cpp (check1DSubBuffer): an accessor at offset 3 of a
    sub-buffer at the middle of its parent negates the sub-buffer's tail; a copy of the
    sub-buffer is taken; then the whole sub-buffer is multiplied by 10."""
    size, offset, sub_size, inner = 64, 32, 10, 3
    vec = np.arange(size, dtype=np.int32)
    vec2 = np.zeros(sub_size, np.int32)
    with sycl.buffer(vec) as buf, sycl.buffer(vec2) as buf2:
        sub = sycl.buffer(buf, sycl.id(offset), sycl.range(sub_size))
        assert sub.is_sub_buffer() and not buf.is_sub_buffer()

        def negate(h):
            acc = sub.get_access(h, sycl.range(sub_size - inner), sycl.id(inner))

            def k(i):
                acc[i] *= -1
            h.parallel_for(sycl.range(sub_size - inner), k)

        def copy_out(h):
            src = sub.get_access(h, sycl.read_only)
            dst = buf2.get_access(h, sycl.write_only)

            def k(i):
                dst[i] = src[i]
            h.parallel_for(sub.get_range(), k)

        def times_ten(h):
            acc = sub.get_access(h, sycl.range(sub_size))

            def k(i):
                acc[i] *= 10
            h.parallel_for(sycl.range(sub_size), k)
        for cgf in (negate, copy_out, times_ten):
            q.submit(cgf)
        q.wait_and_throw()
    idx = np.arange(size)
    want = idx.copy()
    want[offset:offset + inner] *= 10
    want[offset + inner:offset + sub_size] *= -10
    np.testing.assert_array_equal(vec, want)
    region = idx[offset:offset + sub_size]
    np.testing.assert_array_equal(vec2, np.where(np.arange(sub_size) < inner, region,
                                                 -region))


def test_host_accessor_to_a_sub_buffer_then_a_kernel(q):
    """Basic/buffer/subbuffer.cpp (checkHostAccessor): a write_only host accessor to a
    sub-buffer scales it, a kernel with a write accessor scales it again, and a read_only
    host accessor sees both; the rest of the parent is untouched."""
    size = 64
    data = np.arange(size, dtype=np.int32)
    with sycl.buffer(data) as buf:
        sub = sycl.buffer(buf, sycl.id(size // 2), sycl.range(10))
        with sycl.host_accessor(sub, sycl.write_only) as v:
            v *= 10

        def cgf(h):
            acc = sub.get_access(h, sycl.write_only)

            def k(i):
                acc[i] *= -10
            h.parallel_for(sycl.range(10), k)
        q.submit(cgf)
        with sycl.host_accessor(sub, sycl.read_only) as v:
            np.testing.assert_array_equal(v, (size // 2 + np.arange(10)) * -100)
    assert data[0] == 0 and data[-1] == size - 1 and data[size // 2] == size // 2 * -100


@pytest.mark.parametrize("shape, offset, size", [
    ((8, 8), (2, 0), (2, 2)),          # not contiguous
    ((8, 8), (2, 2), (2, 6)),          # not contiguous
    ((4, 4, 4), (0, 2, 1), (1, 2, 3)),  # not contiguous
    ((4, 4, 4), (0, 0, 0), (2, 3, 4)),  # not contiguous
    ((8, 8), (2, 2), (2, 8)),          # out of bounds
    ((4, 4, 4), (1, 1, 1), (1, 1, 4)),  # out of bounds
    ((4, 4, 4), (3, 3, 0), (1, 2, 4)),  # out of bounds
])
def test_sub_buffers_that_are_not_one_region_are_refused(shape, offset, size):
    """Basic/buffer/subbuffer.cpp (checkExceptions): non-contiguous and out-of-bounds
    sub-buffers of 2- and 3-dimensional buffers throw errc::invalid."""
    with sycl.buffer(sycl.range(*shape), np.int32) as parent:
        with pytest.raises(sycl.exception) as e:
            sycl.buffer(parent, sycl.id(*offset), sycl.range(*size))
        assert e.value.code() == sycl.errc.invalid


def test_copy_blocks_through_sub_buffer_host_accessors(q):
    """Basic/buffer/subbuffer.cpp (copyBlock): a buffer initialised through a host
    accessor is copied block by block, each block read through a sub-buffer's host
    accessor into a buffer of its own."""
    n, nblock = 100, 4
    block = n // nblock
    buf = sycl.buffer(sycl.range(n), np.int64)
    with sycl.host_accessor(buf, sycl.write_only) as v:
        v[:] = np.arange(n)
    blocks = []
    for i in range(nblock):
        blocks.append(sycl.buffer(sycl.range(block), np.int64))
        sub = sycl.buffer(buf, sycl.id(i * block), sycl.range(block))
        with sycl.host_accessor(sub, sycl.read_only) as src, \
                sycl.host_accessor(blocks[-1], sycl.write_only) as dst:
            dst[:] = src
    for i, b in enumerate(blocks):
        np.testing.assert_array_equal(contents(b), np.arange(block) + block * i)
        b.release()
    buf.release()


def test_sub_buffers_of_one_buffer_on_two_queues(q):
    """Basic/buffer/subbuffer.cpp (checkMultipleContexts): two halves of a buffer written
    by kernels on two queues; then a sub-buffer's host accessor sees its kernel's data."""
    n = 64
    a = np.zeros(n, np.int32)
    q1, q2 = sycl.queue(), sycl.queue()
    with sycl.buffer(a) as buf:
        low = sycl.buffer(buf, sycl.id(0), sycl.range(n // 2))
        high = sycl.buffer(buf, sycl.id(n // 2), sycl.range(n // 2))
        q1.submit(kernel_set(low, 1))
        q2.submit(kernel_set(high, 2))
    np.testing.assert_array_equal(a, [1] * (n // 2) + [2] * (n // 2))
    with sycl.buffer(a) as buf:
        high = sycl.buffer(buf, sycl.id(n // 2), sycl.range(n // 2))
        q1.submit(kernel_set(high, -1))
        with sycl.host_accessor(high, sycl.read_only) as v:
            assert v[0] == -1 and v[n // 2 - 1] == -1
    np.testing.assert_array_equal(a, [1] * (n // 2) + [-1] * (n // 2))


def test_overlapping_sub_buffers(q):
    """Basic/buffer/subbuffer_overlap.cpp: two sub-buffers starting at the same element,
    one twice as long; kernels on each add 1 and subtract 1 in order."""
    size = 16
    with sycl.buffer(sycl.range(1024), np.int32) as b:
        sub1 = sycl.buffer(b, sycl.id(64), sycl.range(size))
        sub2 = sycl.buffer(b, sycl.id(64), sycl.range(size * 2))
        with sycl.host_accessor(b) as v:
            v[:] = np.arange(1024) % size

        def add(buf, delta):
            def cgf(h):
                acc = sycl.accessor(buf, h)

                def k(i):
                    acc[i] += delta
                h.parallel_for(buf.get_range(), k)
            return cgf
        q.submit(add(sub1, 1))
        q.submit(add(sub2, -1))
        idx = np.arange(size * 2)
        np.testing.assert_array_equal(contents(sub2), idx % size - idx // size)
        np.testing.assert_array_equal(contents(b)[:64], np.arange(64) % size)


# -- Basic/buffer/reinterpret.cpp -----------------------------------------------------------
def test_reinterpret_changes_type_and_range_over_the_same_bytes(q):
    """Basic/buffer/reinterpret.cpp: uint32 seen as 4 bytes, each set to 0xFF, reads back
    as UINT_MAX; 9 elements seen as 3x3 with ones on the diagonal read back as ones at
    every fourth element; a reinterpretation of another byte size throws."""
    buf_i = sycl.buffer(sycl.range(1), np.uint32)
    buf_char = buf_i.reinterpret(np.uint8, sycl.range(4))
    assert not buf_char.is_sub_buffer()
    q.submit(kernel_set(buf_char, 0xFF))
    assert contents(buf_i)[0] == 0xFFFFFFFF

    buf_1d = sycl.buffer(sycl.range(9), np.uint32)
    buf_2d = buf_1d.reinterpret(np.uint32, sycl.range(3, 3))

    def diagonal(h):
        acc = buf_2d.get_access(h, sycl.read_write)

        def k(it):
            i, j = it.get_id(0), it.get_id(1)
            acc[i, j] = 1 if i == j else 0
        h.parallel_for(sycl.range(3, 3), k)
    q.submit(diagonal)
    np.testing.assert_array_equal(contents(buf_1d), [1 if i % 4 == 0 else 0
                                                     for i in range(9)])
    with pytest.raises(sycl.exception) as e:
        buf_1d.reinterpret(np.float64, sycl.range(3, 3))
    assert e.value.code() == sycl.errc.invalid
    for b in (buf_i, buf_1d):
        b.release()


@pytest.mark.parametrize("old, new, value, shape, offset, size", [
    (np.int32, np.int8, 13, (48,), (32,), (16,)),          # 1D int -> char
    (np.int8, np.int32, -0x55443323, (48,), (32,), (16,)),  # 1D char -> int
    (np.int32, np.int8, 13, (3, 32), (1, 0), (1, 32)),      # 2D int -> char
    (np.int8, np.int32, -0x55443323, (3, 128), (1, 0), (1, 128)),  # 2D char -> int
])
def test_reinterpret_a_sub_buffer(q, old, new, value, shape, offset, size):
    """Basic/buffer/reinterpret.cpp (execute_kernel): a sub-buffer reinterpreted as
    another element type (last dimension rescaled) and filled by a kernel changes only
    the sub-buffer's bytes of the parent's data."""
    data = np.full(shape, 8, old)
    want = data.copy()
    region = tuple(slice(o, o + s) for o, s in zip(offset, size, strict=True))
    fill = np.dtype(new).type(value)
    want[region].view(new)[...] = fill
    with sycl.buffer(data) as buf:
        sub = sycl.buffer(buf, sycl.id(*offset), sycl.range(*size))
        r = list(size)
        r[-1] = r[-1] * np.dtype(old).itemsize // np.dtype(new).itemsize
        view = sub.reinterpret(new, sycl.range(*r))
        assert view.is_sub_buffer() and tuple(view.get_range()) == tuple(r)
        q.submit(kernel_set(view, fill))
        q.wait_and_throw()
    np.testing.assert_array_equal(data, want)


def test_reinterpret_two_dimensions_as_one_then_a_sub_buffer_as_bytes(q):
    """Basic/buffer/reinterpret.cpp (2D -> 1D -> sub-buffer -> char): the rows of a 2D
    buffer seen as one dimension, a sub-buffer of one row, seen as bytes and set to 13."""
    rows, cols, row = 6, 32, 2
    data = np.full((rows, cols), 8, np.int32)
    want = data.copy()
    want[row].view(np.int8)[:] = 13
    with sycl.buffer(data) as b2d:
        b1d = b2d.reinterpret(np.int32, sycl.range(b2d.get_count()))
        sub = sycl.buffer(b1d, sycl.id(row * cols), sycl.range(cols))
        as_bytes = sub.reinterpret(np.int8, sycl.range(sub.get_size()))
        q.submit(kernel_set(as_bytes, 13))
    np.testing.assert_array_equal(data, want)


# -- Basic/buffer/buffer_full_copy.cpp ------------------------------------------------------
def test_fill_then_a_ranged_host_accessor(q):
    """Basic/buffer/buffer_full_copy.cpp (check_copy_device_to_host): a 6x6 buffer filled
    with 13 by handler.fill; a 2x2 host accessor at (2, 2) adds 2; a full host accessor
    sees 15 there and 13 elsewhere."""
    with sycl.buffer(sycl.range(6, 6), np.int32) as buf:
        q.submit(lambda h: h.fill(buf.get_access(h, sycl.write_only), 13))
        with sycl.host_accessor(buf, sycl.range(2, 2), sycl.id(2, 2), sycl.read_write) as v:
            v += 2
        want = np.full((6, 6), 13)
        want[2:4, 2:4] = 15
        np.testing.assert_array_equal(contents(buf), want)


def test_fill_through_a_ranged_accessor(q):
    """Basic/buffer/buffer_full_copy.cpp (check_fill): a fill of an accessor of 3
    elements at offset 2 leaves the host-written elements around it."""
    with sycl.buffer(sycl.range(6), np.float32) as buf:
        with sycl.host_accessor(buf, sycl.write_only) as v:
            v[:] = np.arange(1, 7)
        q.submit(lambda h: h.fill(buf.get_access(h, sycl.write_only, sycl.range(3),
                                                 sycl.id(2)), np.float32(1337))).wait()
        np.testing.assert_array_equal(contents(buf), [1, 2, 1337, 1337, 1337, 6])


def test_copy_between_ranged_accessors(q):
    """Basic/buffer/buffer_full_copy.cpp (check_copy_host_to_device): a copy from an
    accessor of 3 elements at offset 2 into an accessor of 3; a 2D copy of whole rows
    at a row offset (handler copies take regions that are one run of memory, so the
    DPC++ test's 3x3 block of a 6x6 buffer is not ported); the source stays intact."""
    with sycl.buffer(sycl.range(6), np.float32) as b1, \
            sycl.buffer(sycl.range(3), np.float32) as b2:
        with sycl.host_accessor(b1, sycl.write_only) as v:
            v[:] = np.arange(1, 7)
        q.submit(lambda h: h.copy(b1.get_access(h, sycl.read_only, sycl.range(3), sycl.id(2)),
                                  b2.get_access(h, sycl.write_only, sycl.range(3)))).wait()
        np.testing.assert_array_equal(contents(b1), np.arange(1, 7))
        np.testing.assert_array_equal(contents(b2), [3, 4, 5])
    src = np.arange(1, 37, dtype=np.float32).reshape(6, 6)
    with sycl.buffer(src) as b3, sycl.buffer(sycl.range(3, 6), np.float32) as b4:
        q.submit(lambda h: h.copy(
            b3.get_access(h, sycl.read_only, sycl.range(3, 6), sycl.id(2, 0)),
            b4.get_access(h, sycl.write_only, sycl.range(3, 6))))
        np.testing.assert_array_equal(contents(b4), src[2:5])
        np.testing.assert_array_equal(contents(b3), np.arange(1, 37).reshape(6, 6))


def test_copy_into_a_smaller_accessor_is_refused(q):
    """Basic/buffer/buffer_full_copy.cpp (check_exception_code): copying a whole accessor
    into an accessor of half its range throws errc::invalid."""
    res = np.arange(10, dtype=np.int32)
    with sycl.buffer(res) as b:
        with pytest.raises(sycl.exception) as e:
            q.submit(lambda h: h.copy(sycl.accessor(b, h), sycl.accessor(b, h, sycl.range(5))))
        assert e.value.code() == sycl.errc.invalid
    np.testing.assert_array_equal(res, np.arange(10))


# -- host accessors and kernels (Basic/buffer/buffer_release.cpp, Scheduler/) ---------------
def zero_kernel(buf, n):
    def cgf(h):
        acc = buf.get_access(h, sycl.write_only)

        def k(it):
            acc[it] = 0
        h.parallel_for(sycl.range(n), k)
    return cgf


def test_release_under_an_open_host_accessor_is_an_error_not_a_hang(q):
    """Basic/buffer/buffer_release.cpp: a host accessor blocks a kernel submitted after
    it; releasing the buffer then must not wait for that kernel (in DPC++ the destructor
    defers the release; here release() says why it cannot wait instead of hanging).
    Once the host accessor goes, the kernel runs and the release completes."""
    n = 256
    buf = sycl.buffer(np.full(n, 9, np.int32))
    other = sycl.buffer(np.ones(n, np.int32))
    host = sycl.host_accessor(buf)

    def cgf(h):
        acc = buf.get_access(h, sycl.write_only)
        two = other.get_access(h)

        def k(i):
            acc[i] = 0
            two[i] += 1
        h.parallel_for(sycl.range(n), k)
    e = q.submit(cgf)
    with pytest.raises(sycl.exception, match="open host_accessor") as err:
        buf.release()
    assert err.value.code() == sycl.errc.invalid
    # the kernel holds the other buffer too: neither its release nor a host accessor
    # to it can wait for the kernel
    with pytest.raises(sycl.exception, match="open host_accessor"):
        other.release()
    with pytest.raises(sycl.exception, match="open host_accessor"):
        sycl.host_accessor(other, sycl.read_only)
    assert not e.is_complete()
    host.release()
    e.wait()
    np.testing.assert_array_equal(contents(buf), 0)
    np.testing.assert_array_equal(contents(other), 2)
    buf.release()
    other.release()


def test_kernel_under_a_host_accessor_runs_once_the_accessor_is_dropped(q):
    """Scheduler/HostAccDestruction.cpp: a kernel submitted while a host accessor to its
    buffer is alive is enqueued when the accessor is destroyed (here: dropped)."""
    buf = sycl.buffer(np.full(3, 5, np.int32))
    host = buf.get_host_access()
    e = q.submit(zero_kernel(buf, 3))
    assert not e.is_complete()
    del host
    e.wait()
    assert e.is_complete()
    np.testing.assert_array_equal(contents(buf), 0)
    buf.release()


def test_two_host_accessors_after_a_kernel(q):
    """Scheduler/BasicSchedulerTests.cpp: a kernel copies one buffer into another; read
    host accessors to both are then alive at once."""
    with sycl.buffer(np.array([0], np.int32)) as b1, \
            sycl.buffer(np.array([41], np.int32)) as b2:
        def cgf(h):
            a1 = b1.get_access(h, sycl.read_write)
            a2 = b2.get_access(h, sycl.read_write)

            def k(i):
                a1[i] = a2[i]
            h.parallel_for(sycl.range(1), k)
        q.submit(cgf)
        h1 = b1.get_host_access(sycl.read_only)
        h2 = b2.get_host_access(sycl.read_only)
        assert h1[0] == 41 and h2[0] == 41
        h1.release()
        h2.release()
    q.wait_and_throw()


def test_one_buffer_between_two_queues_and_host_accessors(q):
    """Scheduler/DataMovement.cpp: kernels on two queues write one host-backed buffer
    in turn, each followed by a host accessor; the user's array holds each value."""
    data = np.zeros(1, np.int32)
    q1, q2 = sycl.queue(), sycl.queue()
    buf = sycl.buffer(data)
    for queue, value in ((q1, 41), (q2, 42)):
        def cgf(h, value=value):
            acc = buf.get_access(h, sycl.read_write)

            def k():
                acc[0] = value
            h.single_task(k)
        queue.submit(cgf)
        queue.wait_and_throw()
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert v[0] == value
            assert data[0] == value  # the host copy is the user's array
    buf.release()


def test_host_accessors_of_changing_modes(q):
    """Scheduler/MemObjRemapping.cpp: a kernel writes i, a read host accessor sees it, a
    write host accessor doubles it, and a read host accessor after that sees 2i."""
    n = 64
    with sycl.buffer(sycl.range(n), np.int32) as buf:
        def cgf(h):
            acc = buf.get_access(h, sycl.read_write)

            def k(i):
                acc[i] = i
            h.parallel_for(sycl.range(n), k)
        q.submit(cgf)
        with sycl.host_accessor(buf, sycl.read_only) as v:
            np.testing.assert_array_equal(v, np.arange(n))
        with sycl.host_accessor(buf, sycl.write_only) as v:
            v[:] = 2 * np.arange(n)
        with sycl.host_accessor(buf, sycl.read_only) as v:
            np.testing.assert_array_equal(v, 2 * np.arange(n))
