"""Statements: blocks, assignments and their targets, `if`, loops (`range` loops
counted, loops over tuples unrolled), `break`, `continue` and `return`."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

from .. import accessors, if_device, ir, reduction, unrolling, vector_code, virtual
from .. import device_global_code as dgc
from ..type_registry import type_of_annotation
from ..typesys import BOOL, I32, I64, Scalar, Struct, VecType, mem_type, promote
from ..values import (
    AccessorV,
    AggSlot,
    AggV,
    FixedSlot,
    ObjV,
    PtrV,
    PyV,
    RangeV,
    ScalarSlot,
    TupV,
)
from .base import LoweringState
from .describe import kind_of
from .scalars import weak_want

# the most iterations of a range loop of constant bounds that the driver is asked to
# unroll: copies of a register tile's loads and stores (a private array indexed by the
# counter stays in registers only once unrolled)
_UNROLL_TRIPS = 64


def _short(start: ir.Value, stop: ir.Value, step: ir.Value) -> bool:
    """Whether a range loop has constant bounds and at most `_UNROLL_TRIPS` iterations."""
    if not all(isinstance(v, ir.Const) for v in (start, stop, step)):
        return False
    return 0 < len(range(start.value, stop.value, step.value)) <= _UNROLL_TRIPS


_UNSUPPORTED_STMTS = {
    ast.Try: "try/except", ast.Raise: "raise", ast.With: "with", ast.AsyncWith: "async with",
    ast.AsyncFor: "async for", ast.Global: "global",
    ast.Delete: "del", ast.Import: "import", ast.ImportFrom: "import",
    ast.ClassDef: "class definition",
    ast.AsyncFunctionDef: "async function",
    ast.Match: "match",
}


class Statements(LoweringState):
    """One `stmt_<node>` method per supported statement."""

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)
            if self.out and isinstance(self.out[-1], ir.Return | ir.Break | ir.Continue):
                return

    def sub(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        saved = self.out
        self.out = []
        try:
            self.block(stmts)
            return self.out
        finally:
            self.out = saved

    def stmt(self, s: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            what = _UNSUPPORTED_STMTS.get(type(s), type(s).__name__)
            raise self.err(s, f"{what} is not supported in device code")
        sites = self.m.sites
        if sites is None:
            method(s)
            return
        out, first = self.out, len(self.out)
        method(s)
        for new in out[first:]:
            sites.setdefault(id(new), (new, self.src.filename, s.lineno))

    def stmt_Pass(self, s: ast.Pass) -> None:
        pass

    def stmt_Assert(self, s: ast.Assert) -> None:
        self.m.intr.assertion(self, s)

    def stmt_FunctionDef(self, s: ast.FunctionDef) -> None:
        if_device.define(self, s)

    def stmt_Nonlocal(self, s: ast.Nonlocal) -> None:
        if_device.nonlocal_stmt(self, s)

    def stmt_Expr(self, s: ast.Expr) -> None:
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        v = self.expr(s.value)
        if isinstance(v, ir.Value):
            self.emit(ir.Eval(v))

    def stmt_Assign(self, s: ast.Assign) -> None:
        value = self.expr(s.value)
        for target in s.targets:
            self.store_target(target, value)

    def stmt_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is None:
            return
        value = self.expr(s.value)
        ann = self.expr(s.annotation)
        t = type_of_annotation(ann.obj) if isinstance(ann, PyV) else None
        if isinstance(t, Scalar):
            value = self.convert(self.scalar(value, s, t), t, s)
            if isinstance(s.target, ast.Name) and s.target.id not in self.env:
                self.env[s.target.id] = ScalarSlot(self.new_local(s.target.id, t))
        self.store_target(s.target, value)

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        target = s.target
        reducer = self.reducer_target(target)
        if reducer is not None:
            reduction.augment(self, reducer, s.op, self.expr(s.value), s)
            return
        if isinstance(target, ast.Name):
            current = self.lookup(target.id, target)
            self.store_target(target, self.binop(s.op, current, self.expr(s.value), s))
            return
        if isinstance(target, ast.Subscript | ast.Attribute):
            place_fn = self.lvalue(target)
            current = place_fn(None)
            self.store_target(target, self.binop(s.op, current, self.expr(s.value), s),
                              place_fn)
            return
        raise self.err(s, "unsupported augmented assignment target")

    def reducer_target(self, target: ast.expr) -> reduction.ReducerV | None:
        """The reducer `s += v` or `s[j] += v` combines into, if the target is one."""
        name = target.value if isinstance(target, ast.Subscript) else target
        if not isinstance(name, ast.Name):
            return None
        base = self.lookup(name.id, name)
        if not isinstance(base, reduction.ReducerV):
            return None
        if isinstance(target, ast.Subscript):
            return reduction.element(self, base, self.expr(target.slice), target)
        return base

    def store_target(self, target: ast.expr, value: Any,
                     place_fn: Callable[[Any], Any] | None = None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value, target)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, TupV | RangeV):
                items = value.items
            elif isinstance(value, AggV):
                items = value.fields
            elif isinstance(value, PyV) and isinstance(value.obj, tuple):
                items = [PyV(o) for o in value.obj]
            else:
                raise self.err(target, f"cannot unpack {kind_of(value)}")
            if len(items) != len(target.elts):
                raise self.err(target, f"cannot unpack {len(items)} values into "
                               f"{len(target.elts)}")
            items = [self.snapshot(v) for v in items]  # all values before any store
            for t, v in zip(target.elts, items, strict=True):
                self.store_target(t, v)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            (place_fn or self.lvalue(target))(value)
        else:
            raise self.err(target, "unsupported assignment target")

    def snapshot(self, v: Any) -> Any:
        """The value computed now, so later stores cannot change it."""
        if isinstance(v, ir.Value) and not isinstance(v, ir.Const | ir.PushField):
            tmp = self.new_local("tmp", v.ty)
            self.emit(ir.Assign(tmp, v))
            return ir.Read(tmp)
        if isinstance(v, PtrV):
            return PtrV(v.root, self.snapshot(v.offset))
        if isinstance(v, AggV):
            return AggV(v.sty, [self.snapshot(f) for f in v.fields])
        if isinstance(v, TupV):
            return TupV([self.snapshot(f) for f in v.items])
        if isinstance(v, ObjV):
            return ObjV(v.cls, self.snapshot(v.ptr))
        return v

    def subscript_place(self, node: ast.Subscript) -> ir.Place:
        """Where `base[index]`, which the code writes, is in memory (a device_global's or
        a writable accessor's element too)."""
        base = self.value(node.value)
        index = self.expr(node.slice)
        if isinstance(base, AccessorV):
            return accessors.element(self, base, index, node, write=True)
        if isinstance(base, dgc.GlobalV):
            base, index = dgc.element(self, base, index, node)
        return self.index_place(base, index, node)

    def lvalue(self, target: ast.Subscript | ast.Attribute) -> Callable[[Any], Any]:
        """A function that stores its argument to the target, or loads it when given None
        (the target's sub-expressions are evaluated once)."""
        vector = self.vector_lvalue(target)
        if vector is not None:
            return vector
        if isinstance(target, ast.Subscript):
            place = self.subscript_place(target)
            return lambda v: self.load(place, target) if v is None else \
                self.store(place, v, target)
        base_node = target.value
        attr = target.attr
        place = self.memory_place(base_node)
        if place is not None:
            if isinstance(place.ty, VecType):
                return vector_code.memory_lvalue(self, place, attr, target)
            fplace, ftype = self.field_place(place, attr, target)
            return lambda v: self.load(fplace, target, ftype) if v is None else \
                self.store(fplace, v, target, ftype)
        if isinstance(base_node, ast.Name):
            slot = self.env.get(base_node.id)
            if isinstance(slot, AggSlot):
                i = slot.sty.field_index(attr)
                if i < 0:
                    raise self.err(target, f"struct {slot.sty.name} has no field '{attr}'")
                fslot = slot.fields[i]
                if isinstance(fslot, ScalarSlot):  # a field keeps its type: no widening
                    ft = fslot.local.ty
                    return lambda v: self.read_slot(fslot) if v is None else self.emit(
                        ir.Assign(fslot.local, self.convert(self.scalar(v, target, ft), ft,
                                                            target)))
                return lambda v: self.read_slot(fslot) if v is None else \
                    self.assign_slot(f"{base_node.id}.{attr}", fslot, v, target)
        obj = self.expr(base_node)
        if isinstance(obj, ObjV):
            return lambda v: virtual.store_field(self, obj, attr, v, target)
        raise self.err(target, "cannot assign to this attribute in device code")

    def vector_lvalue(self, target: ast.Subscript | ast.Attribute,
                      ) -> Callable[[Any], Any] | None:
        """The lvalue of an element or swizzle of a vector variable (`v[i]`, `v.xy`,
        `s.pos.x`); None for other targets."""
        base_node = target.value
        slot = self.struct_slot(base_node)
        if slot is not None:
            if not isinstance(slot.sty, VecType):
                return None
            name = ast.unparse(base_node)

            def current() -> AggV:
                return self.read_slot(slot)

            if isinstance(target, ast.Subscript):
                i = self.expr(target.slice)
                return lambda v: vector_code.index(self, current(), i, target) \
                    if v is None else self.assign_slot(name, slot, vector_code.assign_index(
                        self, current(), i, self.snapshot(v), target), target)
            idx = vector_code.swizzle_target(self, target.attr, slot.sty, target)
            # the value is computed before any element is stored (`v.xy = v.yx`)
            return lambda v: vector_code.attribute(self, current(), target.attr, target) \
                if v is None else self.assign_slot(name, slot, vector_code.assign(
                    self, current(), idx, self.snapshot(v), target), target)
        return None

    def struct_slot(self, node: ast.expr) -> AggSlot | None:
        """The struct (or vector) variable, or field of one, that `node` names."""
        if isinstance(node, ast.Name):
            slot = self.env.get(node.id)
        elif isinstance(node, ast.Attribute):
            base = self.struct_slot(node.value)
            i = -1 if base is None or isinstance(base.sty, VecType) else \
                base.sty.field_index(node.attr)
            slot = base.fields[i] if i >= 0 else None
        else:
            return None
        return slot if isinstance(slot, AggSlot) else None

    def memory_place(self, node: ast.expr) -> ir.Place | None:
        """Where in memory `node` (`p[i]`, or a field of it: `p[i].pos`) is, for a
        target that writes part of it; None for other expressions."""
        if isinstance(node, ast.Subscript):
            if self.struct_slot(node.value) is not None:
                return None
            return self.subscript_place(node)
        if not isinstance(node, ast.Attribute):
            return None
        base = self.memory_place(node.value)
        return None if base is None else self.field_place(base, node.attr, node)[0]

    def field_place(self, place: ir.Place, attr: str, node: ast.AST) -> tuple[ir.Place, Any]:
        """The place of field `attr` of the struct at `place`, and the field's type."""
        sty = place.ty
        if not isinstance(sty, Struct) or isinstance(sty, VecType):
            raise self.err(node, f"{sty!r} has no field '{attr}'")
        i = sty.field_index(attr)
        if i < 0:
            raise self.err(node, f"struct {sty.name} has no field '{attr}'")
        ftype = sty.fields[i][1]
        fplace = ir.Place(place.root, place.index, (*place.members, i), mem_type(ftype))
        self.m.member_of(place, fplace)
        return fplace, ftype

    def stmt_If(self, s: ast.If) -> None:
        cond = self.truth(self.expr(s.test), s.test)
        if isinstance(cond, ir.Const):
            self.block(s.body if cond.value else s.orelse)
            return
        then = self.sub(s.body)
        orelse = self.sub(s.orelse)
        self.emit(ir.If(cond, then, orelse))

    def stmt_While(self, s: ast.While) -> None:
        if s.orelse:
            raise self.err(s, "while ... else is not supported in device code")
        saved = self.out
        self.out = []
        cond = self.truth(self.expr(s.test), s.test)
        pre = self.out
        self.out = saved
        self.loop_depth += 1
        body = self.sub(s.body)
        self.loop_depth -= 1
        self.emit(ir.Loop(pre, cond, body, []))

    def stmt_For(self, s: ast.For) -> None:
        if s.orelse:
            raise self.err(s, "for ... else is not supported in device code")
        it = s.iter
        if isinstance(it, ast.Call):
            fn = self.expr(it.func)
            if isinstance(fn, PyV) and fn.obj is builtins.range:
                self.for_range(s, it)
                return
            if unrolling.is_unroll(fn):
                self.for_range(s, *unrolling.request(self, it))
                return
        seq = self.expr(it)
        if vector_code.is_vec(seq):  # a vector's elements, as a tuple's
            seq = TupV(list(seq.fields))
        if isinstance(seq, TupV) or (isinstance(seq, PyV) and isinstance(seq.obj, tuple)):
            items = seq.items if isinstance(seq, TupV) else [PyV(o) for o in seq.obj]
            for item in items:  # unrolled: each element may have its own type
                for name in ast.walk(s.target):  # each copy binds the names afresh
                    if isinstance(name, ast.Name) and \
                            isinstance(self.env.get(name.id), FixedSlot):
                        del self.env[name.id]
                self.store_target(s.target, item)
                body = self.sub(s.body)
                if _has_loop_exit(body):
                    raise self.err(s, "break/continue in a loop over a tuple")
                self.out.extend(body)
            return
        raise self.err(s.iter, "device code can only loop over range(...) or a tuple")

    def for_range(self, s: ast.For, call: ast.Call,
                  unroll: unrolling.Request | None = None) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.err(call, "range() takes 1 to 3 positional arguments")
        args = [self.expr(a) for a in call.args]
        if len(args) == 1:
            args = [PyV(0), args[0], PyV(1)]
        elif len(args) == 2:
            args.append(PyV(1))
        # Python's range counts mathematically: the counter's type holds every argument (a
        # literal takes the others' type where it fits it; signed and unsigned values mix
        # as int64, so range(n_uint32, -1, -1) ends at 0 rather than never starting)
        base = I32
        for a in args:
            if not isinstance(a, PyV):
                base = promote(base, self.scalar(a, call).ty)
        vals = [self.scalar(a, call, weak_want(a.obj, base)) if isinstance(a, PyV) else
                self.scalar(a, call) for a in args]
        ty = I32
        for v in vals:
            if not v.ty.is_int and not v.ty.is_bool:
                raise self.err(call, f"range() needs integers, got {v.ty!r}")
            ty = promote(ty, v.ty)
        if len({promote(v.ty, v.ty).is_signed for v in vals}) == 2:
            ty = I64
        start, stop, step = (self.convert(v, ty, call) for v in vals)
        counter = self.new_local("range.i", ty)
        limit = self.new_local("range.stop", ty)
        stride = self.new_local("range.step", ty)
        self.emit(ir.Assign(counter, start))
        self.emit(ir.Assign(limit, stop))
        self.emit(ir.Assign(stride, step))
        lt = "OpSLessThan" if ty.is_signed else "OpULessThan"
        gt = "OpSGreaterThan" if ty.is_signed else "OpUGreaterThan"
        if isinstance(step, ir.Const):
            if step.value == 0:
                raise self.err(call, "range() step must not be zero")
            cond = ir.Op(lt if step.value > 0 else gt, BOOL, [ir.Read(counter), ir.Read(limit)])
        else:
            up = ir.Op(gt, BOOL, [ir.Read(stride), ir.Const(ty, 0)])
            cond = ir.Op("OpSelect", BOOL, [
                up, ir.Op(lt, BOOL, [ir.Read(counter), ir.Read(limit)]),
                ir.Op(gt, BOOL, [ir.Read(counter), ir.Read(limit)])])

        def lowered(at: ir.Value) -> list[ir.Stmt]:
            saved = self.out
            self.out = []
            self.loop_depth += 1
            self.store_target(s.target, at)
            self.block(s.body)
            body = self.out
            self.loop_depth -= 1
            self.out = saved
            return body

        constant = all(isinstance(v, ir.Const) for v in (start, stop, step))
        simple = not unrolling.exits(s.body)
        control = "Unroll" if _short(start, stop, step) else "None"
        if unroll is not None and unroll.factor is None:
            values = range(start.value, stop.value, step.value) if constant else None
            if simple and values is not None and len(values) <= unrolling.FULL_UNROLL:
                unrolling.full(self, s, values, ty)
                return
            control = "Unroll"
        elif unroll is not None and unroll.factor == 1:
            control = "DontUnroll"
        elif unroll is not None:
            if simple and isinstance(step, ir.Const):
                unrolling.partial(self, s, unroll.factor, counter, limit, step.value, ty,
                                  lowered)
                return
            control = "Unroll"
        step_stmts: list[ir.Stmt] = [ir.Assign(counter, ir.Op(
            "OpIAdd", ty, [ir.Read(counter), ir.Read(stride)]))]
        self.emit(ir.Loop([], cond, lowered(ir.Read(counter)), step_stmts, control))

    def stmt_Break(self, s: ast.Break) -> None:
        if self.loop_depth == 0:
            raise self.err(s, "break outside a loop")
        self.emit(ir.Break())

    def stmt_Continue(self, s: ast.Continue) -> None:
        if self.loop_depth == 0:
            raise self.err(s, "continue outside a loop")
        self.emit(ir.Continue())

    def stmt_Return(self, s: ast.Return) -> None:
        if self.inlined is not None:
            self.inlined.stmt_Return(self, s)
            return
        self.do_return(s, self.expr(s.value) if s.value is not None else None)

    def do_return(self, node: ast.AST, value: Any) -> None:
        if isinstance(value, PyV) and value.obj is None:
            value = None
        ret = ir.Return(None)
        self.returns.append((node, ret, value))
        self.emit(ret)


def _has_loop_exit(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.Break | ir.Continue):
            return True
        if isinstance(s, ir.If) and (_has_loop_exit(s.then) or _has_loop_exit(s.orelse)):
            return True
    return False
