"""Memory: places (an element of global, work-group or private memory, or a field of
one), loads and stores through them, and pointer arithmetic and selection."""

from __future__ import annotations

import ast
from typing import Any

from .. import ir, vector_code
from ..typesys import (
    BOOL,
    I32,
    I64,
    U64,
    PtrType,
    Scalar,
    Struct,
    Type,
    VecType,
    layout,
    mem_type,
)
from ..values import AggV, PtrV, PyV, TupV
from .base import LoweringState
from .describe import kind_of
from .scalars import wrap


class Memory(LoweringState):
    """Places, loads, stores and pointers."""

    def index_place(self, base: Any, index: Any, node: ast.AST) -> ir.Place:
        if isinstance(base, PtrV):
            if isinstance(index, TupV) or (isinstance(index, PyV) and
                                           isinstance(index.obj, tuple)):
                items = index.items if isinstance(index, TupV) else [PyV(o) for o in index.obj]
                shape = getattr(base.root, "shape", ())
                if len(shape) != len(items):
                    raise self.err(node, f"{len(items)} indices for memory of shape {shape}")
                index = items[0]
                for extent, item in zip(shape[1:], items[1:], strict=True):
                    index = self.binop(ast.Add(), self.binop(ast.Mult(), index, PyV(extent),
                                                             node), item, node)
            length = getattr(base.root, "length", None)
            if isinstance(index, PyV) and isinstance(index.obj, int) and index.obj < 0 and \
                    length is not None and isinstance(base.offset, ir.Const) and \
                    base.offset.value == 0:
                index = PyV(index.obj + length)  # arr[-1] on a fixed-size array: its last
            i = self.scalar(index, node)
            if not (i.ty.is_int or i.ty.is_bool):
                raise self.err(node, f"an index must be an integer, got {i.ty!r}")
            if isinstance(base.root, ir.GlobalRoot):
                return ir.Place(base.root, self.element_address(base, i), (),
                                mem_type(base.elem))
            i = self.convert(i, I32, node)
            off = base.offset
            if not (isinstance(off, ir.Const) and off.value == 0):
                i = self.fold_add(off, i)
            return ir.Place(base.root, i, (), mem_type(base.elem))
        raise self.err(node, f"{kind_of(base)} cannot be indexed")

    def fold_add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            return ir.Const(I32, wrap(a.value + b.value, I32))
        if isinstance(b, ir.Const) and b.value == 0:
            return a
        if isinstance(a, ir.Const) and a.value == 0:
            return b
        return ir.Op("OpIAdd", I32, [a, b])

    def load(self, place: ir.Place, node: ast.AST, logical: Type | None = None) -> Any:
        """The value at a place; `logical` is its type where memory holds it otherwise
        (bools as bytes, pointers as addresses), the root's element type by default."""
        ty = place.ty
        if isinstance(ty, VecType) and ty.count > 4:
            parts = [self.load(vector_code.part(place, j), node) for j in range(ty.count // 4)]
            return AggV(ty, [x for p in parts for x in p.fields])
        if isinstance(ty, VecType):  # one vector load
            self.m.use_storage(place.root, ty.elem)
            self.m.note_access(self, place, node, "load")
            v = ir.Load(place)
            return AggV(ty, [ir.Extract(v, k, ty.elem) for k in range(ty.count)])
        if isinstance(ty, Struct):
            fields = []
            for i, (_, ft) in enumerate(ty.fields):
                fp = ir.Place(place.root, place.index, (*place.members, i), mem_type(ft))
                self.m.member_of(place, fp)
                fields.append(self.load(fp, node, ft))
            return AggV(ty, fields)
        if logical is None and not place.members:
            logical = place.root.elem
        self.m.use_storage(place.root, ty)
        self.m.note_access(self, place, node, "load")
        v = ir.Load(place)
        if isinstance(logical, PtrType):
            return PtrV(self.m.global_root(logical.elem), v)
        if logical == BOOL:
            return self.convert(v, BOOL, node)
        return v

    def store(self, place: ir.Place, value: Any, node: ast.AST,
              logical: Type | None = None) -> None:
        ty = place.ty
        if isinstance(ty, VecType):  # one vector store
            if not isinstance(value, AggV) or value.sty != ty:
                raise self.err(node, f"cannot store {kind_of(value)} into a {ty!r}")
            if ty.count > 4:
                for j in range(ty.count // 4):
                    part = vector_code.part(place, j)
                    self.store(part, AggV(part.ty, value.fields[4 * j: 4 * j + 4]), node)
                return
            self.m.use_storage(place.root, ty.elem)
            self.m.note_access(self, place, node, "store")
            self.emit(ir.Store(place, ir.Compose(ty, list(value.fields))))
            return
        if isinstance(ty, Struct):
            if not isinstance(value, AggV) or value.sty != ty:
                raise self.err(node, f"cannot store {kind_of(value)} into a {ty!r}")
            for i, ((_, ft), fv) in enumerate(zip(ty.fields, value.fields, strict=True)):
                fp = ir.Place(place.root, place.index, (*place.members, i), mem_type(ft))
                self.m.member_of(place, fp)
                self.store(fp, fv, node, ft)
            return
        target = logical if logical is not None else (
            place.root.elem if not place.members else ty)
        self.m.use_storage(place.root, ty)
        self.m.note_access(self, place, node, "store")
        if isinstance(target, PtrType):
            self.emit(ir.Store(place, self.address(value, target.elem, node, "memory")))
            return
        if isinstance(value, PtrV | AggV | TupV):
            raise self.err(node, f"cannot store {kind_of(value)} into {target!r} memory")
        v = self.scalar(value, node, target if isinstance(target, Scalar) else None)
        v = self.convert(self.convert(v, target, node), ty, node)
        self.emit(ir.Store(place, v))

    def pointer_arith(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        """`p + n`, `n + p`, `p - n` (in elements), and `p - q` (elements between them)."""
        if isinstance(op, ast.Sub) and isinstance(a, PtrV) and isinstance(b, PtrV):
            if b.root is not a.root:
                raise self.err(node, f"subtracting {kind_of(b)} from {kind_of(a)} (they "
                               "point into different memory)")
            if not isinstance(a.root, ir.GlobalRoot):
                return ir.Op("OpISub", I32, [a.offset, b.offset])
            diff = ir.Op("OpBitcast", I64, [ir.Op("OpISub", U64, [a.offset, b.offset])])
            stride = layout(mem_type(a.elem))[0]
            return diff if stride == 1 else ir.Op("OpSDiv", I64, [diff, ir.Const(I64, stride)])
        if not isinstance(op, ast.Add) and not (isinstance(op, ast.Sub) and
                                                isinstance(a, PtrV)):
            raise self.err(node, "unsupported pointer arithmetic (pointers take + and - of "
                           "an integer, and - of a pointer)")
        p, n = (a, b) if isinstance(a, PtrV) else (b, a)
        if isinstance(n, PtrV):
            raise self.err(node, "cannot add two pointers")
        nv = self.scalar(n, node)
        if not (nv.ty.is_int or nv.ty.is_bool):
            raise self.err(node, f"pointer arithmetic needs an integer, got {nv.ty!r}")
        sub = isinstance(op, ast.Sub)
        if isinstance(p.root, ir.GlobalRoot):
            return PtrV(p.root, self.element_address(p, nv, sub))
        nv = self.convert(nv, I32, node)
        if sub:
            return PtrV(p.root, ir.Op("OpISub", I32, [p.offset, nv]))
        return PtrV(p.root, self.fold_add(p.offset, nv))

    def element_address(self, p: PtrV, index: ir.Value, sub: bool = False) -> ir.Value:
        """The device address `index` elements after (or before) global pointer `p`. The
        index is widened to 64 bits before it is scaled, so offsets past 4 GiB are exact."""
        wide = self.convert(index, I64 if index.ty.is_signed else U64)
        stride = layout(mem_type(p.elem))[0]
        op = "OpISub" if sub else "OpIAdd"
        if isinstance(wide, ir.Const):
            if wide.value == 0:
                return p.offset
            return ir.Op(op, U64, [p.offset, ir.Const(U64, wrap(wide.value * stride, U64))])
        scaled = ir.Op("OpIMul", U64, [wide, ir.Const(U64, stride)])
        return ir.Op(op, U64, [p.offset, scaled])

    def null_pointer(self, elem: Type) -> PtrV:
        return PtrV(self.m.global_root(elem), ir.Const(U64, 0))

    def address(self, value: Any, elem: Type, node: ast.AST, where: str) -> ir.Value:
        """The device address of a pointer to `elem`s going to `where` (memory, a pointer
        variable): a pointer into global memory, or None for the null pointer."""
        if isinstance(value, PyV) and value.obj is None:
            return ir.Const(U64, 0)
        if isinstance(value, PtrV) and isinstance(value.root, ir.GlobalRoot) and \
                value.elem == elem:
            return value.offset
        what = kind_of(value)
        if isinstance(value, PtrV) and value.elem == elem:
            what += f" in {value.root.space} memory"
        raise self.err(node, f"{where} holds a pointer to {elem!r} in global memory, cannot "
                       f"take {what}")

    def select_pointer(self, cond: ir.Value, a: Any, b: Any, pre_a: list[ir.Stmt],
                       pre_b: list[ir.Stmt], node: ast.AST) -> PtrV:
        """`a if cond else b` for pointers into the same memory (None is null)."""
        like = a if isinstance(a, PtrV) else b
        if isinstance(like.root, ir.GlobalRoot):
            a, b = (x if isinstance(x, PtrV) else PtrV(like.root, self.address(
                x, like.elem, node, "a conditional pointer")) for x in (a, b))
        if not isinstance(a, PtrV) or not isinstance(b, PtrV) or a.root is not b.root:
            raise self.err(node, f"the two sides give {kind_of(a)} and {kind_of(b)}, which "
                           "point into different memory")
        return PtrV(a.root, ir.Cond(cond, a.offset, b.offset, a.offset.ty, pre_a, pre_b))
