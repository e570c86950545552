"""Accessors in device code (SYCL 2020 4.7.6.9 and 4.7.6.11): elements by indices, an id
or an item, the queries of range and offset, and writes checked against the access mode.

An accessor's elements lie row after row of its buffer: element (i, j, k) is at
`((i * memory_range[1] + j) * memory_range[2] + k)` elements past the element at the
access offset, whose address the launch passes, since indexing is affine. The index is
linearised in int32, as work-item ids are; a local accessor's rows are its own shape.
"""

from __future__ import annotations

import ast
from typing import Any

from ..access import access_mode
from . import ir
from .typesys import I32, I64, layout, mem_type
from .values import AccessorV, ItemV, MethodV, PtrV, PyV, RangeV, TupV

# work-item objects that are ids (an item converts to its id)
_ID_KINDS = ("id", "item", "global_id", "local_id", "group_id")
_METHODS = ("get_range", "get_offset", "size", "get_count", "byte_size", "empty")
MODE_NAMES = {access_mode.read: "read_only", access_mode.write: "write_only",
              access_mode.read_write: "read_write"}


def describe(acc: AccessorV) -> str:
    """How messages name an accessor."""
    if acc.shape is not None:
        return f"a {acc.dims}-dimensional local_accessor"
    return f"a {acc.dims}-dimensional {MODE_NAMES[acc.mode]} accessor"


def element(fl: Any, acc: AccessorV, index: Any, node: ast.Subscript,
            write: bool = False) -> ir.Place:
    """The element `acc[index]` names; `write` when the code stores to it."""
    if write:
        check_writable(fl, acc, node, "it cannot be written")
    items = _indices(fl, acc, index, node)
    if acc.dims == 1:
        place = fl.index_place(acc.ptr, items[0], node)
    else:
        linear = _int32(fl, items[0], node)
        for d in range(1, acc.dims):
            extent = PyV(acc.shape[d]) if acc.shape is not None else \
                fl.m.accessor_piece(acc.path, "memory_range", d)
            linear = fl.binop(ast.Add(), fl.binop(ast.Mult(), linear, extent, node),
                              _int32(fl, items[d], node), node)
        place = fl.index_place(acc.ptr, linear, node)
    if fl.m.checks and acc.shape is None:
        # checked mode checks each index against the accessor's range, which is tighter
        # than its buffer's memory (a ranged accessor's rows are not one run of it)
        fl.m.accessor_limits[id(place)] = place, [
            (_int32(fl, item, node), fl.m.accessor_piece(acc.path, "range", d))
            for d, item in enumerate(items)]
    return place


def pointer(fl: Any, acc: AccessorV, index: Any, node: ast.Subscript) -> PtrV:
    """The address of `acc[index]`, which `atomic_ref(acc[index])` refers to."""
    check_writable(fl, acc, node, "atomic_ref needs an accessor that can be written")
    place = element(fl, acc, index, node)
    return PtrV(place.root, place.index)


def check_writable(fl: Any, acc: AccessorV, node: ast.Subscript, why: str) -> None:
    if not acc.mode.writes:
        raise fl.err(node, f"{ast.unparse(node.value)} is a read_only accessor; {why}")


def _indices(fl: Any, acc: AccessorV, index: Any, node: ast.AST) -> list[Any]:
    """One index per dimension, from a tuple, an id or item, an accessor's id, or one
    value."""
    if isinstance(index, TupV):
        items = index.items
    elif isinstance(index, PyV) and isinstance(index.obj, tuple):
        items = [PyV(o) for o in index.obj]
    elif isinstance(index, ItemV):
        if index.kind not in _ID_KINDS:
            raise fl.err(node, f"an accessor is indexed by an id, an item or integers, not "
                         f"a {index.kind}")
        items = [fl.m.queries.index(fl, index, PyV(d), node) for d in range(index.dims)]
    elif isinstance(index, RangeV) and index.kind == "id":
        items = index.items
    else:
        items = [index]
    if len(items) != acc.dims:
        raise fl.err(node, f"{len(items)} indices for {describe(acc)}")
    return items


def _int32(fl: Any, v: Any, node: ast.AST) -> ir.Value:
    x = fl.scalar(v, node)
    if not (x.ty.is_int or x.ty.is_bool):
        raise fl.err(node, f"an accessor index must be an integer, got {x.ty!r}")
    return fl.convert(x, I32, node)


def attribute(fl: Any, acc: AccessorV, name: str, node: ast.AST) -> MethodV:
    if name not in _METHODS or (name == "get_offset" and acc.shape is not None):
        raise fl.err(node, f"{describe(acc)} has no method {name}() in device code")
    return MethodV(acc, name)


def method(fl: Any, acc: AccessorV, name: str, args: list[Any], node: ast.AST) -> Any:
    """`get_range()`, `get_offset()`, `size()` / `get_count()`, `byte_size()`, `empty()`."""
    if args:
        raise fl.err(node, f"accessor.{name}() takes no arguments")
    if name == "get_range":
        return RangeV("range", _pieces(fl, acc, "range"))
    if name == "get_offset":
        return RangeV("id", _pieces(fl, acc, "offset"))
    count = size(_pieces(fl, acc, "range"))
    if name == "empty":
        return fl.compare(ast.Eq(), count, PyV(0), node)
    if name == "byte_size":
        itemsize = layout(mem_type(acc.ptr.elem))[0]
        return fl.binop(ast.Mult(), fl.convert(count, I64), PyV(itemsize), node)
    return count


def length(fl: Any, acc: AccessorV, node: ast.AST) -> ir.Value:
    """`len(acc)`: the range of a one-dimensional accessor."""
    if acc.dims != 1:
        raise fl.err(node, f"len() of {describe(acc)}: use get_range()[0] or size()")
    return _pieces(fl, acc, "range")[0]


def _pieces(fl: Any, acc: AccessorV, what: str) -> list[ir.Value]:
    if acc.shape is not None:
        return [ir.Const(I32, s) for s in acc.shape]
    return [fl.m.accessor_piece(acc.path, what, d) for d in range(acc.dims)]


def size(items: list[ir.Value]) -> ir.Value:
    out = items[0]
    for v in items[1:]:
        if isinstance(out, ir.Const) and isinstance(v, ir.Const):
            out = ir.Const(I32, out.value * v.value)
        else:
            out = ir.Op("OpIMul", I32, [out, v])
    return out


# -- the range and id of an accessor -----------------------------------------------------

def component(fl: Any, r: RangeV, index: Any, node: ast.AST) -> ir.Value:
    """`r[d]`: a constant dimension, or one chosen at run time among the components."""
    if isinstance(index, PyV) and isinstance(index.obj, int):
        if not 0 <= index.obj < len(r.items):
            raise fl.err(node, f"dimension {index.obj} is out of range for "
                         f"{len(r.items)} dimensions")
        return r.items[index.obj]
    return fl.select_tuple(list(r.items), fl.scalar(index, node), node)


def range_attribute(fl: Any, r: RangeV, name: str, node: ast.AST) -> MethodV:
    if name != "get" and not (name == "size" and r.kind == "range"):
        raise fl.err(node, f"an accessor's {r.kind} has no method {name}() in device code")
    return MethodV(r, name)


def range_method(fl: Any, r: RangeV, name: str, args: list[Any], node: ast.AST) -> Any:
    if name == "size":
        return size(r.items)
    if len(args) != 1:
        raise fl.err(node, f"{r.kind}.get(dimension) takes one argument")
    return component(fl, r, args[0], node)
