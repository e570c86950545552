"""device_global in device code: `g.get()`, `g.set(v)`, `g[i]`, `g[i] = v`.

A variable is a pointer to its storage (as the seed's `usmptr` member): a hidden 64-bit
kernel argument that the launch glue fills from the runtime's device-global database.
Wherever the variable is used as a value (`atomic_ref(g)`, `g + i`, a device function's
argument) it is that pointer; `GlobalV` only keeps the declaration for the methods and
for indexing by its shape.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .values import MethodV, PtrV, PyV, TupV


@dataclass(eq=False)
class GlobalV:
    """A device_global read in device code: its pointer and its declaration."""

    ptr: PtrV
    decl: Any

    @property
    def name(self) -> str:
        return self.decl.unique_id


def attribute(fl: Any, g: GlobalV, attr: str, node: ast.AST) -> MethodV:
    if attr in ("get", "set"):
        return MethodV(g, attr)
    raise fl.err(node, f"device_global {g.name} has no attribute '{attr}' (device code "
                 "uses get(), set(v) and indexing)")


def method(fl: Any, g: GlobalV, name: str, args: list[Any], kwargs: dict[str, Any],
           node: ast.AST) -> Any:
    if kwargs:
        raise fl.err(node, f"device_global.{name} takes no keyword arguments")
    place = fl.index_place(g.ptr, PyV(0), node)
    if name == "get":
        if args:
            raise fl.err(node, "device_global.get() takes no arguments")
        if g.decl.shape:
            return g.ptr  # an array: its first element's pointer, indexed as the variable
        return fl.load(place, node)
    if g.decl.shape:
        raise fl.err(node, f"device_global {g.name} is an array of shape {g.decl.shape}: "
                     "assign its elements (g[i] = v)")
    if len(args) != 1:
        raise fl.err(node, "device_global.set(v) takes one value")
    fl.store(place, args[0], node)
    return PyV(None)


def element(fl: Any, g: GlobalV, index: Any, node: ast.AST) -> tuple[PtrV, Any]:
    """(pointer, flat index) of `g[index]`: one index per dimension of the shape."""
    shape = g.decl.shape
    if not shape:
        raise fl.err(node, f"device_global {g.name} holds one value, not an array: use "
                     "get() and set(v)")
    if isinstance(index, TupV):
        items = index.items
    elif isinstance(index, PyV) and isinstance(index.obj, tuple):
        items = [PyV(o) for o in index.obj]
    else:
        items = [index]
    if len(items) != len(shape):
        raise fl.err(node, f"{len(items)} indices for device_global {g.name} of shape "
                     f"{shape}")
    for item, extent in zip(items, shape, strict=True):
        if isinstance(item, PyV) and isinstance(item.obj, int) and \
                not 0 <= item.obj < extent:
            raise fl.err(node, f"index {item.obj} is out of range for device_global "
                         f"{g.name} of shape {shape}")
    flat = items[0]
    for extent, item in zip(shape[1:], items[1:], strict=True):
        flat = fl.binop(ast.Add(), fl.binop(ast.Mult(), flat, PyV(extent), node), item, node)
    return g.ptr, flat


__all__ = ["GlobalV", "attribute", "element", "method"]
