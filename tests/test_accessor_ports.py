"""DPC++'s end-to-end accessor tests (intel/llvm sycl/test-e2e/Basic/accessor/,
Basic/access_to_subset.cpp, Basic/compare_exchange_strong.cpp, Basic/local-arg-align.cpp)
as Python: host, device, placeholder and local accessors, ranges and offsets, no_init,
atomics on accessor elements, and the errors SYCL prescribes (the handler's copies and
fills through accessors are in test_handler_accessor_ports.py). Each test names the
DPC++ test it ports; the values are computed on the device. C++-only cases (deduction
guides, swap, hashes, iterators, 0-dimensional and const-qualified accessors,
property-list templates) have no Python counterpart."""

import numpy as np
import pytest

import vksycl as sycl


def contents(buf):
    with sycl.host_accessor(buf, sycl.read_only) as v:
        return np.array(v)


# -- Basic/accessor/accessor.cpp ------------------------------------------------------------
def test_host_accessors_are_live_views_of_the_users_arrays():
    """Basic/accessor/accessor.cpp (host accessor): the queries of a read_only host
    accessor, and writes through a read_write one that the user's array shows at once."""
    src, dst = np.array([3, 7], np.int32), np.zeros(2, np.int32)
    with sycl.buffer(src) as b_src, sycl.buffer(dst) as b_dst:
        a_src = sycl.host_accessor(b_src, sycl.read_only)
        a_dst = sycl.host_accessor(b_dst)
        assert a_src.byte_size() == src.nbytes and a_src.size() == 2
        assert a_src.get_range() == sycl.range(2) and not a_src.empty()
        assert a_src[0] + a_src[1] == 10
        a_dst[0] = a_src[0] + a_src[0]
        a_dst[1] = a_src[1] + a_src[1]
        np.testing.assert_array_equal(dst, [6, 14])
        a_src.release()
        a_dst.release()


def test_three_dimensional_host_accessor():
    """Basic/accessor/accessor.cpp (three-dimensional host accessor): every element
    doubled through a (2, 3, 4) host accessor indexed by (i, j, k) reaches the array."""
    data = np.arange(24, dtype=np.int32)
    with sycl.buffer(data, sycl.range(2, 3, 4)) as buf:
        acc = sycl.host_accessor(buf)
        assert acc.byte_size() == data.nbytes and acc.size() == 24
        assert acc.get_range() == sycl.range(2, 3, 4)
        for i in range(2):
            for j in range(3):
                for k in range(4):
                    acc[i, j, k] += acc[i, j, k]
        acc.release()
    np.testing.assert_array_equal(data, 2 * np.arange(24))


def test_device_accessor_in_a_single_task(q):
    """Basic/accessor/accessor.cpp (device accessor): a one-element read_write accessor
    doubles its element in a single_task; its queries on the host."""
    data = np.array([5], np.int32)
    with sycl.buffer(data) as buf:
        def cgf(h):
            acc = buf.get_access(h, sycl.read_write)
            assert not acc.is_placeholder() and acc.byte_size() == 4 and acc.size() == 1
            assert acc.get_range() == sycl.range(1)

            def k():
                acc[0] += acc[0]
            h.single_task(k)
        q.submit(cgf).wait()
    assert data[0] == 10


def test_two_and_three_dimensional_subscripts(q):
    """Basic/accessor/accessor.cpp (dim2_subscr, dim3_subscr): each element of a 2D and
    a 3D buffer gets its item's linear id added through acc[i, j] / acc[i, j, k]."""
    a2, a3 = np.zeros((2, 3), np.int32), np.zeros((2, 3, 4), np.int32)
    with sycl.buffer(a2) as b2, sycl.buffer(a3) as b3:
        def cg2(h):
            acc = b2.get_access(h, sycl.read_write)

            def k(it):
                acc[it.get_id(0), it.get_id(1)] += it.get_linear_id()
            h.parallel_for(sycl.range(2, 3), k)

        def cg3(h):
            acc = b3.get_access(h, sycl.read_write)

            def k(it):
                acc[it.get_id(0), it.get_id(1), it.get_id(2)] += it.get_linear_id()
            h.parallel_for(sycl.range(2, 3, 4), k)
        q.submit(cg2)
        q.submit(cg3)
    np.testing.assert_array_equal(a2.reshape(-1), np.arange(6))
    np.testing.assert_array_equal(a3.reshape(-1), np.arange(24))


@pytest.mark.parametrize("no_init", [True, False])
def test_write_accessors_on_a_buffer_without_data(q, no_init):
    """Basic/accessor/accessor.cpp (test_discard_write, test_discard_read_write): a write
    accessor (discard_write is write_only + no_init now) fills a buffer made from a range;
    a host accessor reads 42; one with no_init may be made after it."""
    with sycl.buffer(sycl.range(3), np.int32) as buf:
        def cgf(h):
            acc = sycl.accessor(buf, h, sycl.write_only, *([sycl.no_init] * no_init))

            def k(i):
                acc[i] = 42
            h.parallel_for(sycl.range(3), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(buf), 42)
        with sycl.host_accessor(buf, sycl.no_init) as v:
            v[:] = 1
        np.testing.assert_array_equal(contents(buf), 1)


class Wrap:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_accessors_inside_captured_objects(q):
    """Basic/accessor/accessor.cpp (wrapped_access1-3): accessors kept in objects, beside
    plain fields and nested two levels deep, are kernel arguments like bare ones."""
    arrays = [np.zeros(10, np.int32) for _ in range(4)]
    bufs = [sycl.buffer(a) for a in arrays]

    def cgf(h):
        one = Wrap(accessor=sycl.accessor(bufs[0], h))
        two = Wrap(a=10, accessor1=sycl.accessor(bufs[1], h), b=5,
                   accessor2=sycl.accessor(bufs[2], h))
        deep = Wrap(w2=Wrap(w1=Wrap(a=1, b=2), wrapped=Wrap(accessor=sycl.accessor(bufs[3],
                                                                                  h))))

        def k(it):
            i = it.get_linear_id()
            one.accessor[i] = 333
            two.accessor1[i] = 333 + two.a - 10
            two.accessor2[i] = 777 + two.b - 5
            deep.w2.wrapped.accessor[i] = 333 + deep.w2.w1.b - 2
        h.parallel_for(sycl.range(10), k)
    q.submit(cgf)
    for b in bufs:
        b.release()
    for a, want in zip(arrays, (333, 333, 777, 333), strict=True):
        np.testing.assert_array_equal(a, want)


def test_two_accessors_to_one_buffer_in_one_command_group(q):
    """Basic/accessor/accessor.cpp (two_accessors_to_buf): a read accessor and a
    read_write accessor to one buffer in one kernel: 41 + the old value."""
    with sycl.buffer(np.ones(3, np.int32)) as buf:
        def cgf(h):
            a1 = buf.get_access(h, sycl.read_only)
            a2 = buf.get_access(h, sycl.read_write)

            def k(i):
                a2[i] = 41 + a1[i]
            h.parallel_for(sycl.range(3), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(buf), 42)


def test_placeholder_accessors_of_two_buffers(q):
    """Basic/accessor/accessor.cpp (placeholder_acc, acc_base): placeholder write and
    read accessors made outside the command group, required in it; and bound
    accessors of three buffers summed into the third."""
    data, cnst = np.array([-1], np.int32), np.array([399], np.int32)
    with sycl.buffer(data) as d, sycl.buffer(cnst) as c:
        dd, cc = sycl.accessor(d, sycl.write_only), sycl.accessor(c, sycl.read_only)

        def cgf(h):
            h.require(dd)
            h.require(cc)

            def k():
                dd[0] = cc[0]
            h.single_task(k)
        q.submit(cgf)
        assert contents(d)[0] == 399

        def sum_cgf(h):
            x = sycl.accessor(c, h, sycl.write_only)
            y = sycl.accessor(c, h, sycl.read_only)
            z = sycl.accessor(d, h)

            def k():
                z[0] = x[0] + y[0]
            h.single_task(k)
        q.submit(sum_cgf)
        assert d.get_host_access(sycl.read_only)[0] == 798


def misuse_unbound(b, h):
    acc = sycl.accessor(b)

    def k(i):
        acc[i] = 0
    h.parallel_for(sycl.range(4), k)


def misuse_unbound_read(b, h):
    acc = sycl.accessor(b)

    def k():
        x = acc[0]
        if x == 12345:
            x = 0
    h.single_task(k)


def misuse_one_bound_one_not(b, h):
    acc, acc2 = sycl.accessor(b), sycl.accessor(b, h)

    def k():
        acc2[1] = acc[0] + acc2[0]
    h.single_task(k)


def misuse_another_accessor_required(b, h):
    acc = sycl.accessor(b)
    sycl.accessor(b, h)

    def k():
        x = acc[0]
        if x == 12345:
            x = 0
    h.single_task(k)


@pytest.mark.parametrize("misuse", [misuse_unbound, misuse_unbound_read,
                                    misuse_one_bound_one_not,
                                    misuse_another_accessor_required])
def test_placeholder_accessor_used_without_require(q, misuse):
    """Basic/accessor/accessor.cpp (placeholder accessor exception 1-4, SYCL 2020
    4.7.6.9): a kernel using a placeholder accessor its command group did not require
    throws errc::kernel_argument, alone or beside accessors the group does have."""
    with sycl.buffer(sycl.range(4), np.int32) as b:
        with pytest.raises(sycl.exception) as e:
            q.submit(lambda h: misuse(b, h))
        assert e.value.code() == sycl.errc.kernel_argument


@pytest.mark.parametrize("bad", [
    lambda b, q: sycl.host_accessor(b, sycl.range(11), sycl.id(10)),
    lambda b, q: q.submit(lambda h: b.get_access(h, sycl.read_write, sycl.range(11))),
    lambda b, q: sycl.host_accessor(b, sycl.read_only, sycl.no_init),
    lambda b, q: q.submit(lambda h: sycl.accessor(b, h, sycl.read_only, sycl.no_init)),
])
def test_illegal_ranges_and_no_init_with_read_only(q, bad):
    """Basic/accessor/accessor.cpp (exceptions with illegal ranges or no_init): a range
    past the buffer, host or device, and no_init on a read_only accessor throw
    errc::invalid."""
    res = np.arange(10, dtype=np.int32)
    with sycl.buffer(res) as b:
        with pytest.raises(sycl.exception) as e:
            bad(b, q)
        assert e.value.code() == sycl.errc.invalid
    np.testing.assert_array_equal(res, np.arange(10))


@pytest.mark.parametrize("dtype, n", [(np.int8, 64), (np.int32, 32), (np.float32, 16)])
def test_size_queries_of_host_device_and_local_accessors(q, dtype, n):
    """Basic/accessor/accessor.cpp (TestAccSizeFuncs): byte_size(), size() and empty() of
    a host accessor, of a device accessor read in a kernel, and of a local accessor of
    the same element count read in an nd_range kernel."""
    with sycl.buffer(np.ones(n, dtype)) as data, sycl.buffer(np.zeros(6, np.int64)) as res:
        item = np.dtype(dtype).itemsize
        ha = sycl.host_accessor(data, sycl.read_only)
        assert (ha.byte_size(), ha.size(), ha.empty()) == (n * item, n, False)
        ha.release()

        def cgf(h):
            acc = sycl.accessor(data, h)
            out = sycl.accessor(res, h, sycl.write_only)
            tile = sycl.local_accessor(dtype, sycl.range(n), h)

            def k(it):
                out[0] = acc.byte_size()
                out[1] = acc.size()
                out[2] = 1 if acc.empty() else 0
                out[3] = tile.byte_size()
                out[4] = tile.size()
                out[5] = 1 if tile.empty() else 0
            h.parallel_for(sycl.nd_range(sycl.range(1), sycl.range(1)), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(res), [n * item, n, 0, n * item, n, 0])


@pytest.mark.parametrize("launch", ["single_task", "range"])
def test_local_accessor_outside_an_nd_range_kernel_is_refused(q, launch):
    """Basic/accessor/accessor.cpp (local_acc_exception, parallel_for_exception; SYCL
    2020 4.7.6.11): a kernel invoked by single_task or by parallel_for over a range that
    uses a local accessor throws errc::kernel_argument when submitted."""
    with sycl.buffer(sycl.range(1), np.int32) as out:
        def cgf(h):
            local = sycl.local_accessor(np.int32, sycl.range(1), h)
            o = sycl.accessor(out, h)

            def task():
                local[0] = 1
                o[0] = local[0]

            def k(i):
                local[i] = 1
                o[i] = local[i]
            if launch == "single_task":
                h.single_task(task)
            else:
                h.parallel_for(sycl.range(1), k)
        with pytest.raises(sycl.exception, match="local_accessor") as e:
            q.submit(cgf)
        assert e.value.code() == sycl.errc.kernel_argument


def ld1(t, n):
    return t[n]


def st1(t, n, v):
    t[n] = v


def ld2(t, n):  # the n-th element of a 2x16 local accessor in linear order
    return t[n // 16, n % 16]


def st2(t, n, v):
    t[n // 16, n % 16] = v


@pytest.mark.parametrize("two_d", [False, True])
@pytest.mark.parametrize("reading", [False, True])
def test_local_accessor_walked_forwards_and_backwards(q, two_d, reading):
    """Basic/accessor/accessor.cpp (testLocalAccIters): a work-group of one walks a local
    accessor of 32 elements (1D, or 2x16) in linear order and in reverse, writing it
    (x * 2, +1, then * 2 + 1 backwards) or reading it back into the global buffer (x,
    then * 2 + 1 forwards, then + x backwards)."""
    v = np.arange(32, dtype=np.int32)
    shape = sycl.range(2, 16) if two_d else sycl.range(32)
    ld, st = (ld2, st2) if two_d else (ld1, st1)
    with sycl.buffer(v) as buf:
        def cgf(h):
            g = buf.get_access(h, sycl.read_write)
            t = sycl.local_accessor(np.int32, shape, h)

            def k(it):
                size = t.size()
                if reading:
                    for n in range(size):
                        st(t, n, g[n])
                    for n in range(size):
                        g[n] = ld(t, n) * 2 + 1
                    for n in range(size - 1, -1, -1):
                        g[n] += ld(t, n)
                else:
                    for n in range(size):
                        st(t, n, g[n] * 2)
                    for n in range(size):
                        st(t, n, ld(t, n) + 1)
                    for n in range(size - 1, -1, -1):
                        st(t, n, ld(t, n) * 2 + 1)
                    for n in range(size):
                        g[n] = ld(t, n)
            h.parallel_for(sycl.nd_range(sycl.range(1), sycl.range(1)), k)
        q.submit(cgf)
    i = np.arange(32)
    np.testing.assert_array_equal(v, (i * 2 + 1) + i if reading else (i * 2 + 1) * 2 + 1)


def first(acc):
    return acc[0]


def store_first(res, value):
    res[0] = value


def test_device_functions_take_read_and_local_accessors(q):
    """Basic/accessor/accessor.cpp (implicit_conversion): device functions read the first
    element of a read_only accessor, a read_write one and a local accessor, and store
    through a result accessor."""
    with sycl.buffer(np.array([123], np.int32)) as data, \
            sycl.buffer(np.zeros(3, np.int32)) as r0, sycl.buffer(np.zeros(3, np.int32)) as r1:
        def cgf(h):
            out = r0.get_access(h)
            out1 = r1.get_access(h, sycl.write_only)
            ro = sycl.accessor(data, h, sycl.read_only)
            rw = sycl.accessor(data, h)
            loc = sycl.local_accessor(np.int32, sycl.range(1), h)

            def k(it):
                loc[0] = 7
                it.barrier()
                store_first(out, first(ro))
                out[1] = first(rw) + 1
                out[2] = first(loc)
                store_first(out1, first(out) * 2)
            h.parallel_for(sycl.nd_range(sycl.range(1), sycl.range(1)), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(r0), [123, 124, 7])
        assert contents(r1)[0] == 246


# -- Basic/accessor/empty_acc_host_task.cpp, device_accessor, host_accessor, no_init -----
def test_an_empty_ranged_accessor(q):
    """Basic/accessor/empty_acc_host_task.cpp: an accessor of range 0 is empty(), can be
    passed to a kernel that checks empty() before touching it (a single_task here: vksycl
    has no host_task accessors), and a host accessor of range 0 is an empty view."""
    data = np.array([5], np.int32)
    with sycl.buffer(data) as b:
        def cgf(h):
            acc = sycl.accessor(b, h, sycl.range(0), sycl.id(0))
            assert acc.empty() and acc.size() == 0 and acc.byte_size() == 0

            def k():
                if not acc.empty():
                    acc[0] = 1
            h.single_task(k)
        q.submit(cgf).wait_and_throw()
        with sycl.host_accessor(b, sycl.range(0)) as v:
            assert v.size == 0
    assert data[0] == 5


DEVICE_ACCESSOR_CASES = ["bound", "placeholder", "bound-no_init", "placeholder-no_init"]


@pytest.mark.parametrize("spelling", ["accessor", "get_access"])
@pytest.mark.parametrize("case", DEVICE_ACCESSOR_CASES)
def test_nine_accessors_over_one_buffer(q, case, spelling):
    """Basic/accessor/Inputs/device_accessor.cpp (and device_accessor_deduction.cpp,
    get_device_access_deduction.cpp): nine accessors to one buffer in one single_task,
    whole, ranged (8) and ranged at offset 1, in the three modes, bound or placeholders
    (required in the group), and again with no_init on the writable ones (the read_only
    ones still see the old values)."""
    # values of their own per case: memory the allocator hands out again holds the
    # results of the case before, which must not pass for this one's
    base = 100 * (DEVICE_ACCESSOR_CASES.index(case) * 2 + (spelling == "accessor"))
    data = np.arange(1, 10, dtype=np.int32) + base
    no_init = "no_init" in case
    with sycl.buffer(data) as buf:
        def make(h, *args):
            ni = (sycl.no_init,) if no_init and sycl.read_only not in args else ()
            if spelling == "accessor":
                return sycl.accessor(buf, *((h,) if h else ()), *args, *ni)
            return buf.get_access(*((h,) if h else ()), *args, *ni)

        def nine(h):
            r, o = sycl.range(8), sycl.id(1)
            return [make(h, *a) for a in (
                (), (r,), (r, o), (sycl.read_only,), (r, sycl.read_only),
                (r, o, sycl.read_only), (sycl.write_only,), (r, sycl.write_only),
                (r, o, sycl.write_only))]
        early = None if case.startswith("bound") else nine(None)
        assert early is None or all(a.is_placeholder() for a in early)

        def cgf(h):
            if early is None:
                accs = nine(h)
                assert not any(a.is_placeholder() for a in accs)
            else:
                accs = early
                for a in accs:
                    h.require(a)
            a1, a2, a3, a4, a5, a6, a7, a8, a9 = accs

            def k():
                if no_init:
                    a7[6] = 1
                    a8[7] = 2
                    a9[7] = 3
                else:
                    a7[6] = a1[0]
                    a8[7] = a2[1]
                    a9[7] = a3[1]
                a1[0] = a4[3]
                a2[1] = a5[4]
                a3[1] = a6[4]
            h.single_task(k)
        q.submit(cgf).wait()
        tail = [1, 2, 3] if no_init else [base + 1, base + 2, base + 3]
        np.testing.assert_array_equal(contents(buf), [base + v for v in (4, 5, 6, 4, 5, 6)]
                                      + tail)


@pytest.mark.parametrize("spelling", ["host_accessor", "get_host_access"])
def test_host_accessor_ranges_offsets_and_modes(spelling):
    """Basic/accessor/Inputs/host_accessor.cpp (and host_accessor_deduction.cpp,
    get_host_access_deduction.cpp): host accessors whole, of range 2, and of range 2 at
    offset 1, in each mode; their size and range, and writes the array shows at once."""
    data = np.array([3, 7, 9], np.int32)
    with sycl.buffer(data) as buf:
        def acc(*args):
            if spelling == "host_accessor":
                return sycl.host_accessor(buf, *args)
            return buf.get_host_access(*args)
        r, o = sycl.range(2), sycl.id(1)
        steps = [((), 3, 3, 2), ((sycl.read_only,), 3, 2, None),
                 ((sycl.write_only,), 3, None, 1), ((r,), 2, 1, 2),
                 ((r, sycl.read_only), 2, 2, None), ((r, sycl.write_only), 2, None, 1),
                 ((r, o), 2, 7, 6), ((r, o, sycl.read_only), 2, 6, None),
                 ((r, o, sycl.write_only), 2, None, 5)]
        for args, size, seen, write in steps:
            a = acc(*args)
            assert a.size() == size and a.get_range() == sycl.range(size)
            if seen is not None:
                assert a[0] == seen
            if write is not None:
                a[0] = write
                assert data[1 if o in args else 0] == write
            a.release()
    np.testing.assert_array_equal(data, [1, 5, 9])


def test_ranged_no_init_keeps_what_lies_outside_its_range(q):
    """Basic/accessor/ranged_no_init.cpp (SYCL 2020 Table 24, no_init on a ranged
    accessor): a write_only no_init accessor of elements 4-7 discards only those; the
    host-written 42s around them survive."""
    with sycl.buffer(sycl.range(16), np.int32) as buf:
        with sycl.host_accessor(buf, sycl.write_only) as h:
            h[:] = 42

        def cgf(h):
            a = sycl.accessor(buf, h, sycl.range(4), sycl.id(4), sycl.write_only,
                              property_list=[sycl.no_init])

            def k(i):
                a[i] = 7
            h.parallel_for(sycl.range(4), k)
        q.submit(cgf).wait_and_throw()
        np.testing.assert_array_equal(contents(buf), [42] * 4 + [7] * 4 + [42] * 8)


# -- Basic/access_to_subset.cpp, Basic/compare_exchange_strong.cpp, local-arg-align ---------
def test_access_to_a_subset_of_a_buffer(q):
    """Basic/access_to_subset.cpp: a 6x7 buffer zeroed, then a write accessor of range
    (4, 5) at (1, 1) sets its interior to 1; set_final_data receives the frame."""
    result = np.full((6, 7), -1, np.int32)
    with sycl.buffer(sycl.range(6, 7), np.int32) as buf:
        buf.set_final_data(result)

        def fill(value, *ranged):
            def cgf(h):
                acc = sycl.accessor(buf, h, sycl.write_only, *ranged)

                def k(idx):
                    acc[idx] = value
                h.parallel_for(acc.get_range(), k)
            return cgf
        q.submit(fill(0))
        q.submit(fill(1, sycl.range(4, 5), sycl.id(1, 1)))
    want = np.zeros((6, 7), np.int32)
    want[1:5, 1:6] = 1
    np.testing.assert_array_equal(result, want)


def test_compare_exchange_strong_on_an_accessor(q):
    """Basic/compare_exchange_strong.cpp: compare_exchange_strong on an accessor's
    element with a wrong expected value fails and reports the value it found (42)."""
    result = np.array([7], np.int8)
    with sycl.buffer(result) as res, sycl.buffer(np.array([42], np.int32)) as buf:
        def cgf(h):
            glob = buf.get_access(h, sycl.read_write)
            out = res.get_access(h, sycl.write_only)

            def k():
                ok, seen = sycl.atomic_ref(glob[0]).compare_exchange_strong(0, 1)
                r = 0
                if ok:
                    r = 1
                if seen != 42:
                    r = 2
                out[0] = r
            h.single_task(k)
        q.submit(cgf)
        assert contents(buf)[0] == 42
    assert result[0] == 0


def test_local_accessors_of_mixed_element_types(q):
    """Basic/local-arg-align.cpp: local accessors of 1-, 8- and 2-byte elements in one
    kernel, each element written and read back correctly (an 8-byte array placed after a
    1-byte one must still be aligned)."""
    with sycl.buffer(np.zeros(4, np.float64)) as out:
        def cgf(h):
            a = sycl.local_accessor(np.int8, sycl.range(3), h)
            b = sycl.local_accessor(np.float64, sycl.range(2), h)
            c = sycl.local_accessor(np.int16, sycl.range(5), h)
            o = sycl.accessor(out, h, sycl.write_only)

            def k(it):
                lid = it.get_local_id(0)
                a[lid] = lid + 1
                b[lid] = lid * 0.5 + 0.25
                c[lid] = lid * 300
                it.barrier()
                if lid == 0:
                    o[0] = a[0] + a[1]
                    o[1] = b[0] + b[1]
                    o[2] = c[0] + c[1]
                    o[3] = a.size() + b.size() + c.size()
            h.parallel_for(sycl.nd_range(sycl.range(2), sycl.range(2)), k)
        q.submit(cgf)
        np.testing.assert_array_equal(contents(out), [3, 1.0, 300, 10])


def test_device_accessor_written_in_a_host_task_is_a_sycl_error(q):
    """Basic/accessor/Inputs/host_task_accessor.cpp: vksycl has no host_task accessors
    (target::host_task), so the port checks the refusal: writing a device accessor in a
    host task raises errc::invalid pointing at host_accessor, from wait_and_throw, and the
    buffer keeps its data."""
    data = np.arange(1, 10, dtype=np.int32)
    with sycl.buffer(data) as buf:
        def cgf(h):
            acc = sycl.accessor(buf, h)

            def task():
                acc[0] = 5
            h.host_task(task)
        with pytest.raises(sycl.exception, match="host_accessor") as e:
            q.submit(cgf).wait_and_throw()
        assert e.value.code() == sycl.errc.invalid
    np.testing.assert_array_equal(data, np.arange(1, 10))
