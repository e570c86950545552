"""`sycl.buffer` and its accessors (SYCL 2020 4.7): device accessors in command groups,
host accessors as live numpy views, local accessors for work-group memory.

An accessor in a kernel is a pointer: the launch pushes the device address of its first
element and the ranges the kernel reads. A command group's accessors are its
requirements: the queue finds the earlier accesses each must follow (`acquire`), uploads
what the host wrote, and records the command's event against the memory (`record`).
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import numpy as np

from .. import access
from ..access import access_mode
from ..exceptions import errc, exception
from ..ranges import id as sycl_id
from ..ranges import range as sycl_range
from ..types import as_dtype, device_alignment, dtype_key
from .event import event
from .handler import handler
from .memops import Span
from .storage import Storage, lock

# Kernels number elements with 32-bit integers.
MAX_ELEMENTS = (1 << 31) - 1
_ABSENT = object()  # no argument given in that position
# The lock's methods, bound once: every command group with accessors takes it, and a
# method of an imported name is looked up (a bound method made) at each call.
_lock_acquire, _lock_release = lock.acquire, lock.release


def _as_tuple(value: Any, what: str, kind: type = sycl_range) -> tuple[int, ...]:
    if isinstance(value, int | np.integer):
        return (int(value),)
    if isinstance(value, tuple | list):
        return tuple(kind(*value))
    raise exception(errc.invalid, f"{what} takes a sycl.{kind.__name__}, a tuple or an int, "
                    f"got {type(value).__name__}")


def _linear(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    out = 0
    for i, n in zip(index, shape, strict=True):
        out = out * n + i
    return out


class _Extent:
    """SYCL's size queries of a buffer or an accessor, from its range and element type."""

    _range: tuple[int, ...]
    dtype: np.dtype

    def get_range(self) -> sycl_range:
        return sycl_range(*self._range)

    def size(self) -> int:
        return int(np.prod(self._range))

    get_count = size

    def byte_size(self) -> int:
        return self.size() * self.dtype.itemsize

    get_size = byte_size

    def empty(self) -> bool:
        return self.size() == 0


def _element_type(dtype: np.dtype) -> np.dtype:
    """`dtype` if kernels can hold it (numbers, bools, structs of them); a buffer of Python
    objects, strings or dates would copy references or bytes no kernel can read."""
    if dtype.hasobject or dtype.kind in "OSUMm" or (dtype.kind == "V" and not dtype.fields):
        raise exception(errc.invalid, f"a buffer's elements must be numbers, bools or "
                        f"structs, not {dtype} ({dtype.kind!r} numpy kind)")
    return dtype


class buffer(_Extent):
    """`buffer(array)` over a numpy array (written back into it on release; a read-only
    array is never written), `buffer(range, dtype)` without host data,
    `buffer(parent, id, range)` a sub-buffer. Release it with `with sycl.buffer(a) as
    buf:`, `buf.release()`, or (last resort) the destructor."""

    __vksycl_host_only__ = ("a sycl.buffer: kernels reach it through an accessor made in "
                            "the command group (sycl.accessor(buf, h))")
    _sub = False  # made by buffer(parent, id, range), or a reinterpretation of one

    def __init__(self, data: Any, *args: Any, dtype: Any = None,
                 property_list: list | tuple = ()) -> None:
        self._parent: buffer | None = None
        self._byte_offset = 0
        self._properties = list(property_list)
        if isinstance(data, buffer):
            self._init_sub(data, args)
            return
        if isinstance(data, np.ndarray):
            self._init_host(data, args, dtype)
            return
        if args:
            if dtype is not None:
                raise exception(errc.invalid, "buffer(range, dtype) takes the element type "
                                "once")
            dtype = args[0]
        if dtype is None:
            raise exception(errc.invalid, "buffer(range) without host data needs an element "
                            "type: sycl.buffer(sycl.range(n), np.float32)")
        self._dtype = _element_type(as_dtype(dtype))
        self._range = _checked_shape(_as_tuple(data, "buffer"))
        self._storage = Storage(self.byte_size(), None, None)

    def _init_host(self, data: np.ndarray, args: tuple, dtype: Any) -> None:
        _element_type(data.dtype)
        shape = data.shape
        if args:
            shape = _as_tuple(args[0], "buffer(array, range)")
            if int(np.prod(shape)) != data.size:
                raise exception(errc.invalid, f"buffer(array, range): range {shape} does not "
                                f"hold the array's {data.size} elements")
        if dtype is not None and as_dtype(dtype) != data.dtype:
            raise exception(errc.invalid, f"buffer over a {data.dtype} array with dtype "
                            f"{as_dtype(dtype)}: view the array as that type first")
        self._dtype = _element_type(data.dtype)
        self._range = _checked_shape(tuple(shape))
        final = data if data.flags.writeable else None
        host = data if data.flags.c_contiguous and final is not None else data.copy(order="C")
        self._storage = Storage(host.nbytes, host.reshape(-1).view(np.uint8), final)

    def _init_sub(self, parent: buffer, args: tuple) -> None:
        if len(args) != 2:
            raise exception(errc.invalid, "a sub-buffer is buffer(parent, sycl.id(offset), "
                            "sycl.range(size))")
        offset = _as_tuple(args[0], "sub-buffer offset", sycl_id)
        size = _as_tuple(args[1], "sub-buffer range")
        pr = parent._range
        if len(offset) != len(pr) or len(size) != len(pr):
            raise exception(errc.invalid, f"a sub-buffer of a {len(pr)}-dimensional buffer "
                            f"takes a {len(pr)}-dimensional offset and range")
        if any(o + s > p for o, s, p in zip(offset, size, pr, strict=True)):
            raise exception(errc.invalid, f"sub-buffer at {offset} of range {size} overruns "
                            f"the buffer's range {pr}")
        if not _contiguous(offset, size, pr):
            raise exception(errc.invalid, f"sub-buffer at {offset} of range {size} is not "
                            f"contiguous in the buffer's range {pr}")
        self._parent = parent
        self._sub = True
        self._storage = parent._storage
        self._dtype = parent._dtype
        self._range = _checked_shape(size)
        self._byte_offset = parent._byte_offset + _linear(offset, pr) * self._dtype.itemsize

    # -- queries -------------------------------------------------------------------------
    @functools.cached_property
    def _whole(self) -> tuple:
        """(element type, dims, range, offset, memory range, first byte, end byte, launch
        key, memory) of an access to the whole buffer, a plain attribute once asked for:
        accessors of it share the one launch key object."""
        rng, first, dtype = self._range, self._byte_offset, self._dtype
        offset = (0,) * len(rng)
        return (dtype, len(rng), rng, offset, rng, first, first + self.byte_size(),
                (self._storage.ref, first, rng, offset, rng, dtype_key(dtype)), self._storage)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def is_sub_buffer(self) -> bool:
        return self._sub

    def has_property(self, kind: type) -> bool:
        return any(isinstance(p, kind) for p in self._properties)

    def __repr__(self) -> str:
        return f"sycl.buffer({self._dtype}, range{self._range})"

    def reinterpret(self, dtype: Any, shape: Any = None) -> buffer:
        """The same memory seen as another element type (and range); the byte size does
        not change."""
        dt = as_dtype(dtype)
        align = device_alignment(dt)
        if self._byte_offset % align:
            raise exception(errc.invalid, f"reinterpret as {dt}: the buffer starts at byte "
                            f"{self._byte_offset} of its memory, which is not aligned to "
                            f"{align} bytes (kernels could not read such elements)")
        if shape is None:
            last = self._range[-1] * self._dtype.itemsize
            if last % dt.itemsize:
                raise exception(errc.invalid, f"reinterpret as {dt}: the last dimension's "
                                f"{last} bytes are not a whole number of elements")
            shape = (*self._range[:-1], last // dt.itemsize)
        shape = _as_tuple(shape, "reinterpret")
        if int(np.prod(shape)) * dt.itemsize != self.byte_size():
            raise exception(errc.invalid, f"reinterpret as {dt} of range {shape} is "
                            f"{int(np.prod(shape)) * dt.itemsize} bytes; the buffer has "
                            f"{self.byte_size()}")
        view = object.__new__(buffer)
        view._parent, view._storage, view._properties = self, self._storage, self._properties
        view._dtype, view._range = dt, _checked_shape(shape)
        view._byte_offset = self._byte_offset
        view._sub = self._sub  # a reinterpretation of a sub-buffer is one, of a buffer not
        return view

    def elements(self, storage_bytes: np.ndarray) -> np.ndarray:
        """This buffer's elements within the flat bytes of its memory object."""
        flat = storage_bytes[self._byte_offset: self._byte_offset + self.byte_size()]
        return flat.view(self._dtype).reshape(self._range)

    # -- write-back and release ----------------------------------------------------------
    def set_final_data(self, final: Any) -> None:
        """Where release writes the data back: a writable numpy array of the buffer's
        byte size, or None for nowhere."""
        if final is not None and (not isinstance(final, np.ndarray) or
                                  not final.flags.writeable):
            raise exception(errc.invalid, "set_final_data takes None or a writable numpy "
                            f"array, got {type(final).__name__}")
        if final is not None and final.nbytes != self._storage.nbytes:
            raise exception(errc.invalid, f"set_final_data: the array has {final.nbytes} "
                            f"bytes, the buffer {self._storage.nbytes}")
        self._storage.final = final

    def set_write_back(self, flag: bool = True) -> None:
        self._storage.write_back = bool(flag)

    def writes_back(self) -> bool:
        """Whether releasing the buffer could write into host memory."""
        s = self._storage
        return s.write_back and s.final is not None

    def release(self) -> None:
        """Waits for the commands using the buffer; the buffer owning the memory then
        writes back and frees it."""
        if self._parent is None:
            self._storage.release()
        else:
            self._storage.wait_all()

    def __enter__(self) -> buffer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def get_access(self, *args: Any, **kwargs: Any) -> accessor:
        """`buf.get_access(h, mode)`: an accessor for a command group."""
        return accessor(self, *args, **kwargs)

    def get_host_access(self, *args: Any, **kwargs: Any) -> host_accessor:
        return host_accessor(self, *args, **kwargs)


def _checked_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if not 1 <= len(shape) <= 3:
        raise exception(errc.invalid, f"a buffer has 1 to 3 dimensions, got {len(shape)}")
    n = int(np.prod(shape))
    if n > MAX_ELEMENTS:
        raise exception(errc.invalid, f"a buffer of {n} elements: kernels index buffers with "
                        "32-bit integers (fewer than 2**31 elements); use USM "
                        "(sycl.malloc_device) for larger arrays")
    return tuple(int(s) for s in shape)


def _contiguous(offset: tuple[int, ...], size: tuple[int, ...], full: tuple[int, ...]
                ) -> bool:
    """Whether a region is one run of memory: the dimensions after some dimension d span
    the whole range, and those before d hold a single index."""
    d = len(full) - 1
    while d > 0 and size[d] == full[d]:
        d -= 1
    return all(size[i] == 1 for i in range(d))


class _Access(_Extent):
    """What an accessor asks of its buffer: the mode, the region, and whether the old
    contents matter."""

    def _init_access(self, buf: Any, mode: access_mode, no_init: bool,
                     access_range: Any, access_offset: Any, what: str) -> None:
        if not isinstance(buf, buffer):
            raise exception(errc.invalid, f"{what} takes a sycl.buffer, got "
                            f"{type(buf).__name__}")
        if no_init and mode is access_mode.read:
            raise exception(errc.invalid, f"{what}: no_init with a read-only accessor (there "
                            "would be nothing to read)")
        if access_range is None and access_offset is None:
            self._init_whole(buf, mode, no_init)
            return
        full = buf._range
        rng = full if access_range is None else _as_tuple(access_range, "access_range")
        off = (0,) * len(full) if access_offset is None else \
            _as_tuple(access_offset, "access_offset", sycl_id)
        if len(rng) != len(full) or len(off) != len(full):
            raise exception(errc.invalid, f"{what}: a {len(full)}-dimensional buffer takes "
                            f"a {len(full)}-dimensional access range and offset")
        if any(v < 0 for v in (*rng, *off)):
            raise exception(errc.invalid, f"{what}: negative access range {rng} or offset "
                            f"{off}")
        if any(o + r > n for o, r, n in zip(off, rng, full, strict=True)):
            raise exception(errc.invalid, f"{what}: access range {rng} at offset {off} "
                            f"overruns the buffer's range {full}")
        self.buffer = buf
        self.dtype = buf._dtype
        self.dims = len(full)
        self._set_mode(mode, no_init)
        self._storage = buf._storage
        self._range, self._offset, self._memory_range = rng, off, full
        item = buf._dtype.itemsize
        last = tuple(o + r - 1 for o, r in zip(off, rng, strict=True))
        self._first = buf._byte_offset + _linear(off, full) * item
        # an empty range (SYCL allows one: accessor.empty()) covers no bytes
        self._end = self._first if 0 in rng else \
            buf._byte_offset + (_linear(last, full) + 1) * item
        self._key = (buf._storage.ref, self._first, rng, off, full, dtype_key(buf._dtype))

    def _init_whole(self, buf: buffer, mode: access_mode, no_init: bool) -> None:
        """An access to the whole buffer: the common case, from values the buffer keeps."""
        self.buffer = buf
        (self.dtype, self.dims, self._range, self._offset, self._memory_range, self._first,
         self._end, self._key, self._storage) = buf._whole
        self._set_mode(mode, no_init)

    def _set_mode(self, mode: access_mode, no_init: bool) -> None:
        """The mode, and whether it writes: kept as a plain attribute, which the path of
        every command group reads."""
        self.access_mode = mode
        self.no_init = no_init
        self._writes = mode is not access_mode.read

    def get_offset(self) -> sycl_id:
        return sycl_id(*self._offset)

    def region_of(self, host: np.ndarray) -> np.ndarray:
        """The accessed elements within the flat bytes of the host copy, as a numpy view
        (read-only for an accessor that only reads)."""
        view = self.buffer.elements(host)[tuple(
            slice(o, o + r) for o, r in zip(self._offset, self._range, strict=True))]
        if not self.access_mode.writes:
            view = view.view()
            view.flags.writeable = False
        return view

    def covers_all(self) -> bool:
        s = self.buffer._storage
        return self._first == 0 and self._end == s.nbytes


def _parse(args: tuple, mode: Any, access_range: Any, access_offset: Any,
           property_list: Any, what: str) -> tuple[Any, access_mode, bool, Any, Any]:
    """(handler or None, mode, no_init, range, offset) from SYCL's positional forms:
    `(h)`, `(h, tag)`, `(h, range[, offset], tag)`, `(tag)`, `(..., no_init)`."""
    h = None
    rest = list(args)
    if rest and isinstance(rest[0], handler):
        h = rest.pop(0)
    no_init = any(isinstance(p, access.no_init_property) for p in property_list or ())
    for a in rest:
        if isinstance(a, access.mode_tag | access_mode):
            if mode is not None:
                raise exception(errc.invalid, f"{what}: the access mode is given twice")
            mode = a
        elif isinstance(a, access.no_init_property):
            no_init = True
        elif a is access.host_task:
            continue  # the caller reads it
        elif isinstance(a, sycl_id):
            access_offset = a
        elif isinstance(a, sycl_range | tuple | int):
            if access_range is not None:
                access_offset = a
            else:
                access_range = a
        elif isinstance(a, list):
            no_init = no_init or any(isinstance(p, access.no_init_property) for p in a)
        else:
            raise exception(errc.invalid, f"{what}: unexpected argument {a!r}")
    if mode is None:
        mode = access_mode.read_write
    try:
        return h, access.as_mode(mode), no_init, access_range, access_offset
    except TypeError:
        raise exception(errc.invalid, f"{what}: {mode!r} is not an access mode") from None


class accessor(_Access):
    """`accessor(buf, h[, mode][, no_init])`, ranged with `access_range=` /
    `access_offset=` (or SYCL's positional range and id); without a handler it is a
    placeholder that a command group takes with `h.require(acc)`. In a kernel it indexes
    like an array: `acc[i]`, `acc[i, j]`, `acc[item.get_id()]`."""

    __vksycl_accessor__ = "global"
    _host_task = False  # made with sycl.host_task: the host task's, not a kernel's
    _in_task = 0  # runs of its command group's host task under way (it reads only then)
    _context: Any = None  # the context of the queue whose command group requires it
    _placeholder = False
    no_init = False

    def __init__(self, buf: Any, first: Any = _ABSENT, second: Any = _ABSENT, *more: Any,
                 mode: Any = None, access_range: Any = None, access_offset: Any = None,
                 property_list: Any = ()) -> None:
        # The first two positional arguments are named rather than gathered: what command
        # groups write, `accessor(buf, h[, tag][, no_init])`, then builds no tuple of them.
        if type(first) is handler and type(buf) is buffer and mode is None and \
                access_range is None and access_offset is None and not property_list:
            tag = access.read_write if second is _ABSENT else second
            if type(tag) is access.mode_tag and (not more or (
                    len(more) == 1 and more[0] is access.no_init and tag.writes)):
                # the whole buffer's attributes in one step, its memory bound by identity
                q = first._queue
                self.buffer = buf
                (self.dtype, self.dims, self._range, self._offset, self._memory_range,
                 self._first, self._end, self._key, s) = buf._whole
                self._storage = s
                self.access_mode = tag.mode
                self._writes = tag.writes
                if more:
                    self.no_init = True
                ctx = q._context
                if s.context is not ctx or s.device is not q._device or s.released:
                    s.bind(q, "accessor")
                self._context = ctx
                first.requirements.append(self)
                return
        args = () if first is _ABSENT else (first,) if second is _ABSENT else \
            (first, second, *more)
        h, m, no_init, rng, off = _parse(args, mode, access_range, access_offset,
                                         property_list, "accessor")
        self._init_access(buf, m, no_init, rng, off, "accessor")
        self._placeholder = h is None
        if access.host_task in args:
            if h is None:
                raise exception(errc.invalid, "a host_task accessor is made in its command "
                                "group: sycl.accessor(buf, h, mode, sycl.host_task)")
            self._host_task = True
        if h is not None:
            h.require(self)

    def __class_getitem__(cls, params: Any) -> access.accessor_type:
        params = params if isinstance(params, tuple) else (params,)
        return access.accessor_type(*params)

    def is_placeholder(self) -> bool:
        return self._placeholder

    def bind(self, queue: Any) -> None:
        """Places the buffer's memory on the command group's device (handler.require)."""
        self._storage.bind(queue, "accessor")
        self._context = queue._context

    def _vksycl_launch_address(self, context: Any, required: list | None) -> int:
        """The device address a launch packs, in a command group requiring the accessors
        `required` (None outside one)."""
        s = self._storage
        if self._context is None:
            raise exception(errc.kernel_argument, "a placeholder accessor is used in a kernel "
                            "without h.require(acc) in its command group")
        if self._host_task:
            raise exception(errc.kernel_argument, "a kernel uses an accessor made with "
                            "sycl.host_task, which is for the command group's host task")
        if s.released:
            s.check_live("accessor")
        if required is None:  # a launch outside a command group: nothing tracks the buffer
            raise exception(errc.kernel_argument, "a kernel launched outside a command "
                            "group (queue.parallel_for / single_task) uses an accessor: "
                            "launch it in a command group that requires the accessor "
                            "(q.submit(cgf), sycl.accessor(buf, h) in cgf)")
        if self not in required:  # accessors compare by identity
            raise exception(errc.kernel_argument, "the kernel uses an accessor its command "
                            "group does not require: make it with sycl.accessor(buf, h) in "
                            "the command group (h.require(acc) for a placeholder)")
        if context is not None and context is not self._context:
            raise exception(errc.invalid, "accessor: the buffer is used in another context")
        return s.allocation.address + self._first

    def _vksycl_launch_key(self) -> tuple:
        """What this accessor's launch values depend on: accessors with equal keys pack
        the same and run the same kernel (the memory object is held weakly: a dead one
        equals no live one; the element type is part of it as kernels tell types apart,
        `dtype_key`, a reinterpretation having its buffer's region)."""
        return self._key

    def _vksycl_check_launch(self, required: list | None) -> None:
        """The checks of `_vksycl_launch_address` a launch repeating an earlier one (whose
        accessor had this one's launch key) still needs."""
        self._vksycl_launch_address(None, required)

    def _vksycl_launches_as(self, kept: Any, required: list | None) -> bool:
        """Whether this accessor packs the launch values of the one a launch record kept
        as `kept` (its launch key `kept.launch`, its mode `kept.what`), in a command group
        requiring `required`; if it does, the checks a launch repeating that one still
        needs run too (raising): both in one call, which every repeated command group
        with an accessor makes."""
        mine, key = self._key, kept.launch
        if self.access_mode is not kept.what or (mine is not key and mine != key):
            return False
        # (an accessor a command group requires is bound to its context: no placeholder)
        if self._host_task or self._storage.released or required is None or \
                self not in required:
            self._vksycl_launch_address(None, required)  # raises
        return True

    def _vksycl_launch_piece(self, what: str, d: int) -> int:
        if what == "range":
            return self._range[d]
        if what == "offset":
            return self._offset[d]
        return self._memory_range[d]

    def spans(self, what: str, required: list) -> list[Span]:
        """The accessor's memory as byte ranges in element order (one per row where the
        range is not one run of memory), for the handler's copies and fills in a command
        group requiring `required`: only those accessors are tracked, so no other may be
        copied or filled through (one kept from an earlier command group)."""
        if self._context is None:
            raise exception(errc.invalid, f"{what}: a placeholder accessor needs "
                            "h.require(acc) first")
        if self not in required:  # accessors compare by identity
            raise exception(errc.invalid, f"{what}: an accessor this command group does "
                            "not require: make it with sycl.accessor(buf, h) in the command "
                            "group (h.require(acc) for a placeholder)")
        if self._host_task:  # its command group updates the host copy, not the device copy
            raise exception(errc.invalid, f"{what}: an accessor made with sycl.host_task "
                            "is for the command group's host task; copies and fills take "
                            "sycl.accessor(buf, h, mode)")
        s = self.buffer._storage
        s.check_live(what)
        if self._end - self._first == self.byte_size():
            return [Span(s.allocation, None, self._first, self.byte_size())]
        item = self.dtype.itemsize
        row = self._range[-1] * item
        base = self.buffer._byte_offset
        spans = []
        for prefix in np.ndindex(*self._range[:-1]):
            at = tuple(o + i for o, i in zip(self._offset, prefix, strict=False))
            first = base + _linear((*at, self._offset[-1]), self._memory_range) * item
            spans.append(Span(s.allocation, None, first, row))
        return spans

    def _host_view(self) -> np.ndarray:
        """The host copy of the accessed region, for a host task's accessor."""
        if not self._host_task:
            raise exception(errc.invalid, "a device accessor is read in kernels; in a host "
                            "task use sycl.accessor(buf, h, mode, sycl.host_task), elsewhere "
                            "sycl.host_accessor(buf)")
        if not self._in_task:
            raise exception(errc.invalid, "a host_task accessor is read and written in its "
                            "command group's host task (which runs once the work it follows "
                            "is done), not in the command group function or after it")
        s = self.buffer._storage
        s.check_live("accessor")
        return self.region_of(s.host_copy_made())

    def __getitem__(self, index: Any) -> Any:
        return self._host_view()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        view = self._host_view()
        if not self.access_mode.writes:
            raise exception(errc.invalid, "writing through a read_only accessor")
        view[index] = value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return _as_array(self._host_view(), dtype, copy)

    def __len__(self) -> int:
        return self._range[0]

    def __repr__(self) -> str:
        return (f"sycl.accessor({self.buffer!r}, {self.access_mode.name}, "
                f"range{self._range}, offset{self._offset})")


class _HostAccessGate(event):
    """Completes when a host accessor is released: device commands on its memory wait
    for it, as SYCL's kernels wait for a host accessor's destruction."""

    __slots__ = ("host_accessor", "thread")

    def __init__(self, where: str) -> None:
        super().__init__()
        self._defer()
        self.host_accessor = where
        self.thread = threading.get_ident()  # the thread holding the host accessor


class host_accessor(_Access):
    """`host_accessor(buf[, mode][, no_init])`: the buffer's data on the host as a live
    numpy view, once the kernels writing it (and, for a writing accessor, reading it)
    completed. Writes reach later kernels. Release it with `with`, `release()`, or by
    dropping it; until then, kernels using the buffer wait."""

    __vksycl_host_only__ = "a sycl.host_accessor: kernels use sycl.accessor(buf, h)"

    def __init__(self, buf: Any, *args: Any, mode: Any = None, access_range: Any = None,
                 access_offset: Any = None, property_list: Any = ()) -> None:
        self._gate: _HostAccessGate | None = None
        h, m, no_init, rng, off = _parse(args, mode, access_range, access_offset,
                                         property_list, "host_accessor")
        if h is not None:
            raise exception(errc.invalid, "host_accessor takes no handler (a device "
                            "accessor does: sycl.accessor(buf, h))")
        self._init_access(buf, m, no_init, rng, off, "host_accessor")
        s = buf._storage
        s.check_live("host_accessor")
        s.check_not_recorded("host_accessor")
        discard = no_init and self.covers_all()
        while True:
            # the waits happen outside the lock, which every command group with accessors
            # takes: the thread that would release what they wait for may be submitting one
            with lock:
                s.check_live("host_accessor")
                waits = s.host_waits(self._first, self._end, m.writes, discard)
                if not waits:  # nothing left to wait for: take the host copy now
                    if discard:
                        s.device_newer = False
                    host = s.host_copy()
                    if m.writes:
                        s.host_newer = True
                        s.written = True
                    frame = sys._getframe(1)
                    self._gate = _HostAccessGate(f"made at {frame.f_code.co_filename}:"
                                                 f"{frame.f_lineno}")
                    s.tracker.record(self._first, self._end, m.writes, self._gate)
                    break
            s.wait(waits, "host_accessor")
        self._view = self.region_of(host)

    def release(self) -> None:
        gate = self._gate
        if gate is not None:
            self._gate = None
            gate._mark_issued()

    def __enter__(self) -> np.ndarray:
        return self._view

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()

    def _live(self) -> np.ndarray:
        if self._gate is None:
            raise exception(errc.invalid, "the host_accessor was released")
        return self._view

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return _as_array(self._live(), dtype, copy)

    def __getitem__(self, index: Any) -> Any:
        return self._live()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        if not self.access_mode.writes:
            raise exception(errc.invalid, "writing through a read_only host_accessor")
        self._live()[index] = value

    def __len__(self) -> int:
        return self._range[0]

    def __iter__(self) -> Any:
        return iter(self._live())

    def __repr__(self) -> str:
        return f"sycl.host_accessor({self._view!r})"


class local_accessor(_Extent):
    """`local_accessor(dtype, range, h)`: work-group memory for the kernel of command
    group `h`, each work-group its own; also the type of a free function kernel's
    parameter (`sycl.local_accessor[T, dims]`)."""

    __vksycl_accessor__ = "local"

    def __init__(self, dtype: Any, shape: Any, h: Any = None) -> None:
        if h is not None and not isinstance(h, handler):
            raise exception(errc.invalid, "local_accessor(dtype, range, h) takes the command "
                            f"group's handler, got {type(h).__name__}")
        self.dtype = as_dtype(dtype)
        self.shape = _as_tuple(shape, "local_accessor")
        if not 1 <= len(self.shape) <= 3 or any(n <= 0 for n in self.shape):
            raise exception(errc.invalid, f"local_accessor needs 1 to 3 positive sizes, got "
                            f"{self.shape}")
        self.dims = len(self.shape)
        self._range = self.shape

    def __class_getitem__(cls, params: Any) -> access.local_accessor_type:
        params = params if isinstance(params, tuple) else (params,)
        return access.local_accessor_type(*params)

    def __repr__(self) -> str:
        return f"sycl.local_accessor({self.dtype}, range{self.shape})"

    def _vksycl_launches_as(self, kept: Any, required: list | None) -> bool:
        """Whether this local accessor runs the kernel of the one a launch record kept as
        `kept`: nothing of it is pushed, so the same element type and shape."""
        return kept.matches(self)


def _as_array(view: np.ndarray, dtype: Any, copy: bool | None) -> np.ndarray:
    """numpy's `__array__` protocol over an accessor's live view: `np.array(acc)` (copy
    True) a copy of its own, `np.asarray(acc)` the view itself (which `copy=False`
    demands: another element type cannot be one)."""
    if dtype is not None and np.dtype(dtype) != view.dtype:
        if copy is False:
            raise ValueError(f"a {view.dtype} accessor viewed as {np.dtype(dtype)} is a copy")
        return view.astype(dtype)
    return view.copy() if copy else view


# -- a command group's accessors ---------------------------------------------------------
def enqueue(queue: Any, command: Any, h: handler) -> event:
    """Runs a command group's command after the earlier accesses its accessors must
    follow (and the events it depends on), then records its event as their latest
    access; copies to the device first what the host wrote and the command reads."""
    requirements = h.requirements
    _lock_acquire()  # not `with`: every command group with accessors passes here
    try:
        if len(requirements) == 1 and not h._deps:
            acc = requirements[0]
            s = acc._storage
            accesses = s.tracker.accesses
            if acc._writes and len(accesses) == 1 and not (
                    s.released or s.host_newer or acc._host_task):
                # the common command group, one of a chain on a buffer: a device accessor
                # writing memory the device holds over all of the one access before it,
                # which it follows and whose place its event takes in the tracker
                # (`_acquire` and Storage.access, without a call)
                a_first, a_end, _, token = accesses[0]
                first, end = acc._first, acc._end
                if first <= a_first < a_end <= end:
                    ev = queue.execute(command, [token])
                    accesses[0] = (first, end, True, ev)
                    s.device_newer = True
                    s.written = True
                    return ev
        return _enqueue_all(queue, command, h)
    finally:
        _lock_release()


def _enqueue_all(queue: Any, command: Any, h: handler) -> event:
    """`enqueue` for any command group (the caller holds `lock`)."""
    requirements = h.requirements
    ev = queue.execute(command, [*h._deps, *_acquire(requirements, queue)])
    for acc in requirements:
        if acc._host_task:
            acc._storage.host_access(acc._first, acc._end, acc._writes, ev)
        else:
            acc._storage.access(acc._first, acc._end, acc._writes, ev)
    return ev


def _acquire(requirements: list[accessor], queue: Any) -> list[event]:
    """The events a command group's accessors must follow; copies to the device what the
    host wrote and the command will read."""
    deps: list[event] = []
    for acc in requirements:
        s = acc._storage
        if s.released:
            s.check_live("accessor")
        if acc._host_task:
            deps += [e for e in s.for_host_task(queue, acc._first, acc._end, acc._writes)
                     if e not in deps]
            continue
        if s.host_newer:
            if acc.no_init and acc.covers_all() and _discards(requirements, s):
                s.discard_host()
            else:
                s.upload(queue)
        found = s.tracker.conflicts(acc._first, acc._end, acc._writes)
        if found:
            deps += found if len(requirements) == 1 else [e for e in found if e not in deps]
    return deps


def _discards(requirements: list[accessor], s: Storage) -> bool:
    """Whether a command group may drop the host's data of memory `s`: only when every
    accessor it has to that memory is no_init (another one, a read_only one say, needs
    the old contents)."""
    return all(a.no_init for a in requirements if a.buffer._storage is s)
