"""DPC++'s end-to-end tests of the handler's memory operations on accessors (intel/llvm
sycl/test-e2e/Basic/handler/handler_mem_op.cpp and handler_copy_with_offset.cpp) as
Python: fill, copy between host memory and accessors and between accessors of any
dimensions, and update_host, for ints, floats and two-field structs. Each test names the
DPC++ test it ports. 0-dimensional accessors and shared_ptr sources are C++-only."""

import numpy as np
import pytest

import vksycl as sycl

# -- Basic/handler/handler_mem_op.cpp, handler_copy_with_offset.cpp --------------------------
POINT_I = np.dtype([("x", np.int32), ("y", np.int32)])
POINT_F = np.dtype([("x", np.float32), ("y", np.float32)])


def values(dtype, n):
    """0, 1, 2, ... as `dtype` (a point holds the number in both fields)."""
    out = np.zeros(n, dtype)
    if dtype.names:
        for f in dtype.names:
            out[f] = np.arange(n)
    else:
        out[:] = np.arange(n)
    return out


@pytest.mark.parametrize("value", [np.int32(888), np.int32(777), np.float32(888),
                                   np.array((111, 222), POINT_I), np.array((333, 333), POINT_I),
                                   np.array((444.0, 555.0), POINT_F)], ids=str)
def test_fill_through_an_accessor(q, value):
    """Basic/handler/handler_mem_op.cpp (test_fill): handler.fill of a write accessor
    with an int, a float and a two-field struct."""
    data = np.zeros(10, value.dtype)
    with sycl.buffer(data) as buf:
        q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only, sycl.range(10)),
                                  value))
    assert (data == value).all()


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), POINT_I, POINT_F], ids=str)
@pytest.mark.parametrize("shape", [(10,), (2, 3, 4)])
def test_copies_between_arrays_and_accessors(q, dtype, shape):
    """Basic/handler/handler_mem_op.cpp (test_copy_ptr_acc, test_3D_copy_ptr_acc,
    test_copy_acc_ptr, test_3D_copy_acc_ptr, the shared_ptr and const variants): copies
    from host memory (writable or read-only) into a write accessor, and from a read
    accessor into host memory, of 1 and 3 dimensions."""
    n = int(np.prod(shape))
    src = values(dtype, n)
    const_src = src.copy()
    const_src.flags.writeable = False
    for source in (src, const_src):
        data = np.zeros(shape, dtype)
        with sycl.buffer(data) as buf:
            q.submit(lambda h, s=source, b=buf: h.copy(
                s, sycl.accessor(b, h, sycl.write_only, sycl.range(*shape))))
        np.testing.assert_array_equal(data.reshape(-1), src)
    out = np.zeros(n, dtype)
    with sycl.buffer(src.reshape(shape).copy()) as buf:
        q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only, sycl.range(*shape)),
                                  out)).wait()
    np.testing.assert_array_equal(out, src)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), POINT_I, POINT_F], ids=str)
@pytest.mark.parametrize("src_shape, dst_shape", [
    ((10,), (10,)), ((20, 20), (20, 20)), ((20, 20, 20), (20, 20, 20)),
    ((1,), (1,)), ((20,), (10, 2)), ((20,), (5, 2, 2)), ((10, 2), (20,)),
    ((10, 2), (5, 2, 2)), ((5, 2, 2), (20,)), ((5, 2, 2), (10, 2))])
def test_copy_from_accessor_to_accessor(q, dtype, src_shape, dst_shape):
    """Basic/handler/handler_mem_op.cpp (test_copy_acc_acc, test_2D/3D_copy_acc_acc and
    the copies between 1, 2 and 3 dimensions): element i of the source lands at element i
    (in linear order) of the destination."""
    n = int(np.prod(src_shape))
    data = values(dtype, n).reshape(src_shape)
    result = np.zeros(dst_shape, dtype)
    with sycl.buffer(data) as b_from, sycl.buffer(result) as b_to:
        q.submit(lambda h: h.copy(
            sycl.accessor(b_from, h, sycl.read_only, sycl.range(*src_shape)),
            sycl.accessor(b_to, h, sycl.write_only, sycl.range(*dst_shape))))
    np.testing.assert_array_equal(result.reshape(-1), data.reshape(-1))


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), POINT_I, POINT_F], ids=str)
def test_update_host_without_final_data(q, dtype):
    """Basic/handler/handler_mem_op.cpp (test_update_host): a kernel writes i into each
    element (each field of a point); handler.update_host brings the user's array up to
    date although the buffer has no final data (nothing is written back on release)."""
    data = np.zeros(10, dtype)
    base = dtype.fields["x"][0] if dtype.names else dtype
    with sycl.buffer(data.view(base).reshape(10, -1)) as buf:
        buf.set_final_data(None)

        def cgf(h):
            acc = sycl.accessor(buf, h, sycl.write_only)

            def k(it):
                acc[it] = it.get_id(0)
            h.parallel_for(acc.get_range(), k)
        q.submit(cgf)
        q.submit(lambda h: h.update_host(sycl.accessor(buf, h, sycl.write_only)))
        q.wait()
        np.testing.assert_array_equal(data, values(dtype, 10))


@pytest.mark.parametrize("direction", ["to_accessor", "from_accessor"])
def test_copy_with_an_accessor_offset(q, direction):
    """Basic/handler/handler_copy_with_offset.cpp: an accessor of 4 chars at offset 2
    receives the first 4 of '01234567', or gives '2345' to the start of 'xxxxxxxx'."""
    raw = np.frombuffer(b"xxxxxxxx", np.uint8).copy()
    gold = np.frombuffer(b"01234567", np.uint8).copy()
    if direction == "to_accessor":
        with sycl.buffer(raw) as buf:
            q.submit(lambda h: h.copy(gold, buf.get_access(h, sycl.write_only, sycl.range(4),
                                                           sycl.id(2)))).wait()
        assert raw.tobytes() == b"xx0123xx"
    else:
        with sycl.buffer(gold) as buf:
            q.submit(lambda h: h.copy(buf.get_access(h, sycl.read_only, sycl.range(4),
                                                     sycl.id(2)), raw)).wait()
        assert raw.tobytes() == b"2345xxxx"
