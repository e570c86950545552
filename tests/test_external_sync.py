"""An application's semaphores in vksycl's queues: the application's own submissions
(made with the `vulkan` package on its device) signal semaphores vksycl's kernels wait
for, and wait for semaphores vksycl signals, with no wait on the host in between; binary
and timeline semaphores, batched launches, and the errors of bad use."""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.vksycl import release_native_device

sys.path.append(str(Path(__file__).parent))  # the application of the interop tests
from busy_kernel import busy
from test_interop import _SDA, _USAGE, App, as_int, code_and_message

TIMELINE = syclexp.semaphore_type.timeline
BINARY = syclexp.semaphore_type.binary
N = 1024


class Frame(App):
    """The application, with what it records: command buffers that fill or copy its
    buffers, submitted with semaphores to wait for and signal (its 'render' passes)."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            queueFamilyIndex=self.family), None)
        self.semaphores: list = []
        self.timelines: list = []
        self.fences: list = []
        # the application and vksycl share one VkQueue: the application submits under the
        # lock vksycl submits under (lavapipe has one queue)
        self.lock = threading.RLock()

    def binary(self):
        s = vk.vkCreateSemaphore(self.device, vk.VkSemaphoreCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO), None)
        self.semaphores.append(s)
        return s

    def timeline(self, initial: int = 0):
        s = super().timeline(initial)
        self.semaphores.append(s)
        self.timelines.append(s)
        return s

    def commands(self, record) -> object:
        """A one-time command buffer recorded by `record(cmd)`."""
        cmd = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))
        record(cmd)
        vk.vkEndCommandBuffer(cmd)
        return cmd

    def submit(self, cmd, waits=(), signals=()):
        """vkQueueSubmit of `cmd` waiting for and signalling (semaphore, value) pairs
        (values ignored for binary semaphores), with a fence the test waits for last."""
        fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
        self.fences.append(fence)
        values = vk.VkTimelineSemaphoreSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            waitSemaphoreValueCount=len(waits), pWaitSemaphoreValues=[v for _, v in waits],
            signalSemaphoreValueCount=len(signals),
            pSignalSemaphoreValues=[v for _, v in signals])
        with self.lock:
            vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(
                sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, pNext=values,
                waitSemaphoreCount=len(waits), pWaitSemaphores=[s for s, _ in waits],
                pWaitDstStageMask=[vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT] * len(waits),
                commandBufferCount=1, pCommandBuffers=[cmd],
                signalSemaphoreCount=len(signals),
                pSignalSemaphores=[s for s, _ in signals])], fence)
        return fence

    def wait_fence(self, fence) -> None:
        vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, 10**10)

    def signal(self, semaphore, value: int) -> None:
        """Signals a timeline semaphore from the host."""
        vk.vkSignalSemaphore(self.device, vk.VkSemaphoreSignalInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, semaphore=semaphore,
            value=value))

    def counter(self, semaphore) -> int:
        return vk.vkGetSemaphoreCounterValue(self.device, semaphore)

    def destroy(self) -> None:
        for s in self.timelines:  # a test that failed may have left the device waiting
            if self.counter(s) < 2**40:
                self.signal(s, 2**40)
        vk.vkDeviceWaitIdle(self.device)
        for s in self.semaphores:
            vk.vkDestroySemaphore(self.device, s, None)
        for f in self.fences:
            vk.vkDestroyFence(self.device, f, None)
        vk.vkDestroyCommandPool(self.device, self.pool, None)
        super().destroy()


@pytest.fixture
def frame():
    f = Frame()
    yield f
    gc.collect()
    f.destroy()


def on_app(frame: Frame) -> sycl.queue:
    """An in-order queue on the application's device and queue."""
    frame.make_device()
    ctx = sycl.make_context(frame.device)
    q = sycl.make_queue(frame.queue, ctx, property_list=[sycl.property.queue.in_order()])
    frame.lock = q._scheduler.engine.lock
    return q


def usm(frame: Frame, q: sycl.queue, nbytes: int):
    """One of the application's host-visible buffers, as device USM of int32: (buffer,
    view of its bytes, pointer)."""
    buf, memory, view = frame.buffer(nbytes)
    native = syclexp.native_memory(as_int(buf), 0, nbytes, as_int(memory))
    p = syclexp.make_usm_from_native(native, q, usage=_USAGE | _SDA, device=frame.device,
                                     dtype=sycl.int32)
    return buf, view, p


def semaphore(frame: Frame, q: sycl.queue, handle, kind) -> syclexp.external_semaphore:
    return syclexp.make_external_semaphore(handle, q, semaphore_type=kind,
                                           device=frame.device)


def compute(q: sycl.queue, src: sycl.ptr, dst: sycl.ptr) -> sycl.event:
    """dst[i] = src[i] * 2 + i."""
    def body(i):
        dst[i] = src[i] * 2 + i
    return q.parallel_for(sycl.range(N), body)


@pytest.mark.parametrize("kind", [TIMELINE, BINARY], ids=["timeline", "binary"])
def test_render_compute_render_with_no_host_wait(frame, kind):
    """The application fills a buffer and signals; vksycl's kernel waits for that on the
    device, computes from the buffer and signals; the application's copy of the result
    waits for that. The host waits once, for the application's last fence."""
    q = on_app(frame)
    nbytes = 4 * N
    src_buf, _, src = usm(frame, q, nbytes)
    dst_buf, _, dst = usm(frame, q, nbytes)
    back_buf, _, back = frame.buffer(nbytes)
    readback = back.view(np.int32)
    q.memset(dst, 0, nbytes).wait()  # nothing of vksycl's is left to submit
    make = frame.timeline if kind is TIMELINE else frame.binary
    rendered, computed = make(), make()
    one = 1 if kind is TIMELINE else None

    # 'render': the application fills the source with 21 and signals
    fill = frame.commands(lambda cmd: vk.vkCmdFillBuffer(cmd, src_buf, 0, nbytes, 21))
    frame.submit(fill, signals=[(rendered, 1)])
    # compute: waits for the render on the device, signals once done
    q.ext_oneapi_wait_external_semaphore(semaphore(frame, q, rendered, kind), one)
    e = compute(q, src, dst)
    done = q.ext_oneapi_signal_external_semaphore(semaphore(frame, q, computed, kind), one)
    # 'render' again: the application copies the result once vksycl signalled

    def copy(cmd):
        vk.vkCmdCopyBuffer(cmd, dst_buf, back_buf, 1, [vk.VkBufferCopy(0, 0, nbytes)])
    fence = frame.submit(frame.commands(copy), waits=[(computed, 1)])
    frame.wait_fence(fence)
    np.testing.assert_array_equal(readback, 42 + np.arange(N))
    assert e.is_complete() and done.is_complete()
    if kind is TIMELINE:
        assert frame.counter(rendered) == 1 and frame.counter(computed) == 1
    release_native_device(q.get_device())


def test_a_timeline_wait_holds_the_kernels_after_it_until_the_value_is_reached(frame):
    q = on_app(frame)
    out = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(out)[:] = -1
    gate = frame.timeline(initial=3)
    sem = semaphore(frame, q, gate, TIMELINE)
    waited = q.ext_oneapi_wait_external_semaphore(sem, 5)

    def body(i):
        out[i] = i + 100
    e = q.parallel_for(sycl.range(N), body)
    time.sleep(0.2)  # the device would have run the kernel by now
    assert not e.is_complete() and not waited.is_complete()
    assert (np.asarray(out) == -1).all()
    frame.signal(gate, 4)
    time.sleep(0.1)
    assert not e.is_complete()  # 4 is not 5
    frame.signal(gate, 5)
    e.wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(N) + 100)
    assert waited.is_complete()
    sycl.free(out, q)
    release_native_device(q.get_device())


def test_a_wait_alone_goes_out_and_still_holds_the_work_after_it(frame):
    """A wait with nothing after it goes to the device by itself (its event completes
    with the semaphore); work submitted later still runs after it."""
    q = on_app(frame)
    out = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(out)[:] = 0
    gate = frame.timeline()
    sem = semaphore(frame, q, gate, TIMELINE)
    waited = q.ext_oneapi_wait_external_semaphore(sem, 1)
    assert waited.get_info(sycl.info.event.command_execution_status) is not \
        sycl.info.event_command_status.complete  # asking sends it to the device
    engine = q._scheduler.engine
    assert engine._gate  # an empty submission waited: the next one waits for it
    time.sleep(0.05)
    assert not waited.is_complete()

    def body(i):
        out[i] = out[i] + i
    e = q.parallel_for(sycl.range(N), body)
    time.sleep(0.1)
    assert not e.is_complete() and (np.asarray(out) == 0).all()
    frame.signal(gate, 1)
    waited.wait()
    e.wait()
    assert not engine._gate  # the kernel's submission carried it
    np.testing.assert_array_equal(np.asarray(out), np.arange(N))
    sycl.free(out, q)
    release_native_device(q.get_device())


def test_a_signal_ends_a_batch_and_follows_its_work(frame):
    """Launches batched behind a busy kernel: the signal goes out in their submission,
    after them; the application's wait for it on the host sees their results."""
    q = on_app(frame)
    flag = sycl.malloc_shared(1, sycl.uint32, q)
    x = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(x)[:] = 0
    engine = q._scheduler.engine
    done = frame.timeline()
    sem = semaphore(frame, q, done, TIMELINE)

    def add(k):
        def body(i):
            x[i] = x[i] * 2 + k
        return body
    busy(q, flag, 4096)
    for k in range(1, 4):
        q.parallel_for(sycl.range(N), add(k))
    batch = engine._batch
    assert batch is not None and batch.n_ops == 3  # the launches wait in one batch
    before = engine.submissions
    signalled = q.ext_oneapi_signal_external_semaphore(sem, 7)
    assert engine._batch is None and engine.submissions == before + 1  # in their submission
    frame.wait(done, 7)  # the application's wait, on the host
    np.testing.assert_array_equal(np.asarray(x), np.full(N, ((1 * 2 + 2) * 2) + 3))
    # the submission's own completion is signalled with the application's semaphore,
    # not necessarily at the same instant: the event completes without more work
    signalled.wait()
    assert signalled.is_complete()
    q.wait()
    sycl.free(x, q)
    sycl.free(flag, q)
    release_native_device(q.get_device())


def test_a_wait_ends_a_batch_and_starts_the_next(frame):
    """Launches batched behind a busy kernel go out before the wait; those after it
    join the wait's submission and run once the semaphore is signalled."""
    q = on_app(frame)
    flag = sycl.malloc_shared(1, sycl.uint32, q)
    x = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(x)[:] = 1
    engine = q._scheduler.engine
    gate = frame.timeline()
    sem = semaphore(frame, q, gate, TIMELINE)

    def times(k):
        def body(i):
            x[i] = x[i] * k
        return body
    busy(q, flag, 4096)
    first = q.parallel_for(sycl.range(N), times(3))
    assert engine._batch is not None
    q.ext_oneapi_wait_external_semaphore(sem, 1)
    assert first._submission.batch.submitted  # the wait ended the batch
    last = q.parallel_for(sycl.range(N), times(5))
    first.wait()
    assert (np.asarray(x) == 3).all()
    time.sleep(0.1)
    assert not last.is_complete()
    frame.signal(gate, 1)
    last.wait()
    assert (np.asarray(x) == 15).all()
    sycl.free(x, q)
    sycl.free(flag, q)
    release_native_device(q.get_device())


def test_a_command_group_and_an_out_of_order_queue_with_events(frame):
    """`h.ext_oneapi_signal_external_semaphore` in a command group after an event, and
    `q.ext_oneapi_wait_external_semaphore(sem, events)` on an out-of-order queue."""
    frame.make_device()
    q = sycl.make_queue(frame.queue, sycl.make_context(frame.device))
    a = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(a)[:] = 0
    ping, pong = frame.binary(), frame.timeline()
    s_ping, s_pong = (semaphore(frame, q, ping, BINARY), semaphore(frame, q, pong, TIMELINE))

    def inc(i):
        a[i] = a[i] + i
    e = q.parallel_for(sycl.range(N), inc)
    signalled = q.submit(lambda h: (h.depends_on(e),
                                    h.ext_oneapi_signal_external_semaphore(s_ping)))
    waited = q.ext_oneapi_wait_external_semaphore(s_ping, [signalled])
    e2 = q.parallel_for(sycl.range(N), inc, depends_on=waited)
    q.ext_oneapi_signal_external_semaphore(s_pong, 2, [e2])
    frame.wait(pong, 2)
    np.testing.assert_array_equal(np.asarray(a), 2 * np.arange(N))
    q.wait()
    sycl.free(a, q)
    release_native_device(q.get_device())


def test_on_vksyclss_own_device(q):
    """vksycl's own device: the application creates its semaphore on the VkDevice that
    get_native gives, and waits for vksycl's signal there."""
    vk_device = vk.ffi.cast("VkDevice", sycl.get_native(q.get_context()))
    kind = vk.VkSemaphoreTypeCreateInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                        semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE,
                                        initialValue=0)
    handle = vk.vkCreateSemaphore(vk_device, vk.VkSemaphoreCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=kind), None)
    out = sycl.malloc_shared(N, sycl.float32, q)
    try:
        sem = syclexp.make_external_semaphore(handle, q, semaphore_type=TIMELINE,
                                              device=vk_device)

        def body(i):
            out[i] = sycl.float32(i) * 0.5
        e = q.parallel_for(sycl.range(N), body)
        q.ext_oneapi_signal_external_semaphore(sem, 1, e)
        info = vk.VkSemaphoreWaitInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                      semaphoreCount=1, pSemaphores=[handle], pValues=[1])
        vk.vkWaitSemaphores(vk_device, info, 10**10)
        np.testing.assert_allclose(np.asarray(out), np.arange(N) * 0.5)
        syclexp.release_external_semaphore(sem, q)
        code, message = code_and_message(lambda: q.ext_oneapi_signal_external_semaphore(sem, 2))
        assert code is sycl.errc.invalid and "released" in message
    finally:
        q.wait()
        sycl.free(out, q)
        vk.vkDestroySemaphore(vk_device, handle, None)


def test_bad_semaphores_are_named(frame):
    q = on_app(frame)
    t = frame.timeline(initial=5)
    b = frame.binary()
    code, message = code_and_message(lambda: syclexp.make_external_semaphore(
        "sem", q, semaphore_type=TIMELINE, device=frame.device))
    assert code is sycl.errc.invalid and "str" in message
    code, message = code_and_message(lambda: syclexp.make_external_semaphore(
        0, q, semaphore_type=TIMELINE, device=frame.device))
    assert code is sycl.errc.invalid and "VK_NULL_HANDLE" in message
    code, message = code_and_message(lambda: syclexp.make_external_semaphore(
        t, q, semaphore_type="timeline", device=frame.device))
    assert code is sycl.errc.invalid and "semaphore_type" in message
    own = sycl.queue()  # vksycl's own device: another VkDevice
    code, message = code_and_message(lambda: syclexp.make_external_semaphore(
        t, own, semaphore_type=TIMELINE, device=frame.device))
    assert code is sycl.errc.invalid and f"{as_int(frame.device):#x}" in message
    sem_t = semaphore(frame, q, t, TIMELINE)
    sem_b = semaphore(frame, q, b, BINARY)
    code, message = code_and_message(lambda: own.ext_oneapi_wait_external_semaphore(sem_t, 6))
    assert code is sycl.errc.invalid and "made for" in message
    code, message = code_and_message(lambda: q.ext_oneapi_wait_external_semaphore(sem_t))
    assert code is sycl.errc.invalid and "value" in message
    code, message = code_and_message(lambda: q.ext_oneapi_wait_external_semaphore(sem_b, 1))
    assert code is sycl.errc.invalid and "binary" in message
    code, message = code_and_message(lambda: q.ext_oneapi_signal_external_semaphore(sem_t, 5))
    assert code is sycl.errc.invalid and "at 5 already" in message
    code, message = code_and_message(lambda: q.ext_oneapi_wait_external_semaphore(sem_t, 1.5))
    assert code is sycl.errc.invalid and "integer" in message
    code, message = code_and_message(lambda: q.ext_oneapi_wait_external_semaphore(
        as_int(t), 6))
    assert code is sycl.errc.invalid and "make_external_semaphore" in message
    q.wait()
    release_native_device(q.get_device())
    # the application's semaphores are still its own and still work
    frame.signal(t, 6)
    assert frame.counter(t) == 6


def test_semaphores_are_refused_in_command_graphs(q):
    vk_device = vk.ffi.cast("VkDevice", sycl.get_native(q.get_context()))
    kind = vk.VkSemaphoreTypeCreateInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                        semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE,
                                        initialValue=0)
    handle = vk.vkCreateSemaphore(vk_device, vk.VkSemaphoreCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=kind), None)
    try:
        sem = syclexp.make_external_semaphore(handle, q, semaphore_type=TIMELINE,
                                              device=vk_device)
        g = syclexp.command_graph(q)
        with g.recording(q):
            code, message = code_and_message(
                lambda: q.ext_oneapi_wait_external_semaphore(sem, 1))
        assert code is sycl.errc.invalid and "command_graph" in message
        g.add(lambda h: h.ext_oneapi_signal_external_semaphore(sem, 1))
        code, message = code_and_message(g.finalize)
        assert code is sycl.errc.invalid and "command_graph" in message
        assert vk.vkGetSemaphoreCounterValue(vk_device, handle) == 0
    finally:
        vk.vkDestroySemaphore(vk_device, handle, None)
