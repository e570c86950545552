"""Unified shared memory on Vulkan: allocations, and pointers into them.

A pointer is a device address (what kernels receive, and what memory holds when a
pointer is stored); on the host it also keeps the allocation it points into, for bounds
checks, numpy views and `free`, and its element type, for arithmetic and indexing.
"""

from __future__ import annotations

import enum
import threading
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from ..types import as_dtype, pointee, pointer_dtype, struct_class, typed_view
from .allocator import Allocator, Chunk
from .engine import Buffer


class alloc(enum.Enum):
    host = "host"
    device = "device"
    shared = "shared"
    unknown = "unknown"


# told of each allocation made (True) and freed (False): checked mode's table of live
# allocations (`bounds`), None otherwise
watch: Callable[[Allocation, bool], None] | None = None


class Allocation:
    """Memory from one `malloc_*` call: `nbytes` at device address `address`, inside a
    chunk of the device's caching allocator."""

    __slots__ = ("address", "allocator", "chunk", "context", "device", "freed", "kind",
                 "nbytes", "offset", "properties")

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
        self.properties: tuple = ()  # the property_list of its malloc_* call
        chunk.owner = self
        if watch is not None:
            watch(self, True)

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
        if watch is not None:
            watch(self, False)
        self.allocator.free(self.chunk)

    def __repr__(self) -> str:
        return f"{self.kind.value} USM of {self.nbytes} bytes at {self.address:#x}"


def other_device(what: str, a: Allocation, device: Any,
                 hint: str = "copy it between the devices with memcpy on a queue of either"
                 ) -> exception:
    """errc.invalid for memory of one device used on another: each device (each Vulkan
    logical device) reaches only memory allocated through it, host USM included."""
    return exception(errc.invalid, f"{what}: {a!r} was allocated for {a.device!r}, not for "
                     f"{device!r}, where it is used; {hint}")


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

    def _span(self, index: slice) -> np.ndarray:
        """The elements a slice selects, as a numpy view of host-accessible memory (the
        elements from this pointer to the end of its allocation, as `__array__`)."""
        if not self.allocation.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host; "
                            "copy it with queue.memcpy or use malloc_shared")
        return self.__array__()[index]

    def __getitem__(self, index: int | slice) -> Any:
        if type(index) is slice:
            return self._span(index)
        _check_index(index)
        return _loaded(typed_view(self._element(index), self.dtype)[0], self.dtype,
                       self.allocation.context)

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if type(index) is slice:
            self._store_span(index, value)
            return
        _check_index(index)
        typed_view(self._element(index), self.dtype)[0] = stored(value, self.dtype)

    def _store_span(self, index: slice, value: Any) -> None:
        """`p[a:b] = values`: numbers as numpy assigns them (one value to all, or as many
        as the slice selects); struct elements one by one, as `p[i] = v` stores them."""
        view = self._span(index)
        if self.dtype.fields is None:
            try:
                view[...] = value
            except (TypeError, ValueError) as ex:
                raise exception(errc.invalid, f"cannot store {type(value).__name__} in "
                                f"{len(view)} {self.dtype} elements: {ex}") from None
            return
        positions = range(*index.indices(self.count))
        values = list(value) if isinstance(value, list | tuple | np.ndarray) else None
        if values is None or len(values) != len(positions):
            raise exception(errc.invalid, f"a slice of {len(positions)} struct elements "
                            "takes a sequence of as many values")
        for k, v in zip(positions, values, strict=True):
            self[k] = v

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self.__array__(), dtype=dtype)
        raw = self.allocation.host_bytes()
        view = raw[self.byte_offset: self.byte_offset + self.count * self.dtype.itemsize]
        view = typed_view(view, self.dtype)
        return view if dtype is None else view.astype(dtype, copy=False)

    # DLPack, so host and shared USM goes to libraries as it is (mpi4py's buffers,
    # torch.from_dlpack): the allocation's own memory from this pointer on, no copy
    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.__array__().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if not self.allocation.host_accessible:
            raise exception(errc.invalid, "device USM is not accessible from the host; "
                            "copy it with queue.memcpy or use malloc_shared")
        return (1, 0)  # kDLCPU: host memory


def _check_index(index: Any) -> None:
    if not isinstance(index, int | np.integer) or isinstance(index, bool | np.bool_):
        raise exception(errc.invalid, "a USM pointer is indexed by an integer or a slice, "
                        f"got {type(index).__name__}")


def _loaded(raw: Any, dtype: np.dtype, context: Any) -> Any:
    """A host value of memory of `dtype`: a `sycl.ptr` (or None) for a pointer, an
    instance of the struct class for a struct, each field loaded so."""
    target = pointee(dtype)
    if target is not None:
        return context._pointer_at(int(raw), target)
    if dtype.names is None:
        return raw
    cls = struct_class(dtype)
    if cls is None:
        return raw  # a plain numpy structured type: its record
    obj = cls.__new__(cls)
    for name in dtype.names:
        field = dtype.fields[name][0]
        value = raw[name]
        if field.subdtype is not None:
            value = np.array(value) if pointee(field.base) is None and \
                field.base.names is None else [_loaded(v, field.base, context)
                                               for v in np.ravel(value)]
        else:
            value = _loaded(value, field, context)
        setattr(obj, name, value)
    return obj


def stored(value: Any, dtype: np.dtype) -> Any:
    """What memory of `dtype` holds for a host value: a pointer's address, a struct's
    fields (from a struct instance, or any object with those attributes) as a record."""
    if pointee(dtype) is not None:
        return _stored_address(value)
    if dtype.names is None or isinstance(value, np.void | tuple):
        return value
    record = np.zeros((), dtype)
    for name in dtype.names:
        field = dtype.fields[name][0]
        try:
            v = getattr(value, name)
        except AttributeError:
            cls = struct_class(dtype)
            raise exception(errc.invalid, f"storing a {type(value).__name__} into memory of "
                            f"{dtype if cls is None else cls.__name__}: it has no field "
                            f"'{name}'") from None
        if field.subdtype is not None and (pointee(field.base) is not None or
                                           field.base.names is not None):
            record[name] = [stored(x, field.base) for x in v]
        else:
            record[name] = stored(v, field)
    return record


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


def release_collected(release: Callable[[], None], name: str) -> None:
    """Runs the release of an object collected unreleased, on a thread of its own when it
    was collected on one of the runtime's (named vksycl-...), which may be running the
    very work the release waits for, or on a thread `threading` does not know (one still
    starting: the thread starting it waits for it, and may hold the locks the release
    takes, a command group's over its buffers among them)."""
    current = threading.current_thread()
    if current.name.startswith("vksycl-") or isinstance(current, threading._DummyThread):
        threading.Thread(target=release, daemon=True, name=name).start()
    else:
        release()
