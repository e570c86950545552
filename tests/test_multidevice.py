"""Several devices in one process, on lavapipe exposed twice (`VKSYCL_DEVICE_INSTANCES=2`):
each instance is a Vulkan logical device of its own. Queues on both, kernels on both at
once, copies between their USM through the host, events of one waited by the other, and
errc.invalid for memory of one device used on the other."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.exceptions import errc
from vksycl.runtime.context import scheduler_for
from vksycl.runtime.scheduler import STAGING_BYTES


@pytest.fixture
def two(monkeypatch: pytest.MonkeyPatch):
    """Two instances of the CPU device, a context over both, and a queue on each."""
    monkeypatch.setenv("VKSYCL_DEVICE_INSTANCES", "2")
    monkeypatch.delenv("VKSYCL_DEVICE_SELECTOR", raising=False)
    devices = sycl.device.get_devices(sycl.info.device_type.cpu)
    ctx = sycl.context(devices)
    queues = [sycl.queue(ctx, d) for d in devices]
    return devices, ctx, queues


class Usm:
    """Allocations freed at the end of a test."""

    def __init__(self, ctx: sycl.context) -> None:
        self.ctx = ctx
        self.ptrs: list = []

    def device(self, n: int, dtype, dev) -> sycl.ptr:
        p = sycl.malloc_device(n, dtype, dev, self.ctx)
        self.ptrs.append(p)
        return p

    def alloc(self, fn, n: int, dtype, q: sycl.queue) -> sycl.ptr:
        p = fn(n, dtype, q)
        self.ptrs.append(p)
        return p

    def free(self) -> None:
        for p in self.ptrs:
            sycl.free(p, self.ctx)


@pytest.fixture
def usm(two):
    m = Usm(two[1])
    yield m
    for q in two[2]:
        q.wait()
    m.free()


def test_each_instance_is_a_device_of_its_own(two):
    devices, ctx, _queues = two
    assert len(devices) == 2
    d0, d1 = devices
    assert d0 != d1 and hash(d0) != hash(d1)
    assert [d.vulkan.instance for d in devices] == [0, 1]
    assert d0.vulkan.index == d1.vulkan.index  # one physical device
    assert "instance 1" in repr(d1)
    assert ctx.get_devices() == devices
    assert ctx.get_info(sycl.info.context.devices) == devices
    assert scheduler_for(d0).engine is not scheduler_for(d1).engine
    # the default context of the platform holds both, so a queue of either needs none
    q = sycl.queue(d1)
    assert q.get_context().get_devices() == devices


def test_kernels_on_both_devices_at_once(two, usm):
    """Launches on both queues before any wait: each device runs its own, and the
    results are each device's."""
    devices, ctx, (q0, q1) = two
    n = 1 << 16
    x0, x1 = (usm.alloc(sycl.malloc_shared, n, sycl.float32, q) for q in (q0, q1))

    def fill0(i):
        x0[i] = i * 2.0

    def fill1(i):
        x1[i] = i * 3.0

    events = []
    for _ in range(4):
        events.append(q0.parallel_for(sycl.range(n), fill0))
        events.append(q1.parallel_for(sycl.range(n), fill1))
    sycl.event.wait(events)
    ramp = np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(x0), ramp * 2)
    np.testing.assert_array_equal(np.asarray(x1), ramp * 3)
    assert sycl.get_pointer_device(x1, ctx) == devices[1]


@pytest.mark.parametrize("nbytes", [1, 4099, STAGING_BYTES + 12345])
def test_device_to_device_copies_both_ways(two, usm, nbytes):
    """Device USM of one device into device USM of the other, on a queue of either, with
    pointers into the allocations; a copy longer than a staging window goes in windows."""
    devices, _ctx, (q0, q1) = two
    src = np.random.default_rng(nbytes).integers(0, 256, nbytes + 8, dtype=np.uint8)
    a0 = usm.device(nbytes + 8, sycl.uint8, devices[0])
    a1 = usm.device(nbytes + 8, sycl.uint8, devices[1])
    q0.memcpy(a0, src, src.nbytes).wait()
    q1.memset(a1, 0, nbytes + 8).wait()
    q1.memcpy(a1 + 3, a0 + 5, nbytes).wait()  # the far side is the source
    out = np.empty_like(src)
    q1.memcpy(out, a1, out.nbytes).wait()
    assert np.array_equal(out[3: 3 + nbytes], src[5: 5 + nbytes])
    assert not out[:3].any() and not out[3 + nbytes:].any()
    q0.memset(a0, 7, nbytes + 8).wait()
    q1.memcpy(a0 + 1, a1 + 3, nbytes).wait()  # the far side is the destination
    q0.memcpy(out, a0, out.nbytes).wait()
    assert np.array_equal(out[1: 1 + nbytes], src[5: 5 + nbytes])
    assert out[0] == 7 and (out[1 + nbytes:] == 7).all()


@pytest.mark.parametrize("near", ["shared", "host"])
def test_copies_between_host_visible_and_device_memory_of_two_devices(two, usm, near):
    devices, _ctx, (q0, q1) = two
    n = 1000
    alloc = sycl.malloc_shared if near == "shared" else sycl.malloc_host
    h0 = usm.alloc(alloc, n, sycl.int32, q0)
    d1 = usm.device(n, sycl.int32, devices[1])
    np.asarray(h0)[:] = np.arange(n, dtype=np.int32)
    q0.copy(h0, d1, n).wait()  # q0's host-visible memory into q1's device memory
    np.asarray(h0)[:] = 0
    out = np.empty(n, np.int32)
    q1.copy(d1, out, n).wait()
    np.testing.assert_array_equal(out, np.arange(n))
    q0.copy(d1, h0, n).wait()
    np.testing.assert_array_equal(np.asarray(h0), np.arange(n))


def test_host_usm_of_another_device_is_host_memory_to_copies(two, usm):
    """Host and shared USM of one device is host memory: a queue of the other copies
    into and out of it through the host, as it would a numpy array."""
    devices, _ctx, (q0, q1) = two
    n = 4096
    h1 = usm.alloc(sycl.malloc_host, n, sycl.float32, q1)
    s1 = usm.alloc(sycl.malloc_shared, n, sycl.float32, q1)
    d0 = usm.device(n, sycl.float32, devices[0])
    np.asarray(h1)[:] = np.linspace(0, 1, n, dtype=np.float32)
    q0.memcpy(d0, h1, 4 * n).wait()

    def double(i):
        d0[i] = d0[i] * 2.0

    q0.parallel_for(sycl.range(n), double).wait()
    q0.memcpy(s1, d0, 4 * n).wait()
    np.testing.assert_array_equal(np.asarray(s1), 2 * np.asarray(h1))


def test_a_queue_waits_for_an_event_of_the_other_device(two, usm):
    """The chain kernel on device 0 -> copy to device 1 -> kernel on device 1, each
    command depending on the previous one's event through `depends_on`."""
    devices, _ctx, (q0, q1) = two
    n = 1 << 18
    a0 = usm.device(n, sycl.float32, devices[0])
    a1 = usm.device(n, sycl.float32, devices[1])
    out = usm.alloc(sycl.malloc_shared, n, sycl.float32, q1)

    def slow_fill(i):
        v = 0.0
        for _k in range(64):
            v += 1.0
        a0[i] = v + i

    def plus_one(i):
        out[i] = a1[i] + 1.0

    e0 = q0.parallel_for(sycl.range(n), slow_fill)

    def copy(h):
        h.depends_on(e0)
        h.memcpy(a1, a0, 4 * n)

    e1 = q1.submit(copy)
    assert e1.get_wait_list() == [e0]

    def launch(h):
        h.depends_on(e1)
        h.parallel_for(sycl.range(n), plus_one)

    e2 = q1.submit(launch)
    e2.wait()
    assert e0.is_complete() and e1.is_complete()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) + 65)

    seen = []
    e3 = q1.submit(lambda h: (h.depends_on(q0.parallel_for(sycl.range(n), slow_fill)),
                              h.host_task(lambda: seen.append(np.asarray(out)[5]))))
    e3.wait()
    assert seen == [70.0]


def _message(err: pytest.ExceptionInfo) -> str:
    assert err.value.code() is errc.invalid
    return str(err.value)


def _names_both(message: str, nbytes: int) -> None:
    assert f"USM of {nbytes} bytes at 0x" in message
    assert "instance 1" in message and "instance 0" in message


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_a_kernel_argument_of_another_device_is_invalid(two, usm, kind):
    _devices, _ctx, (q0, q1) = two
    alloc = {"device": sycl.malloc_device, "shared": sycl.malloc_shared,
             "host": sycl.malloc_host}[kind]
    theirs = usm.alloc(alloc, 64, sycl.int32, q1)

    def write(i):
        theirs[i] = i

    q1.parallel_for(sycl.range(64), write).wait()  # fine on its own device
    with pytest.raises(sycl.exception) as err:
        q0.parallel_for(sycl.range(64), write)
    message = _message(err)
    _names_both(message, 256)
    assert message.startswith(f"kernel argument theirs: {kind} USM")
    with pytest.raises(sycl.exception) as err:
        q0.submit(lambda h: h.parallel_for(sycl.range(64), write))
    _names_both(_message(err), 256)


def test_memory_operations_on_device_memory_of_another_device_are_invalid(two, usm):
    devices, _ctx, (q0, _q1) = two
    theirs = usm.device(16, sycl.float32, devices[1])
    theirs_too = usm.device(16, sycl.float32, devices[1])
    host = np.zeros(16, np.float32)
    attempts = {
        "memcpy destination": lambda: q0.memcpy(theirs, host, 64),
        "memcpy source": lambda: q0.memcpy(host, theirs, 64),
        "fill": lambda: q0.fill(theirs, np.float32(1), 16),
        "memset": lambda: q0.memset(theirs, 0, 64),
        "prefetch": lambda: q0.prefetch(theirs, 64),
    }
    for what, attempt in attempts.items():
        with pytest.raises(sycl.exception) as err:
            attempt()
        message = _message(err)
        assert message.startswith(f"{what}: device USM of 64 bytes"), message
        _names_both(message, 64)
    with pytest.raises(sycl.exception) as err:  # neither side on the queue's device
        q0.memcpy(theirs_too, theirs, 64)
    assert "belongs on a queue of the memory's device" in _message(err)


_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                   "PALS_LOCAL_RANKID", "PMIX_LOCAL_RANK")


@pytest.mark.parametrize("variable", _RANK_VARIABLES)
@pytest.mark.parametrize(("rank", "instance"), [(0, 0), (1, 1), (2, 0), (5, 1)])
def test_the_local_rank_selector_picks_one_device_per_rank(monkeypatch, variable, rank,
                                                           instance):
    """`VKSYCL_DEVICE_SELECTOR=local_rank`: rank r of a node sees the device at position r
    modulo the devices' number, whichever launcher told it its rank."""
    for v in _RANK_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("VKSYCL_DEVICE_INSTANCES", "2")
    monkeypatch.setenv(variable, str(rank))
    for value in ("local_rank", "cpu,local_rank", "LOCAL_RANK, llvmpipe"):
        monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", value)
        devices = sycl.device.get_devices()
        assert [d.vulkan.instance for d in devices] == [instance]
        assert sycl.queue().get_device() == devices[0]


def test_the_local_rank_selector_outside_mpi_and_its_errors(monkeypatch):
    for v in _RANK_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("VKSYCL_DEVICE_INSTANCES", "3")
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "local_rank")
    assert [d.vulkan.instance for d in sycl.device.get_devices()] == [0]  # one process
    monkeypatch.setenv("MPI_LOCALRANKID", "two")
    with pytest.raises(sycl.exception) as err:
        sycl.device.get_devices()
    assert "MPI_LOCALRANKID='two' is not a local rank" in _message(err)
    monkeypatch.setenv("MPI_LOCALRANKID", "1")
    monkeypatch.setenv("VKSYCL_DEVICE_SELECTOR", "no such device,local_rank")
    with pytest.raises(sycl.exception) as err:
        sycl.device.get_devices()
    assert err.value.code() is errc.runtime
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv("VKSYCL_DEVICE_INSTANCES", bad)
        with pytest.raises(sycl.exception) as err:
            sycl.device.get_devices()
        assert "VKSYCL_DEVICE_INSTANCES must be a positive whole number" in _message(err)
