"""Unified shared memory on Vulkan: allocations, and pointers into them.

A pointer is a device address (what kernels receive, and what memory holds when a
pointer is stored); on the host it also keeps the allocation it points into, for bounds
checks, numpy views and `free`, and its element type, for arithmetic and indexing.
"""

from __future__ import annotations

import enum
import typing
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from ..types import as_dtype, pointee, pointer_dtype
from .allocator import Allocator, Chunk
from .engine import Buffer


class alloc(enum.Enum):
    host = "host"
    device = "device"
    shared = "shared"
    unknown = "unknown"


class Allocation:
    """Memory from one `malloc_*` call: `nbytes` at device address `address`, inside a
    chunk of the device's caching allocator."""

    __slots__ = ("address", "allocator", "chunk", "context", "device", "freed", "kind",
                 "nbytes", "offset")

    def __init__(self, allocator: Allocator, chunk: Chunk, offset: int, nbytes: int,
                 kind: alloc, context: Any, device: Any) -> None:
        self.allocator = allocator
        self.chunk = chunk
        self.offset = offset  # of the allocation in its chunk (aligned allocations)
        self.address = chunk.address + offset
        self.nbytes = nbytes
        self.kind = kind
        self.context = context
        self.device = device
        self.freed = False
        chunk.owner = self

    @property
    def host_accessible(self) -> bool:
        return self.kind is not alloc.device

    def host_bytes(self) -> np.ndarray:
        """The allocation's bytes as one live numpy view (host and shared kinds)."""
        if not self.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host")
        self.check_live()
        at = self.chunk.offset + self.offset
        return self.chunk.block.buffer.host[at: at + self.nbytes]

    def binding(self, byte_offset: int) -> tuple[Buffer, int, int]:
        """(buffer, offset, size) binding the bytes from `byte_offset` to the end, for
        kernels with descriptor bindings."""
        self.check_live()
        return (self.chunk.block.buffer, self.chunk.offset + self.offset + byte_offset,
                self.nbytes - byte_offset)

    def check_live(self) -> None:
        if self.freed:
            raise exception(errc.invalid, "the pointer refers to memory that was freed")

    def free(self) -> None:
        if self.freed:
            raise exception(errc.invalid, "memory freed twice")
        self.freed = True
        self.allocator.free(self.chunk)


class ptr:
    """A typed USM pointer: arithmetic moves the byte offset by whole elements."""

    __slots__ = ("allocation", "byte_offset", "dtype")

    def __init__(self, allocation: Allocation, byte_offset: int = 0, dtype: Any = np.uint8):
        self.allocation = allocation
        self.byte_offset = byte_offset
        self.dtype = dtype if isinstance(dtype, np.dtype) else as_dtype(dtype)

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

    @property
    def address(self) -> int:
        """The device address: what a kernel receives, and what memory stores."""
        return self.allocation.address + self.byte_offset

    def astype(self, dtype: Any) -> ptr:
        """The same address viewed as another element type (a C++ pointer cast)."""
        return ptr(self.allocation, self.byte_offset, dtype)

    @property
    def count(self) -> int:
        """Whole elements from this pointer to the end of its allocation."""
        return max(0, (self.allocation.nbytes - self.byte_offset) // self.dtype.itemsize)

    # -- host access ---------------------------------------------------------------------
    def _element(self, index: int) -> np.ndarray:
        """The bytes of element `index`, checked."""
        alloc_ = self.allocation
        if not alloc_.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host; "
                            "copy it with queue.memcpy or use malloc_shared")
        size = self.dtype.itemsize
        offset = self.byte_offset + int(index) * size
        if offset < 0 or offset + size > alloc_.nbytes:
            raise exception(errc.invalid, f"index {index} is outside the allocation "
                            f"({alloc_.nbytes} bytes, pointer at byte {self.byte_offset})")
        return alloc_.host_bytes()[offset: offset + size]

    def __getitem__(self, index: int) -> Any:
        value = self._element(index).view(self.dtype)[0]
        target = pointee(self.dtype)
        if target is None:
            return value
        return self.allocation.context._pointer_at(int(value), target)

    def __setitem__(self, index: int, value: Any) -> None:
        if pointee(self.dtype) is not None:
            value = _stored_address(value)
        self._element(index).view(self.dtype)[0] = value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self.__array__(), dtype=dtype)
        raw = self.allocation.host_bytes()
        view = raw[self.byte_offset: self.byte_offset + self.count * self.dtype.itemsize]
        view = view.view(self.dtype)
        return view if dtype is None else view.astype(dtype, copy=False)


def _stored_address(value: Any) -> int:
    """What memory holds for a pointer: its device address, 0 for None."""
    if value is None:
        return 0
    if isinstance(value, ptr):
        return value.address
    raise exception(errc.invalid, f"a pointer element holds a sycl.ptr or None, got "
                    f"{type(value).__name__}")


class PointerType:
    """`sycl.ptr[T]`: the annotation of a pointer parameter with element type T, and the
    element type of memory that holds pointers (its `dtype` there is `storage`)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype | typing.TypeVar) -> None:
        self.dtype = dtype

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PointerType) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("ptr", self.dtype))

    def __repr__(self) -> str:
        return f"sycl.ptr[{self.dtype}]"

    @property
    def storage(self) -> np.dtype:
        """The dtype of such a pointer stored in memory."""
        return pointer_dtype(self.dtype)
