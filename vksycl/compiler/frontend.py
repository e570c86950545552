"""The frontend: a Python function's AST to typed IR.

One `FunctionLowering` per device-function specialisation walks the AST, resolves names
(locals, closure cells, globals, builtins) and infers types as it goes. A variable's type
is fixed by its first assignment; when a later assignment needs a wider type (`acc = 0`
then `acc += x[i]` with float `x`) the function is lowered again with the wider type, so
Python code means what it says. Python operator semantics are kept (`/` true division,
`//` and `%` floor, short-circuit `and`/`or`, comparison chains), widths follow C++.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import types as pytypes
from collections.abc import Callable
from typing import Any

import numpy as np

from . import device as dev
from . import device_global_code as dgc
from . import if_device, ir, virtual
from .device_global import device_global
from .source import Source, error, function_source
from .typesys import (
    BOOL,
    F32,
    I32,
    I64,
    U64,
    PtrType,
    Scalar,
    Struct,
    Type,
    layout,
    literal_int_type,
    promote,
    scalar_of,
)
from .values import (
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
    ScalarSlot,
    TupSlot,
    TupV,
)


class Restart(Exception):
    """A variable needs a wider type: lower the function again."""


def mem_type(t: Type) -> Type:
    """How a type is held in memory: bools as bytes, pointers as 64-bit addresses."""
    if t == BOOL:
        return Scalar("u", 8)
    return U64 if isinstance(t, PtrType) else t


_UNSUPPORTED_STMTS = {
    ast.Try: "try/except", ast.Raise: "raise", ast.With: "with", ast.AsyncWith: "async with",
    ast.AsyncFor: "async for", ast.Global: "global",
    ast.Delete: "del", ast.Import: "import", ast.ImportFrom: "import",
    ast.ClassDef: "class definition",
    ast.AsyncFunctionDef: "async function", ast.Assert: "assert",
    ast.Match: "match",
}
_UNSUPPORTED_EXPRS = {
    ast.List: "a list (use a tuple)", ast.Dict: "a dict", ast.Set: "a set",
    ast.ListComp: "a list comprehension", ast.DictComp: "a dict comprehension",
    ast.SetComp: "a set comprehension", ast.GeneratorExp: "a generator expression",
    ast.Yield: "yield (a generator)", ast.YieldFrom: "yield from (a generator)",
    ast.Await: "await",
    ast.JoinedStr: "an f-string", ast.NamedExpr: "an assignment expression (:=)",
    ast.Starred: "a starred expression", ast.Slice: "a slice",
}


class FunctionLowering:
    """Lowers one Python function (with fixed argument values/types) to an ir.Function."""

    def __init__(self, module: Any, pyfn: Any, src: Source, name: str,
                 hints: dict[str, Type] | None = None, fn_path: tuple | None = None) -> None:
        self.m = module
        self.pyfn = pyfn
        self.fn_path = fn_path  # how the kernel reaches this device function, if it does
        self.src = src
        self.fn = ir.Function(name, [], None)  # type: ignore[arg-type]
        self.env: dict[str, Any] = {}
        self.hints: dict[str, Type] = hints if hints is not None else {}
        self.out: list[ir.Stmt] = self.fn.body
        self.returns: list[tuple[ast.AST, ir.Return, Any]] = []
        self.loop_depth = 0
        self.inlined: Any = None  # the if_device body being inlined: where `return` goes
        self.assigned_once = _assigned_once(src.node)
        code = pyfn.__code__
        cells = pyfn.__closure__ or ()
        self.cells = dict(zip(code.co_freevars, cells, strict=False))
        self.globals = pyfn.__globals__

    # -- diagnostics ------------------------------------------------------------------
    def err(self, node: ast.AST | None, message: str) -> Exception:
        return error(self.src.filename, node, message)

    # -- emission helpers -------------------------------------------------------------
    def emit(self, stmt: ir.Stmt) -> None:
        self.out.append(stmt)

    def new_local(self, name: str, ty: Type) -> ir.Local:
        local = ir.Local(name, ty)
        self.fn.locals.append(local)
        return local

    # == values =======================================================================
    def scalar(self, v: Any, node: ast.AST, want: Scalar | None = None) -> ir.Value:
        """A runtime scalar Value from a frontend value (Python numbers default to
        int32/float32 or take `want`)."""
        if isinstance(v, ir.Value):
            if not isinstance(v.ty, Scalar):
                raise self.err(node, f"expected a scalar, got {v.ty!r}")
            return v
        if isinstance(v, PyV):
            obj = v.obj
            if isinstance(obj, bool | np.bool_):
                return ir.Const(BOOL, bool(obj))
            if isinstance(obj, np.generic):
                t = scalar_of(obj.dtype)
                if t is not None:
                    return ir.Const(t, obj.item())
            if isinstance(obj, int):
                t = want if want is not None and want.is_int else literal_int_type(obj)
                lo, hi = (-(1 << (t.bits - 1)), 1 << (t.bits - 1)) if t.is_signed \
                    else (0, 1 << t.bits)
                if not lo <= obj < hi:
                    raise self.err(node, f"the integer constant {obj} does not fit {t!r} "
                                   f"(whose range is {lo} to {hi - 1})")
                return ir.Const(t, obj)
            if isinstance(obj, float):
                return ir.Const(want if want is not None and want.is_float else F32, obj)
            if isinstance(obj, if_device.Body):
                raise obj.misuse()
            raise self.err(node, f"{_describe(obj)} is not a device value")
        if isinstance(v, ItemV) and v.kind in ("id", "item") and v.dims == 1:
            return self.m.queries.scalar_query(self, "get_id", 0, node)
        if isinstance(v, ItemV):
            raise self.err(node, f"a {v.dims}-dimensional {v.kind} is not a scalar; "
                           "index it ([0]) or call a query")
        raise self.err(node, f"expected a scalar value, got {kind_of(v)}")

    def weak_pair(self, a: Any, b: Any, node: ast.AST) -> tuple[ir.Value, ir.Value]:
        """Both operands as Values; a Python literal takes the other side's type when
        it has the same kind (so `x * 2.0` keeps x's float width)."""
        if isinstance(a, PyV) and not isinstance(b, PyV):
            bv = self.scalar(b, node)
            return self.scalar(a, node, _weak_want(a.obj, bv.ty)), bv
        if isinstance(b, PyV) and not isinstance(a, PyV):
            av = self.scalar(a, node)
            return av, self.scalar(b, node, _weak_want(b.obj, av.ty))
        return self.scalar(a, node), self.scalar(b, node)

    def convert(self, v: ir.Value, to: Type, node: ast.AST | None = None) -> ir.Value:
        src = v.ty
        if src == to:
            return v
        if not isinstance(to, Scalar) or not isinstance(src, Scalar):
            raise self.err(node, f"cannot convert {src!r} to {to!r}")
        self.m.use_type(to)
        if isinstance(v, ir.Const):
            return ir.Const(to, _fold_convert(v.value, to))
        if to.is_bool:
            if src.is_float:
                return ir.Op("OpFUnordNotEqual", BOOL, [v, ir.Const(src, 0.0)])
            return ir.Op("OpINotEqual", BOOL, [v, ir.Const(src, 0)])
        if src.is_bool:
            return ir.Op("OpSelect", to, [v, ir.Const(to, 1), ir.Const(to, 0)])
        if src.is_float and to.is_float:
            return ir.Op("OpFConvert", to, [v])
        if src.is_float:
            return ir.Op("OpConvertFToS" if to.is_signed else "OpConvertFToU", to, [v])
        if to.is_float:
            return ir.Op("OpConvertSToF" if src.is_signed else "OpConvertUToF", to, [v])
        if src.bits == to.bits:
            return ir.Op("OpBitcast", to, [v])
        op = "OpSConvert" if src.is_signed else "OpUConvert"
        same_sign = Scalar(src.kind, to.bits)
        out = ir.Op(op, same_sign, [v])
        return out if same_sign == to else ir.Op("OpBitcast", to, [out])

    def truth(self, v: Any, node: ast.AST) -> ir.Value:
        if isinstance(v, PtrV):  # not null; work-group and private memory never is
            if not isinstance(v.root, ir.GlobalRoot):
                return ir.Const(BOOL, True)
            return ir.Op("OpINotEqual", BOOL, [v.offset, ir.Const(U64, 0)])
        if isinstance(v, PyV):
            try:
                return ir.Const(BOOL, bool(v.obj))
            except Exception:
                raise self.err(node, f"{_describe(v.obj)} has no truth value") from None
        return self.convert(self.scalar(v, node), BOOL, node)

    # == names ========================================================================
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
        if isinstance(value, ItemV | AtomicV | MethodV):
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

    # == entry ========================================================================
    def lower(self, params: list[tuple[str, Any]]) -> ir.Function:
        node = self.src.node
        for pname, value in params:
            slot = self.new_slot(pname, value, node) if not isinstance(value, FixedSlot) \
                else value
            self.env[pname] = slot
            if not isinstance(slot, FixedSlot):
                self.assign_slot(pname, slot, value, node)
        if isinstance(node, ast.Lambda):
            value = self.expr(node.body)
            if self.m.kernel_fl is self:  # a kernel lambda's value is discarded
                if isinstance(value, ir.Value):
                    self.emit(ir.Eval(value))
                value = None
            self.do_return(node, value)
        else:
            self.block(node.body)
        return self.fn

    # == statements ===================================================================
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
        method(s)

    def stmt_Pass(self, s: ast.Pass) -> None:
        pass

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
        t = dev.type_of_annotation(ann.obj) if isinstance(ann, PyV) else None
        if isinstance(t, Scalar):
            value = self.convert(self.scalar(value, s, t), t, s)
            if isinstance(s.target, ast.Name) and s.target.id not in self.env:
                self.env[s.target.id] = ScalarSlot(self.new_local(s.target.id, t))
        self.store_target(s.target, value)

    def stmt_AugAssign(self, s: ast.AugAssign) -> None:
        target = s.target
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

    def store_target(self, target: ast.expr, value: Any,
                     place_fn: Callable[[Any], Any] | None = None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value, target)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, TupV):
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

    def lvalue(self, target: ast.Subscript | ast.Attribute) -> Callable[[Any], Any]:
        """A function that stores its argument to the target, or loads it when given None
        (the target's sub-expressions are evaluated once)."""
        if isinstance(target, ast.Subscript):
            base = self.value(target.value)
            index = self.expr(target.slice)
            if isinstance(base, dgc.GlobalV):
                base, index = dgc.element(self, base, index, target)
            place = self.index_place(base, index, target)
            return lambda v: self.load(place, target) if v is None else \
                self.store(place, v, target)
        base_node = target.value
        attr = target.attr
        if isinstance(base_node, ast.Subscript):
            base = self.value(base_node.value)
            index = self.expr(base_node.slice)
            if isinstance(base, dgc.GlobalV):
                base, index = dgc.element(self, base, index, base_node)
            place = self.index_place(base, index, base_node)
            sty = place.ty
            if not isinstance(sty, Struct):
                raise self.err(target, f"{sty!r} has no field '{attr}'")
            i = sty.field_index(attr)
            if i < 0:
                raise self.err(target, f"struct {sty.name} has no field '{attr}'")
            fplace = ir.Place(place.root, place.index, (*place.members, i),
                              mem_type(sty.fields[i][1]))
            ftype = sty.fields[i][1]
            return lambda v: self.load(fplace, target, ftype) if v is None else \
                self.store(fplace, v, target, ftype)
        if isinstance(base_node, ast.Name):
            slot = self.env.get(base_node.id)
            if isinstance(slot, AggSlot):
                i = slot.sty.field_index(attr)
                if i < 0:
                    raise self.err(target, f"struct {slot.sty.name} has no field '{attr}'")
                fslot = slot.fields[i]
                return lambda v: self.read_slot(fslot) if v is None else \
                    self.assign_slot(f"{base_node.id}.{attr}", fslot, v, target)
        obj = self.expr(base_node)
        if isinstance(obj, ObjV):
            return lambda v: virtual.store_field(self, obj, attr, v, target)
        raise self.err(target, "cannot assign to this attribute in device code")

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
        seq = self.expr(it)
        if isinstance(seq, TupV) or (isinstance(seq, PyV) and isinstance(seq.obj, tuple)):
            items = seq.items if isinstance(seq, TupV) else [PyV(o) for o in seq.obj]
            for item in items:  # unrolled: each element may have its own type
                self.store_target(s.target, item)
                body = self.sub(s.body)
                if _has_loop_exit(body):
                    raise self.err(s, "break/continue in a loop over a tuple")
                self.out.extend(body)
            return
        raise self.err(s.iter, "device code can only loop over range(...) or a tuple")

    def for_range(self, s: ast.For, call: ast.Call) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.err(call, "range() takes 1 to 3 positional arguments")
        args = [self.expr(a) for a in call.args]
        if len(args) == 1:
            args = [PyV(0), args[0], PyV(1)]
        elif len(args) == 2:
            args.append(PyV(1))
        vals = [self.scalar(a, call) for a in args]
        ty = I32
        for v in vals:
            if not v.ty.is_int and not v.ty.is_bool:
                raise self.err(call, f"range() needs integers, got {v.ty!r}")
            ty = promote(ty, v.ty)
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
        saved = self.out
        self.out = []
        self.loop_depth += 1
        self.store_target(s.target, ir.Read(counter))
        self.block(s.body)
        body = self.out
        self.loop_depth -= 1
        self.out = saved
        step_stmts: list[ir.Stmt] = [ir.Assign(counter, ir.Op(
            "OpIAdd", ty, [ir.Read(counter), ir.Read(stride)]))]
        self.emit(ir.Loop([], cond, body, step_stmts))

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

    # == expressions ==================================================================
    def expr(self, e: ast.expr) -> Any:
        v = self.value(e)
        return v.ptr if isinstance(v, dgc.GlobalV) else v  # a device_global is its pointer

    def value(self, e: ast.expr) -> Any:
        """An expression's value, a device_global as itself (for its methods and indexing)."""
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            what = _UNSUPPORTED_EXPRS.get(type(e), type(e).__name__)
            raise self.err(e, f"{what} is not supported in device code")
        return method(e)

    def expr_Constant(self, e: ast.Constant) -> Any:
        if isinstance(e.value, str | bytes):
            raise self.err(e, "strings are not supported in device code")
        return PyV(e.value)

    def expr_Lambda(self, e: ast.Lambda) -> Any:
        return if_device.lambda_body(self, e)

    def expr_Name(self, e: ast.Name) -> Any:
        return self.lookup(e.id, e)

    def expr_Tuple(self, e: ast.Tuple) -> Any:
        items = [self.expr(x) for x in e.elts]
        if all(isinstance(i, PyV) and i.path is None for i in items):
            return PyV(tuple(i.obj for i in items))
        return TupV(items)  # items that have paths keep them (closures, captured objects)

    def expr_Attribute(self, e: ast.Attribute) -> Any:
        base = self.value(e.value)
        if isinstance(base, dgc.GlobalV):
            return dgc.attribute(self, base, e.attr, e)
        if isinstance(base, PyV) and base.path is not None:
            return self.m.attribute(self, base, e.attr, e)
        if isinstance(base, PyV):
            try:
                obj = getattr(base.obj, e.attr)
            except AttributeError:
                raise self.err(e, f"{_describe(base.obj)} has no attribute '{e.attr}'") \
                    from None
            if isinstance(obj, device_global):  # a class attribute
                return self.m.device_global(obj)
            return PyV(obj)
        if isinstance(base, AggV):
            i = base.sty.field_index(e.attr)
            if i >= 0:
                return base.fields[i]
            attr = getattr(base.sty.pyclass, e.attr, None)
            if isinstance(attr, pytypes.FunctionType):
                return MethodV(base, e.attr)
            raise self.err(e, f"struct {base.sty.name} has no field '{e.attr}'")
        if isinstance(base, ObjV):
            return virtual.attribute(self, base, e.attr, e)
        if isinstance(base, ItemV | AtomicV):
            return MethodV(base, e.attr)
        if isinstance(base, PtrV) and e.attr in ("get", "set"):
            return MethodV(base, e.attr)
        raise self.err(e, f"{kind_of(base)} has no attribute '{e.attr}'")

    def expr_Subscript(self, e: ast.Subscript) -> Any:
        base = self.value(e.value)
        index = self.expr(e.slice)
        if isinstance(base, dgc.GlobalV):
            base, index = dgc.element(self, base, index, e)
        if isinstance(base, PyV) and isinstance(index, PyV):
            try:
                return PyV(base.obj[index.obj])
            except Exception:
                raise self.err(e, f"cannot index {_describe(base.obj)}") from None
        if isinstance(base, TupV | AggV):
            if not isinstance(index, PyV) or not isinstance(index.obj, int):
                raise self.err(e.slice, "a tuple index must be a constant integer")
            items = base.items if isinstance(base, TupV) else base.fields
            try:
                return items[index.obj]
            except IndexError:
                raise self.err(e, "tuple index out of range") from None
        if isinstance(base, PyV) and isinstance(base.obj, tuple):
            v = self.scalar(index, e.slice)
            return self.select_tuple([PyV(o) for o in base.obj], v, e)
        if isinstance(base, ItemV):
            return self.m.queries.index(self, base, index, e)
        if isinstance(base, ir.Value) and id(base) in self.m.one_d:
            if not isinstance(index, PyV) or index.obj != 0:
                raise self.err(e.slice, "a sub-group id or range has one dimension: "
                               "index it with [0]")
            return base
        place = self.index_place(base, index, e)
        return self.load(place, e)

    def select_tuple(self, items: list[Any], index: ir.Value, node: ast.AST) -> ir.Value:
        vals = [self.scalar(i, node) for i in items]
        ty = vals[0].ty
        for v in vals[1:]:
            ty = promote(ty, v.ty)
        out = self.convert(vals[-1], ty)
        for k in range(len(vals) - 2, -1, -1):
            out = ir.Op("OpSelect", ty, [ir.Op("OpIEqual", BOOL, [
                self.convert(index, I32), ir.Const(I32, k)]), self.convert(vals[k], ty), out])
        return out

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
            return ir.Const(I32, _wrap(a.value + b.value, I32))
        if isinstance(b, ir.Const) and b.value == 0:
            return a
        if isinstance(a, ir.Const) and a.value == 0:
            return b
        return ir.Op("OpIAdd", I32, [a, b])

    def load(self, place: ir.Place, node: ast.AST, logical: Type | None = None) -> Any:
        """The value at a place; `logical` is its type where memory holds it otherwise
        (bools as bytes, pointers as addresses), the root's element type by default."""
        ty = place.ty
        if isinstance(ty, Struct):
            fields = []
            for i, (_, ft) in enumerate(ty.fields):
                fp = ir.Place(place.root, place.index, (*place.members, i), mem_type(ft))
                fields.append(self.load(fp, node, ft))
            return AggV(ty, fields)
        if logical is None and not place.members:
            logical = place.root.elem
        self.m.use_storage(place.root, ty)
        v = ir.Load(place)
        if isinstance(logical, PtrType):
            return PtrV(self.m.global_root(logical.elem), v)
        if logical == BOOL:
            return self.convert(v, BOOL, node)
        return v

    def store(self, place: ir.Place, value: Any, node: ast.AST,
              logical: Type | None = None) -> None:
        ty = place.ty
        if isinstance(ty, Struct):
            if not isinstance(value, AggV) or value.sty != ty:
                raise self.err(node, f"cannot store {kind_of(value)} into a {ty!r}")
            for i, ((_, ft), fv) in enumerate(zip(ty.fields, value.fields, strict=True)):
                fp = ir.Place(place.root, place.index, (*place.members, i), mem_type(ft))
                self.store(fp, fv, node, ft)
            return
        target = logical if logical is not None else (
            place.root.elem if not place.members else ty)
        self.m.use_storage(place.root, ty)
        if isinstance(target, PtrType):
            self.emit(ir.Store(place, self.address(value, target.elem, node, "memory")))
            return
        if isinstance(value, PtrV | AggV | TupV):
            raise self.err(node, f"cannot store {kind_of(value)} into {target!r} memory")
        v = self.scalar(value, node, target if isinstance(target, Scalar) else None)
        v = self.convert(self.convert(v, target, node), ty, node)
        self.emit(ir.Store(place, v))

    def expr_UnaryOp(self, e: ast.UnaryOp) -> Any:
        v = self.expr(e.operand)
        if isinstance(v, PyV):
            try:
                return PyV({ast.USub: operator.neg, ast.UAdd: operator.pos,
                            ast.Not: operator.not_, ast.Invert: operator.invert}[
                    type(e.op)](v.obj))
            except Exception:
                raise self.err(e, f"bad operand for unary operator: {_describe(v.obj)}") \
                    from None
        if isinstance(e.op, ast.Not):
            return ir.Op("OpLogicalNot", BOOL, [self.truth(v, e)])
        x = self.scalar(v, e)
        if isinstance(e.op, ast.Invert):
            if x.ty.is_float:
                raise self.err(e, f"~ needs an integer, got {x.ty!r}")
            x = self.convert(x, promote(x.ty, x.ty))
            return ir.Op("OpNot", x.ty, [x])
        t = promote(x.ty, x.ty)
        x = self.convert(x, t)
        if isinstance(e.op, ast.UAdd):
            return x
        return ir.Op("OpFNegate" if t.is_float else "OpSNegate", t, [x])

    def expr_BinOp(self, e: ast.BinOp) -> Any:
        return self.binop(e.op, self.expr(e.left), self.expr(e.right), e)

    def binop(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, PyV) and isinstance(b, PyV):
            try:
                return PyV(_PY_BINOPS[type(op)](a.obj, b.obj))
            except Exception as ex:
                raise self.err(node, f"cannot evaluate the constant expression: {ex}") \
                    from None
        if isinstance(a, PtrV) or isinstance(b, PtrV):
            return self.pointer_arith(op, a, b, node)
        return self.m.intr.arith(self, op, a, b, node)

    # == pointers =====================================================================
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
            return ir.Op(op, U64, [p.offset, ir.Const(U64, _wrap(wide.value * stride, U64))])
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

    def expr_BoolOp(self, e: ast.BoolOp) -> Any:
        is_and = isinstance(e.op, ast.And)
        result = self.expr(e.values[0])
        for operand in e.values[1:]:
            if isinstance(result, PyV):
                if bool(result.obj) != is_and:
                    return result
                result = self.expr(operand)
                continue
            saved = self.out
            self.out = []
            rhs = self.expr(operand)
            pre = self.out
            self.out = saved
            left = self.scalar(result, e)
            if isinstance(rhs, PyV) and not pre:
                right = self.scalar(rhs, e, _weak_want(rhs.obj, left.ty))
            else:
                right = self.scalar(rhs, operand)
            ty = BOOL if left.ty.is_bool and right.ty.is_bool else promote(left.ty, right.ty)
            cond = self.convert(left, BOOL)
            lv, rv = self.convert(left, ty), self.convert(right, ty)
            result = ir.Cond(cond, rv, lv, ty, pre_a=pre) if is_and else \
                ir.Cond(cond, lv, rv, ty, pre_b=pre)
        return result

    def expr_Compare(self, e: ast.Compare) -> Any:
        left = self.expr(e.left)
        result: Any = None
        for op, right_node in zip(e.ops, e.comparators, strict=True):
            right = self.expr(right_node)
            c = self.compare(op, left, right, e)
            if result is None:
                result = c
            elif isinstance(result, PyV) and isinstance(c, PyV):
                result = PyV(result.obj and c.obj)
            else:
                result = ir.Cond(self.truth(result, e), self.truth(c, e), ir.Const(BOOL, False),
                                 BOOL)
            left = right
        return result

    def compare(self, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(op, ast.Is | ast.IsNot):
            if isinstance(a, PyV) and isinstance(b, PyV):
                same = a.obj is b.obj
                return PyV(same if isinstance(op, ast.Is) else not same)
            if isinstance(a, PtrV) or isinstance(b, PtrV):  # `p is None`: a null test
                eq = ast.Eq() if isinstance(op, ast.Is) else ast.NotEq()
                return self.m.intr.compare_pointers(self, eq, a, b, node)
            raise self.err(node, "'is' compares compile-time objects, or a pointer with "
                           "None")
        if isinstance(op, ast.In | ast.NotIn):
            if isinstance(a, PyV) and isinstance(b, PyV):
                inside = a.obj in b.obj
                return PyV(inside if isinstance(op, ast.In) else not inside)
            raise self.err(node, "'in' is not supported on device values")
        if isinstance(a, PyV) and isinstance(b, PyV):
            return PyV(_PY_CMPOPS[type(op)](a.obj, b.obj))
        return self.m.intr.compare(self, op, a, b, node)

    def expr_IfExp(self, e: ast.IfExp) -> Any:
        cond = self.truth(self.expr(e.test), e.test)
        if isinstance(cond, ir.Const):
            return self.expr(e.body if cond.value else e.orelse)
        saved = self.out
        self.out = []
        a = self.expr(e.body)
        pre_a = self.out
        self.out = []
        b = self.expr(e.orelse)
        pre_b = self.out
        self.out = saved
        if isinstance(a, PtrV) or isinstance(b, PtrV):
            return self.select_pointer(cond, a, b, pre_a, pre_b, e)
        av, bv = self.weak_pair(a, b, e)
        ty = BOOL if av.ty.is_bool and bv.ty.is_bool else promote(av.ty, bv.ty)
        return ir.Cond(cond, self.convert(av, ty), self.convert(bv, ty), ty, pre_a, pre_b)

    def expr_Call(self, e: ast.Call) -> Any:
        fn = self.expr(e.func)
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise self.err(a, "*args is not supported in device code")
        for k in e.keywords:
            if k.arg is None:
                raise self.err(k, "**kwargs is not supported in device code")
        args = [self.expr(a) for a in e.args]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords}
        return self.m.intr.call(self, fn, args, kwargs, e)

    # == device function calls ========================================================
    def call_function(self, pyfn: Any, args: list[Any], kwargs: dict[str, Any],
                      node: ast.AST, bound: Any = None, fn_path: tuple | None = None) -> Any:
        """A call of a device function; `fn_path` is how the kernel reaches the function
        object (so its closure cells can be read at launch), where it does."""
        code = pyfn.__code__
        if code.co_flags & 0x20:
            raise self.err(node, f"{pyfn.__name__} is a generator; generators are not "
                           "supported in device code")
        names = list(code.co_varnames[: code.co_argcount])
        values = ([bound] if bound is not None else []) + list(args)
        if len(values) > len(names):
            raise self.err(node, f"{pyfn.__name__}() takes {len(names)} arguments, "
                           f"got {len(values)}")
        bound_args = dict(zip(names, values, strict=False))
        for k, v in kwargs.items():
            if k not in names or k in bound_args:
                raise self.err(node, f"{pyfn.__name__}() got an unexpected argument '{k}'")
            bound_args[k] = v
        defaults = pyfn.__defaults__ or ()
        for name, d in zip(names[len(names) - len(defaults):], defaults, strict=True):
            bound_args.setdefault(name, PyV(d))
        missing = [n for n in names if n not in bound_args]
        if missing:
            raise self.err(node, f"{pyfn.__name__}() is missing argument '{missing[0]}'")
        return self.m.call_device_function(self, pyfn, [(n, bound_args[n]) for n in names],
                                           node, fn_path)


# -- helpers ---------------------------------------------------------------------------------

_PY_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
_PY_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _weak_want(obj: Any, other: Type) -> Scalar | None:
    if not isinstance(other, Scalar):
        return None
    if isinstance(obj, bool | np.bool_):
        return None
    if isinstance(obj, int) and other.is_int and other.bits >= 32:
        lo, hi = (-(2 ** (other.bits - 1)), 2 ** (other.bits - 1)) if other.is_signed \
            else (0, 2 ** other.bits)
        return other if lo <= obj < hi else None
    if isinstance(obj, int | float) and not isinstance(obj, np.generic) and other.is_float:
        return other
    return None


def _wrap(v: int, t: Scalar) -> int:
    v &= (1 << t.bits) - 1
    if t.is_signed and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


def _fold_convert(value: Any, to: Scalar) -> Any:
    if to.is_bool:
        return bool(value)
    if to.is_float:
        return float(np.array(value).astype(to.dtype))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return 0
        value = int(value)
    return _wrap(int(value), to)


def _assigned_once(fn: ast.AST) -> dict[str, int]:
    """How often each name is a store target in the function (loop targets count twice)."""
    counts: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
        elif isinstance(node, ast.For):
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 2
    return counts


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


def _has_loop_exit(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.Break | ir.Continue):
            return True
        if isinstance(s, ir.If) and (_has_loop_exit(s.then) or _has_loop_exit(s.orelse)):
            return True
    return False


def _describe(obj: Any) -> str:
    if isinstance(obj, type):
        return f"type {obj.__name__}"
    if callable(obj):
        return f"{getattr(obj, '__name__', obj)!s}"
    return f"{type(obj).__name__} {obj!r}"


def kind_of(v: Any) -> str:
    """How an error message names a frontend value."""
    if isinstance(v, ir.Value):
        name = repr(v.ty)
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name} value"
    if isinstance(v, PtrV):
        return f"a pointer to {v.elem!r}"
    if isinstance(v, AggV):
        return f"a {v.sty.name}"
    if isinstance(v, ObjV):
        return f"a {v.cls.__name__} object in memory"
    if isinstance(v, TupV):
        return "a tuple"
    if isinstance(v, ItemV):
        return f"a {v.kind}"
    if isinstance(v, PyV):
        return _describe(v.obj)
    if v is None:
        return "nothing"
    return type(v).__name__


def source_of(fn: Any, node: ast.AST | None = None) -> Source:
    try:
        src = function_source(fn)
    except OSError as ex:
        raise error("<unknown>", node, f"no source for {fn!r}: {ex}") from None
    if isinstance(src.node, ast.AsyncFunctionDef):
        raise error(src.filename, src.node, f"async def {src.name}: coroutines are not "
                    "supported in device code (define the kernel with def)")
    return src

