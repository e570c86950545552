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
`cuda_export` holds the reverse direction (memory CUDA allocates, imported by vksycl);
the driver, the array protocols and the checks of shapes and dtypes here serve both.
"""

from __future__ import annotations

import contextlib
import ctypes
import operator
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from ..types import as_dtype
from .external_memory import ExternalAllocation, export_device_mem_handle, external_mem_handle_type
from .platform import device
from .usm import ptr

_OPAQUE_FD = 1  # CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
_DEDICATED = 1  # CUDA_EXTERNAL_MEMORY_DEDICATED
_KDL_CUDA = 2  # DLPack's kDLCUDA
_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY


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


class Driver:
    """libcuda's functions this module and `cuda_export` call, loaded once."""

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
            code = errc.memory_allocation if result == _OUT_OF_MEMORY else errc.runtime
            raise exception(code, f"CUDA's {name} failed: {what}")

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

    def retain_context(self, ordinal: int) -> ctypes.c_void_p:
        """The primary context of a CUDA device (torch's and cupy's), held until
        `release_context`."""
        context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), self.device(ordinal))
        return context

    def release_context(self, ordinal: int) -> None:
        self.call("cuDevicePrimaryCtxRelease_v2", self.device(ordinal))

    @contextlib.contextmanager
    def current(self, context: ctypes.c_void_p) -> Iterator[None]:
        """`context` current on this thread for the calls inside (memory calls need one)."""
        self.call("cuCtxPushCurrent_v2", context)
        try:
            yield
        finally:
            self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))


_driver: Driver | None = None
_driver_lock = threading.Lock()


def cuda_driver() -> Driver:
    """libcuda, loaded and initialised on first use; errc.feature_not_supported where the
    NVIDIA driver is absent."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = Driver()
        return _driver


def cuda_device_of(dev: device) -> int:
    """The CUDA ordinal of a vksycl device (torch's `cuda:N`); raises
    errc.feature_not_supported where CUDA is absent or sees no such GPU."""
    return cuda_driver().ordinal_of(dev)


def cuda_dtype(dtype: Any) -> np.dtype:
    """The element type of a CUDA array: a number or bool, which DLPack and
    `__cuda_array_interface__` describe (structs and pointers' metadata they cannot)."""
    try:
        dt = as_dtype(dtype)
    except TypeError:
        raise exception(errc.invalid, f"{dtype!r} is not an element type") from None
    if dt.kind not in "biufc" or dt.subdtype is not None or dt.metadata:
        raise exception(errc.invalid, f"CUDA memory of {dt} cannot be handed to torch or "
                        "cupy: give an element type of numbers or bools")
    return dt


def cuda_shape(shape: Any) -> tuple[int, ...]:
    """A shape given as an int or a sequence of them, checked not negative."""
    dims = (shape,) if not isinstance(shape, tuple | list) else tuple(shape)
    try:
        dims = tuple(operator.index(n) for n in dims)
    except TypeError:
        raise exception(errc.invalid, f"shape {shape!r} has a size that is not an integer"
                        ) from None
    if any(n < 0 for n in dims):
        raise exception(errc.invalid, f"shape {dims} has a negative size")
    return dims


class CudaArray:
    """CUDA device memory of one shape and dtype on CUDA device `device_id`, which torch
    and cupy take with no copy (`__cuda_array_interface__`, `__dlpack__`) until it is
    closed."""

    def __init__(self, ordinal: int, dtype: np.dtype, shape: tuple[int, ...], data: int
                 ) -> None:
        self.device_id = ordinal
        self.dtype = dtype
        self.shape = shape
        self.data = data  # the CUDA device address
        self.closed = False

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.closed:
            raise exception(errc.invalid, f"{self!r} was closed")
        # no stream: vksycl's work is done (waited for) before CUDA reads
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data, False),
                "strides": None, "version": 3, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """A DLPack capsule made by cupy or torch over the same memory (no copy); the
        array behind it keeps this object alive."""
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


class cuda_memory(CudaArray):
    """`syclexp.cuda_memory`: vksycl memory as a CUDA device pointer, for torch and cupy
    (through `__cuda_array_interface__` or `__dlpack__`). It holds CUDA's import until
    `close()` (or its collection): close it before freeing the vksycl memory."""

    def __init__(self, driver: Driver, ordinal: int, context: ctypes.c_void_p,
                 imported: ctypes.c_void_p, base: int, p: ptr, shape: tuple[int, ...]) -> None:
        super().__init__(ordinal, p.dtype, shape, base + p.byte_offset)
        self._driver = driver
        self._context = context
        self._imported = imported
        self._base = base
        self.source = p

    def close(self) -> None:
        """Ends CUDA's use of the memory: unmaps and destroys the import."""
        if self.closed:
            return
        self.closed = True
        d = self._driver
        with d.current(self._context):
            d.call("cuMemFree_v2", ctypes.c_ulonglong(self._base))
            d.call("cuDestroyExternalMemory", self._imported)
        d.release_context(self.device_id)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
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
    cuda_dtype(p.dtype)
    shape = (p.count,) if shape is None else cuda_shape(shape)
    if int(np.prod(shape)) * p.dtype.itemsize > a.nbytes - p.byte_offset:
        raise exception(errc.invalid, f"shape {shape} of {p.dtype} does not fit in the "
                        f"{a.nbytes - p.byte_offset} bytes from the pointer")
    d = cuda_driver()
    ordinal = d.ordinal_of(a.device)
    context = d.retain_context(ordinal)
    fd = -1
    try:
        with d.current(context):
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
    except exception:
        if fd >= 0:
            os.close(fd)
        d.release_context(ordinal)
        raise
    return cuda_memory(d, ordinal, context, imported, base.value, p, shape)
