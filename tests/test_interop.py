"""Backend interop with Vulkan (SYCL 2020 4.5.1): the native handles of vksycl's objects,
and vksycl working on an application's own VkInstance / VkDevice / VkQueue and memory,
which the application creates with the `vulkan` package and destroys itself."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
import vulkan as vk

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.vksycl import native_queue_lock, release_native_device

NEEDED = ("bufferDeviceAddress", "timelineSemaphore", "shaderInt64")
_USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
          | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
_SDA = 0x00020000  # VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT (the vulkan package lacks it)
_DEVICE_ADDRESS = 0x2  # VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT


def as_int(handle) -> int:
    return int(vk.ffi.cast("uintptr_t", handle))


class App:
    """An application's Vulkan objects: a 1.3 instance, a device on the default device's
    physical device with the features it names enabled, its first compute queue."""

    def __init__(self, features: tuple[str, ...] = NEEDED) -> None:
        self.features = features
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                   pApplicationName="app", apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        index = sycl.device().get_info(sycl.info.device.ext_vksycl_vulkan_index)
        self.physical = vk.vkEnumeratePhysicalDevices(self.instance)[index]
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.family = next(i for i, f in enumerate(families)
                           if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        f12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
            bufferDeviceAddress="bufferDeviceAddress" in features,
            timelineSemaphore="timelineSemaphore" in features)
        f2 = vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f12,
            features=vk.VkPhysicalDeviceFeatures(shaderInt64="shaderInt64" in features))
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=1,
                                           pQueuePriorities=[1.0])
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=f2, queueCreateInfoCount=1,
            pQueueCreateInfos=[queue]), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.buffers: list = []

    def make_device(self) -> sycl.device:
        return sycl.make_device(instance=self.instance, physical_device=self.physical,
                                device=self.device, queue_family_index=self.family,
                                enabled_features=self.features)

    def buffer(self, nbytes: int, usage: int = _USAGE | _SDA):
        """A host-visible, coherent buffer of its own, mapped: (buffer, memory, view)."""
        buf = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=nbytes, usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        needs = vk.vkGetBufferMemoryRequirements(self.device, buf)
        props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        wanted = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        kind = next(i for i in range(props.memoryTypeCount)
                    if needs.memoryTypeBits & (1 << i)
                    and props.memoryTypes[i].propertyFlags & wanted == wanted)
        flags = vk.VkMemoryAllocateFlagsInfo(sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                             flags=_DEVICE_ADDRESS)
        memory = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, pNext=flags,
            allocationSize=needs.size, memoryTypeIndex=kind), None)
        vk.vkBindBufferMemory(self.device, buf, memory, 0)
        mapped = vk.vkMapMemory(self.device, memory, 0, needs.size, 0)
        self.buffers.append((buf, memory))
        return buf, memory, np.frombuffer(mapped, dtype=np.uint8, count=nbytes)

    def timeline(self, initial: int = 0):
        kind = vk.VkSemaphoreTypeCreateInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                            semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE,
                                            initialValue=initial)
        return vk.vkCreateSemaphore(self.device, vk.VkSemaphoreCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=kind), None)

    def wait(self, semaphore: int, value: int, timeout_ns: int = 10**10) -> None:
        """Waits on the host for a timeline semaphore value, through the app's device."""
        info = vk.VkSemaphoreWaitInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                      semaphoreCount=1,
                                      pSemaphores=[vk.ffi.cast("VkSemaphore", semaphore)],
                                      pValues=[value])
        vk.vkWaitSemaphores(self.device, info, timeout_ns)  # raises vk.VkTimeout
        assert vk.vkGetSemaphoreCounterValue(
            self.device, vk.ffi.cast("VkSemaphore", semaphore)) >= value

    def destroy(self) -> None:
        """What the application created, destroyed by the application."""
        vk.vkDeviceWaitIdle(self.device)
        for buf, memory in self.buffers:
            vk.vkUnmapMemory(self.device, memory)
            vk.vkDestroyBuffer(self.device, buf, None)
            vk.vkFreeMemory(self.device, memory, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


@pytest.fixture
def app():
    """The application's objects; the test releases vksycl's use before this destroys."""
    a = App()
    yield a
    gc.collect()
    a.destroy()


def buffer_address(device, buffer: int) -> int:
    """vkGetBufferDeviceAddress (the vulkan package's wrapper returns its argument)."""
    info = vk.ffi.new("VkBufferDeviceAddressInfo*", {
        "sType": vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
        "buffer": vk.ffi.cast("VkBuffer", buffer)})
    return vk.lib.vkGetBufferDeviceAddress(device, info)


def code_and_message(fn) -> tuple[sycl.errc, str]:
    with pytest.raises(sycl.exception) as err:
        fn()
    return err.value.code(), str(err.value)


# -- vksycl's own objects -------------------------------------------------------------------
def test_native_handles_of_vksyclss_own_objects_are_live_vulkan_objects(q):
    dev, ctx = q.get_device(), q.get_context()
    physical = vk.ffi.cast("VkPhysicalDevice", sycl.get_native(dev))
    name = vk.vkGetPhysicalDeviceProperties(physical).deviceName
    assert name == dev.get_info(sycl.info.device.name)
    assert sycl.get_native(dev, sycl.backend.vulkan) == sycl.get_native(dev)
    assert isinstance(sycl.get_native(dev.get_platform()), int)
    native_q = sycl.get_native(q)
    assert native_q.queue and native_q.queue_index == 0
    assert native_q.queue_family_index == dev.get_info(
        sycl.info.device.ext_vksycl_vulkan_info).compute_queue_family

    n = 256
    a = sycl.malloc_device(n, sycl.int32, q)

    def iota(i):
        a[i] = i * 3

    e = q.parallel_for(sycl.range(n), iota)
    point = sycl.get_native(e)
    vk_device = vk.ffi.cast("VkDevice", sycl.get_native(ctx))
    info = vk.VkSemaphoreWaitInfo(sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  semaphoreCount=1,
                                  pSemaphores=[vk.ffi.cast("VkSemaphore", point.semaphore)],
                                  pValues=[point.value])
    assert point.value >= 1
    vk.vkWaitSemaphores(vk_device, info, 10**10)  # raises vk.VkTimeout on a timeout
    assert vk.vkGetSemaphoreCounterValue(
        vk_device, vk.ffi.cast("VkSemaphore", point.semaphore)) >= point.value
    assert e.is_complete()
    done = sycl.get_native(e)  # a completed event: a point already reached
    assert vk.vkGetSemaphoreCounterValue(
        vk_device, vk.ffi.cast("VkSemaphore", done.semaphore)) >= done.value

    out = np.zeros(n, np.int32)
    q.memcpy(out, a, 4 * n).wait()
    np.testing.assert_array_equal(out, np.arange(n) * 3)
    host = q.submit(lambda h: h.host_task(lambda: None))
    host.wait()
    reached = sycl.get_native(host)  # host work, done: a point reached from the start
    assert vk.vkGetSemaphoreCounterValue(
        vk_device, vk.ffi.cast("VkSemaphore", reached.semaphore)) >= reached.value

    native = sycl.get_native(a + 10)
    assert buffer_address(vk_device, native.buffer) + native.offset == (a + 10).address
    assert native.size == 4 * (n - 10) and native.memory
    sycl.free(a, q)


def test_get_native_refuses_other_objects_and_backends(q):
    assert code_and_message(lambda: sycl.get_native(3))[0] is sycl.errc.invalid
    code, message = code_and_message(lambda: sycl.get_native(q, "opencl"))
    assert code is sycl.errc.invalid and "vulkan" in message


# -- an application's device ----------------------------------------------------------------
def test_kernels_and_memops_on_the_applications_device(app):
    dev = app.make_device()
    assert app.make_device() is dev  # the same handles: the same device
    assert dev != sycl.device()  # not vksycl's own device of the same physical device
    assert sycl.get_native(dev) == as_int(app.physical)
    assert sycl.get_native(dev.get_platform()) == as_int(app.instance)
    assert dev.get_platform().get_devices() == [dev]
    ctx = sycl.make_context(app.device)
    assert sycl.get_native(ctx) == as_int(app.device)
    q = sycl.make_queue(sycl.native_queue(as_int(app.queue), app.family, 0), ctx)
    assert sycl.get_native(q) == (as_int(app.queue), app.family, 0)
    assert q.get_device() == dev and dev.has(sycl.aspect.int64)

    n = 1000
    x = np.linspace(-1, 1, n, dtype=np.float32)
    a = sycl.malloc_device(n, sycl.float32, q)
    s = sycl.malloc_shared(n, sycl.float32, q)
    q.memcpy(a, x, 4 * n).wait()
    q.fill(s, np.float32(0.5), n).wait()

    def axpy(i):
        s[i] = a[i] * 3.0 + s[i]

    e = q.parallel_for(sycl.range(n), axpy)
    point = sycl.get_native(e)
    app.wait(point.semaphore, point.value)  # the app waits for vksycl's work itself
    # float32 rounding of the product and sum (or none of the product's, fused): an
    # error bound by the terms' size, as results near 0 cancel
    want, bound = x.astype(np.float64) * 3 + 0.5, 1e-6 * (np.abs(x) * 3 + 0.5)
    assert np.all(np.abs(np.asarray(s) - want) <= bound)
    out = np.zeros(n, np.float32)
    q.memcpy(out, s, 4 * n).wait()
    assert np.all(np.abs(out - want) <= bound)

    release_native_device(dev)
    code, message = code_and_message(lambda: q.parallel_for(sycl.range(n), axpy))
    assert code is sycl.errc.invalid
    code, message = code_and_message(lambda: np.asarray(s))
    assert code is sycl.errc.invalid and "freed" in message
    # the application's device and queue still work: vksycl destroyed none of them
    vk.vkQueueWaitIdle(app.queue)


def test_a_device_without_what_vksycl_needs_is_named(app):
    for missing in NEEDED:
        features = tuple(f for f in NEEDED if f != missing)
        code, message = code_and_message(lambda f=features: sycl.make_device(
            instance=app.instance, physical_device=app.physical, device=app.device,
            queue_family_index=app.family, enabled_features=f))
        assert code is sycl.errc.feature_not_supported and missing in message
    code, message = code_and_message(lambda: sycl.make_device(
        instance=app.instance, physical_device=app.physical, device=app.device,
        queue_family_index=app.family, enabled_features=(*NEEDED, "warpDrive")))
    assert code is sycl.errc.invalid and "warpDrive" in message
    code, message = code_and_message(lambda: sycl.make_device(
        instance=app.instance, physical_device=app.physical, device=app.device,
        queue_family_index=99, enabled_features=NEEDED))
    assert code is sycl.errc.invalid and "queue family 99" in message
    code, message = code_and_message(lambda: sycl.make_context(12345))
    assert code is sycl.errc.invalid and "make_device" in message


def test_a_device_created_without_timeline_semaphores_is_refused():
    bare = App(features=("bufferDeviceAddress", "shaderInt64"))
    try:
        code, message = code_and_message(bare.make_device)
        assert code is sycl.errc.feature_not_supported and "timelineSemaphore" in message
    finally:
        bare.destroy()


def test_make_queue_checks_the_queue(app):
    dev = app.make_device()
    ctx = sycl.make_context(app.device)
    code, message = code_and_message(lambda: sycl.make_queue(12345, ctx))
    assert code is sycl.errc.invalid and "0x3039" in message
    code, message = code_and_message(lambda: sycl.make_queue(
        sycl.native_queue(as_int(app.queue), app.family, 1), ctx))
    assert code is sycl.errc.invalid
    q = sycl.make_queue(app.queue, ctx)  # the cffi handle does as well
    assert q.get_device() == dev
    release_native_device(dev)


def test_own_devices_are_not_released_by_the_application(q):
    code, message = code_and_message(lambda: release_native_device(q.get_device()))
    assert code is sycl.errc.invalid and "own device" in message


# -- memory both ways ---------------------------------------------------------------------
def test_the_applications_buffer_as_usm(app):
    dev = app.make_device()
    ctx = sycl.make_context(app.device)
    q = sycl.make_queue(app.queue, ctx)
    n = 512
    buf, memory, view = app.buffer(4 * n + 64)
    values = view[64:].view(np.int32)
    values[:] = np.arange(n)  # the application writes through its own mapping
    view[:64] = 0xA5  # before the wrapped range: vksycl must leave it alone
    native = syclexp.native_memory(as_int(buf), 64, 4 * n, as_int(memory))
    p = syclexp.make_usm_from_native(native, q, usage=_USAGE | _SDA, device=app.device,
                                     dtype=sycl.int32)
    assert sycl.get_pointer_type(p, ctx) == sycl.usm.alloc.device
    assert sycl.get_native(p + 2) == (as_int(buf), 72, 4 * (n - 2), as_int(memory))

    def square_plus_one(i):
        p[i] = p[i] * p[i] + 1

    q.parallel_for(sycl.range(n), square_plus_one).wait()
    np.testing.assert_array_equal(values, np.arange(n) ** 2 + 1)  # the application reads
    assert view[:64].tolist() == [0xA5] * 64

    back = np.zeros(n, np.int32)
    q.memcpy(back, p, 4 * n).wait()
    np.testing.assert_array_equal(back, np.arange(n) ** 2 + 1)
    q.fill(p + 10, np.int32(-7), 5).wait()
    assert values[9:16].tolist() == [82, -7, -7, -7, -7, -7, 226]
    code, message = code_and_message(lambda: q.memcpy(back, p, 4 * n + 4))
    assert code is sycl.errc.invalid and "2048" in message

    sycl.free(p, q)  # vksycl's view only: the application's memory stays
    values[0] = 41
    assert values[0] == 41
    release_native_device(dev)


def test_bad_native_memory_is_named(app):
    dev = app.make_device()
    ctx = sycl.make_context(app.device)
    q = sycl.make_queue(app.queue, ctx)
    plain, plain_memory, _ = app.buffer(256, usage=_USAGE)
    good, good_memory, _ = app.buffer(256)

    def wrap(buf, memory, size=256, offset=0, usage=_USAGE | _SDA, device=app.device,
             where=(q,)):
        native = syclexp.native_memory(as_int(buf), offset, size, as_int(memory))
        return lambda: syclexp.make_usm_from_native(native, *where, usage=usage,
                                                    device=device)

    code, message = code_and_message(wrap(plain, plain_memory, usage=_USAGE))
    assert code is sycl.errc.invalid and "SHADER_DEVICE_ADDRESS" in message
    own_q = sycl.queue()
    code, message = code_and_message(wrap(good, good_memory, where=(own_q,)))
    assert code is sycl.errc.invalid and f"{as_int(app.device):#x}" in message
    code, message = code_and_message(wrap(good, good_memory, size=4096))
    assert code is sycl.errc.invalid and "do not fit" in message
    code, message = code_and_message(wrap(good, good_memory, size=200, offset=100))
    assert code is sycl.errc.invalid and "do not fit" in message
    code, message = code_and_message(wrap(good, good_memory, where=(dev,)))
    assert code is sycl.errc.invalid
    p = wrap(good, good_memory, where=(dev, ctx))()
    code, message = code_and_message(lambda: p[0])
    assert code is sycl.errc.invalid and "not accessible from the host" in message
    release_native_device(dev)
    code, message = code_and_message(lambda: sycl.get_native(p))
    assert code is sycl.errc.invalid and "freed" in message


def test_native_queue_lock_holds_vksycls_submissions(q):
    """An application submitting to the VkQueue it shares with vksycl does so inside
    native_queue_lock: a vksycl launch from another thread meanwhile reaches the queue
    only once the block ends."""
    x = sycl.malloc_shared(1, sycl.int32, q)
    x[0] = 0

    def bump():
        x[0] += 1

    done = threading.Event()
    with native_queue_lock(q) as native:
        assert native == sycl.get_native(q)
        worker = threading.Thread(target=lambda: (q.single_task(bump).wait(), done.set()))
        worker.start()
        time.sleep(0.3)
        assert not done.is_set() and x[0] == 0
    worker.join(30)
    assert done.is_set() and x[0] == 1
    sycl.free(x, q)
