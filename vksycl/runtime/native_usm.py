"""USM over an application's Vulkan memory (`make_usm_from_native`).

An application's VkBuffer, created with SHADER_DEVICE_ADDRESS usage on the VkDevice of a
vksycl device, becomes a device USM pointer: kernels and memory operations reach it by
its device address, bounds-checked against the size the application gives. vksycl owns
none of it: `free` ends vksycl's view and leaves the buffer and its memory alone.
Vulkan cannot be asked a buffer's usage or device, so the application states them, and
vksycl checks them against what it needs and against the device the pointer is for.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import numpy as np

from ..exceptions import errc, exception
from . import usm
from .context import context
from .devices import as_handle
from .external_semaphores import vk_device_of
from .platform import device
from .queue import queue
from .usm import Allocation, alloc, ptr

_SHADER_DEVICE_ADDRESS = 0x00020000  # VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
# the imported allocations of each device, so that releasing the device frees them
_imported: dict[device, weakref.WeakSet[ImportedAllocation]] = {}


class native_memory(NamedTuple):
    """A USM pointer's Vulkan memory (`get_native(ptr)`), or an application's to wrap
    (`make_usm_from_native`): the VkBuffer, the byte offset in it, the bytes from there,
    and the buffer's VkDeviceMemory."""

    buffer: int
    offset: int
    size: int
    memory: int


class ImportedAllocation(Allocation):
    """Device USM over an application's buffer: no allocator and no chunk of vksycl's."""

    __slots__ = ("__weakref__", "buffer", "buffer_offset", "memory")

    def __init__(self, native: native_memory, address: int, ctx: context, dev: device
                 ) -> None:
        self.allocator = None
        self.chunk = None
        self.offset = 0
        self.address = address
        self.nbytes = native.size
        self.kind = alloc.device
        self.context = ctx
        self.device = dev
        self.freed = False
        self.buffer, self.buffer_offset, self.memory = native.buffer, native.offset, \
            native.memory
        if usm.watch is not None:
            usm.watch(self, True)

    def binding(self, byte_offset: int) -> Any:
        raise exception(errc.feature_not_supported, f"{self!r} reaches kernels through its "
                        "device address; a kernel with descriptor bindings cannot bind it "
                        "(bind the application's VkBuffer in the application)")

    def free(self) -> None:
        """Ends vksycl's view; the buffer and its memory stay the application's."""
        if self.freed:
            raise exception(errc.invalid, "memory freed twice")
        self.freed = True
        if usm.watch is not None:
            usm.watch(self, False)

    def __repr__(self) -> str:
        return (f"device USM of {self.nbytes} bytes over the application's VkBuffer "
                f"{self.buffer:#x} (+{self.buffer_offset})")


def make_usm_from_native(native: native_memory | tuple, *where: Any, usage: int,
                         device: Any, dtype: Any = None) -> ptr:
    """A device USM pointer over `native` (buffer, offset, size, memory) of an
    application's VkBuffer, for a queue's device and context or for `(device, context)`.
    `usage` is the VkBufferUsageFlags the buffer was created with (it needs
    SHADER_DEVICE_ADDRESS, and its memory the DEVICE_ADDRESS allocation flag), `device`
    the VkDevice it was created on, which must be the pointer's device's."""
    import vulkan as vk
    dev, ctx = target_of(where)
    buf = native_memory(as_handle(native[0], "buffer"), int(native[1]), int(native[2]),
                        as_handle(native[3], "memory") if native[3] else 0)
    name = f"VkBuffer {buf.buffer:#x}"
    if not int(usage) & _SHADER_DEVICE_ADDRESS:
        raise exception(errc.invalid, f"{name} was created without "
                        "VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT: vksycl's kernels reach "
                        "USM through device addresses")
    vk_device = as_handle(device, "device")
    own = vk_device_of(dev)
    if vk_device != own:
        raise exception(errc.invalid, f"{name} belongs to VkDevice {vk_device:#x}, not to "
                        f"VkDevice {own:#x} of {dev!r}, which would use it")
    if buf.size <= 0 or buf.offset < 0:
        raise exception(errc.invalid, f"{name}: {buf.size} bytes at offset {buf.offset} "
                        "is no memory")
    vk_dev = vk.ffi.cast("VkDevice", own)
    vk_buf = vk.ffi.cast("VkBuffer", buf.buffer)
    room = vk.vkGetBufferMemoryRequirements(vk_dev, vk_buf).size
    if buf.offset + buf.size > room:
        raise exception(errc.invalid, f"{name}: {buf.size} bytes at offset {buf.offset} do "
                        f"not fit in the buffer's {room} bytes")
    info = vk.ffi.new("VkBufferDeviceAddressInfo*", {
        "sType": vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, "buffer": vk_buf})
    # the package's wrapper returns its argument, not the address: the loader's function
    address = vk.lib.vkGetBufferDeviceAddress(vk_dev, info) + buf.offset
    a = ImportedAllocation(buf, address, ctx, dev)
    _imported.setdefault(dev, weakref.WeakSet()).add(a)
    return ptr(a, 0, np.uint8 if dtype is None else dtype)


def abandon(dev: device) -> None:
    """Frees vksycl's views of the application's memory on `dev` (it is released)."""
    for a in _imported.pop(dev, ()):
        a.freed = True


def target_of(where: tuple) -> tuple[device, context]:
    """The device and context named after the memory: a queue, or a device and a context
    (native and external memory alike)."""
    if len(where) == 1 and isinstance(where[0], queue):
        return where[0].get_device(), where[0].get_context()
    if len(where) == 2 and isinstance(where[0], device) and isinstance(where[1], context):
        if not where[1].has_device(where[0]):
            raise exception(errc.invalid, "the device is not in the context")
        return where[0], where[1]
    got = ", ".join(type(w).__name__ for w in where) or "nothing"
    raise exception(errc.invalid, "name the memory's queue, or its device and context, "
                    f"after it; got {got}")


