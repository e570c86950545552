"""Queues, events, host tasks, dependencies, profiling and asynchronous errors."""

import _thread
import threading
import time

import numpy as np
import pytest

import vksycl as sycl
from vksycl import info
from vksycl.runtime import usm


def test_queue_defaults(q):
    assert not q.is_in_order()
    assert q.get_device() == sycl.device()
    assert q.get_context().has_device(q.get_device())
    if any(d.is_cpu() for d in sycl.device.get_devices()):
        assert sycl.queue(sycl.cpu_selector_v).get_device().is_cpu()
    else:  # a machine with GPUs only
        with pytest.raises(sycl.exception) as err:
            sycl.queue(sycl.cpu_selector_v)
        assert err.value.code() == sycl.errc.runtime and "no device satisfies" in str(err.value)


def test_queue_on_a_context_without_its_device_is_invalid():
    dev = sycl.device()
    ctx = sycl.context(dev)
    assert sycl.queue(ctx, dev).get_context() is ctx
    other = sycl.context([dev])
    with pytest.raises(sycl.exception) as err:
        sycl.queue(other, object())
    assert err.value.code() in (sycl.errc.invalid, sycl.errc.runtime)


def test_out_of_order_queue_honours_dependencies(q):
    n = 1 << 16
    d = sycl.malloc_device(n, sycl.uint32, q)
    s = sycl.malloc_shared(n, sycl.uint32, q)
    gate = threading.Event()
    seen = []

    def slow_writer():
        gate.wait(5)
        np.asarray(s)[:] = 7  # the host writes shared memory
    e0 = q.submit(lambda h: h.host_task(slow_writer))
    e1 = q.memcpy(d, s, 4 * n, depends_on=e0)          # must wait for the host task
    e2 = q.fill(s, np.uint32(1), n // 2, depends_on=e1)  # after the copy read s
    e3 = q.submit(lambda h: (h.depends_on([e1, e2]),
                             h.host_task(lambda: seen.append(np.asarray(s).copy()))))
    time.sleep(0.05)
    assert e1.get_info(info.event.command_execution_status) != \
        info.event_command_status.complete
    gate.set()
    e3.wait()
    out = np.zeros(n, np.uint32)
    q.memcpy(out, d, 4 * n).wait()
    assert np.all(out == 7)
    expected = np.full(n, 7, np.uint32)
    expected[: n // 2] = 1
    assert np.array_equal(seen[0], expected)
    sycl.free(d, q)
    sycl.free(s, q)


def test_in_order_queue_serialises(ordered_q):
    q = ordered_q
    s = sycl.malloc_shared(1024, sycl.int32, q)
    d = sycl.malloc_device(1024, sycl.int32, q)
    order = []

    def first():
        time.sleep(0.1)
        np.asarray(s)[:] = 41
        order.append("host")
    q.submit(lambda h: h.host_task(first))
    q.memcpy(d, s, 4096)             # no explicit dependency: the queue orders it
    q.fill(s, np.int32(0), 1024)
    e = q.memcpy(s, d, 2048)
    e.wait()
    q.wait()
    assert order == ["host"]
    assert np.all(np.asarray(s)[:512] == 41)
    assert np.all(np.asarray(s)[512:] == 0)
    sycl.free(s, q)
    sycl.free(d, q)


def test_event_status_and_static_wait(q):
    gate = threading.Event()
    e = q.submit(lambda h: h.host_task(lambda: gate.wait(5)))
    status = e.get_info(info.event.command_execution_status)
    assert status in (info.event_command_status.submitted, info.event_command_status.running)
    gate.set()
    sycl.event.wait([e])
    assert e.get_info(info.event.command_execution_status) == info.event_command_status.complete


def test_a_release_collected_on_a_thread_still_starting_runs_on_its_own():
    """A buffer collected unreleased is released where the collection ran. A thread's
    start waits until the thread runs, and the collections its start may make run on a
    thread `threading` does not know yet, while the thread starting it may hold the
    locks the release takes (a command group's over its buffers, starting the thread of
    a host task): there the release runs on a thread of its own. A thread `threading`
    does not know stands in for one still starting."""
    ran_on: list[str] = []
    done = threading.Event()

    def release():
        ran_on.append(threading.current_thread().name)
        done.set()

    _thread.start_new_thread(usm.release_collected, (release, "buffer-release"))
    assert done.wait(5)
    assert ran_on == ["buffer-release"]
    usm.release_collected(release, "buffer-release")  # a thread of the user's: at once
    assert ran_on[1] == threading.current_thread().name


def test_host_task_with_interop_handle(q):
    got = []
    q.submit(lambda h: h.host_task(lambda ih: got.append(ih.get_backend()))).wait()
    assert got == ["vulkan"]


def test_handler_takes_one_command(q):
    a = sycl.malloc_shared(4, sycl.uint8, q)

    def two(h):
        h.memset(a, 0, 4)
        h.memset(a, 1, 4)
    with pytest.raises(sycl.exception) as err:
        q.submit(two)
    assert err.value.code() == sycl.errc.invalid
    sycl.free(a, q)


def test_empty_command_group_and_barrier(q):
    q.submit(lambda h: None).wait()
    gate = threading.Event()
    e0 = q.submit(lambda h: h.host_task(lambda: gate.wait(5)))
    b = q.ext_oneapi_submit_barrier([e0])
    assert not b.is_complete()
    gate.set()
    b.wait()
    assert e0.is_complete()


def test_profiling_timestamps_are_ordered_and_non_zero():
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    d = sycl.malloc_device(1 << 22, sycl.uint8, q)
    events = [q.memset(d, i, 1 << 22) for i in range(3)]
    q.wait()
    ends = []
    for e in events:
        submit = e.get_profiling_info(info.event_profiling.command_submit)
        start = e.get_profiling_info(info.event_profiling.command_start)
        end = e.get_profiling_info(info.event_profiling.command_end)
        assert 0 < submit <= start < end
        ends.append(end)
    assert ends == sorted(ends)
    sycl.free(d, q)


def test_profiling_needs_the_property(q):
    a = sycl.malloc_device(16, sycl.uint8, q)
    e = q.memset(a, 0, 16)
    with pytest.raises(sycl.exception) as err:
        e.get_profiling_info(info.event_profiling.command_start)
    assert err.value.code() == sycl.errc.invalid
    sycl.free(a, q)


def test_async_errors_reach_the_handler():
    caught = []
    q = sycl.queue(async_handler=lambda errors: caught.extend(errors))

    def boom():
        raise ValueError("host task failed")
    q.submit(lambda h: h.host_task(boom))
    q.wait_and_throw()
    assert len(caught) == 1 and isinstance(caught[0], ValueError)
    q.wait_and_throw()
    assert len(caught) == 1


def test_async_errors_raise_without_a_handler():
    q = sycl.queue()
    q.submit(lambda h: h.host_task(lambda: 1 / 0))
    with pytest.raises(sycl.exception) as err:
        q.wait_and_throw()
    assert err.value.code() == sycl.errc.runtime


def test_many_threads_submit_to_one_queue(q, in_threads):
    """Submissions from several threads share the device's sequence pool and queue."""
    n_threads, rounds = 4, 100
    mems = [sycl.malloc_shared(256, sycl.uint32, q) for _ in range(n_threads)]

    def worker(t):
        for r in range(rounds):
            q.fill(mems[t], np.uint32(r * 10 + t), 256).wait()
            assert np.all(np.asarray(mems[t]) == r * 10 + t)
    in_threads(worker, n_threads)
    for m in mems:
        sycl.free(m, q)


def test_queue_context_info_and_wait_lists(ordered_q):
    q = ordered_q
    assert q.get_info(info.queue.device) == q.get_device()
    assert q.get_info(info.queue.context) is q.get_context()
    ctx = q.get_context()
    assert ctx.get_info(info.context.devices) == ctx.get_devices()
    assert ctx.get_info(info.context.platform) == q.get_device().get_platform()
    a = sycl.malloc_device(16, sycl.uint8, q)
    e1 = q.memset(a, 1, 16)
    e2 = q.memset(a, 2, 16, depends_on=[e1])
    assert e1 in e2.get_wait_list()  # the explicit dependency (and the queue's order)
    e2.wait()
    with pytest.raises(sycl.exception) as err:
        q.get_info(info.event.command_execution_status)
    assert err.value.code() == sycl.errc.invalid
    sycl.free(a, q)


def test_memcpy_and_copy_take_events_after_the_size_as_in_sycl(q):
    """SYCL's `q.memcpy(dest, src, n, event)` / `q.copy(src, dest, n, events)`: the events
    in the place device_global copies use for an offset."""
    src = sycl.malloc_device(1 << 16, sycl.float32, q)
    mid = sycl.malloc_device(1 << 16, sycl.float32, q)
    out = sycl.malloc_shared(1 << 16, sycl.float32, q)
    filled = q.fill(src, np.float32(2.5), 1 << 16)
    copied = q.memcpy(mid, src, 4 << 16, filled)
    q.copy(mid, out, 1 << 16, [copied]).wait()
    assert np.all(np.asarray(out) == 2.5)
    with pytest.raises(sycl.exception) as err:
        q.memcpy(mid, src, 16, 4)
    assert err.value.code() == sycl.errc.invalid
    for p in (src, mid, out):
        sycl.free(p, q)
