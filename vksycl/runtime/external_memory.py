"""Device memory shared with other APIs and processes as opaque file descriptors
(VK_KHR_external_memory_fd), after sycl_ext_oneapi_memory_export (export) and the
external memory API of sycl_ext_oneapi_bindless_images (import).

Kompute's allocations cannot be exported, so this memory is allocated through the
`vulkan` package on the VkDevice vksycl works on: a VkBuffer with shader-device-address,
storage and transfer usage bound to its own VkDeviceMemory, allocated with the
DEVICE_ADDRESS flag, so that kernels and memory operations reach it by its device address
as any device USM. vksycl owns what it allocates here: `sycl.free` (or the extension's
free and release functions) destroys it once the work submitted before is done, and what
is left is destroyed before the device goes (at exit, or `release_native_device`).
A file descriptor given to `import_external_memory` belongs to Vulkan once the import
succeeds, and stays the caller's when it fails (lavapipe closes one it refuses, though).
"""

from __future__ import annotations

import atexit
import enum
import operator
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from .context import context, scheduler_for
from .devices import EXTERNAL_MEMORY_FD_EXTENSION
from .external_semaphores import live_handle
from .native_usm import ImportedAllocation, native_memory, target_of
from .platform import device
from .usm import ptr

# SHADER_DEVICE_ADDRESS | STORAGE_BUFFER | TRANSFER_SRC | TRANSFER_DST: kernels reach the
# memory by its address, kernels from source bind it, copies read and write it
USAGE = 0x00020000 | 0x20 | 0x1 | 0x2
_DEVICE_ADDRESS = 0x2  # VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT
_EXPORTABLE, _IMPORTABLE, _DEDICATED_ONLY = 0x2, 0x4, 0x1  # VkExternalMemoryFeatureFlagBits
# VK_ERROR_INVALID_EXTERNAL_HANDLE, which the `vulkan` package holds unsigned, so that its
# vkAllocateMemory raises KeyError for it
_INVALID_EXTERNAL_HANDLE = -1000072003
# what this module made on each device and has not destroyed yet
_owned: dict[device, set[ExternalAllocation | external_mem]] = {}
_lock = threading.Lock()


class external_mem_handle_type(enum.Enum):
    """`syclexp.external_mem_handle_type`: how memory crosses to another API."""

    opaque_fd = 0


@dataclass(frozen=True)
class resource_fd:
    """`syclexp.resource_fd`: a POSIX file descriptor naming external memory."""

    file_descriptor: int


@dataclass(frozen=True)
class external_mem_descriptor:
    """`syclexp.external_mem_descriptor`: the resource, its handle type, and the size of
    the exported allocation in bytes."""

    external_resource: resource_fd
    handle_type: external_mem_handle_type
    size_in_bytes: int


class _Vulkan:
    """The `vulkan` package's view of a vksycl device: its VkDevice and the functions
    of VK_KHR_external_memory_fd, checked present."""

    def __init__(self, dev: device, what: str) -> None:
        import vulkan as vk
        if EXTERNAL_MEMORY_FD_EXTENSION not in dev.vulkan.extensions:
            raise exception(errc.feature_not_supported, f"{what}: {dev!r} lacks the device "
                            f"extension {EXTERNAL_MEMORY_FD_EXTENSION} (an application's "
                            "device must be created with it, and name it in make_device's "
                            "enabled_extensions)")
        self.vk = vk
        native = dev.vulkan.native
        engine = scheduler_for(dev).engine
        if native is None:
            _, physical, handle, _, _ = engine.native_handles()
        else:
            physical, handle = native.physical_device, native.device
        self.engine = engine
        self.device = vk.ffi.cast("VkDevice", handle)
        self.physical = vk.ffi.cast("VkPhysicalDevice", physical)
        self.memory_types = dev.vulkan.memory_types

    def features(self, usage: int) -> int:
        """The VkExternalMemoryFeatureFlags of opaque-fd buffers of `usage`."""
        vk = self.vk
        # the package's own output struct would go without its sType
        props = vk.ffi.new("VkExternalBufferProperties*", {
            "sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES})
        vk.vkGetPhysicalDeviceExternalBufferProperties(
            self.physical, vk.VkPhysicalDeviceExternalBufferInfo(
                sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO, usage=usage,
                handleType=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT), props)
        return props.externalMemoryProperties.externalMemoryFeatures

    def buffer(self, nbytes: int) -> Any:
        vk = self.vk
        external = vk.VkExternalMemoryBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
            handleTypes=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)
        return vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, pNext=external, size=nbytes,
            usage=USAGE, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)

    def device_local_type(self, type_bits: int) -> int:
        for i, t in enumerate(self.memory_types):
            if type_bits & (1 << i) and t.device_local:
                return i
        raise exception(errc.memory_allocation, "no device-local memory type can hold an "
                        "external buffer")

    def address(self, buffer: Any) -> int:
        vk = self.vk
        info = vk.ffi.new("VkBufferDeviceAddressInfo*", {
            "sType": vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, "buffer": buffer})
        # the package's wrapper returns its argument, not the address: the loader's function
        return vk.lib.vkGetBufferDeviceAddress(self.device, info)

    def handle(self, obj: Any) -> int:
        return int(self.vk.ffi.cast("uintptr_t", obj))

    def wait_for_work(self) -> None:
        """Waits for the work submitted to the device so far (it may use the memory)."""
        last = self.engine.last_submission()
        if last is not None and not self.engine.closed:
            last.wait()


def _allocate(v: _Vulkan, nbytes: int, chain: Any, dedicated: bool, buffer: Any
              ) -> tuple[Any, int]:
    """VkDeviceMemory for `buffer` with the DEVICE_ADDRESS flag and `chain` (export or
    import info); (memory, its size)."""
    vk = v.vk
    needs = vk.vkGetBufferMemoryRequirements(v.device, buffer)
    flags = vk.VkMemoryAllocateFlagsInfo(sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                         pNext=chain, flags=_DEVICE_ADDRESS)
    head = flags
    if dedicated:
        head = vk.VkMemoryDedicatedAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, pNext=flags,
            buffer=buffer)
    try:
        memory = vk.vkAllocateMemory(v.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, pNext=head,
            allocationSize=needs.size,
            memoryTypeIndex=v.device_local_type(needs.memoryTypeBits)), None)
    except KeyError as err:  # a VkResult the package has no exception for
        if err.args != (_INVALID_EXTERNAL_HANDLE,):
            raise
        raise vk.VkError("VK_ERROR_INVALID_EXTERNAL_HANDLE") from None
    return memory, needs.size


def _vk_name(err: Exception) -> str:
    return str(err) or type(err).__name__


class ExternalAllocation(ImportedAllocation):
    """Device USM over a VkBuffer this module made: exportable memory of its own, or a
    view of imported memory (`parent`). Freeing it destroys the buffer (and the memory
    it owns) once the work submitted before is done."""

    __slots__ = ("allocation_size", "dedicated", "exportable", "parent", "vulkan")

    def __init__(self, v: _Vulkan, native: native_memory, ctx: context, dev: device,
                 allocation_size: int, parent: external_mem | None = None,
                 dedicated: bool = False) -> None:
        super().__init__(native, v.address(v.vk.ffi.cast("VkBuffer", native.buffer)), ctx,
                         dev)
        self.vulkan = v
        self.allocation_size = allocation_size  # of the VkDeviceMemory (export: its size)
        self.dedicated = dedicated  # a dedicated allocation (importers must say so)
        self.exportable = parent is None
        self.parent = parent

    def free(self) -> None:
        if self.freed:
            raise exception(errc.invalid, "memory freed twice")
        self.freed = True
        self.vulkan.wait_for_work()
        self._destroy()

    def _destroy(self) -> None:
        vk, v = self.vulkan.vk, self.vulkan
        vk.vkDestroyBuffer(v.device, vk.ffi.cast("VkBuffer", self.buffer), None)
        if self.parent is None:
            vk.vkFreeMemory(v.device, vk.ffi.cast("VkDeviceMemory", self.memory), None)
        else:
            self.parent.mapped.discard(self)
        _forget(self.device, self)

    def __repr__(self) -> str:
        kind = "exportable device USM" if self.exportable else "device USM over imported memory"
        return f"{kind} of {self.nbytes} bytes at {self.address:#x}"


class external_mem:
    """`syclexp.external_mem`: memory imported from a file descriptor, which vksycl owns
    until `release_external_memory`; `map_external_linear_memory` gives USM over it."""

    __slots__ = ("__weakref__", "context", "device", "mapped", "memory", "released", "size",
                 "vulkan")

    def __init__(self, v: _Vulkan, memory: Any, size: int, ctx: context, dev: device
                 ) -> None:
        self.vulkan = v
        self.memory = memory
        self.size = size
        self.context = ctx
        self.device = dev
        self.mapped: set[ExternalAllocation] = set()
        self.released = False

    def _destroy(self) -> None:
        for p in list(self.mapped):
            p.freed = True
            p._destroy()
        self.vulkan.vk.vkFreeMemory(self.vulkan.device, self.memory, None)
        self.released = True
        _forget(self.device, self)

    def __repr__(self) -> str:
        return f"<syclexp.external_mem of {self.size} bytes>"


def _remember(dev: device, obj: ExternalAllocation | external_mem) -> None:
    with _lock:
        _owned.setdefault(dev, set()).add(obj)


def _forget(dev: device, obj: ExternalAllocation | external_mem) -> None:
    with _lock:
        _owned.get(dev, set()).discard(obj)


def _size(value: Any, what: str) -> int:
    try:
        n = operator.index(value)
    except TypeError:
        raise exception(errc.invalid, f"{what} is an integer, not {type(value).__name__}"
                        ) from None
    if n < 0:
        raise exception(errc.invalid, f"{what} is {n}: negative")
    return n


def _check_type(handle_type: Any) -> None:
    if handle_type is not external_mem_handle_type.opaque_fd:
        raise exception(errc.invalid, "vksycl exports and imports memory as "
                        f"external_mem_handle_type.opaque_fd, not {handle_type!r}")


# -- export (sycl_ext_oneapi_memory_export) -----------------------------------------------
def alloc_exportable_device_mem(alignment: int, size: int,
                                handle_type: external_mem_handle_type, *where: Any,
                                dtype: Any = None) -> ptr:
    """Device USM of `size` bytes (for a queue, or a device and a context) that
    `export_device_mem_handle` can give to another API or process. `alignment` 0 takes
    the device's; the memory starts at an address aligned to both."""
    dev, ctx = target_of(where)
    _check_type(handle_type)
    align = _size(alignment, "alignment")
    if align & (align - 1):
        raise exception(errc.invalid, f"alignment {align} is not a power of two")
    nbytes = _size(size, "size")
    if nbytes == 0:
        raise exception(errc.invalid, "an exportable allocation of 0 bytes")
    v = _Vulkan(dev, "exportable memory")
    features = v.features(USAGE)
    if not features & _EXPORTABLE:
        raise exception(errc.feature_not_supported, f"{dev!r} cannot export buffers as "
                        "opaque file descriptors")
    vk = v.vk
    buffer = v.buffer(nbytes)
    dedicated = bool(features & _DEDICATED_ONLY)
    try:
        export = vk.VkExportMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
            handleTypes=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)
        memory, allocated = _allocate(v, nbytes, export, dedicated, buffer)
    except vk.VkError as err:
        vk.vkDestroyBuffer(v.device, buffer, None)
        raise exception(errc.memory_allocation, f"the device could not allocate {nbytes} "
                        f"exportable bytes ({_vk_name(err)})") from None
    vk.vkBindBufferMemory(v.device, buffer, memory, 0)
    native = native_memory(v.handle(buffer), 0, nbytes, v.handle(memory))
    a = ExternalAllocation(v, native, ctx, dev, allocated, dedicated=dedicated)
    if align and a.address % align:
        a.free()
        raise exception(errc.memory_allocation, f"the device placed the memory at "
                        f"{a.address:#x}, not aligned to {align}")
    _remember(dev, a)
    return ptr(a, 0, np.uint8 if dtype is None else dtype)


def _exportable(p: Any, dev: device) -> ExternalAllocation:
    a = getattr(p, "allocation", None)
    if not isinstance(p, ptr) or not isinstance(a, ExternalAllocation) or not a.exportable:
        raise exception(errc.invalid, "expected a pointer alloc_exportable_device_mem "
                        f"returned, got {p!r}")
    a.check_live()
    if a.device is not dev:
        raise exception(errc.invalid, f"{a!r} was allocated for {a.device!r}, not for {dev!r}")
    if p.byte_offset:
        raise exception(errc.invalid, "export the pointer alloc_exportable_device_mem "
                        f"returned, not one {p.byte_offset} bytes into it")
    return a


def export_device_mem_handle(p: ptr, handle_type: external_mem_handle_type, *where: Any
                             ) -> int:
    """A new file descriptor of exportable memory, which the caller owns (another API
    importing it takes it over). The importer names the allocation's size:
    `exportable_mem_size(p)`."""
    dev, _ = target_of(where)
    _check_type(handle_type)
    a = _exportable(p, dev)
    v = a.vulkan
    vk = v.vk
    get_fd = vk.vkGetDeviceProcAddr(v.device, "vkGetMemoryFdKHR")
    return get_fd(v.device, vk.VkMemoryGetFdInfoKHR(
        sType=vk.VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
        memory=vk.ffi.cast("VkDeviceMemory", a.memory),
        handleType=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT))


def exportable_mem_size(p: ptr) -> int:
    """The size of the Vulkan allocation behind exportable memory, which an importer
    names (the driver may round the size asked for up)."""
    a = getattr(p, "allocation", None)
    if not isinstance(a, ExternalAllocation) or not a.exportable:
        raise exception(errc.invalid, "expected a pointer alloc_exportable_device_mem "
                        f"returned, got {p!r}")
    return a.allocation_size


def free_exportable_memory(p: ptr, *where: Any) -> None:
    """Frees exportable memory (as `sycl.free` does), once the work submitted before is
    done; what other APIs imported from it stays theirs to release."""
    dev, _ = target_of(where)
    _exportable(p, dev).free()


# -- import (sycl_ext_oneapi_bindless_images' external memory) -----------------------------
def import_external_memory(desc: external_mem_descriptor, *where: Any) -> external_mem:
    """Memory another API or process exported as an opaque file descriptor, imported on a
    queue's device (or a device and a context). On success Vulkan owns the descriptor."""
    dev, ctx = target_of(where)
    if not isinstance(desc, external_mem_descriptor):
        raise exception(errc.invalid, "import_external_memory takes a "
                        f"syclexp.external_mem_descriptor, not {type(desc).__name__}")
    _check_type(desc.handle_type)
    if not isinstance(desc.external_resource, resource_fd):
        raise exception(errc.invalid, "an opaque_fd descriptor holds a syclexp.resource_fd, "
                        f"not {type(desc.external_resource).__name__}")
    fd = _size(desc.external_resource.file_descriptor, "the file descriptor")
    nbytes = _size(desc.size_in_bytes, "size_in_bytes")
    if nbytes == 0:
        raise exception(errc.invalid, "size_in_bytes is 0")
    try:
        held = os.fstat(fd).st_size
    except OSError as err:
        raise exception(errc.invalid, f"file descriptor {fd} is not open ({err.strerror})"
                        ) from None
    if held and nbytes > held:  # 0: the driver's descriptor does not say
        raise exception(errc.invalid, f"file descriptor {fd} holds {held} bytes; "
                        f"size_in_bytes asks for {nbytes}")
    v = _Vulkan(dev, "importing memory")
    features = v.features(USAGE)
    if not features & _IMPORTABLE:
        raise exception(errc.feature_not_supported, f"{dev!r} cannot import buffers from "
                        "opaque file descriptors")
    vk = v.vk
    probe = v.buffer(nbytes)  # the import's size and memory type are a buffer's of nbytes
    try:
        chain = vk.VkImportMemoryFdInfoKHR(
            sType=vk.VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
            handleType=vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, fd=fd)
        memory, size = _allocate(v, nbytes, chain, bool(features & _DEDICATED_ONLY), probe)
    except vk.VkError as err:
        raise exception(errc.invalid, f"the device refused file descriptor {fd} of "
                        f"{nbytes} bytes ({_vk_name(err)}): not memory of this "
                        "physical device exported as an opaque fd, or not that size"
                        ) from None
    finally:
        vk.vkDestroyBuffer(v.device, probe, None)
    mem = external_mem(v, memory, size, ctx, dev)
    _remember(dev, mem)
    return mem


def _live(mem: Any, dev: device) -> external_mem:
    return live_handle(mem, external_mem, "import_external_memory", dev, "imported")


def map_external_linear_memory(mem: external_mem, offset: int, size: int, *where: Any,
                               dtype: Any = None) -> ptr:
    """Device USM over `size` bytes of imported memory from `offset` (a multiple of the
    device's buffer alignment), for kernels and memory operations."""
    dev, ctx = target_of(where)
    mem = _live(mem, dev)
    start, nbytes = _size(offset, "offset"), _size(size, "size")
    if nbytes == 0 or start + nbytes > mem.size:
        raise exception(errc.invalid, f"{nbytes} bytes at offset {start} do not fit in "
                        f"{mem!r}")
    v = mem.vulkan
    vk = v.vk
    buffer = v.buffer(nbytes)
    alignment = vk.vkGetBufferMemoryRequirements(v.device, buffer).alignment
    if start % alignment:
        vk.vkDestroyBuffer(v.device, buffer, None)
        raise exception(errc.invalid, f"offset {start} is not a multiple of the device's "
                        f"buffer alignment, {alignment}")
    vk.vkBindBufferMemory(v.device, buffer, mem.memory, start)
    native = native_memory(v.handle(buffer), 0, nbytes, v.handle(mem.memory))
    a = ExternalAllocation(v, native, ctx, dev, mem.size, parent=mem)
    mem.mapped.add(a)
    _remember(dev, a)
    return ptr(a, 0, np.uint8 if dtype is None else dtype)


def unmap_external_linear_memory(p: ptr, *where: Any) -> None:
    """Ends a mapping of imported memory (as `sycl.free` of the pointer does)."""
    dev, _ = target_of(where)
    a = getattr(p, "allocation", None)
    if not isinstance(a, ExternalAllocation) or a.parent is None or p.byte_offset:
        raise exception(errc.invalid, "expected a pointer map_external_linear_memory "
                        f"returned, got {p!r}")
    if a.device is not dev:
        raise exception(errc.invalid, f"{a!r} was mapped for {a.device!r}, not for {dev!r}")
    a.free()


def release_external_memory(mem: external_mem, *where: Any) -> None:
    """Releases imported memory once the work submitted before is done; its mappings
    must be unmapped first."""
    dev, _ = target_of(where)
    mem = _live(mem, dev)
    if mem.mapped:
        raise exception(errc.invalid, f"{mem!r} still has {len(mem.mapped)} mappings: "
                        "unmap_external_linear_memory them first")
    mem.vulkan.wait_for_work()
    mem._destroy()


def release(dev: device) -> None:
    """Destroys what this module made on `dev` and still holds (the device goes: its
    release, or the process's exit), after the device's work."""
    with _lock:
        held = list(_owned.pop(dev, ()))
    if not held:
        return
    held[0].vulkan.wait_for_work()
    for obj in sorted(held, key=lambda o: isinstance(o, external_mem)):  # mappings first
        if isinstance(obj, ExternalAllocation):
            if not obj.freed:
                obj.freed = True
                obj._destroy()
        elif not obj.released:
            obj._destroy()


@atexit.register
def _release_all() -> None:
    for dev in list(_owned):
        release(dev)
