"""The USM allocation functions: `malloc_device`, `malloc_host`, `malloc_shared`,
`aligned_alloc_*`, `malloc`, `free`, `get_pointer_type`, `get_pointer_device`.

Each takes SYCL's argument orders: (count, type, queue), (count, type, device, context),
and the untyped (num_bytes, queue) / (num_bytes, device, context).
"""

from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from ..properties import Property, promote_local, promote_private
from ..types import as_dtype
from .allocator import MIN_ALIGN
from .context import context, scheduler_for
from .platform import device
from .queue import queue
from .scheduler import Scheduler
from .usm import Allocation, PointerType, alloc, ptr

_BYTES = np.dtype(np.uint8)
# what an allocation's property_list may hold
_ALLOCATION_PROPERTIES = (promote_private, promote_local)


def _where(args: tuple) -> tuple[np.dtype, Any, context, Scheduler]:
    """(element type, device, context, the device's scheduler) from the arguments after
    the count."""
    if len(args) == 2 and type(args[1]) is queue:  # the common (count, type, queue)
        q = args[1]
        return _element_type(args[0]), q._device, q._context, q._scheduler
    dtype = _BYTES
    if args and not isinstance(args[0], queue | context | device):
        dtype, args = _element_type(args[0]), args[1:]
    if len(args) == 1 and isinstance(args[0], queue):
        q = args[0]
        return dtype, q._device, q._context, q._scheduler
    if len(args) == 2 and isinstance(args[0], device) and isinstance(args[1], context):
        dev, ctx = args
        if not ctx.has_device(dev):
            raise exception(errc.invalid, "the device is not in the context")
        return dtype, dev, ctx, scheduler_for(dev)
    raise exception(errc.invalid, "expected (count, [type,] queue) or "
                    "(count, [type,] device, context)")


_ELEMENT_TYPES: dict[Any, np.dtype] = {}  # types and sycl.ptr[T] seen before


def _element_type(t: Any) -> np.dtype:
    """A USM element type: a number, a bool, a struct layout or a pointer; never Python
    objects, strings or dates, whose bytes kernels and copies cannot give meaning to."""
    known = _ELEMENT_TYPES.get(t) if type(t) is type or type(t) is PointerType else None
    if known is None:
        known = _check_element_type(t)
        if type(t) is type or type(t) is PointerType:
            _ELEMENT_TYPES[t] = known
    return known


def _check_element_type(t: Any) -> np.dtype:
    if isinstance(t, PointerType):
        return t.storage
    try:
        dtype = None if t is None else as_dtype(t)  # numpy reads None as float64
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind in "OUSMm":
        raise exception(errc.invalid, f"{t!r} is not a USM element type (a sycl/numpy "
                        "number type, bool, or a sycl.struct)")
    return dtype


def _properties(properties: dict[str, Any]) -> tuple:
    """The allocation's `property_list` (graph fusion's promote_private / promote_local),
    checked."""
    props = properties.get("property_list")
    if props is None:
        return ()
    if isinstance(props, Property):
        props = [props]
    if not isinstance(props, list | tuple) or \
            not all(isinstance(p, _ALLOCATION_PROPERTIES) for p in props):
        raise exception(errc.invalid, "an allocation's property_list holds promote_private "
                        f"or promote_local properties, got {props!r}")
    return tuple(props)


def _allocate(count: int, args: tuple, kind: alloc, alignment: int = 0,
              properties: tuple = ()) -> ptr | None:
    dtype, dev, ctx, sched = _where(args)
    try:
        count = operator.index(count)
    except TypeError:
        raise exception(errc.invalid, f"an allocation's count is an integer, got "
                        f"{type(count).__name__} {count!r}") from None
    if count < 0:
        raise exception(errc.invalid, f"cannot allocate a negative count ({count})")
    if alignment and (alignment & (alignment - 1)):
        raise exception(errc.invalid, f"alignment {alignment} is not a power of two")
    if count == 0:
        return None
    nbytes = count * dtype.itemsize
    allocator = sched.allocators[kind is not alloc.device]
    if nbytes > allocator.heap_bytes:
        raise exception(errc.memory_allocation, f"{nbytes} bytes of {kind.value} USM exceed "
                        f"the {allocator.heap_bytes} bytes of the memory heap that holds them")
    if alignment <= MIN_ALIGN:  # chunks start MIN_ALIGN-aligned
        a = Allocation(allocator, allocator.allocate(nbytes), 0, nbytes, kind, ctx, dev)
    else:
        chunk = allocator.allocate(nbytes + alignment - MIN_ALIGN)
        a = Allocation(allocator, chunk, -chunk.address % alignment, nbytes, kind, ctx, dev)
    a.properties = properties
    return ptr(a, 0, dtype)


def buffer_range_limit(dev: Any) -> int:
    """The largest range a descriptor binding may cover: the device's
    maxStorageBufferRange, or less where `VKSYCL_MAX_BUFFER_RANGE` asks (to emulate
    devices with a smaller limit)."""
    limit = dev.vulkan.max_storage_buffer_range
    override = os.environ.get("VKSYCL_MAX_BUFFER_RANGE")
    return min(limit, int(override)) if override else limit


def malloc_device(count: int, *args: Any, **properties: Any) -> ptr | None:
    """`malloc_device(count, dtype, queue)` or `(count, dtype, device, context)`: device USM
    for `count` elements (without a type, `count` bytes). Returns a `sycl.ptr` (None for a
    count of 0); more than the device's memory heap holds is `errc.memory_allocation`."""
    return _allocate(count, args, alloc.device, 0, _properties(properties))


def malloc_host(count: int, *args: Any, **properties: Any) -> ptr | None:
    """`malloc_host(count, dtype, queue)` or `(count, dtype, device, context)`: host USM,
    read and written by the host (`numpy.asarray(p)`) and by kernels."""
    return _allocate(count, args, alloc.host, 0, _properties(properties))


def malloc_shared(count: int, *args: Any, **properties: Any) -> ptr | None:
    """`malloc_shared(count, dtype, queue)` or `(count, dtype, device, context)`: shared USM,
    readable and writable by the host and by kernels."""
    return _allocate(count, args, alloc.shared, 0, _properties(properties))


def malloc(count: int, *args: Any) -> ptr | None:
    """`malloc(count, [type,] queue, kind)` or `(count, [type,] device, context, kind)`."""
    if not args or not isinstance(args[-1], alloc) or args[-1] is alloc.unknown:
        raise exception(errc.invalid, "malloc needs a usm.alloc kind as its last argument")
    return _allocate(count, args[:-1], args[-1])


def _aligned(kind: alloc):
    def aligned_alloc(alignment: int, count: int, *args: Any, **properties: Any) -> ptr | None:
        try:
            alignment = operator.index(alignment)
        except TypeError:
            raise exception(errc.invalid, f"an alignment is an integer, got "
                            f"{type(alignment).__name__} {alignment!r}") from None
        if alignment < 0:
            raise exception(errc.invalid, f"alignment {alignment} is negative")
        return _allocate(count, args, kind, alignment, _properties(properties))

    aligned_alloc.__name__ = aligned_alloc.__qualname__ = f"aligned_alloc_{kind.value}"
    aligned_alloc.__doc__ = (f"`aligned_alloc_{kind.value}(alignment, count, dtype, queue)`: "
                             f"as `malloc_{kind.value}`, at an address that is a multiple of "
                             f"`alignment` bytes (0: the type's own).")
    return aligned_alloc


aligned_alloc_device = _aligned(alloc.device)
aligned_alloc_host = _aligned(alloc.host)
aligned_alloc_shared = _aligned(alloc.shared)


def _context_of(where: Any) -> context:
    if type(where) is queue:
        return where._context
    if isinstance(where, queue):
        return where.get_context()
    if isinstance(where, context):
        return where
    raise exception(errc.invalid, "expected a queue or a context")


def free(p: ptr | None, where: Any) -> None:
    """Frees USM memory; None is accepted (as `sycl::free(nullptr, q)`)."""
    ctx = _context_of(where)
    if p is None:
        return
    if not isinstance(p, ptr):
        raise exception(errc.invalid, f"free expects a USM pointer, got {type(p).__name__}")
    a = p.allocation
    if a.freed:
        raise exception(errc.invalid, "memory freed twice")
    if a.context is not ctx:
        raise exception(errc.invalid, "the pointer was not allocated in this context")
    if p.byte_offset != 0:
        raise exception(errc.invalid, "free needs the pointer malloc returned, not one "
                        f"{p.byte_offset} bytes into the allocation")
    a.free()


def _device_of(where: Any) -> Any:
    if isinstance(where, queue):
        return where.get_device()
    if isinstance(where, device):
        return where
    raise exception(errc.invalid, f"expected a queue or a device, got {type(where).__name__}")


def usm_memory_stats(where: Any) -> dict[str, int]:
    """USM memory of a device (given it or a queue), in bytes: `in_use` by live
    allocations (rounded to the allocator's size classes), `reserved` from Vulkan, and
    `cached`, reserved but not in use (kept for reuse; `usm_release_cached` frees it)."""
    allocators = scheduler_for(_device_of(where)).allocators.values()
    in_use = sum(a.in_use for a in allocators)
    reserved = sum(a.reserved() for a in allocators)
    return {"in_use": in_use, "reserved": reserved, "cached": reserved - in_use}


def usm_release_cached(where: Any) -> int:
    """Gives the device's cached USM blocks (those holding no live allocation) back to
    Vulkan, after the work in flight; returns the bytes released."""
    return sum(a.release_cached()
               for a in scheduler_for(_device_of(where)).allocators.values())


def get_pointer_type(p: Any, ctx: context) -> alloc:
    """The USM kind of `p` in `ctx`: `sycl.usm.alloc.host`, `.device`, `.shared`, or `.unknown`
    for anything else."""
    if isinstance(p, ptr) and not p.allocation.freed and ctx.owns(p.allocation):
        return p.allocation.kind
    return alloc.unknown


def get_pointer_device(p: Any, ctx: context) -> Any:
    """The device a USM pointer of `ctx` was allocated for; `errc.invalid` for anything else."""
    if get_pointer_type(p, ctx) is alloc.unknown:
        raise exception(errc.invalid, "the pointer is not a USM allocation of this context")
    return p.allocation.device
