"""Implicit dependencies between command groups from their accessors (SYCL 2020 3.9.8):
read after write, write after read and write after write are ordered on out-of-order
queues, across queues of one context, with host accessors and USM commands mixed in;
readers do not wait for each other."""

import itertools
import threading
import time

import numpy as np
import pytest

import vksycl as sycl
from vksycl.runtime.dependencies import AccessTracker

N = 1 << 14


def scale_add(buf_in, buf_out, factor, add):
    """A command group: out[i] = in[i] * factor + add."""
    def cgf(h):
        src = sycl.accessor(buf_in, h, sycl.read_only)
        dst = sycl.accessor(buf_out, h, sycl.write_only, sycl.no_init)

        def k(i):
            dst[i] = src[i] * factor + add
        h.parallel_for(sycl.range(buf_out.size()), k)
    return cgf


def test_producer_consumer_chain_without_depends_on(q):
    a = np.arange(N, dtype=np.float32)
    with sycl.buffer(a) as b0, sycl.buffer(sycl.range(N), np.float32) as b1, \
            sycl.buffer(sycl.range(N), np.float32) as b2:
        for _ in range(5):  # RAW, then WAR on b0 by the next round's third step
            q.submit(scale_add(b0, b1, 2.0, 1.0))
            q.submit(scale_add(b1, b2, 1.0, -1.0))
            q.submit(scale_add(b2, b0, 0.5, 0.0))
    np.testing.assert_array_equal(a, np.arange(N, dtype=np.float32))


def test_write_after_write_keeps_submission_order(q):
    a = np.zeros(N, np.int32)
    with sycl.buffer(a) as buf:
        for v in range(1, 9):
            def cgf(h, v=v):
                x = sycl.accessor(buf, h, sycl.write_only)

                def k(i):
                    x[i] = v
                h.parallel_for(sycl.range(N), k)
            q.submit(cgf)
    assert (a == 8).all()


def test_readers_do_not_wait_for_each_other(q):
    with sycl.buffer(np.ones(N, np.float32)) as src, \
            sycl.buffer(sycl.range(N), np.float32) as out1, \
            sycl.buffer(sycl.range(N), np.float32) as out2, \
            sycl.buffer(sycl.range(N), np.float32) as out3:
        e1 = q.submit(scale_add(src, out1, 2.0, 0.0))
        e2 = q.submit(scale_add(src, out2, 3.0, 0.0))
        assert e1 not in e2.get_wait_list()

        def writer(h):  # write after both reads
            x = sycl.accessor(src, h, sycl.write_only)

            def k(i):
                x[i] = 10.0
            h.parallel_for(sycl.range(N), k)
        e3 = q.submit(writer)
        assert e1 in e3.get_wait_list() and e2 in e3.get_wait_list()
        e4 = q.submit(scale_add(src, out3, 1.0, 0.0))
        assert e4.get_wait_list() == [e3]
        with sycl.host_accessor(out1, sycl.read_only) as v1, \
                sycl.host_accessor(out2, sycl.read_only) as v2, \
                sycl.host_accessor(out3, sycl.read_only) as v3:
            assert (v1 == 2).all() and (v2 == 3).all() and (v3 == 10).all()


def test_disjoint_ranged_accessors_do_not_wait(q):
    with sycl.buffer(np.zeros(2 * N, np.float32)) as buf:
        def half(first, value):
            def cgf(h):
                x = sycl.accessor(buf, h, sycl.write_only, access_range=sycl.range(N),
                                  access_offset=sycl.id(first))

                def k(i):
                    x[i] = value
                h.parallel_for(sycl.range(N), k)
            return cgf
        e1 = q.submit(half(0, 1.0))
        e2 = q.submit(half(N, 2.0))
        assert e1 not in e2.get_wait_list()
        e3 = q.submit(half(N // 2, 3.0))  # overlaps both
        assert e1 in e3.get_wait_list() and e2 in e3.get_wait_list()
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert (v[: N // 2] == 1).all() and (v[N // 2: 3 * N // 2] == 3).all()
            assert (v[3 * N // 2:] == 2).all()


def test_a_chain_on_a_buffer_skips_the_tracker_and_the_rest_stays_ordered(q, monkeypatch):
    """A command group writing all of the one access before it (a chain of them on a
    buffer) follows that access without asking the tracker; a ranged writer, a reader, a
    sub-buffer and data the host wrote break the pattern and are ordered as ever."""
    asked = []
    for name in ("conflicts", "record"):
        real = getattr(AccessTracker, name)
        monkeypatch.setattr(AccessTracker, name,
                            lambda self, *a, real=real: asked.append(1) or real(self, *a))
    with sycl.buffer(np.zeros(N, np.float32)) as buf, \
            sycl.buffer(sycl.range(N), np.float32) as out:
        half = sycl.buffer(buf, sycl.id(0), sycl.range(N // 2))

        def add_one(target=buf, n=N, **ranged):
            def cgf(h):
                x = sycl.accessor(target, h, **ranged)

                def k(i):
                    x[i] += 1.0
                h.parallel_for(sycl.range(n), k)
            return cgf
        chain = [q.submit(add_one()) for _ in range(2)]  # the first uploads the host data
        asked.clear()
        chain += [q.submit(add_one()) for _ in range(4)]
        assert not asked
        for before, after in itertools.pairwise(chain):
            assert after.get_wait_list() == [before]
        ranged = q.submit(add_one(n=N // 2, access_range=sycl.range(N // 2)))
        assert ranged.get_wait_list() == [chain[-1]]
        whole = q.submit(add_one())
        assert {id(e) for e in whole.get_wait_list()} == {id(chain[-1]), id(ranged)}
        reader = q.submit(scale_add(buf, out, 1.0, 0.0))
        assert reader.get_wait_list() == [whole]
        after_reader = q.submit(add_one())
        assert reader in after_reader.get_wait_list()
        sub = q.submit(add_one(half, N // 2))
        assert sub.get_wait_list() == [after_reader]
        after_sub = q.submit(add_one())
        assert sub in after_sub.get_wait_list()
        with sycl.host_accessor(buf) as v:
            assert (v[: N // 2] == 11).all() and (v[N // 2:] == 9).all()
            v[:] = 100.0
        for _ in range(3):  # the first uploads what the host wrote, the others chain
            q.submit(add_one())
        with sycl.host_accessor(buf, sycl.read_only) as v, \
                sycl.host_accessor(out, sycl.read_only) as o:
            assert (v == 103).all()
            assert (o[: N // 2] == 8).all() and (o[N // 2:] == 7).all()


def test_across_queues_of_one_context(q):
    other = sycl.queue(q.get_context(), q.get_device())
    a = np.full(N, 1.0, np.float32)
    with sycl.buffer(a) as b, sycl.buffer(sycl.range(N), np.float32) as c:
        for k in range(6):
            (q if k % 2 else other).submit(scale_add(b, c, 2.0, 0.0))
            (other if k % 2 else q).submit(scale_add(c, b, 1.0, 1.0))
    np.testing.assert_array_equal(a, 127.0)  # x -> 2x + 1, six times from 1


def test_sub_buffers_and_their_parent_are_ordered(q):
    a = np.zeros(N, np.int32)
    with sycl.buffer(a) as parent:
        low = sycl.buffer(parent, sycl.id(0), sycl.range(N // 2))

        def fill_parent(h):
            x = sycl.accessor(parent, h, sycl.write_only)

            def k(i):
                x[i] = 1
            h.parallel_for(sycl.range(N), k)

        def add_low(h):
            x = sycl.accessor(low, h)

            def k(i):
                x[i] += 5
            h.parallel_for(sycl.range(N // 2), k)
        q.submit(fill_parent)
        q.submit(add_low)
    assert (a[: N // 2] == 6).all() and (a[N // 2:] == 1).all()


def test_host_accessor_between_kernels(q):
    buf = sycl.buffer(np.zeros(N, np.float32))

    def add_one(h):
        x = sycl.accessor(buf, h)

        def k(i):
            x[i] += 1.0
        h.parallel_for(sycl.range(N), k)
    q.submit(add_one)
    with sycl.host_accessor(buf) as v:  # waits for the kernel, no q.wait()
        assert (v == 1).all()
        v[:] = 41.0
    q.submit(add_one)
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == 42).all()
    buf.release()


def test_usm_commands_mixed_with_buffers(q):
    usm = sycl.malloc_device(N, np.float32, q)
    with sycl.buffer(np.arange(N, dtype=np.float32)) as buf:
        def to_usm(h):
            x = sycl.accessor(buf, h, sycl.read_only)

            def k(i):
                usm[i] = x[i] * 2.0
            h.parallel_for(sycl.range(N), k)
        e = q.submit(to_usm)
        e2 = q.fill(usm, np.float32(0), N // 4, depends_on=e)  # USM: explicit event

        def back(h):
            h.depends_on(e2)
            x = sycl.accessor(buf, h, sycl.write_only)

            def k(i):
                x[i] = usm[i]
            h.parallel_for(sycl.range(N), k)
        q.submit(back)
        with sycl.host_accessor(buf, sycl.read_only) as v:
            want = np.arange(N, dtype=np.float32) * 2
            want[: N // 4] = 0
            np.testing.assert_array_equal(v, want)
    q.wait()
    sycl.free(usm, q)


def test_in_order_queue_with_buffers(ordered_q):
    a = np.ones(N, np.float32)
    with sycl.buffer(a) as b, sycl.buffer(sycl.range(N), np.float32) as c:
        for _ in range(3):
            ordered_q.submit(scale_add(b, c, 3.0, 0.0))
            ordered_q.submit(scale_add(c, b, 1.0, 0.0))
    np.testing.assert_array_equal(a, 27.0)


@pytest.mark.parametrize("tile", [8, 16])
def test_two_d_stencil_with_local_accessor_tiles(q, tile):
    """A 5-point stencil: each work-group loads its tile plus a halo into work-group
    memory, waits at a barrier, and reads its neighbours from there."""
    rows, cols = 4 * tile, 3 * tile
    grid = np.random.default_rng(5).random((rows, cols), dtype=np.float32)
    out = np.zeros_like(grid)
    with sycl.buffer(grid) as src, sycl.buffer(out) as dst:
        def cgf(h):
            a = sycl.accessor(src, h, sycl.read_only)
            b = sycl.accessor(dst, h, sycl.write_only, sycl.no_init)
            t = sycl.local_accessor(np.float32, sycl.range(tile + 2, tile + 2), h)

            def k(it):
                i, j = it.get_global_id(0), it.get_global_id(1)
                li, lj = it.get_local_id(0) + 1, it.get_local_id(1) + 1
                t[li, lj] = a[i, j]
                if li == 1:
                    t[0, lj] = a[i - 1, j] if i > 0 else 0.0
                if li == tile:
                    t[tile + 1, lj] = a[i + 1, j] if i < rows - 1 else 0.0
                if lj == 1:
                    t[li, 0] = a[i, j - 1] if j > 0 else 0.0
                if lj == tile:
                    t[li, tile + 1] = a[i, j + 1] if j < cols - 1 else 0.0
                it.barrier()
                b[i, j] = t[li, lj] * 4.0 - t[li - 1, lj] - t[li + 1, lj] - t[li, lj - 1] \
                    - t[li, lj + 1]
            h.parallel_for(sycl.nd_range(sycl.range(rows, cols), sycl.range(tile, tile)), k)
        q.submit(cgf)
    padded = np.pad(grid, 1)
    want = 4 * grid - padded[:-2, 1:-1] - padded[2:, 1:-1] - padded[1:-1, :-2] \
        - padded[1:-1, 2:]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_host_task_accessors_see_kernel_results_and_kernels_see_theirs(q):
    a = np.arange(N, dtype=np.float32)
    seen = []
    with sycl.buffer(a) as buf:
        def double(h):
            x = sycl.accessor(buf, h)

            def k(i):
                x[i] = x[i] * 2.0
            h.parallel_for(sycl.range(N), k)

        def on_host(h):
            x = sycl.accessor(buf, h, sycl.read_write, sycl.host_task)

            def work():
                seen.append(float(x[3]))
                np.asarray(x)[:] += 1.0
            h.host_task(work)

        def add_ten(h):
            x = sycl.accessor(buf, h)

            def k(i):
                x[i] = x[i] + 10.0
            h.parallel_for(sycl.range(N), k)
        q.submit(double)
        q.submit(on_host)  # no depends_on and no wait: its accessor orders it
        q.submit(add_ten)
    assert seen == [6.0]
    np.testing.assert_array_equal(a, np.arange(N, dtype=np.float32) * 2 + 11)


def test_host_task_accessor_errors(q):
    buf = sycl.buffer(np.zeros(8, np.int32))

    def write_read_only(h):
        x = sycl.accessor(buf, h, sycl.read_only, sycl.host_task)

        def work():
            x[0] = 1
        h.host_task(work)
    e = q.submit(write_read_only)
    with pytest.raises(sycl.exception, match="read_only"):
        e.wait_and_throw()

    def kernel_uses_it(h):
        x = sycl.accessor(buf, h, sycl.read_write, sycl.host_task)

        def k(i):
            x[i] = 1
        h.parallel_for(sycl.range(8), k)
    with pytest.raises(sycl.exception, match="host_task") as ei:
        q.submit(kernel_uses_it)
    assert ei.value.code() == sycl.errc.kernel_argument
    with pytest.raises(sycl.exception, match="command group"):
        sycl.accessor(buf, sycl.read_write, sycl.host_task)
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == 0).all()
    buf.release()


def test_a_host_task_accessor_is_read_in_its_host_task_alone(q):
    """Outside its host task (in the command group function, before the work it follows
    is done, or kept and read after, untracked) a host_task accessor refuses access."""
    a = np.zeros(8, np.int32)
    kept = []
    with sycl.buffer(a) as buf:
        def early(h):
            x = sycl.accessor(buf, h, sycl.read_write, sycl.host_task)
            x[0] = 5
        with pytest.raises(sycl.exception, match="in its command group's host task") as e:
            q.submit(early)
        assert e.value.code() == sycl.errc.invalid

        def on_host(h):
            x = sycl.accessor(buf, h, sycl.read_write, sycl.host_task)
            kept.append(x)

            def work():
                x[1] = 7
            h.host_task(work)
        q.submit(on_host).wait()
        for touch in (lambda: kept[0][2], lambda: kept[0].__setitem__(2, 9),
                      lambda: np.asarray(kept[0])):
            with pytest.raises(sycl.exception, match="in its command group's host task"):
                touch()
    np.testing.assert_array_equal(a, [0, 7, 0, 0, 0, 0, 0, 0])


def test_copies_and_fills_refuse_host_task_accessors(q):
    """A host_task accessor's command group brings the host copy up to date, not the
    device copy that copies and fills reach: a copy through one read the device's stale
    memory (zeros, not the buffer's data)."""
    a = np.arange(8, dtype=np.int32)
    out = np.full(8, -1, np.int32)
    with sycl.buffer(a) as buf:
        for cgf in (lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only, sycl.host_task),
                                     out),
                    lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only, sycl.host_task),
                                     np.int32(5)),
                    lambda h: h.update_host(sycl.accessor(buf, h, sycl.read_only,
                                                          sycl.host_task))):
            with pytest.raises(sycl.exception, match="host_task") as e:
                q.submit(cgf)
            assert e.value.code() == sycl.errc.invalid
        q.submit(lambda h: h.copy(sycl.accessor(buf, h, sycl.read_only), out)).wait()
    np.testing.assert_array_equal(out, np.arange(8))
    np.testing.assert_array_equal(a, np.arange(8))


def _finishes(work, seconds: float = 30.0) -> bool:
    """Whether `work()` returns within `seconds`: a wait that must not hang fails the test
    instead of hanging it."""
    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive()


@pytest.mark.parametrize("host_data", [True, False])
@pytest.mark.parametrize("reader", ["kernel", "copy", "host_task"])
def test_readers_do_not_wait_for_an_open_read_only_host_accessor(q, reader, host_data):
    """Readers never wait for each other, a read-only host accessor among them: a command
    group reading the buffer runs while one is open (the host's data going to the device
    first, or a host task reading the host copy), and a writer after it still waits."""
    want = np.arange(N, dtype=np.float32)
    if host_data:
        buf = sycl.buffer(want.copy())
    else:
        buf = sycl.buffer(sycl.range(N), np.float32)
        q.submit(lambda h: h.copy(want, sycl.accessor(buf, h, sycl.write_only))).wait()
    out = np.zeros(N, np.float32)
    out_buf = sycl.buffer(sycl.range(N), np.float32)

    def read(h):
        if reader == "kernel":
            src = sycl.accessor(buf, h, sycl.read_only)
            dst = sycl.accessor(out_buf, h, sycl.write_only, sycl.no_init)

            def k(i):
                dst[i] = src[i]
            h.parallel_for(sycl.range(N), k)
        elif reader == "copy":
            h.copy(sycl.accessor(buf, h, sycl.read_only), out)
        else:
            src = sycl.accessor(buf, h, sycl.read_only, sycl.host_task)
            h.host_task(lambda: np.copyto(out, np.asarray(src)))

    with sycl.host_accessor(buf, sycl.read_only) as view:
        assert _finishes(q.submit(read).wait)
        writer = q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only),
                                           np.float32(-1)))
        time.sleep(0.1)
        assert not writer.is_complete()  # write after read: waits for the host accessor
        np.testing.assert_array_equal(view, want)
    writer.wait()
    if reader == "kernel":
        with sycl.host_accessor(out_buf, sycl.read_only) as v:
            np.testing.assert_array_equal(v, want)
    else:
        np.testing.assert_array_equal(out, want)
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == -1).all()


def test_a_ranged_host_accessor_leaves_no_writer_of_the_buffer_half_copied(q):
    """A host accessor copies the whole buffer from the device when a kernel wrote last,
    so it waits for the writers of the regions it does not access too: copied while one
    runs, that writer's data would be lost, the host copy counting as current."""
    half = N // 2
    buf = sycl.buffer(sycl.range(N), np.int32)
    q.submit(lambda h: h.fill(sycl.accessor(buf, h, sycl.write_only), np.int32(1))).wait()
    late = q.submit(lambda h: h.host_task(lambda: time.sleep(0.3)))

    def upper(h):
        h.depends_on(late)
        h.fill(sycl.accessor(buf, h, sycl.write_only, access_range=sycl.range(half),
                             access_offset=sycl.id(half)), np.int32(2))
    q.submit(upper)
    with sycl.host_accessor(buf, sycl.read_only, access_range=sycl.range(half)) as low:
        assert (low == 1).all()
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v[:half] == 1).all() and (v[half:] == 2).all()


def test_a_host_accessor_waits_without_stopping_other_threads(q):
    """A host accessor waiting for a kernel lets other threads submit command groups
    meanwhile: the thread holding the host accessor the kernel waits for may submit one
    before it releases it."""
    held = sycl.buffer(np.zeros(8, np.int32))
    other = sycl.buffer(np.zeros(8, np.int32))
    opened, submitted = threading.Event(), threading.Event()
    seen = []

    def holder():
        with sycl.host_accessor(held) as v:
            v[:] = 1
            opened.set()
            submitted.wait(30)
            time.sleep(0.2)  # the other thread waits in its host accessor by now
            q.submit(lambda h: h.fill(sycl.accessor(other, h, sycl.write_only),
                                      np.int32(3))).wait()

    def reader():
        opened.wait(30)
        q.submit(lambda h: h.fill(sycl.accessor(held, h, sycl.write_only,
                                                access_range=sycl.range(4)), np.int32(5)))
        submitted.set()
        with sycl.host_accessor(held, sycl.read_only) as v:  # waits for the fill
            seen.append(v.copy())

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    assert _finishes(reader)
    t.join(30)
    assert not t.is_alive()
    np.testing.assert_array_equal(seen[0], [5, 5, 5, 5, 1, 1, 1, 1])
    with sycl.host_accessor(other, sycl.read_only) as v:
        assert (v == 3).all()


def test_a_host_accessor_open_in_another_thread_is_waited_for(q):
    """A conflicting host accessor waits for one another thread holds, as SYCL's host
    accessors wait for their requirements (only one this thread holds is an error)."""
    buf = sycl.buffer(np.zeros(8, np.int32))
    opened = threading.Event()

    def writer():
        with sycl.host_accessor(buf) as v:
            opened.set()
            time.sleep(0.3)
            v[:] = 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    opened.wait(30)
    seen = []

    def second():
        with sycl.host_accessor(buf) as v:
            seen.append(v.copy())
            v += 1

    assert _finishes(second)
    t.join(30)
    np.testing.assert_array_equal(seen[0], np.ones(8))
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == 2).all()


def test_waiting_on_a_command_held_by_this_threads_host_accessor_is_an_error(q):
    buf = sycl.buffer(np.zeros(8, np.int32))
    ha = sycl.host_accessor(buf)

    def add_one(h):
        x = sycl.accessor(buf, h)

        def k(i):
            x[i] += 1
        h.parallel_for(sycl.range(8), k)
    e = q.submit(add_one)
    for wait in (e.wait, q.wait):
        with pytest.raises(sycl.exception, match="this thread holds") as ei:
            wait()
        assert ei.value.code() == sycl.errc.invalid
    ha[:] = 41
    ha.release()
    e.wait()
    with sycl.host_accessor(buf, sycl.read_only) as v:
        assert (v == 42).all()
    buf.release()
