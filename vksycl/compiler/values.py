"""Frontend values: what a Python expression in a kernel evaluates to at compile time.

A runtime scalar is an IR `Value`; everything else (pointers, structs, tuples, work-item
objects, compile-time Python objects) is one of these wrappers, flattened before it
reaches the IR, so aggregates never need SPIR-V composites or pointer variables.
A pointer's runtime part is a scalar too: a uint64 device address in global memory, an
int32 element offset in a work-group or private array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..access import access_mode
from . import ir
from .typesys import Struct, Type


@dataclass(eq=False)
class PyV:
    """A compile-time Python object (literal, global constant, module, function, type).
    `path` is where a captured plain object lives, so its attributes are read at launch."""

    obj: Any
    path: tuple | None = None


@dataclass(eq=False)
class PtrV:
    """A pointer: a static memory root plus a position in it, as in `ir.Place`: a uint64
    device address for global memory, an int32 element offset otherwise."""

    root: ir.Root
    offset: ir.Value

    @property
    def elem(self) -> Type:
        return self.root.elem


@dataclass(eq=False)
class AggV:
    """A struct value, held field by field."""

    sty: Struct
    fields: list[Any]


@dataclass(eq=False)
class ObjV:
    """An object in global memory seen as struct class `cls` (`Base.at(ptr)`, `self` in a
    method called through one): fields are loads and stores at its address, and virtual
    methods dispatch on the type tag stored there."""

    cls: Any
    ptr: PtrV


@dataclass(eq=False)
class AccessorV:
    """An accessor: a pointer to the element at its access offset, its dimensions and
    access mode. A global accessor's range, offset and memory range are kernel arguments
    fetched through `path` at launch, each made when the code first reads it
    (`KernelModule.accessor_piece`); a local accessor's are its `shape`, compiled in."""

    ptr: PtrV
    dims: int
    mode: access_mode
    path: tuple | None = None  # a global accessor's capture path
    shape: tuple[int, ...] | None = None  # a local accessor's range


@dataclass(eq=False)
class RangeV:
    """The `range` or `id` an accessor query returns: its components, read by index, and
    for a range its `size()`."""

    kind: str  # "range" or "id"
    items: list[ir.Value]


@dataclass(eq=False)
class TupV:
    items: list[Any]


@dataclass(eq=False)
class ItemV:
    """A work-item object: id, item, nd_item, group, sub_group, range."""

    kind: str
    dims: int


@dataclass(eq=False)
class AtomicV:
    place: ir.Place
    order: int
    scope: int


@dataclass(eq=False)
class MethodV:
    """An attribute of a device object waiting to be called."""

    base: Any
    name: str


# -- variable slots ----------------------------------------------------------------------

@dataclass(eq=False)
class ScalarSlot:
    local: ir.Local


@dataclass(eq=False)
class PtrSlot:
    root: ir.Root
    offset: ir.Local


@dataclass(eq=False)
class AggSlot:
    sty: Struct
    fields: list[Any]


@dataclass(eq=False)
class ObjSlot:
    cls: Any
    ptr: PtrSlot


@dataclass(eq=False)
class TupSlot:
    items: list[Any]


@dataclass(eq=False)
class FixedSlot:
    """A name bound once to a value that needs no storage (constants, objects, arrays)."""

    value: Any
