"""Buffers and host accessors: construction, views, write-back, copies and fills through
accessors, and every error path (raised before anything runs, no data changed)."""

import sys
import threading

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


def errc_of(excinfo) -> sycl.errc:
    return excinfo.value.code()


# -- construction and queries --------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float32, np.float16,
                                   np.int64])
def test_buffer_over_an_array_round_trips_through_the_device(q, shape, dtype):
    a = (np.arange(np.prod(shape)) % 100).astype(dtype).reshape(shape)
    want = a.copy()
    out = np.zeros_like(a)
    with sycl.buffer(a) as buf:
        assert tuple(buf.get_range()) == shape
        assert buf.size() == a.size and buf.byte_size() == a.nbytes
        assert buf.dtype == a.dtype and not buf.is_sub_buffer()

        def cg(h):
            h.copy(sycl.accessor(buf, h, sycl.read_only), out)
        q.submit(cg).wait()
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(a, want)  # read only: nothing written back


@pytest.mark.parametrize("spelling", ["range", "tuple", "int", "keyword"])
def test_buffer_without_host_data(q, spelling):
    make = {"range": lambda: sycl.buffer(sycl.range(4, 8), np.float32),
            "tuple": lambda: sycl.buffer((4, 8), np.float32),
            "int": lambda: sycl.buffer(32, np.float32),
            "keyword": lambda: sycl.buffer(sycl.range(32), dtype=np.float32)}
    buf = make[spelling]()
    assert buf.size() == 32 and buf.byte_size() == 128
    q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only, sycl.no_init),
                              np.float32(2.5))).wait()
    with sycl.host_accessor(buf, sycl.read_only) as view:
        assert view.shape == tuple(buf.get_range())
        assert (view == 2.5).all()


@pytest.mark.parametrize("bad, message", [
    (lambda: sycl.buffer(np.zeros((2, 2, 2, 2))), "1 to 3 dimensions"),
    (lambda: sycl.buffer(sycl.range(1 << 31), np.uint8), "32-bit"),
    (lambda: sycl.buffer(sycl.range(8)), "needs an element type"),
    (lambda: sycl.buffer(np.zeros(8, np.float32), dtype=np.int32), "view the array"),
    (lambda: sycl.buffer(np.zeros(8, np.float32), sycl.range(9)), "does not hold"),
    (lambda: sycl.buffer("abc", np.float32), "takes a sycl.range"),
])
def test_bad_buffers_are_refused(bad, message):
    with pytest.raises(sycl.exception, match=message) as e:
        bad()
    assert errc_of(e) == sycl.errc.invalid


def test_buffer_over_array_with_explicit_range(q):
    a = np.arange(12, dtype=np.int32)
    with sycl.buffer(a, sycl.range(3, 4)) as buf:
        assert tuple(buf.get_range()) == (3, 4)
        with sycl.host_accessor(buf) as v:
            assert v[2, 3] == 11
            v[2, 3] = 100
    assert a[11] == 100


# -- host accessors --------------------------------------------------------------------------
def test_host_accessor_is_a_live_view_whose_writes_reach_later_commands(q):
    buf = sycl.buffer(sycl.range(16), np.int32)
    with sycl.host_accessor(buf, sycl.write_only) as v:
        v[:] = np.arange(16)
    out = np.zeros(16, np.int32)
    q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out)).wait()
    np.testing.assert_array_equal(out, np.arange(16))
    q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(-3)))
    # no wait: the host accessor waits for the fill
    ha = sycl.host_accessor(buf, sycl.read_only)
    assert (np.asarray(ha) == -3).all() and len(ha) == 16 and ha[5] == -3
    ha.release()


def test_read_only_host_accessor_refuses_writes(q):
    buf = sycl.buffer(np.zeros(4, np.float32))
    ha = sycl.host_accessor(buf, sycl.read_only)
    with pytest.raises(sycl.exception, match="read_only") as e:
        ha[0] = 1.0
    assert errc_of(e) == sycl.errc.invalid
    with pytest.raises(ValueError):
        np.asarray(ha)[0] = 1.0  # the numpy view is read-only too
    ha.release()
    with pytest.raises(sycl.exception, match="released"):
        ha[0]


def test_ranged_host_accessor_views_its_region(q):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    with sycl.buffer(a) as buf, sycl.host_accessor(buf, access_range=sycl.range(2, 3),
                                                   access_offset=sycl.id(1, 2)) as v:
        np.testing.assert_array_equal(v, [[8, 9, 10], [14, 15, 16]])
        v[:] = 0
    assert a[1:3, 2:5].sum() == 0 and a[0].sum() == 15


def test_second_conflicting_host_accessor_is_an_error_not_a_hang(q):
    buf = sycl.buffer(np.zeros(4, np.float32))
    first = sycl.host_accessor(buf)
    with pytest.raises(sycl.exception, match="open host_accessor") as e:
        sycl.host_accessor(buf, sycl.read_only)
    assert errc_of(e) == sycl.errc.invalid
    first.release()
    with sycl.host_accessor(buf, sycl.read_only) as v1, \
            sycl.host_accessor(buf, sycl.read_only) as v2:  # readers share
        assert v1.sum() == v2.sum() == 0


def test_commands_wait_for_an_open_host_accessor(q):
    buf = sycl.buffer(np.zeros(8, np.int32))
    ha = sycl.host_accessor(buf)
    out = np.zeros(8, np.int32)
    e = q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out))
    ha[:] = 7  # written after the command was submitted, before it may run
    assert not e.is_complete()
    ha.release()
    e.wait()
    np.testing.assert_array_equal(out, 7)


# -- write-back ---------------------------------------------------------------------------------
def test_write_back_on_with_exit_release_and_destructor(q):
    for how in ("with", "release", "del"):
        a = np.zeros(8, np.float32)
        buf = sycl.buffer(a)
        q.submit(lambda h, buf=buf: h.fill(sycl.accessor(buf, h), np.float32(4)))
        if how == "with":
            with buf:
                pass
        elif how == "release":
            buf.release()
        else:
            del buf
        np.testing.assert_array_equal(a, 4)


def test_set_final_data_redirects_or_stops_write_back(q):
    a, other = np.zeros(8, np.int32), np.zeros(8, np.int32)
    with sycl.buffer(a) as buf:
        buf.set_final_data(other)
        q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(9)))
    np.testing.assert_array_equal(other, 9)
    np.testing.assert_array_equal(a, 0)
    b = np.zeros(8, np.int32)
    with sycl.buffer(b) as buf:
        buf.set_final_data(None)
        assert not buf.writes_back()
        q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(9)))
    np.testing.assert_array_equal(b, 0)
    c = np.zeros(8, np.int32)
    with sycl.buffer(c) as buf:
        buf.set_write_back(False)
        q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(9)))
    np.testing.assert_array_equal(c, 0)


def _add_100(q, buf, shape):
    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_write)

        def k(i):
            acc[i] = acc[i] + 100
        h.parallel_for(sycl.range(*shape), k)
    q.submit(cg)


def test_final_data_overlapping_the_host_array_is_written_where_it_is(q):
    """Final data that shares memory with the buffer's host array without being it
    (shifted, or the same bytes in another order) gets the buffer's elements, and the host
    array keeps what the user left outside it."""
    big = np.arange(12, dtype=np.int32)
    buf = sycl.buffer(big[0:6])
    buf.set_final_data(big[3:9])
    _add_100(q, buf, (6,))
    buf.release()
    np.testing.assert_array_equal(big, [0, 1, 2, 100, 101, 102, 103, 104, 105, 9, 10, 11])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    buf = sycl.buffer(a)
    final = a.reshape(3, 2).T  # a's bytes as a (2, 3) array, not C-contiguous
    buf.set_final_data(final)
    _add_100(q, buf, (2, 3))
    buf.release()
    np.testing.assert_array_equal(final, np.arange(6).reshape(2, 3) + 100)


def test_threads_making_a_buffers_first_accessors_at_once_share_one_allocation(q, in_threads):
    """The first accessors of a buffer bind its memory to the device: made in four
    threads at once, every kernel still writes the one allocation written back."""
    parts, n = 4, 64
    per = n // parts
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(40):
            a = np.zeros(n, np.int32)
            buf = sycl.buffer(a)
            start = threading.Barrier(parts)

            def writer(part, buf=buf, start=start):
                start.wait()

                def cg(h):
                    acc = sycl.accessor(buf, h, sycl.read_write, access_range=sycl.range(per),
                                        access_offset=sycl.id(part * per))

                    def k(i):
                        acc[i] = acc[i] + 1 + part
                    h.parallel_for(sycl.range(per), k)
                q.submit(cg)
            in_threads(writer, parts)
            buf.release()
            np.testing.assert_array_equal(a, np.repeat(np.arange(1, parts + 1), per))
    finally:
        sys.setswitchinterval(interval)


def test_no_write_back_when_nothing_could_write(q):
    a = np.arange(8, dtype=np.int32)
    final = np.full(8, -1, np.int32)
    with sycl.buffer(a) as buf:
        buf.set_final_data(final)
        out = np.zeros(8, np.int32)
        q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out)).wait()
        with sycl.host_accessor(buf, sycl.read_only):
            pass
    np.testing.assert_array_equal(final, -1)


def test_read_only_and_strided_arrays(q):
    ro = np.arange(8, dtype=np.int32)
    ro.flags.writeable = False
    with sycl.buffer(ro) as buf:
        q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(1)))
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert (v == 1).all()
    np.testing.assert_array_equal(ro, np.arange(8))  # never written
    base = np.zeros((4, 4), np.float32)
    strided = base[:, ::2]
    with sycl.buffer(strided) as buf:
        q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.float32(5)))
    assert (base[:, ::2] == 5).all() and (base[:, 1::2] == 0).all()


def test_set_final_data_checks_its_array():
    buf = sycl.buffer(np.zeros(8, np.int32))
    with pytest.raises(sycl.exception, match="bytes"):
        buf.set_final_data(np.zeros(9, np.int32))
    with pytest.raises(sycl.exception, match="writable numpy"):
        buf.set_final_data([0] * 8)


# -- sub-buffers and reinterpret -----------------------------------------------------------
def test_sub_buffers_view_contiguous_regions(q):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    with sycl.buffer(a) as buf:
        rows = sycl.buffer(buf, sycl.id(1, 0), sycl.range(2, 6))
        part = sycl.buffer(buf, sycl.id(3, 2), sycl.range(1, 3))
        assert rows.is_sub_buffer() and tuple(rows.get_range()) == (2, 6)
        q.submit(lambda h: h.fill(sycl.accessor(rows, h), np.int32(-1)))
        q.submit(lambda h: h.fill(sycl.accessor(part, h), np.int32(-2)))
        with sycl.host_accessor(part, sycl.read_only) as v:
            np.testing.assert_array_equal(v, [[-2, -2, -2]])
    want = np.arange(24, dtype=np.int32).reshape(4, 6)
    want[1:3] = -1
    want[3, 2:5] = -2
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("offset, size, message", [
    ((0, 1), (2, 3), "not contiguous"),
    ((3, 0), (2, 6), "overruns"),
    ((0,), (2,), "2-dimensional"),
])
def test_bad_sub_buffers(offset, size, message):
    buf = sycl.buffer(np.zeros((4, 6), np.int32))
    with pytest.raises(sycl.exception, match=message) as e:
        sycl.buffer(buf, sycl.id(*offset), sycl.range(*size))
    assert errc_of(e) == sycl.errc.invalid


def test_reinterpret_shares_the_memory(q):
    a = np.zeros(4, np.uint32)
    with sycl.buffer(a) as buf:
        bytes_view = buf.reinterpret(np.uint8)
        assert tuple(bytes_view.get_range()) == (16,)
        q.submit(lambda h: h.fill(sycl.accessor(bytes_view, h), np.uint8(1)))
        as_2d = buf.reinterpret(np.uint16, sycl.range(2, 4))
        with sycl.host_accessor(as_2d, sycl.read_only) as v:
            assert v.shape == (2, 4) and (v == 0x0101).all()
        with pytest.raises(sycl.exception, match="bytes"):
            buf.reinterpret(np.uint8, sycl.range(15))
    assert (a == 0x01010101).all()


# -- copies, fills and update_host through accessors ---------------------------------------
def test_copies_between_accessors_usm_and_numpy(q):
    src = np.arange(32, dtype=np.float32)
    usm = sycl.malloc_device(32, np.float32, q)
    out = np.zeros(32, np.float32)
    with sycl.buffer(src) as a, sycl.buffer(sycl.range(32), np.float32) as b:
        q.submit(lambda h: h.copy(sycl.accessor(a, h, sycl.read_only),
                                  sycl.accessor(b, h, sycl.write_only, sycl.no_init)))
        q.submit(lambda h: h.copy(sycl.accessor(b, h, sycl.read_only), usm))
        q.wait()
        q.memcpy(out, usm, 128).wait()
        np.testing.assert_array_equal(out, src)
        q.submit(lambda h: h.copy(np.full(32, 3, np.float32), sycl.accessor(b, h)))
        ranged = np.zeros(8, np.float32)
        q.submit(lambda h: h.copy(sycl.accessor(a, h, sycl.read_only, access_range=8,
                                                access_offset=sycl.id(4)), ranged)).wait()
        np.testing.assert_array_equal(ranged, src[4:12])
        with sycl.host_accessor(b, sycl.read_only) as v:
            assert (v == 3).all()
    sycl.free(usm, q)


def test_fills_take_a_value_of_the_element_struct(q):
    """`fill(acc, P(...))` and `q.fill(p, P(...), n)` store the struct's fields, as
    `p[i] = P(...)` does (a tuple of them too, and 0 zeroes every field); an object
    without them is refused and nothing is filled."""
    @sycl.struct
    class Cell:
        count: sycl.int32
        weight: sycl.float32

    with sycl.buffer(sycl.range(4), Cell) as buf:
        q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only, sycl.no_init),
                                  Cell(count=3, weight=2.5)))
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert np.asarray(v)["count"].tolist() == [3] * 4
            assert np.asarray(v)["weight"].tolist() == [2.5] * 4
        q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only), (7, 0.25)))
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert np.asarray(v).tolist() == [(7, 0.25)] * 4
        q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only), 0))  # zeroes all
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert np.asarray(v).tolist() == [(0, 0.0)] * 4
    p = sycl.malloc_shared(3, Cell, q)
    q.fill(p, 0, 3).wait()
    assert [(p[i].count, p[i].weight) for i in range(3)] == [(0, 0.0)] * 3
    q.fill(p, Cell(count=-1, weight=0.5), 3).wait()
    assert [(p[i].count, p[i].weight) for i in range(3)] == [(-1, 0.5)] * 3
    with pytest.raises(sycl.exception, match="no field 'count'") as e:
        q.fill(p, object(), 3)
    assert errc_of(e) == sycl.errc.invalid
    assert (p[0].count, p[0].weight) == (-1, 0.5)
    sycl.free(p, q)


def test_update_host_refreshes_the_host_copy(q):
    a = np.zeros(16, np.int32)
    buf = sycl.buffer(a)
    q.submit(lambda h: h.fill(sycl.accessor(buf, h), np.int32(6)))
    q.submit(lambda h: h.update_host(sycl.accessor(buf, h, sycl.read_only))).wait()
    np.testing.assert_array_equal(a, 6)  # before release: update_host wrote it
    buf.release()


@pytest.mark.parametrize("bad, errc, message", [
    (lambda buf, h: h.copy(np.zeros(24, np.int32), sycl.accessor(buf, h, sycl.read_only)),
     sycl.errc.invalid, "read_only"),
    (lambda buf, h: h.copy(sycl.accessor(buf, h, sycl.write_only), np.zeros(24, np.int32)),
     sycl.errc.invalid, "write_only"),
    (lambda buf, h: h.copy(sycl.accessor(buf, h), np.zeros(4, np.int32)),
     sycl.errc.invalid, "overrun"),
    # one element type on both sides, as in SYCL's copy(acc, T*): not the bytes of
    # another type, reinterpreted or overrunning no element
    (lambda buf, h: h.copy(sycl.accessor(buf, h, sycl.read_only), np.zeros(24, np.float32)),
     sycl.errc.invalid, "one element type"),
    (lambda buf, h: h.copy(np.ones(24, np.float32), sycl.accessor(buf, h, sycl.write_only)),
     sycl.errc.invalid, "one element type"),
    (lambda buf, h: h.copy(np.ones(12, np.int64), sycl.accessor(buf, h, sycl.write_only)),
     sycl.errc.invalid, "one element type"),
    (lambda buf, h: h.fill(sycl.accessor(buf, h), np.int64(1)), sycl.errc.invalid,
     "bytes"),
    (lambda buf, h: h.fill(sycl.accessor(buf, h, sycl.read_only), np.int32(1)),
     sycl.errc.invalid, "read_only"),
    (lambda buf, h: sycl.accessor(buf, h, access_range=sycl.range(4, 4),
                                  access_offset=sycl.id(1, 3)), sycl.errc.invalid,
     "overruns"),
    (lambda buf, h: sycl.accessor(buf, h, sycl.read_only, sycl.no_init), sycl.errc.invalid,
     "no_init"),
    (lambda buf, h: sycl.accessor(buf, h, sycl.read_only, sycl.write_only),
     sycl.errc.invalid, "twice"),
    (lambda buf, h: sycl.accessor(buf, h, access_range=sycl.range(4)), sycl.errc.invalid,
     "2-dimensional"),
    (lambda buf, h: sycl.accessor(np.zeros(4), h), sycl.errc.invalid, "sycl.buffer"),
    (lambda buf, h: h.require(np.zeros(4)), sycl.errc.invalid, "sycl.accessor"),
    (lambda buf, h: h.copy(sycl.accessor(buf), np.zeros(24, np.int32)),
     sycl.errc.invalid, "placeholder"),
])
def test_bad_accessor_commands_change_nothing(q, bad, errc, message):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    with sycl.buffer(a) as buf:
        with pytest.raises(sycl.exception, match=message) as e:
            q.submit(lambda h: bad(buf, h))
        assert errc_of(e) == errc
        with sycl.host_accessor(buf, sycl.read_only) as v:
            np.testing.assert_array_equal(v, np.arange(24).reshape(4, 6))


def test_placeholder_accessor_with_require(q):
    buf = sycl.buffer(np.arange(8, dtype=np.int32))
    acc = sycl.accessor(buf, sycl.read_only)
    assert acc.is_placeholder()
    out = np.zeros(8, np.int32)

    def cg(h):
        h.require(acc)
        h.copy(acc, out)
    q.submit(cg).wait()
    np.testing.assert_array_equal(out, np.arange(8))


def test_device_accessor_is_not_host_memory(q):
    buf = sycl.buffer(np.zeros(4, np.int32))
    with pytest.raises(sycl.exception, match="host_accessor") as e:
        q.submit(lambda h: sycl.accessor(buf, h)[0])
    assert errc_of(e) == sycl.errc.invalid


def test_buffer_used_in_another_context_is_refused(q):
    buf = sycl.buffer(np.arange(4, dtype=np.int32))
    out = np.zeros(4, np.int32)
    q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out)).wait()
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    with pytest.raises(sycl.exception, match="another context") as e:
        other.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out))
    assert errc_of(e) == sycl.errc.invalid


def test_released_buffer_is_refused(q):
    buf = sycl.buffer(np.zeros(4, np.int32))
    buf.release()
    with pytest.raises(sycl.exception, match="released") as e:
        q.submit(lambda h: sycl.accessor(buf, h))
    assert errc_of(e) == sycl.errc.invalid
    with pytest.raises(sycl.exception, match="released"):
        sycl.host_accessor(buf)


def test_accessor_queries(q):
    buf = sycl.buffer(sycl.range(4, 6), np.float64)

    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_only, access_range=sycl.range(2, 3),
                            access_offset=sycl.id(1, 2))
        assert tuple(acc.get_range()) == (2, 3) and tuple(acc.get_offset()) == (1, 2)
        assert acc.size() == 6 and acc.byte_size() == 48
        assert acc.access_mode is sycl.access_mode.read and not acc.is_placeholder()
        h.single_task(lambda: None)
    q.submit(cg).wait()


def test_kernel_using_an_accessor_its_command_group_does_not_require(q):
    buf = sycl.buffer(np.zeros(8, np.int32))
    placeholder = sycl.accessor(buf, sycl.read_write)
    q.submit(lambda h: h.require(placeholder)).wait()
    made_elsewhere = []
    q.submit(lambda h: made_elsewhere.append(sycl.accessor(buf, h))).wait()
    for acc in (placeholder, made_elsewhere[0]):
        def cgf(h, acc=acc):
            def k(i):
                acc[i] = 1
            h.parallel_for(sycl.range(8), k)
        with pytest.raises(sycl.exception, match="does not require") as e:
            q.submit(cgf)
        assert errc_of(e) == sycl.errc.kernel_argument
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == 0).all()


def test_copies_fills_and_update_host_take_only_accessors_their_command_group_requires(q):
    """An accessor kept from an earlier command group is tracked by none after it: a
    copy, fill or update_host through it (eagerly or added to a graph) is refused before
    anything runs, and the buffer keeps its data."""
    buf = sycl.buffer(np.arange(8, dtype=np.int32))
    other = sycl.buffer(np.zeros(8, np.int32))
    kept = []
    q.submit(lambda h: kept.append(sycl.accessor(buf, h, sycl.read_write))).wait()
    out = np.zeros(8, np.int32)
    uses = [
        ("fill", lambda h: h.fill(kept[0], np.int32(7))),
        ("copy source", lambda h: h.copy(kept[0], out)),
        ("copy destination", lambda h: h.copy(out, kept[0])),
        ("copy destination", lambda h: h.copy(sycl.accessor(other, h, sycl.read_only),
                                              kept[0])),
        ("update_host", lambda h: h.update_host(kept[0])),
    ]
    for what, cgf in uses:
        with pytest.raises(sycl.exception, match=f"{what}: an accessor this command group "
                           "does not require") as e:
            q.submit(cgf)
        assert errc_of(e) == sycl.errc.invalid
    graph = syclexp.command_graph(q)
    with pytest.raises(sycl.exception, match="does not require"):
        graph.add(uses[0][1])
    with sycl.host_accessor(buf, sycl.read_only) as v:
        np.testing.assert_array_equal(v, np.arange(8))
    assert (out == 0).all()


def test_a_repeated_launch_checks_its_accessor_against_its_own_command_group(q):
    """A launch repeating the last one (same code, an accessor with the same launch key)
    gets the last command back without packing: the accessor must still be one its own
    command group requires, not one kept from another command group over the buffer."""
    buf = sycl.buffer(np.zeros(8, np.int32))
    kept = []

    def add(acc):
        def k(i):
            acc[i] = acc[i] + 1
        return k

    def cgf(h):
        kept.append(sycl.accessor(buf, h))
        h.parallel_for(sycl.range(8), add(kept[-1]))
    q.submit(cgf)
    q.submit(cgf).wait()  # the repeat: the command of the first launch
    with pytest.raises(sycl.exception, match="does not require") as e:
        q.submit(lambda h: (sycl.accessor(buf, h),
                            h.parallel_for(sycl.range(8), add(kept[0]))))
    assert errc_of(e) == sycl.errc.kernel_argument
    with sycl.host_accessor(buf, sycl.read_only) as v:
        np.testing.assert_array_equal(v, np.full(8, 2))


def test_kernel_launched_outside_a_command_group_cannot_use_an_accessor(q):
    """An accessor kept from its command group and captured by a kernel launched with
    the queue's shortcut would reach its buffer untracked: no upload of what the host
    wrote, no write-back of what the kernel writes, no order with other command groups.
    Refused, whether the kernel was launched before in a command group or not."""
    a = np.zeros(8, np.int32)
    buf = sycl.buffer(a)
    kept = []

    def add(acc, n):
        def k(i):
            acc[i] = acc[i] + n
        return k

    def cgf(h):
        kept.append(sycl.accessor(buf, h))
        h.parallel_for(sycl.range(8), add(kept[-1], 1))
    q.submit(cgf).wait()
    with sycl.host_accessor(buf) as v:
        v[:] += 10
    acc = kept[0]

    def seven(i):
        acc[i] = 7
    # the kernel and accessor of the last launch (its command kept), then a new kernel
    for kernel in (add(acc, 1), seven):
        with pytest.raises(sycl.exception, match="outside a command group") as e:
            q.parallel_for(sycl.range(8), kernel)
        assert errc_of(e) == sycl.errc.kernel_argument
    q.submit(cgf)
    buf.release()
    np.testing.assert_array_equal(a, np.full(8, 12))


@pytest.mark.parametrize("shape, offset, size", [
    ((6, 6), (2, 2), (3, 3)),
    ((6, 6, 6), (1, 2, 3), (3, 3, 3)),
    ((5, 7), (0, 1), (5, 6)),
])
@pytest.mark.parametrize("direct_to_numpy", [True, False])
def test_copies_and_fills_of_regions_that_are_not_one_run(q, shape, offset, size,
                                                          direct_to_numpy):
    """A ranged accessor whose rows are apart in memory: copies to and from numpy, USM
    and another accessor, and fills, go row by row and touch nothing else."""
    a = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    want = a.copy()
    region = tuple(slice(o, o + n) for o, n in zip(offset, size, strict=True))
    count = int(np.prod(size))
    out = np.zeros(size, np.int32)
    usm = sycl.malloc_device(count, np.int32, q)
    with sycl.buffer(a) as buf, sycl.buffer(sycl.range(*shape), np.int32) as other:
        def ranged(b, h, mode):
            return sycl.accessor(b, h, mode, access_range=sycl.range(*size),
                                 access_offset=sycl.id(*offset))
        if direct_to_numpy:
            q.submit(lambda h: h.copy(ranged(buf, h, sycl.read_only), out)).wait()
        else:  # through device USM, then numpy
            q.submit(lambda h: h.copy(ranged(buf, h, sycl.read_only), usm)).wait()
            q.memcpy(out, usm, out.nbytes).wait()
        np.testing.assert_array_equal(out, want[region])
        q.submit(lambda h: h.fill(sycl.accessor(other, h), np.int32(-1)))
        q.submit(lambda h: h.copy(ranged(buf, h, sycl.read_only),
                                  ranged(other, h, sycl.write_only)))
        q.submit(lambda h: h.copy(-out, ranged(buf, h, sycl.write_only)))
        with sycl.host_accessor(other, sycl.read_only) as v:
            expect = np.full(shape, -1, np.int32)
            expect[region] = want[region]
            np.testing.assert_array_equal(v, expect)
        q.submit(lambda h: h.fill(ranged(other, h, sycl.write_only), np.int32(7)))
        with sycl.host_accessor(other, sycl.read_only) as v:
            expect[region] = 7
            np.testing.assert_array_equal(v, expect)
    want[region] = -want[region]
    np.testing.assert_array_equal(a, want)
    sycl.free(usm, q)


def test_reinterpret_of_a_misaligned_sub_buffer_is_refused():
    buf = sycl.buffer(np.zeros(16, np.uint8))
    odd = sycl.buffer(buf, sycl.id(1), sycl.range(8))
    with pytest.raises(sycl.exception, match="not aligned to 4 bytes") as e:
        odd.reinterpret(np.int32)
    assert e.value.code() == sycl.errc.invalid
    aligned = sycl.buffer(buf, sycl.id(4), sycl.range(8))
    assert tuple(aligned.reinterpret(np.int32).get_range()) == (2,)


def test_reinterpret_as_a_struct_needs_the_alignment_of_its_widest_field():
    """A struct's alignment in kernels is its widest field's, though numpy says 1 of an
    unaligned structured dtype: a float64 struct at byte 4 is refused, as float64 is."""
    @sycl.struct
    class Sample:
        count: sycl.int32
        value: sycl.float64

    buf = sycl.buffer(np.zeros(40, np.uint8))
    at4 = sycl.buffer(buf, sycl.id(4), sycl.range(32))
    with pytest.raises(sycl.exception, match="not aligned to 8 bytes") as e:
        at4.reinterpret(Sample)
    assert e.value.code() == sycl.errc.invalid
    at8 = sycl.buffer(buf, sycl.id(8), sycl.range(32))
    assert tuple(at8.reinterpret(Sample).get_range()) == (2,)


def test_numpy_array_of_a_host_accessor_is_a_copy_and_asarray_the_live_view(q):
    a = np.arange(4, dtype=np.int32)
    buf = sycl.buffer(a)
    with sycl.host_accessor(buf, sycl.read_write) as ha:
        snapshot, live = np.array(ha), np.asarray(ha)
        ha[0] = 99
        np.testing.assert_array_equal(snapshot, [0, 1, 2, 3])
        np.testing.assert_array_equal(live, [99, 1, 2, 3])
        assert not np.shares_memory(snapshot, a)
        np.testing.assert_array_equal(np.array(ha, dtype=np.float64), [99.0, 1, 2, 3])
        with pytest.raises(ValueError):  # numpy's protocol: no copy, no other dtype
            np.asarray(ha, dtype=np.float64, copy=False)
    with sycl.host_accessor(buf, sycl.read_only) as ro:
        copy = np.array(ro)
        assert copy.flags.writeable and not np.asarray(ro).flags.writeable
    buf.release()
    np.testing.assert_array_equal(a, [99, 1, 2, 3])


def test_empty_buffers(q):
    """SYCL allows a buffer of range 0: accessors of it are empty, commands over it do
    nothing, and release writes back nothing."""
    a = np.zeros(0, np.float32)
    with sycl.buffer(a) as buf, sycl.buffer(sycl.range(0), np.int32) as empty:
        assert buf.size() == 0 and buf.byte_size() == 0
        out = np.zeros(0, np.float32)

        def cgf(h):
            x = sycl.accessor(buf, h)
            assert x.empty() and x.size() == 0
            h.copy(x, out)
        q.submit(cgf).wait()
        q.submit(lambda h: h.fill(sycl.accessor(empty, h), np.int32(3))).wait()
        with sycl.host_accessor(empty, sycl.read_only) as v:
            assert v.shape == (0,)
