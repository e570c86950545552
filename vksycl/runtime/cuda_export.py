"""Memory that CUDA allocates and owns, imported by vksycl with no copy: the reverse of
`cuda_view`, for an application whose tensors live in CUDA and whose vksycl kernels
should read and write them in place.

CUDA allocates with its virtual memory management API (`cuMemCreate`) on the GPU whose
UUID is the Vulkan device's, asking for memory it can export as a POSIX file descriptor;
it maps the memory at an address range it reserves, readable and writable by that GPU, so
that torch and cupy use it; and exports the descriptor, which vksycl imports as it does
any opaque fd (`import_external_memory`, `map_external_linear_memory`), so that kernels
and memory operations reach it as bounds-checked device USM. Closing ends vksycl's import
first, once vksycl's work on the device is done, and CUDA's mapping, address range and
allocation after it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from .cuda_interop import CudaArray, Driver, cuda_driver, cuda_dtype, cuda_shape
from .external_memory import (
    external_mem,
    external_mem_descriptor,
    external_mem_handle_type,
    import_external_memory,
    map_external_linear_memory,
    release_external_memory,
    resource_fd,
    unmap_external_linear_memory,
)
from .native_usm import target_of
from .usm import ptr, release_collected

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MINIMUM = 0  # CU_MEM_ALLOC_GRANULARITY_MINIMUM
# CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and
# CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
_NEEDED = ((102, "virtual memory management (cuMemCreate)"),
           (103, "export of memory as POSIX file descriptors"))


class Location(ctypes.Structure):
    """CUmemLocation."""

    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AllocationProp(ctypes.Structure):
    """CUmemAllocationProp."""

    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class AccessDesc(ctypes.Structure):
    """CUmemAccessDesc."""

    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


class cuda_allocation(CudaArray):
    """`syclexp.cuda_allocation`: device memory CUDA allocated and owns, which vksycl
    imported. `ptr` is vksycl's USM pointer to it (kernels and memory operations, bounds
    checked to the size asked for); torch and cupy take it as CUDA memory
    (`__cuda_array_interface__`, `__dlpack__`). It holds both until `close()` (or its
    collection): keep it while vksycl uses `ptr`."""

    def __init__(self, driver: Driver, ordinal: int, context: ctypes.c_void_p, handle: int,
                 base: int, size: int, imported: external_mem, p: ptr,
                 shape: tuple[int, ...]) -> None:
        super().__init__(ordinal, p.dtype, shape, base)
        self._driver = driver
        self._context = context
        self._handle = handle
        self._imported = imported
        self.allocation_size = size  # CUDA's, a multiple of its allocation granularity
        self.ptr = p

    def close(self) -> None:
        """Ends vksycl's import (after the work submitted to its device), then CUDA's
        mapping and allocation. Arrays torch or cupy made over it must be gone."""
        if self.closed:
            return
        self.closed = True
        a = self.ptr.allocation
        try:
            if not a.freed:  # the application may have freed it, or released the device
                unmap_external_linear_memory(self.ptr, a.device, a.context)
            if not self._imported.released:
                release_external_memory(self._imported, a.device, a.context)
        finally:
            d = self._driver
            with d.current(self._context):
                _release(d, self._handle, self.data, self.allocation_size)
            d.release_context(self.device_id)

    def __del__(self) -> None:
        """Collected open: closed as `close()` would, but not on a thread of the
        runtime's own, which may be running the work the close waits for; at exit the
        device's release and the process's end free it all."""
        if getattr(self, "closed", True) or sys.is_finalizing():
            return
        release_collected(self._close_quietly, "cuda-allocation-close")

    def _close_quietly(self) -> None:
        with contextlib.suppress(exception):  # nobody is left to hear of a failure
            self.close()

    def __repr__(self) -> str:
        return (f"<syclexp.cuda_allocation {self.dtype} {self.shape} at {self.data:#x} on "
                f"cuda:{self.device_id}>")


def _release(d: Driver, handle: int, base: int, size: int) -> None:
    """Unmaps CUDA's memory, frees its address range and releases the allocation."""
    d.call("cuMemUnmap", ctypes.c_ulonglong(base), ctypes.c_size_t(size))
    d.call("cuMemAddressFree", ctypes.c_ulonglong(base), ctypes.c_size_t(size))
    d.call("cuMemRelease", ctypes.c_ulonglong(handle))


def _check_device(d: Driver, ordinal: int) -> ctypes.c_int:
    """The CUdevice, checked able to allocate exportable memory."""
    cu_device = d.device(ordinal)
    value = ctypes.c_int()
    for attribute, what in _NEEDED:
        d.call("cuDeviceGetAttribute", ctypes.byref(value), ctypes.c_int(attribute), cu_device)
        if not value.value:
            raise exception(errc.feature_not_supported, f"CUDA device {ordinal} lacks {what}")
    return cu_device


def _allocate(d: Driver, cu_device: ctypes.c_int, nbytes: int, undo: contextlib.ExitStack
              ) -> tuple[int, int, int, int]:
    """CUDA memory of at least `nbytes`, mapped read-write for the device, and a new file
    descriptor of it: (handle, address, size, fd). `undo` releases what was made."""
    here = Location(type=_ON_DEVICE, id=cu_device.value)
    prop = AllocationProp(type=_PINNED, requestedHandleTypes=_POSIX_FD, location=here)
    granularity = ctypes.c_size_t()
    d.call("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop),
           ctypes.c_int(_GRANULARITY_MINIMUM))
    size = -(-nbytes // granularity.value) * granularity.value
    handle = ctypes.c_ulonglong()
    d.call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop),
           ctypes.c_ulonglong(0))
    undo.callback(d.call, "cuMemRelease", handle)
    base = ctypes.c_ulonglong()
    d.call("cuMemAddressReserve", ctypes.byref(base), ctypes.c_size_t(size),
           ctypes.c_size_t(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
    undo.callback(d.call, "cuMemAddressFree", base, ctypes.c_size_t(size))
    d.call("cuMemMap", base, ctypes.c_size_t(size), ctypes.c_size_t(0), handle,
           ctypes.c_ulonglong(0))
    undo.callback(d.call, "cuMemUnmap", base, ctypes.c_size_t(size))
    access = AccessDesc(location=here, flags=_READ_WRITE)
    d.call("cuMemSetAccess", base, ctypes.c_size_t(size), ctypes.byref(access),
           ctypes.c_size_t(1))
    fd = ctypes.c_int(-1)
    d.call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, ctypes.c_int(_POSIX_FD),
           ctypes.c_ulonglong(0))
    return handle.value, base.value, size, fd.value


def cuda_exportable(shape: tuple[int, ...] | int, *where: Any, dtype: Any = None
                    ) -> cuda_allocation:
    """CUDA device memory of `shape` elements of `dtype` (default: `shape` bytes) on the
    GPU of a queue's device (or a device and a context), imported by vksycl: its `ptr`
    for vksycl's kernels, itself for torch and cupy."""
    dev, ctx = target_of(where)
    dt = cuda_dtype(np.uint8 if dtype is None else dtype)
    dims = cuda_shape(shape)
    nbytes = math.prod(dims) * dt.itemsize
    if nbytes == 0:
        raise exception(errc.invalid, f"CUDA memory of shape {dims} holds 0 bytes")
    d = cuda_driver()
    ordinal = d.ordinal_of(dev)
    cu_device = _check_device(d, ordinal)
    context = d.retain_context(ordinal)
    try:
        with d.current(context), contextlib.ExitStack() as undo:
            handle, base, size, fd = _allocate(d, cu_device, nbytes, undo)
            try:
                mem = import_external_memory(external_mem_descriptor(
                    resource_fd(fd), external_mem_handle_type.opaque_fd, size), dev, ctx)
            except BaseException:
                with contextlib.suppress(OSError):  # lavapipe closes what it refuses
                    os.close(fd)  # the descriptor stays ours where the import fails
                raise
            undo.callback(release_external_memory, mem, dev, ctx)
            p = map_external_linear_memory(mem, 0, nbytes, dev, ctx, dtype=dt)
            undo.pop_all()
    except BaseException:
        d.release_context(ordinal)
        raise
    return cuda_allocation(d, ordinal, context, handle, base, size, mem, p, dims)
