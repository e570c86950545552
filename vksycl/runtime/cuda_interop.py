"""Exportable device memory seen by CUDA without a copy, so that torch and cupy read and
write what vksycl's kernels write, and the reverse.

CUDA imports Vulkan memory from an opaque file descriptor (`cuImportExternalMemory`) on
the GPU whose UUID is the Vulkan device's, and maps it as a CUDA device pointer. Neither
cupy nor torch binds external memory import, so this module calls the CUDA driver API
(libcuda, which ships with the NVIDIA driver, whatever toolkit is installed) through
ctypes. The view has `__cuda_array_interface__`, and `__dlpack__` through cupy or torch,
whichever is installed, so `torch.from_dlpack(view)` and `cupy.from_dlpack(view)` take it.
The two APIs do not see each other's work: wait for vksycl's (`q.wait()`) before CUDA
reads, and synchronise CUDA (`torch.cuda.synchronize()`) before vksycl's kernels read.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from .external_memory import ExternalAllocation, export_device_mem_handle, external_mem_handle_type
from .platform import device
from .usm import ptr

_OPAQUE_FD = 1  # CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
_DEDICATED = 1  # CUDA_EXTERNAL_MEMORY_DEDICATED
_KDL_CUDA = 2  # DLPack's kDLCUDA


class _Win32(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_void_p), ("name", ctypes.c_void_p)]


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", _Win32), ("nvSciBufObject", ctypes.c_void_p)]


class MemoryHandleDesc(ctypes.Structure):
    """CUDA_EXTERNAL_MEMORY_HANDLE_DESC."""

    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("size", ctypes.c_ulonglong),
                ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class BufferDesc(ctypes.Structure):
    """CUDA_EXTERNAL_MEMORY_BUFFER_DESC."""

    _fields_ = [("offset", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong),
                ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class _Driver:
    """libcuda's functions this module calls, loaded once."""

    def __init__(self) -> None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            raise exception(errc.feature_not_supported, "CUDA is not available here: the "
                            "NVIDIA driver's libcuda.so.1 was not found") from None
        self.lib = lib
        self.call("cuInit", ctypes.c_uint(0))

    def call(self, name: str, *args: Any) -> None:
        result = getattr(self.lib, name)(*args)
        if result:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(result, ctypes.byref(text))
            what = text.value.decode() if text.value else f"CUresult {result}"
            raise exception(errc.runtime, f"CUDA's {name} failed: {what}")

    def device(self, ordinal: int) -> ctypes.c_int:
        """The CUdevice of a CUDA ordinal."""
        handle = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(handle), ctypes.c_int(ordinal))
        return handle

    def ordinal_of(self, dev: device) -> int:
        """The CUDA device that is the Vulkan device (the same UUID)."""
        count = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(count))
        uuid = (ctypes.c_char * 16)()
        for i in range(count.value):
            self.call("cuDeviceGetUuid", uuid, self.device(i))
            if bytes(uuid) == dev.vulkan.device_uuid:
                return i
        raise exception(errc.feature_not_supported, f"no CUDA device is {dev!r} (Vulkan "
                        f"device UUID {dev.vulkan.device_uuid.hex()}); CUDA sees {count.value}")


_driver: _Driver | None = None
_driver_lock = threading.Lock()


def _cuda() -> _Driver:
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Driver()
        return _driver


def cuda_device_of(dev: device) -> int:
    """The CUDA ordinal of a vksycl device (torch's `cuda:N`); raises
    errc.feature_not_supported where CUDA is absent or sees no such GPU."""
    return _cuda().ordinal_of(dev)


class cuda_memory:
    """`syclexp.cuda_memory`: vksycl memory as a CUDA device pointer, for torch and cupy
    (through `__cuda_array_interface__` or `__dlpack__`). It holds CUDA's import until
    `close()` (or its collection): close it before freeing the vksycl memory."""

    def __init__(self, driver: _Driver, ordinal: int, context: ctypes.c_void_p,
                 imported: ctypes.c_void_p, base: int, p: ptr, shape: tuple[int, ...]) -> None:
        self._driver = driver
        self._context = context
        self._imported = imported
        self._base = base
        self.device_id = ordinal
        self.dtype = p.dtype
        self.shape = shape
        self.data = base + p.byte_offset  # the CUDA device address of the pointer
        self.source = p

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._imported is None:
            raise exception(errc.invalid, "the CUDA view was closed")
        # no stream: vksycl's work is done (waited for) before CUDA reads
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data, False),
                "strides": None, "version": 3, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """A DLPack capsule made by cupy or torch over the same memory (no copy); the
        array behind it keeps this view alive."""
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            with cupy.cuda.Device(self.device_id):
                return cupy.asarray(self).__dlpack__(**kwargs)
        try:
            import torch
        except ImportError:
            raise exception(errc.feature_not_supported, "a DLPack capsule of CUDA memory "
                            "needs cupy or torch; neither is installed (use "
                            "__cuda_array_interface__)") from None
        return torch.as_tensor(self, device=f"cuda:{self.device_id}").__dlpack__(**kwargs)

    def close(self) -> None:
        """Ends CUDA's use of the memory: unmaps and destroys the import."""
        imported, self._imported = self._imported, None
        if imported is None:
            return
        d = self._driver
        d.call("cuCtxPushCurrent_v2", self._context)
        try:
            d.call("cuMemFree_v2", ctypes.c_ulonglong(self._base))
            d.call("cuDestroyExternalMemory", imported)
        finally:
            d.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
        d.call("cuDevicePrimaryCtxRelease_v2", d.device(self.device_id))

    def __del__(self) -> None:
        if getattr(self, "_imported", None) is not None:
            with contextlib.suppress(exception):  # at exit CUDA may be gone already
                self.close()

    def __repr__(self) -> str:
        return (f"<syclexp.cuda_memory {self.dtype} {self.shape} at {self.data:#x} on "
                f"cuda:{self.device_id}>")


def cuda_view(p: ptr, shape: tuple[int, ...] | int | None = None) -> cuda_memory:
    """Exportable device USM (`alloc_exportable_device_mem`) from `p` on, as CUDA device
    memory on the same GPU, with `shape` (default: every element to the end)."""
    a = getattr(p, "allocation", None)
    if not isinstance(p, ptr) or not isinstance(a, ExternalAllocation) or not a.exportable:
        raise exception(errc.invalid, "cuda_view takes memory from "
                        f"syclexp.alloc_exportable_device_mem, not {p!r}")
    a.check_live()
    if shape is None:
        shape = (p.count,)
    shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    if int(np.prod(shape)) * p.dtype.itemsize > a.nbytes - p.byte_offset:
        raise exception(errc.invalid, f"shape {shape} of {p.dtype} does not fit in the "
                        f"{a.nbytes - p.byte_offset} bytes from the pointer")
    d = _cuda()
    ordinal = d.ordinal_of(a.device)
    cu_device = d.device(ordinal)
    context = ctypes.c_void_p()
    d.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), cu_device)
    fd = -1
    try:
        d.call("cuCtxPushCurrent_v2", context)
        try:
            fd = export_device_mem_handle(ptr(a), external_mem_handle_type.opaque_fd,
                                          a.device, a.context)
            desc = MemoryHandleDesc(type=_OPAQUE_FD, size=a.allocation_size,
                                    flags=_DEDICATED if a.dedicated else 0)
            desc.handle.fd = fd
            imported = ctypes.c_void_p()
            d.call("cuImportExternalMemory", ctypes.byref(imported), ctypes.byref(desc))
            fd = -1  # CUDA owns it now
            base = ctypes.c_ulonglong()
            mapping = BufferDesc(offset=0, size=a.allocation_size)
            try:
                d.call("cuExternalMemoryGetMappedBuffer", ctypes.byref(base), imported,
                       ctypes.byref(mapping))
            except exception:
                d.call("cuDestroyExternalMemory", imported)
                raise
        finally:
            d.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
    except exception:
        if fd >= 0:
            os.close(fd)
        d.call("cuDevicePrimaryCtxRelease_v2", cu_device)
        raise
    return cuda_memory(d, ordinal, context, imported, base.value, p, shape)
