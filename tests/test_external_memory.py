"""Memory shared as opaque file descriptors (VK_KHR_external_memory_fd): exported by one
device and imported by another (two instances of lavapipe, `VKSYCL_DEVICE_INSTANCES=2`),
each side's kernels seeing the other's writes with no copy; the errors of bad use; what
the CUDA interop checks before it needs CUDA, and its calls against a stand-in for
libcuda; and host and shared USM taken by numpy (and torch, where installed) through
DLPack without a copy."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.vksycl import release_native_device
from vksycl.runtime import cuda_export
from vksycl.runtime.cuda_interop import BufferDesc, Driver, MemoryHandleDesc

sys.path.append(str(Path(__file__).parent))  # the application of the interop tests
from test_interop import NEEDED, App, code_and_message

FD = syclexp.external_mem_handle_type.opaque_fd
EXTENSION = "VK_KHR_external_memory_fd"
N = 4096


@pytest.fixture
def two(monkeypatch: pytest.MonkeyPatch):
    """A queue on each of two instances of the default device (two VkDevices of one
    physical device: lavapipe in CI, the GPU on a GPU machine)."""
    kind = sycl.device().get_info(sycl.info.device.device_type)
    monkeypatch.setenv("VKSYCL_DEVICE_INSTANCES", "2")
    monkeypatch.delenv("VKSYCL_DEVICE_SELECTOR", raising=False)
    devices = sycl.device.get_devices(kind)
    devices = [d for d in devices if d.vulkan.index == devices[0].vulkan.index]
    assert len(devices) == 2
    if EXTENSION not in devices[0].get_info(sycl.info.device.extensions):
        pytest.skip(f"{devices[0].get_info(sycl.info.device.name)} lacks {EXTENSION}")
    ctx = sycl.context(devices)
    return [sycl.queue(ctx, d, property_list=[sycl.property.queue.in_order()])
            for d in devices]


def exported(qa: sycl.queue, qb: sycl.queue, n: int = N):
    """int32 memory allocated on qa's device and imported on qb's: (pointer on a,
    imported memory, pointer on b)."""
    a = syclexp.alloc_exportable_device_mem(0, 4 * n, FD, qa, dtype=sycl.int32)
    fd = syclexp.export_device_mem_handle(a, FD, qa)
    size = syclexp.exportable_mem_size(a)
    assert size >= 4 * n
    mem = syclexp.import_external_memory(
        syclexp.external_mem_descriptor(syclexp.resource_fd(fd), FD, size), qb)
    b = syclexp.map_external_linear_memory(mem, 0, 4 * n, qb, dtype=sycl.int32)
    return a, mem, b


def test_memory_of_one_device_is_the_memory_of_another(two):
    qa, qb = two
    a, mem, b = exported(qa, qb)
    assert sycl.get_pointer_type(a, qa.get_context()) == sycl.usm.alloc.device
    assert a.address % 64 == 0

    def iota(i):
        a[i] = i * 3
    qa.parallel_for(sycl.range(N), iota).wait()

    def square_plus_one(i):  # on the other device, in the same memory
        b[i] = b[i] * b[i] + 1
    qb.parallel_for(sycl.range(N), square_plus_one).wait()
    back = np.zeros(N, np.int32)
    qa.memcpy(back, a, 4 * N).wait()  # device a sees b's writes: one memory
    np.testing.assert_array_equal(back, (np.arange(N) * 3) ** 2 + 1)
    qb.fill(b + 10, np.int32(-5), 3).wait()
    qa.memcpy(back, a, 4 * N).wait()
    assert back[9:14].tolist() == [27 ** 2 + 1, -5, -5, -5, 39 ** 2 + 1]
    native = sycl.get_native(b + 4)
    assert native.offset == 16 and native.size == 4 * (N - 4)

    syclexp.unmap_external_linear_memory(b, qb)
    syclexp.release_external_memory(mem, qb)
    sycl.free(a, qa)
    code, message = code_and_message(lambda: qa.memcpy(back, a, 4))
    assert code is sycl.errc.invalid and "freed" in message


def test_mappings_at_offsets_and_release(two):
    qa, qb = two
    a = syclexp.alloc_exportable_device_mem(256, 8 * N, FD, qa, dtype=sycl.float32)
    assert a.address % 256 == 0
    qa.fill(a, np.float32(0.25), 2 * N).wait()
    fd = syclexp.export_device_mem_handle(a, FD, qa)
    mem = syclexp.import_external_memory(syclexp.external_mem_descriptor(
        syclexp.resource_fd(fd), FD, syclexp.exportable_mem_size(a)), qb.get_device(),
        qb.get_context())
    low = syclexp.map_external_linear_memory(mem, 0, 4 * N, qb, dtype=sycl.float32)
    high = syclexp.map_external_linear_memory(mem, 4 * N, 4 * N, qb, dtype=sycl.float32)

    def scale(i):
        high[i] = low[i] * 8.0 + sycl.float32(i)
    qb.parallel_for(sycl.range(N), scale).wait()
    back = np.zeros(2 * N, np.float32)
    qa.memcpy(back, a, 8 * N).wait()
    np.testing.assert_array_equal(back[:N], 0.25)
    np.testing.assert_array_equal(back[N:], 2.0 + np.arange(N))

    code, message = code_and_message(lambda: syclexp.release_external_memory(mem, qb))
    assert code is sycl.errc.invalid and "2 mappings" in message
    code, message = code_and_message(
        lambda: syclexp.map_external_linear_memory(mem, 4, 64, qb))
    assert code is sycl.errc.invalid and "alignment" in message
    code, message = code_and_message(
        lambda: syclexp.map_external_linear_memory(mem, 4 * N, 8 * N, qb))
    assert code is sycl.errc.invalid and "do not fit" in message
    sycl.free(low, qb.get_context())  # sycl.free ends a mapping too
    syclexp.unmap_external_linear_memory(high, qb)
    syclexp.release_external_memory(mem, qb)
    code, message = code_and_message(lambda: syclexp.release_external_memory(mem, qb))
    assert code is sycl.errc.invalid and "released" in message
    syclexp.free_exportable_memory(a, qa)
    code, message = code_and_message(lambda: sycl.free(a, qa))
    assert code is sycl.errc.invalid and "twice" in message


def test_bad_exports_and_imports_are_named(two):
    qa, qb = two
    a = syclexp.alloc_exportable_device_mem(0, 4096, FD, qa)
    plain = sycl.malloc_device(16, sycl.int32, qa)
    try:
        code, message = code_and_message(lambda: syclexp.export_device_mem_handle(plain, FD, qa))
        assert code is sycl.errc.invalid and "alloc_exportable_device_mem" in message
        code, message = code_and_message(lambda: syclexp.export_device_mem_handle(a, FD, qb))
        assert code is sycl.errc.invalid and "allocated for" in message
        code, message = code_and_message(lambda: syclexp.export_device_mem_handle(a + 8, FD, qa))
        assert code is sycl.errc.invalid and "8 bytes into" in message
        code, message = code_and_message(lambda: syclexp.export_device_mem_handle(a, 3, qa))
        assert code is sycl.errc.invalid and "opaque_fd" in message
        code, message = code_and_message(
            lambda: syclexp.alloc_exportable_device_mem(3, 64, FD, qa))
        assert code is sycl.errc.invalid and "power of two" in message
        code, message = code_and_message(
            lambda: syclexp.alloc_exportable_device_mem(0, 64.0, FD, qa))
        assert code is sycl.errc.invalid and "float" in message

        def imported(fd, size):
            return lambda: syclexp.import_external_memory(
                syclexp.external_mem_descriptor(syclexp.resource_fd(fd), FD, size), qb)
        code, message = code_and_message(imported("7", 4096))
        assert code is sycl.errc.invalid and "str" in message
        fd = syclexp.export_device_mem_handle(a, FD, qa)
        held = os.fstat(fd).st_size
        if held:  # lavapipe's descriptors say their size; NVIDIA's say 0, unchecked
            code, message = code_and_message(imported(fd, held + 4096))
            assert code is sycl.errc.invalid and f"holds {held} bytes" in message
        os.close(fd)  # a failed import leaves the descriptor the caller's
        code, message = code_and_message(imported(fd, 4096))
        assert code is sycl.errc.invalid and "not open" in message
        code, message = code_and_message(lambda: syclexp.import_external_memory(fd, qb))
        assert code is sycl.errc.invalid and "external_mem_descriptor" in message
        mem = imported(syclexp.export_device_mem_handle(a, FD, qa), 4096)()
        code, message = code_and_message(
            lambda: syclexp.map_external_linear_memory(mem, 0, 64, qa))
        assert code is sycl.errc.invalid and "imported for" in message
        syclexp.release_external_memory(mem, qb)
        code, message = code_and_message(
            lambda: syclexp.map_external_linear_memory(mem, 0, 64, qb))
        assert code is sycl.errc.invalid and "released" in message
    finally:
        sycl.free(plain, qa)
        sycl.free(a, qa)


# a pipe is no memory: only the driver can tell, and it refuses it, as the layer reports
@pytest.mark.validation_expected(r"^error: VK_ERROR_INVALID_EXTERNAL_HANDLE$")
def test_a_descriptor_of_no_device_memory_is_refused(q):
    """The device refuses it (VK_ERROR_INVALID_EXTERNAL_HANDLE, which the `vulkan` package
    cannot raise by name): a sycl.exception, not the package's KeyError."""
    if EXTENSION not in q.get_device().get_info(sycl.info.device.extensions):
        pytest.skip(f"the default device lacks {EXTENSION}")
    r, w = os.pipe()
    os.close(w)
    code, message = code_and_message(lambda: syclexp.import_external_memory(
        syclexp.external_mem_descriptor(syclexp.resource_fd(r), FD, 4096), q))
    assert code is sycl.errc.invalid and f"refused file descriptor {r}" in message
    with contextlib.suppress(OSError):  # lavapipe closes what it refuses
        os.close(r)


def test_a_device_without_the_extension_is_named():
    """An application's device created without VK_KHR_external_memory_fd."""
    app = App()
    try:
        dev = app.make_device()
        q = sycl.make_queue(app.queue, sycl.make_context(app.device))
        code, message = code_and_message(
            lambda: syclexp.alloc_exportable_device_mem(0, 64, FD, q))
        assert code is sycl.errc.feature_not_supported and EXTENSION in message
        r, w = os.pipe()
        code, message = code_and_message(lambda: syclexp.import_external_memory(
            syclexp.external_mem_descriptor(syclexp.resource_fd(r), FD, 64), q))
        assert code is sycl.errc.feature_not_supported and EXTENSION in message
        os.fstat(r)  # still the caller's, still open
        os.close(r)
        os.close(w)
        release_native_device(dev)
    finally:
        gc.collect()
        app.destroy()


def test_exportable_memory_on_the_applications_device(q):
    """An application's device created with the extension: exportable memory works on
    it, and what is left of it is destroyed when vksycl releases the device."""
    import vulkan as vk
    app = App()
    try:
        # the application's device again, now with the extension enabled
        vk.vkDestroyDevice(app.device, None)
        f12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
            bufferDeviceAddress=True, timelineSemaphore=True)
        f2 = vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f12,
            features=vk.VkPhysicalDeviceFeatures(shaderInt64=True))
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=app.family, queueCount=1,
                                           pQueuePriorities=[1.0])
        app.device = vk.vkCreateDevice(app.physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=f2, queueCreateInfoCount=1,
            pQueueCreateInfos=[queue], enabledExtensionCount=1,
            ppEnabledExtensionNames=[EXTENSION]), None)
        app.queue = vk.vkGetDeviceQueue(app.device, app.family, 0)
        dev = sycl.make_device(instance=app.instance, physical_device=app.physical,
                               device=app.device, queue_family_index=app.family,
                               enabled_features=NEEDED, enabled_extensions=[EXTENSION])
        aq = sycl.make_queue(app.queue, sycl.make_context(app.device))
        p = syclexp.alloc_exportable_device_mem(0, 4 * N, FD, aq, dtype=sycl.uint32)

        def fill(i):
            p[i] = i ^ 0x55
        aq.parallel_for(sycl.range(N), fill).wait()
        # vksycl's own device imports it: the same physical device
        mem = syclexp.import_external_memory(syclexp.external_mem_descriptor(
            syclexp.resource_fd(syclexp.export_device_mem_handle(p, FD, aq)), FD,
            syclexp.exportable_mem_size(p)), q)
        view = syclexp.map_external_linear_memory(mem, 0, 4 * N, q, dtype=sycl.uint32)
        back = np.zeros(N, np.uint32)
        q.memcpy(back, view, 4 * N).wait()
        np.testing.assert_array_equal(back, np.arange(N, dtype=np.uint32) ^ 0x55)
        syclexp.unmap_external_linear_memory(view, q)
        syclexp.release_external_memory(mem, q)
        release_native_device(dev)  # destroys p's buffer and memory: the app's device goes
        code, message = code_and_message(lambda: syclexp.export_device_mem_handle(p, FD, aq))
        assert code is sycl.errc.invalid and "freed" in message
    finally:
        gc.collect()
        app.destroy()


def test_cuda_views_take_exportable_memory_and_name_what_is_missing(q):
    """CUDA sees only exportable memory; without CUDA (or this GPU in it) the view names
    what is missing (tests/test_cuda_interop.py runs where CUDA is)."""
    plain = sycl.malloc_device(64, sycl.float32, q)
    code, message = code_and_message(lambda: syclexp.cuda_view(plain))
    assert code is sycl.errc.invalid and "alloc_exportable_device_mem" in message
    sycl.free(plain, q)
    if EXTENSION not in q.get_device().get_info(sycl.info.device.extensions):
        pytest.skip(f"the default device lacks {EXTENSION}")
    p = syclexp.alloc_exportable_device_mem(0, 256, FD, q, dtype=sycl.float32)
    try:
        view = syclexp.cuda_view(p)
    except sycl.exception as err:
        assert err.code() is sycl.errc.feature_not_supported and "CUDA" in str(err)
    else:
        assert view.shape == (64,)
        view.close()
    sycl.free(p, q)


def test_cuda_exportable_names_bad_input_and_what_is_missing(q):
    """The shape and dtype are checked before CUDA is needed; without CUDA (or this GPU
    in it) the allocation names what is missing (tests/test_cuda_interop.py runs where
    CUDA is)."""
    for shape, dtype, words in [(0, None, "0 bytes"), ((16, 0), sycl.float32, "0 bytes"),
                                (-4, None, "negative"), ((4, -1), sycl.int32, "negative"),
                                (2.5, None, "not an integer"), ("16", None, "not an integer"),
                                (16, object, "numbers or bools"),
                                (16, [("a", np.float32)], "numbers or bools"),
                                (16, "no such type", "not an element type")]:
        code, message = code_and_message(
            lambda s=shape, d=dtype: syclexp.cuda_exportable(s, q, dtype=d))
        assert code is sycl.errc.invalid and words in message, (shape, dtype, message)
    code, message = code_and_message(lambda: syclexp.cuda_exportable(16, "q"))
    assert code is sycl.errc.invalid and "got str" in message
    try:
        m = syclexp.cuda_exportable((4, 8), q, dtype=sycl.float32)
    except sycl.exception as err:
        assert err.code() is sycl.errc.feature_not_supported and "CUDA" in str(err)
    else:
        assert m.shape == (4, 8) and m.ptr.count == 32
        m.close()


def test_cuda_structs_have_the_driver_apis_layout():
    """CUmemAllocationProp, CUmemAccessDesc and the external memory descriptors, as the
    x86-64 and aarch64 ABIs lay out cuda.h's definitions."""
    prop = cuda_export.AllocationProp
    assert ctypes.sizeof(prop) == 32
    assert (prop.location.offset, prop.win32HandleMetaData.offset, prop.allocFlags.offset) \
        == (8, 16, 24)
    assert ctypes.sizeof(cuda_export.AccessDesc) == 12 and cuda_export.AccessDesc.flags.offset == 8
    assert ctypes.sizeof(MemoryHandleDesc) == 104 and MemoryHandleDesc.size.offset == 24
    assert ctypes.sizeof(BufferDesc) == 88 and BufferDesc.flags.offset == 16


class StandInCuda(Driver):
    """libcuda as cuda_exportable calls it, over vksycl's own exportable memory of the
    same device: what CUDA would allocate and export, so that the import, the kernels
    and the order of release run where there is no CUDA."""

    def __init__(self, q: sycl.queue, export=None, vmm: int = 1) -> None:
        self.q, self.export, self.vmm = q, export, vmm
        self.calls: list[str] = []
        self.memory = None
        self.watched = None  # vksycl's mapping, whose state cuMemUnmap records
        self.at_unmap = None

    def ordinal_of(self, dev) -> int:
        return 0

    def call(self, name: str, *args) -> None:
        self.calls.append(name)
        out = getattr(args[0], "_obj", None) if args else None  # what byref points to
        if name == "cuDeviceGetAttribute":
            out.value = self.vmm
        elif name == "cuMemGetAllocationGranularity":
            out.value = 1 << 16
        elif name == "cuMemCreate":
            prop = args[2]._obj
            assert (prop.type, prop.requestedHandleTypes, prop.location.type) == (1, 1, 1)
            self.memory = syclexp.alloc_exportable_device_mem(0, args[1].value, FD, self.q)
            out.value = 7
        elif name == "cuMemAddressReserve":
            out.value = 0x7000000
        elif name == "cuMemSetAccess":
            assert args[2]._obj.flags == 3 and args[3].value == 1
        elif name == "cuMemExportToShareableHandle":
            assert args[1].value == 7 and args[2].value == 1
            out.value = (self.export or (lambda: syclexp.export_device_mem_handle(
                self.memory, FD, self.q)))()
        elif name == "cuMemUnmap" and self.watched is not None:
            self.at_unmap = (self.watched.freed, self.watched.parent.released)
        elif name == "cuMemRelease":
            sycl.free(self.memory, self.q)


def test_cuda_exportable_imports_what_cuda_exports_and_releases_it_first(q, monkeypatch):
    if EXTENSION not in q.get_device().get_info(sycl.info.device.extensions):
        pytest.skip(f"the default device lacks {EXTENSION}")
    cuda = StandInCuda(q)
    monkeypatch.setattr(cuda_export, "cuda_driver", lambda: cuda)
    syclexp.cuda_exportable(1, q).close()  # a first import opens what the driver keeps open
    fds = len(os.listdir("/proc/self/fd"))
    m = syclexp.cuda_exportable(1000, q, dtype=sycl.float32)
    assert m.allocation_size == 1 << 16 and m.data == 0x7000000 and m.device_id == 0
    assert m.__cuda_array_interface__["shape"] == (1000,)
    assert m.__cuda_array_interface__["typestr"] == "<f4"
    x = m.ptr
    cuda.watched = x.allocation

    def twice(i):
        x[i] = sycl.float32(i) * 2.0
    q.parallel_for(sycl.range(1000), twice).wait()
    back = np.zeros(1000, np.float32)
    q.memcpy(back, cuda.memory, 4000).wait()  # what "CUDA" allocated holds the kernel's
    np.testing.assert_array_equal(back, 2.0 * np.arange(1000))
    code, message = code_and_message(lambda: q.memcpy(back, x + 1, 4000))
    assert code is sycl.errc.invalid and "allocation of 4000 bytes" in message
    cuda.calls.clear()
    m.close()
    m.close()
    assert cuda.calls == ["cuCtxPushCurrent_v2", "cuMemUnmap", "cuMemAddressFree",
                          "cuMemRelease", "cuCtxPopCurrent_v2", "cuDeviceGet",
                          "cuDevicePrimaryCtxRelease_v2"]
    assert cuda.at_unmap == (True, True)  # vksycl's mapping and import went first
    assert len(os.listdir("/proc/self/fd")) == fds  # Vulkan closed the descriptor
    code, message = code_and_message(lambda: m.__cuda_array_interface__)
    assert code is sycl.errc.invalid and "closed" in message


def test_cuda_exportable_undoes_cudas_work_when_the_import_fails(q, monkeypatch, tmp_path):
    cuda = StandInCuda(q, vmm=0)
    monkeypatch.setattr(cuda_export, "cuda_driver", lambda: cuda)
    code, message = code_and_message(lambda: syclexp.cuda_exportable(64, q))
    assert code is sycl.errc.feature_not_supported and "virtual memory management" in message
    assert "cuDevicePrimaryCtxRetain" not in cuda.calls
    if EXTENSION not in q.get_device().get_info(sycl.info.device.extensions):
        pytest.skip(f"the default device lacks {EXTENSION}")  # the stand-in allocates with it
    small = tmp_path / "small"
    small.write_bytes(bytes(16))
    fd = os.open(small, os.O_RDWR)
    cuda = StandInCuda(q, export=lambda: fd)  # a descriptor of 16 bytes, not 64 KiB
    monkeypatch.setattr(cuda_export, "cuda_driver", lambda: cuda)
    code, message = code_and_message(lambda: syclexp.cuda_exportable(64, q))
    assert code is sycl.errc.invalid and "holds 16 bytes" in message
    assert cuda.calls[-7:] == ["cuMemExportToShareableHandle", "cuMemUnmap", "cuMemAddressFree",
                               "cuMemRelease", "cuCtxPopCurrent_v2", "cuDeviceGet",
                               "cuDevicePrimaryCtxRelease_v2"]
    with pytest.raises(OSError):
        os.fstat(fd)  # closed: the import failed, so it was cuda_exportable's to close


# -- host and shared USM through DLPack ------------------------------------------------------
@pytest.mark.parametrize("kind", ["host", "shared"])
def test_numpy_takes_host_and_shared_usm_without_a_copy(q, kind):
    malloc = sycl.malloc_host if kind == "host" else sycl.malloc_shared
    p = malloc(N, sycl.float32, q)
    assert p.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(p + 16)
    assert a.shape == (N - 16,) and a.dtype == np.float32
    a[:] = np.arange(N - 16)  # numpy writes the allocation itself
    assert p[16] == 0.0 and p[20] == 4.0

    def twice(i):
        p[i + 16] = p[i + 16] * 2.0
    q.parallel_for(sycl.range(N - 16), twice).wait()
    np.testing.assert_array_equal(a, 2.0 * np.arange(N - 16))  # and sees the kernel's
    del a
    sycl.free(p, q)


def test_device_usm_is_refused_by_dlpack(q):
    p = sycl.malloc_device(16, sycl.float32, q)
    code, message = code_and_message(p.__dlpack_device__)
    assert code is sycl.errc.invalid and "not accessible from the host" in message
    sycl.free(p, q)


def test_torch_takes_shared_usm_without_a_copy(q):
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    p = sycl.malloc_shared(N, sycl.int32, q)
    t = torch.from_dlpack(p)
    t.copy_(torch.arange(N, dtype=torch.int32))
    assert t.data_ptr() == np.asarray(p).ctypes.data

    def inc(i):
        p[i] = p[i] + 1
    q.parallel_for(sycl.range(N), inc).wait()
    assert torch.equal(t, torch.arange(N, dtype=torch.int32) + 1)
    del t
    sycl.free(p, q)
