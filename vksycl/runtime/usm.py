"""Unified shared memory on Vulkan: allocations of buffers, and fat pointers into them.

Kompute gives buffers no device address, so a pointer is (allocation, byte offset, element
type). An allocation larger than the device's `maxStorageBufferRange` is a list of chunks,
each a buffer a shader can bind; memory operations split at chunk boundaries.
"""

from __future__ import annotations

import enum
import threading
import typing
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import errc, exception
from ..types import as_dtype

if TYPE_CHECKING:
    from .engine import Buffer, Engine


class alloc(enum.Enum):
    host = "host"
    device = "device"
    shared = "shared"
    unknown = "unknown"


_CHUNK_ALIGN = 256
_MAX_CHUNK = 1 << 31  # keeps every byte offset inside a chunk in 32 bits with headroom


class Allocation:
    """Memory from one `malloc_*` call: one or more buffers of one device."""

    def __init__(self, engine: Engine, context: Any, device: Any, nbytes: int, kind: alloc,
                 chunk_limit: int) -> None:
        self.engine = engine
        self.context = context
        self.device = device
        self.nbytes = nbytes
        self.kind = kind
        self.freed = False
        size = max(nbytes, 1)
        self.chunk_size = min(_MAX_CHUNK, chunk_limit // _CHUNK_ALIGN * _CHUNK_ALIGN)
        host_visible = kind is not alloc.device
        self.chunks: list[Buffer] = []
        try:
            for start in range(0, size, self.chunk_size):
                self.chunks.append(engine.buffer(min(self.chunk_size, size - start), host_visible))
        except exception:
            for b in self.chunks:
                engine.release(b)
            raise

    @property
    def host_accessible(self) -> bool:
        return self.kind is not alloc.device

    def host_bytes(self) -> np.ndarray:
        """The allocation's bytes as one live numpy view (host and shared kinds)."""
        if not self.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host")
        self.check_live()
        if len(self.chunks) > 1:
            raise exception(
                errc.feature_not_supported,
                f"a host view of {self.nbytes} bytes would span {len(self.chunks)} Vulkan "
                f"buffers (this device binds at most {self.chunk_size} bytes); "
                "access it by element or copy it with queue.memcpy",
            )
        return self.chunks[0].host[: self.nbytes]

    def kernel_buffer(self) -> Buffer:
        """The one buffer a kernel binds; an allocation of several chunks cannot be bound."""
        self.check_live()
        if len(self.chunks) > 1:
            raise exception(
                errc.kernel_argument,
                f"a kernel argument points into an allocation of {self.nbytes} bytes, larger "
                f"than this device's maxStorageBufferRange ({self.chunk_size} bytes); split it "
                "into smaller allocations",
            )
        return self.chunks[0]

    def locate(self, offset: int) -> tuple[Buffer, int]:
        """The chunk holding byte `offset`, and the offset inside it."""
        index, local = divmod(offset, self.chunk_size)
        return self.chunks[index], local

    def check_live(self) -> None:
        if self.freed:
            raise exception(errc.invalid, "the pointer refers to memory that was freed")

    def free(self) -> None:
        if self.freed:
            raise exception(errc.invalid, "memory freed twice")
        self.freed = True
        for b in self.chunks:
            self.engine.release(b)
        self.chunks = []


class ptr:
    """A typed USM pointer: arithmetic moves the byte offset by whole elements."""

    __slots__ = ("allocation", "byte_offset", "dtype")

    def __init__(self, allocation: Allocation, byte_offset: int = 0, dtype: Any = np.uint8):
        self.allocation = allocation
        self.byte_offset = byte_offset
        self.dtype = as_dtype(dtype)

    def __class_getitem__(cls, element_type: Any) -> PointerType:
        # A TypeVar stays one: `sycl.ptr[T]` in a template kernel's annotations.
        if isinstance(element_type, typing.TypeVar):
            return PointerType(element_type)
        return PointerType(as_dtype(element_type))

    # -- pointer arithmetic --------------------------------------------------------------
    def __add__(self, n: int) -> ptr:
        if not isinstance(n, int | np.integer):
            return NotImplemented
        return ptr(self.allocation, self.byte_offset + int(n) * self.dtype.itemsize, self.dtype)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, ptr):
            if other.allocation is not self.allocation:
                raise exception(errc.invalid, "subtracting pointers into different allocations")
            return (self.byte_offset - other.byte_offset) // self.dtype.itemsize
        if isinstance(other, int | np.integer):
            return self + (-int(other))
        return NotImplemented

    def _key(self, other: ptr) -> tuple[int, int]:
        return (id(self.allocation), self.byte_offset), (id(other.allocation), other.byte_offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ptr):
            return NotImplemented
        return self.allocation is other.allocation and self.byte_offset == other.byte_offset

    def __lt__(self, other: ptr) -> bool:
        a, b = self._key(other)
        return a < b

    def __le__(self, other: ptr) -> bool:
        a, b = self._key(other)
        return a <= b

    def __gt__(self, other: ptr) -> bool:
        a, b = self._key(other)
        return a > b

    def __ge__(self, other: ptr) -> bool:
        a, b = self._key(other)
        return a >= b

    def __hash__(self) -> int:
        return hash((id(self.allocation), self.byte_offset))

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return (f"<sycl.ptr {self.allocation.kind.value} {self.dtype} "
                f"+{self.byte_offset} of {self.allocation.nbytes} bytes>")

    def astype(self, dtype: Any) -> ptr:
        """The same address viewed as another element type (a C++ pointer cast)."""
        return ptr(self.allocation, self.byte_offset, dtype)

    @property
    def count(self) -> int:
        """Whole elements from this pointer to the end of its allocation."""
        return max(0, (self.allocation.nbytes - self.byte_offset) // self.dtype.itemsize)

    # -- host access ---------------------------------------------------------------------
    def _element(self, index: int) -> tuple[np.ndarray, int]:
        alloc_ = self.allocation
        if not alloc_.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host; "
                            "copy it with queue.memcpy or use malloc_shared")
        alloc_.check_live()
        size = self.dtype.itemsize
        offset = self.byte_offset + int(index) * size
        if offset < 0 or offset + size > alloc_.nbytes:
            raise exception(errc.invalid, f"index {index} is outside the allocation "
                            f"({alloc_.nbytes} bytes, pointer at byte {self.byte_offset})")
        buf, local = alloc_.locate(offset)
        if local + size > alloc_.chunk_size:
            raise exception(errc.feature_not_supported, "element straddles two Vulkan buffers")
        return buf.host, local

    def __getitem__(self, index: int) -> Any:
        host, local = self._element(index)
        return host[local: local + self.dtype.itemsize].view(self.dtype)[0]

    def __setitem__(self, index: int, value: Any) -> None:
        host, local = self._element(index)
        host[local: local + self.dtype.itemsize].view(self.dtype)[0] = value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self.__array__(), dtype=dtype)
        raw = self.allocation.host_bytes()
        view = raw[self.byte_offset: self.byte_offset + self.count * self.dtype.itemsize]
        view = view.view(self.dtype)
        return view if dtype is None else view.astype(dtype, copy=False)


class PointerType:
    """`sycl.ptr[T]`: the annotation of a pointer parameter with element type T."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype | typing.TypeVar) -> None:
        self.dtype = dtype

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PointerType) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("ptr", self.dtype))

    def __repr__(self) -> str:
        return f"sycl.ptr[{self.dtype}]"


class Registry:
    """Live allocations of one context, so pointers from elsewhere are recognised."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, Allocation] = {}

    def add(self, a: Allocation) -> None:
        with self._lock:
            self._live[id(a)] = a

    def remove(self, a: Allocation) -> None:
        with self._lock:
            self._live.pop(id(a), None)

    def owns(self, a: Allocation) -> bool:
        return self._live.get(id(a)) is a
