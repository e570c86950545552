"""Expressions: one `expr_<node>` method per supported node. Operations on
compile-time values fold in Python; the others go to memory, pointer arithmetic, or the
intrinsics (operators on runtime values, calls)."""

from __future__ import annotations

import ast
import builtins
import operator
import types as pytypes
from typing import Any

from .. import accessors, if_device, ir, reduction, vector_code, virtual
from .. import device as dev
from .. import device_global_code as dgc
from ..device_global import device_global
from ..typesys import BOOL, I32, promote
from ..values import AccessorV, AggV, AtomicV, ItemV, MethodV, ObjV, PtrV, PyV, RangeV, TupV
from .base import LoweringState
from .describe import describe, kind_of
from .scalars import weak_want

_UNSUPPORTED_EXPRS = {
    ast.List: "a list (use a tuple)", ast.Dict: "a dict", ast.Set: "a set",
    ast.ListComp: "a list comprehension", ast.DictComp: "a dict comprehension",
    ast.SetComp: "a set comprehension", ast.GeneratorExp: "a generator expression",
    ast.Yield: "yield (a generator)", ast.YieldFrom: "yield from (a generator)",
    ast.Await: "await",
    ast.JoinedStr: "an f-string", ast.NamedExpr: "an assignment expression (:=)",
    ast.Starred: "a starred expression", ast.Slice: "a slice",
}
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


class Expressions(LoweringState):
    """Expressions to frontend values."""

    def expr(self, e: ast.expr) -> Any:
        v = self.value(e)
        return v.ptr if isinstance(v, dgc.GlobalV) else v  # a device_global is its pointer

    def value(self, e: ast.expr) -> Any:
        """An expression's value, a device_global as itself (for its methods and indexing)."""
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            what = _UNSUPPORTED_EXPRS.get(type(e), type(e).__name__)
            raise self.err(e, f"{what} is not supported in device code")
        v = method(e)
        sites = self.m.sites
        if sites is not None and isinstance(v, ir.Value):
            sites.setdefault(id(v), (v, self.src.filename, e.lineno))
        return v

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
                raise self.err(e, f"{describe(base.obj)} has no attribute '{e.attr}'") \
                    from None
            if isinstance(obj, device_global):  # a class attribute
                return self.m.device_global(obj)
            return PyV(obj)
        if vector_code.is_vec(base):
            return vector_code.attribute(self, base, e.attr, e)
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
        if isinstance(base, AccessorV):
            return accessors.attribute(self, base, e.attr, e)
        if isinstance(base, RangeV):
            return accessors.range_attribute(self, base, e.attr, e)
        if isinstance(base, ItemV | AtomicV | reduction.ReducerV):
            return MethodV(base, e.attr)
        if isinstance(base, PtrV) and e.attr in ("get", "set"):
            return MethodV(base, e.attr)
        raise self.err(e, f"{kind_of(base)} has no attribute '{e.attr}'")

    def expr_Subscript(self, e: ast.Subscript) -> Any:
        return self.subscript(self.value(e.value), self.expr(e.slice), e)

    def reference(self, e: ast.expr) -> Any:
        """What `atomic_ref(x[i])` refers to: the element's address where `x` is an
        accessor or a pointer, else the expression's value."""
        if not isinstance(e, ast.Subscript):
            return self.expr(e)
        base = self.value(e.value)
        index = self.expr(e.slice)
        if isinstance(base, AccessorV):
            return accessors.pointer(self, base, index, e)
        if isinstance(base, PtrV):
            return PtrV(base.root, self.index_place(base, index, e).index)
        return self.subscript(base, index, e)

    def subscript(self, base: Any, index: Any, e: ast.Subscript) -> Any:
        if isinstance(base, AccessorV):
            return self.load(accessors.element(self, base, index, e), e)
        if isinstance(base, RangeV):
            return accessors.component(self, base, index, e)
        if isinstance(base, dgc.GlobalV):
            base, index = dgc.element(self, base, index, e)
        if isinstance(base, reduction.ReducerV):
            return reduction.element(self, base, index, e)
        if isinstance(base, PyV) and isinstance(index, PyV):
            try:
                return PyV(base.obj[index.obj])
            except Exception:
                raise self.err(e, f"cannot index {describe(base.obj)}") from None
        if vector_code.is_vec(base):
            return vector_code.index(self, base, index, e)
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

    def expr_UnaryOp(self, e: ast.UnaryOp) -> Any:
        v = self.expr(e.operand)
        if isinstance(v, PyV):
            try:
                return PyV({ast.USub: operator.neg, ast.UAdd: operator.pos,
                            ast.Not: operator.not_, ast.Invert: operator.invert}[
                    type(e.op)](v.obj))
            except Exception:
                raise self.err(e, f"bad operand for unary operator: {describe(v.obj)}") \
                    from None
        if vector_code.is_vec(v):
            return vector_code.unary(self, e.op, v, e)
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
        if vector_code.is_vec(a) or vector_code.is_vec(b):
            return vector_code.binop(self, op, a, b, node)
        return self.m.intr.arith(self, op, a, b, node)

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
                right = self.scalar(rhs, e, weak_want(rhs.obj, left.ty))
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
        if vector_code.is_vec(a) or vector_code.is_vec(b):
            return vector_code.compare(self, op, a, b, node)
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
        if isinstance(fn, PyV) and (fn.obj is builtins.print or getattr(
                fn.obj, "__vksycl_device__", None) == "printf"):
            return self.m.intr.print_call(self, fn.obj, e)  # strings are no device values
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise self.err(a, "*args is not supported in device code")
        for k in e.keywords:
            if k.arg is None:
                raise self.err(k, "**kwargs is not supported in device code")
        refers = isinstance(fn, PyV) and fn.obj is dev.atomic_ref
        args = [self.reference(a) if refers and k == 0 else self.expr(a)
                for k, a in enumerate(e.args)]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords}
        return self.m.intr.call(self, fn, args, kwargs, e)
