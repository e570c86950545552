"""Variables: reading a name (local, closure cell, global, builtin) and binding one.

A variable's type is fixed by its first assignment; an assignment that needs a wider type
raises `Restart`, and the function is lowered again with the wider type. Names assigned
once outside loops hold compile-time values and constant pointers without a variable.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

import numpy as np

from .. import ir
from ..matrix_code import MatrixV
from ..reduction import ReducerV
from ..typesys import BOOL, promote
from ..values import (
    AccessorV,
    AggSlot,
    AggV,
    AtomicV,
    FixedSlot,
    ItemV,
    MethodV,
    ObjSlot,
    ObjV,
    PtrSlot,
    PtrV,
    PyV,
    RangeV,
    ScalarSlot,
    TupSlot,
    TupV,
)
from .base import LoweringState
from .describe import kind_of


class Restart(Exception):
    """A variable needs a wider type: lower the function again."""


class Names(LoweringState):
    """Variables and the slots that hold them."""

    def lookup(self, name: str, node: ast.AST) -> Any:
        slot = self.env.get(name)
        if slot is not None:
            return self.read_slot(slot)
        if name in self.cells:
            try:
                obj = self.cells[name].cell_contents
            except ValueError:
                raise self.err(node, f"'{name}' is not yet bound") from None
            path = ("cell", name) if self.fn_path is None else ("fncell", self.fn_path, name)
            return self.m.captured(self, path, obj, node)
        if name in self.globals:
            return self.m.captured(self, ("global", self.pyfn.__module__, name),
                                   self.globals[name], node)
        if hasattr(builtins, name):
            return PyV(getattr(builtins, name))
        raise self.err(node, f"name '{name}' is not defined")

    def read_slot(self, slot: Any) -> Any:
        if isinstance(slot, ScalarSlot):
            return ir.Read(slot.local)
        if isinstance(slot, PtrSlot):
            return PtrV(slot.root, ir.Read(slot.offset))
        if isinstance(slot, AggSlot):
            return AggV(slot.sty, [self.read_slot(s) for s in slot.fields])
        if isinstance(slot, TupSlot):
            return TupV([self.read_slot(s) for s in slot.items])
        if isinstance(slot, ObjSlot):
            return ObjV(slot.cls, self.read_slot(slot.ptr))
        return slot.value

    def new_slot(self, name: str, value: Any, node: ast.AST) -> Any:
        if isinstance(value, ItemV | AtomicV | MethodV | ReducerV | AccessorV | RangeV |
                      MatrixV):
            return FixedSlot(value)
        if isinstance(value, PyV):
            numeric = isinstance(value.obj, int | float | bool | np.generic)
            if not numeric or (self.assigned_once.get(name) == 1 and self.loop_depth == 0):
                return FixedSlot(value)
        if isinstance(value, ir.Value) and id(value) in self.m.one_d and \
                self.assigned_once.get(name) == 1 and self.loop_depth == 0:
            return FixedSlot(value)  # keeps its [0]
        if isinstance(value, PyV | ir.Value):
            v = self.scalar(value, node)
            ty = self.hints.get(name, v.ty)
            return ScalarSlot(self.new_local(name, ty))
        if isinstance(value, PtrV):
            if self.assigned_once.get(name) == 1 and self.loop_depth == 0 and \
                    _stable(value.offset):
                return FixedSlot(value)  # e.g. an array: keeps its constant offset
            return PtrSlot(value.root, self.new_local(name, value.offset.ty))
        if isinstance(value, AggV):
            return AggSlot(value.sty, [self.new_slot(f"{name}.{f}", v, node)
                                       for (f, _), v in zip(value.sty.fields, value.fields,
                                                            strict=True)])
        if isinstance(value, TupV):
            return TupSlot([self.new_slot(f"{name}.{i}", v, node)
                            for i, v in enumerate(value.items)])
        if isinstance(value, ObjV):
            ptr = self.new_slot(name, value.ptr, node)
            return FixedSlot(value) if isinstance(ptr, FixedSlot) else ObjSlot(value.cls, ptr)
        raise self.err(node, f"cannot hold {kind_of(value)} in a variable")

    def assign_slot(self, name: str, slot: Any, value: Any, node: ast.AST) -> None:
        if isinstance(slot, ScalarSlot):
            v = self.scalar(value, node, slot.local.ty if isinstance(value, PyV) else None)
            if v.ty != slot.local.ty:
                wide = promote(slot.local.ty, v.ty) if not slot.local.ty.is_bool or \
                    not v.ty.is_bool else BOOL
                if slot.local.ty.is_bool and v.ty.is_int:
                    wide = v.ty
                if wide != slot.local.ty and self.hints.get(name) != wide \
                        and not isinstance(value, PyV):
                    self.hints[name] = wide
                    raise Restart
                v = self.convert(v, slot.local.ty, node)
            self.emit(ir.Assign(slot.local, v))
        elif isinstance(slot, PtrSlot):
            root = slot.root
            if isinstance(root, ir.GlobalRoot):
                self.emit(ir.Assign(slot.offset, self.address(value, root.elem, node,
                                                              f"'{name}'")))
                return
            if not isinstance(value, PtrV) or value.root is not root:
                raise self.err(node, f"'{name}' must keep pointing into the same memory "
                               "(a pointer to work-group or private memory cannot switch "
                               "arrays)")
            self.emit(ir.Assign(slot.offset, value.offset))
        elif isinstance(slot, AggSlot):
            if not isinstance(value, AggV) or value.sty != slot.sty:
                raise self.err(node, f"'{name}' holds a {slot.sty!r}, cannot assign "
                               f"{kind_of(value)}")
            if _reads_slot(value, slot):  # `v = v.wzyx`: every field before any store
                value = self.snapshot(value)
            for (f, _), s, v in zip(slot.sty.fields, slot.fields, value.fields, strict=True):
                self.assign_slot(f"{name}.{f}", s, v, node)
        elif isinstance(slot, ObjSlot):
            if not isinstance(value, ObjV) or value.cls is not slot.cls:
                raise self.err(node, f"'{name}' holds a {slot.cls.__name__} object, cannot "
                               f"assign {kind_of(value)}")
            self.assign_slot(name, slot.ptr, value.ptr, node)
        elif isinstance(slot, TupSlot):
            if not isinstance(value, TupV) or len(value.items) != len(slot.items):
                raise self.err(node, f"'{name}' holds a tuple of {len(slot.items)}")
            for i, (s, v) in enumerate(zip(slot.items, value.items, strict=True)):
                self.assign_slot(f"{name}.{i}", s, v, node)
        else:
            if value is slot.value or (isinstance(value, PyV) and isinstance(slot.value, PyV)
                                       and value.obj is slot.value.obj):
                return
            raise self.err(node, f"'{name}' is bound to {kind_of(slot.value)} and cannot be "
                           "reassigned")

    def bind(self, name: str, value: Any, node: ast.AST) -> None:
        if isinstance(value, ItemV) and value.kind in ("id", "item") and value.dims == 1:
            value = self.scalar(value, node)
        slot = self.env.get(name)
        if slot is None:
            slot = self.new_slot(name, value, node)
            self.env[name] = slot
            if isinstance(slot, FixedSlot):
                return
        self.assign_slot(name, slot, value, node)


def _stable(v: ir.Value) -> bool:
    """Whether a value reads nothing that can change (no variables, no memory)."""
    stack = [v]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Const | ir.PushField | ir.ArgRead | ir.Builtin):
            continue
        if isinstance(x, ir.Op):
            stack.extend(a for a in x.args if isinstance(a, ir.Value))
        else:
            return False
    return True


def _locals_of(slot: Any) -> set[int]:
    if isinstance(slot, ScalarSlot):
        return {id(slot.local)}
    if isinstance(slot, PtrSlot):
        return {id(slot.offset)}
    if isinstance(slot, AggSlot):
        return set().union(*(_locals_of(f) for f in slot.fields))
    return set()


def _reads_slot(value: AggV, slot: AggSlot) -> bool:
    """Whether a field of a struct value reads a variable of a field before it in the
    slot it is assigned to (which is stored first); unknown values are taken to."""
    before: set[int] = set()
    for f, fslot in zip(value.fields, slot.fields, strict=True):
        if before and _reads(f.offset if isinstance(f, PtrV) else f, before):
            return True
        before |= _locals_of(fslot)
    return False


def _reads(v: Any, ids: set[int]) -> bool:
    stack: list[Any] = [v]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Read):
            if id(x.local) in ids:
                return True
        elif isinstance(x, ir.Op | ir.Ext):
            stack.extend(a for a in x.args if isinstance(a, ir.Value))
        elif isinstance(x, ir.Extract):
            stack.append(x.base)
        elif isinstance(x, ir.Compose):
            stack.extend(x.parts)
        elif isinstance(x, AggV):
            stack.extend(f.offset if isinstance(f, PtrV) else f for f in x.fields)
        elif not isinstance(x, ir.Const | ir.PushField | ir.ArgRead | ir.Builtin | PyV):
            return True
    return False
