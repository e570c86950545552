"""Argument marshalling: how a launch fetches each argument the compiled code uses
(closure cell, module global, explicit argument, launch range) and packs them with a
`struct.Struct` laid out as the push constants, a pointer as its 64-bit device address.
An accessor is fetched once per launch and asked for the address of the element at its
access offset and the pieces of its range, offset and memory range the code reads.

A launch whose values differ from the last launch's only in numbers and pointers read
straight from a closure cell, a module global or an explicit argument (a new time step
each launch, the other of two buffers) repacks just those into the last launch's bytes,
at the offsets of their slots (`Prepared.repacked`).

A kernel whose arguments outgrow the device's push constants runs as a variant compiled
to read them from an `ArgumentBlock`: launches write the packed bytes into host-visible
memory and push the block's address (`ADDRESS`).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..compiler.captures import ROOT_LENGTH, path_getter, path_name
from ..compiler.kernel import CompiledKernel
from ..compiler.printing import BufferFormat
from ..compiler.type_registry import element_type
from ..compiler.typesys import layout
from ..exceptions import errc, exception
from ..ranges import nd_range
from ..runtime import bounds, device_globals, device_output
from ..runtime.context import scheduler_for
from ..runtime.usm import Allocation, alloc, other_device
from ..types import device_alignment
from .cache_keys import signature, value_key

_FORMAT = {"i": "i", "u": "I", "f": "f", "b": "I"}
# arguments a launch fills from its device and launch shape, not from the kernel's values
_HIDDEN_KINDS = ("launch", "device_global", "debug", "check_table", "check_bounds")
ADDRESS_KINDS = ("ptr", "device_global", "accessor", "debug", "check_table")
_FORMAT64 = {"i": "q", "u": "Q", "f": "d"}
# the push constants of a kernel reading its arguments from an argument block
ADDRESS = struct.Struct("<Q")
# a launch's size or offset, as the code reads it
LAUNCH_VALUE = struct.Struct("<I")  # a size or offset the code reads
# where an argument read straight from a closure cell, module global or explicit argument
# lies in the push constants: (byte offset, its packer, "ptr" / "bool" / "scalar",
# alignment of the element type, element dtype, path). A plain `tuple` to the compiled
# launch path (`mypyc_modules`), which would otherwise unpack each slot it reads and box
# a new one for each comparison of identity
Slot = tuple


device_output.use_format(BufferFormat)


def _fmt(dtype: np.dtype) -> str:
    if dtype.itemsize == 8:
        return _FORMAT64[dtype.kind]
    return _FORMAT[dtype.kind]


class Prepared:
    """A compiled kernel plus everything needed to launch it quickly."""

    __slots__ = (
        "accessors",
        "attr_getters",
        "attr_sigs",
        "cell_slots",
        "checked",
        "ck",
        "debug",
        "global_slots",
        "globals",
        "groups",
        "key",
        "last_launch",
        "last_spec",
        "launch_slots",
        "n",
        "packer",
        "packs_always",
        "param_slots",
        "ptrs",
        "scalar_paths",
        "scalars",
        "spans",
        "spec_getters",
        "table",
        "variants",
    )

    def __init__(self, ck: CompiledKernel, pyfn: Any, key: Any) -> None:
        self.ck = ck
        self.key = key  # what it is cached under
        self.checked: set[int] = set()
        self.groups: dict[Any, tuple[int, int, int]] = {}
        self.spec_getters = [path_getter(path, pyfn) for path in ck.specialized]
        # variants by the compiled-in values' keys (`value_key`), and the values of the
        # last launch with its variant: the same objects again need no key
        self.variants: dict[tuple, Prepared] = {value_key(ck.spec_values): self}
        self.last_spec: tuple | None = None
        slots = sorted((a for a in ck.args if a.push_offset >= 0), key=lambda a: a.push_offset)
        fmt, at = "<", 0
        for a in slots:
            if a.push_offset > at:
                fmt += f"{a.push_offset - at}x"
                at = a.push_offset
            dt = np.dtype(np.uint64) if a.kind in ADDRESS_KINDS else np.dtype(a.dtype)
            fmt += _fmt(dt)
            at += dt.itemsize
        if ck.args_size > at:
            fmt += f"{ck.args_size - at}x"
        self.packer = struct.Struct(fmt)
        self.n = len(slots)
        order = {id(a): k for k, a in enumerate(slots)}
        # (getter, push position, alignment, element dtype, path) per pointer
        self.ptrs = []
        self.scalars = []
        self.scalar_paths = []
        self.launch_slots = []
        # (launch object, its (position, value) pairs): ranges are immutable, so a launch
        # with the same one reads none of them again
        self.last_launch: tuple[Any, list[tuple[int, int]]] = (None, [])
        # attributes of captured objects are read at each launch; if one changes type,
        # the kernel is compiled again for the new types
        self.attr_getters = [path_getter(path, pyfn) for path in dict.fromkeys(
            a.path for a in ck.args if a.kind not in _HIDDEN_KINDS and
            _indirect_path(a.path, pyfn.__module__))]
        self.attr_sigs = tuple(signature(get(pyfn, ())) for get in self.attr_getters)
        # (push position, metadata entry) per device_global: addresses from the database
        by_offset = {a.push_offset: order[id(a)] for a in slots}
        self.globals = [(by_offset[e["argument_offset"]], e) for e in ck.device_globals]
        # the push position of the debug buffer's address, for kernels that print or assert
        self.debug = next((order[id(a)] for a in slots if a.kind == "debug"), -1)
        # and of checked mode's table of live allocations
        self.table = next((order[id(a)] for a in slots if a.kind == "check_table"), -1)
        # (start position, end position, the pointer argument's position) of each
        # allocation checked mode passes beside a pointer argument; the start's is -1
        # where the code needs only the end (offsets proven not negative)
        at = {a.push_index: order[id(a)] for a in slots}
        spans: dict[int, dict[str, int]] = {}
        for a in slots:
            if a.kind == "check_bounds":
                spans.setdefault(a.piece[1], {})[a.piece[0]] = order[id(a)]
        self.spans = [(pos.get("start", -1), pos["end"], at[base])
                      for base, pos in spans.items()]
        # whether every launch packs its arguments anew (`plans`): addresses looked up
        # at each launch
        self.packs_always = bool(self.globals) or self.table >= 0 or bool(self.spans)
        if ck.debug_records:
            device_output.register(ck.debug_records)
        # (getter, path, address position or -1, [(position, piece, dimension)]) per
        # accessor: its address where the code dereferences it, the pieces the code reads
        addresses = {a.path: order[id(a)] for a in ck.args if a.kind == "accessor"}
        pieces: dict[tuple, list[tuple[int, str, int]]] = {}
        for a in ck.args:
            if a.kind == "accessor_piece":
                pieces.setdefault(a.path, []).append((order[id(a)], *a.piece))
        self.accessors = [(path_getter(path, pyfn), path, addresses.get(path, -1),
                           pieces.get(path, [])) for path in dict.fromkeys((*addresses,
                                                                            *pieces))]
        for a in ck.args:
            pos = order.get(id(a), -1)
            if a.kind == "ptr":
                self.ptrs.append((path_getter(a.path, pyfn), pos, _alignment(a), a.dtype,
                                  a.path))
            elif a.kind in ("device_global", "accessor", "accessor_piece", "debug",
                            "check_table", "check_bounds"):
                continue
            elif a.kind == "scalar":
                self.scalars.append((path_getter(a.path, pyfn), pos, a.dtype.kind == "b"
                                     or np.dtype(a.dtype).kind == "b"))
                self.scalar_paths.append((pos, a.path, np.dtype(a.dtype)))
            else:  # a size or offset of the launch: (what, dimension, position, offset)
                self.launch_slots.append((a.path[1], a.path[2], pos, a.push_offset))
        self.cell_slots, self.global_slots, self.param_slots = _direct_slots(ck, pyfn)

    def arguments(self, pyfn: Any, args: Any, launch: Any, context: Any = None,
                  required: list | None = None, device: Any = None, image: Any = None
                  ) -> bytes:
        """The packed arguments of a launch (pointers checked, accessors among those the
        launching command group requires); device_globals are at their addresses on
        `device` for the kernels of `image` (a kernel bundle, or None for the default
        image)."""
        values: list[Any] = [0] * self.n
        for pos, entry in self.globals:
            values[pos] = device_globals.address(device, entry, image)
        if self.debug >= 0:
            values[self.debug] = device_output.address(device)
        if self.table >= 0:
            values[self.table] = bounds.table_address(device)
        for get, pos, align, dtype, path in self.ptrs:
            p = get(pyfn, args)
            if p is not None:  # else the null pointer
                values[pos] = _address(p, path, align, dtype, context, device)
        for get, pos, is_bool in self.scalars:
            v = get(pyfn, args)
            # numpy's bool is no integer to struct (Python's bool is), whatever the slot
            values[pos] = int(bool(v)) if is_bool or isinstance(v, np.bool_) else v
        for get, path, at, pieces in self.accessors:
            acc = get(pyfn, args)
            if not hasattr(type(acc), "__vksycl_accessor__"):
                raise exception(errc.kernel_argument, f"kernel argument {_name(path)} must "
                                f"be an accessor, got {type(acc).__name__}")
            if at >= 0:
                values[at] = acc._vksycl_launch_address(context, required)
            for pos, what, d in pieces:
                values[pos] = acc._vksycl_launch_piece(what, d)
        for start, end, base in self.spans:  # once the pointers are known
            first, values[end] = bounds.span(device, values[base])
            if start >= 0:
                values[start] = first
        if self.launch_slots:
            known = self.last_launch
            if known[0] is not launch:
                known = self.last_launch = (launch, [(pos, launch_value(launch, what, d))
                                                     for what, d, pos, _ in self.launch_slots])
            for pos, value in known[1]:
                values[pos] = value
        try:
            push = self.packer.pack(*values)
        except (struct.error, OverflowError) as ex:  # a float past float32's range too
            raise exception(errc.kernel_argument, self.misfit(values) or
                            f"a kernel argument does not fit its type: {ex}") from None
        return push

    def repacked(self, push: bytes, changes: list[tuple[Slot, Any]], context: Any,
                 device: Any) -> bytes | None:
        """`push`, the packed arguments of an earlier launch, with new values in some of
        its slots ((slot, value) pairs), pointers checked as `arguments` checks them; None
        when a number does not fit its slot (the full packing says why)."""
        out = bytearray(push)
        for (at, packer, kind, align, dtype, path), v in changes:
            if kind == "ptr":
                v = _address(v, path, align, dtype, context, device)
            elif kind == "bool" or type(v) is np.bool_:
                v = int(bool(v))
            try:
                packer.pack_into(out, at, v)
            except (struct.error, OverflowError):
                return None
        return bytes(out)

    def misfit(self, values: list) -> str | None:
        """Which scalar argument does not fit its type, and why (for the error)."""
        for pos, path, dtype in self.scalar_paths:
            v = values[pos]
            if pos < 0 or dtype.kind not in "iu" or isinstance(v, float):
                continue
            info = np.iinfo(dtype)
            if not info.min <= int(v) <= info.max:
                return (f"kernel argument {_name(path)} = {v} does not fit its type "
                        f"{dtype} (whose range is {info.min} to {info.max})")
        return None


def _alignment(a: Any) -> int:
    """The alignment a pointer argument's address needs: its element type's, or more
    where the kernel reads vectors through it."""
    return max(layout(element_type(a.dtype))[1], a.align)


def _address(p: Any, path: tuple, align: int, dtype: Any, context: Any, device: Any) -> int:
    """A pointer argument's device address, once it is known to be a live USM pointer of
    the launch's context and device, aligned to its element type."""
    try:
        a = p.allocation
    except AttributeError:
        raise exception(errc.kernel_argument, f"kernel argument {_name(path)} must "
                        f"be a USM pointer, got {type(p).__name__}") from None
    if a.freed:
        a.check_live()  # raises
    if context is not None and a.context is not context:
        raise exception(errc.invalid, f"kernel argument {_name(path)}: pointer from "
                        "another context")
    if a.device is not device and device is not None and a.device != device:
        raise other_device(f"kernel argument {_name(path)}", a, device)
    address = a.address + p.byte_offset
    if address % align:
        raise exception(errc.kernel_argument, f"pointer {_name(path)} is not "
                        f"aligned to its element type {dtype} ({align} bytes)" if
                        align == device_alignment(np.dtype(dtype)) else f"aligned to "
                        f"{align} bytes, as the vectors the kernel accesses through it need")
    return address


def _direct_slots(ck: CompiledKernel, pyfn: Any
                  ) -> tuple[dict[int, Slot], dict[str, Slot], dict[int, Slot]]:
    """The slots of the numbers and pointers read straight from a root: by closure cell
    index, by module global of the kernel's module, by explicit argument index. A root
    read otherwise (a struct's fields, an accessor), or into two slots, has none; a
    kernel reading a root beyond these (a global of another module, in a device
    function) has none at all."""
    freevars = pyfn.__code__.co_freevars
    found: dict[tuple, Slot | None] = {}
    for a in ck.args:
        if a.push_offset < 0 or a.kind in _HIDDEN_KINDS:
            continue
        path = a.path
        if path[0] == "cell":
            root: tuple = ("cell", freevars.index(path[1]))
        elif path[0] == "param":
            root = ("param", path[1])
        elif path[0] == "global" and path[1] == pyfn.__module__:
            root = ("global", path[2])
        else:  # read beyond what a launch's record holds: every change packs in full
            return {}, {}, {}
        if root in found or a.kind not in ("ptr", "scalar") or \
                len(path) != ROOT_LENGTH.get(path[0], 3):
            found[root] = None
            continue
        ptr = a.kind == "ptr"
        dt = np.dtype(np.uint64) if ptr else np.dtype(a.dtype)
        kind = "ptr" if ptr else "bool" if a.dtype.kind == "b" or dt.kind == "b" else "scalar"
        align = _alignment(a) if ptr else 1
        found[root] = (a.push_offset, struct.Struct("<" + _fmt(dt)), kind, align, a.dtype,
                       path)
    slots: dict[str, dict] = {"cell": {}, "global": {}, "param": {}}
    for (where, key), slot in found.items():
        if slot is not None:
            slots[where][key] = slot
    return slots["cell"], slots["global"], slots["param"]


def launch_value(launch: Any, what: str, d: int) -> int:
    """The size ("range") or offset of dimension `d` of a launch, as its slot holds it."""
    if what == "range":
        return int((launch.get_global_range() if isinstance(launch, nd_range) else launch)[d])
    return int(launch.get_offset()[d])


def _name(path: tuple) -> str:
    if path[0] == "param":
        return f"#{path[1]}" + "".join(f".{p}" for p in path[2:])
    return path_name(path)


def _indirect_path(path: tuple, module: str) -> bool:
    """Whether a capture path goes through attributes of a captured object, a device
    function's cells or a global of another module (one a device function reads): what
    it holds is not part of the key a kernel is prepared under, nor of a plan's record
    of the kernel's own cells and globals."""
    return path[0] == "fncell" or (path[0] == "global" and path[1] != module) or (
        path[0] != "param" and len(path) > ROOT_LENGTH.get(path[0], 3))


class LaunchMemory:
    """Memory a launch's command owns (its argument block, a reduction's partials). The
    command keeps it alive until it completes; then its memory goes back to the
    allocator, which reuses it only once the work submitted before has completed."""

    __slots__ = ("allocation",)

    def __init__(self, device: Any, nbytes: int, host_visible: bool,
                 context: Any = None) -> None:
        allocator = scheduler_for(device).allocators[host_visible]
        self.allocation = Allocation(allocator, allocator.allocate(nbytes), 0, nbytes,
                                     alloc.host if host_visible else alloc.device, context,
                                     device)

    @property
    def address(self) -> int:
        return self.allocation.address

    def __del__(self) -> None:
        self.allocation.free()


class ArgumentBlock(LaunchMemory):
    """A launch's packed arguments in host-visible memory, for a kernel whose arguments
    outgrow the push constants."""

    __slots__ = ()

    def __init__(self, device: Any, data: bytes) -> None:
        super().__init__(device, len(data), True)
        self.allocation.host_bytes()[:] = np.frombuffer(data, np.uint8)
