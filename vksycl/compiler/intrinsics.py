"""Operators, casts, math, work-item queries, atomics and group algorithms: the parts of
the kernel language that map onto SPIR-V instructions rather than onto Python syntax."""

from __future__ import annotations

import ast
import builtins
import math
import types as pytypes
from typing import Any

import numpy as np

from . import device as dev
from . import device_global_code as dgc
from . import fp64math, if_device, ir, virtual
from .frontend.describe import kind_of
from .structs import field_default
from .typesys import (
    BOOL,
    F16,
    F32,
    F64,
    I32,
    U32,
    U64,
    PtrType,
    Scalar,
    Struct,
    mem_type,
    promote,
    scalar_of,
)
from .values import AggV, AtomicV, ItemV, MethodV, ObjV, PtrV, PyV, TupV

_ARITH = {ast.Add: ("OpIAdd", "OpFAdd"), ast.Sub: ("OpISub", "OpFSub"),
          ast.Mult: ("OpIMul", "OpFMul")}
_BITS = {ast.BitAnd: ("OpBitwiseAnd", "OpLogicalAnd"), ast.BitOr: ("OpBitwiseOr", "OpLogicalOr"),
         ast.BitXor: ("OpBitwiseXor", "OpLogicalNotEqual")}
_CMP = {  # signed, unsigned, float
    ast.Eq: ("OpIEqual", "OpIEqual", "OpFOrdEqual"),
    ast.NotEq: ("OpINotEqual", "OpINotEqual", "OpFUnordNotEqual"),
    ast.Lt: ("OpSLessThan", "OpULessThan", "OpFOrdLessThan"),
    ast.LtE: ("OpSLessThanEqual", "OpULessThanEqual", "OpFOrdLessThanEqual"),
    ast.Gt: ("OpSGreaterThan", "OpUGreaterThan", "OpFOrdGreaterThan"),
    ast.GtE: ("OpSGreaterThanEqual", "OpUGreaterThanEqual", "OpFOrdGreaterThanEqual"),
}
_SWAP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq,
         ast.NotEq: ast.NotEq}

# GLSL.std.450 instructions by math name; "f" = float only, the rest pick by type.
_GLSL_UNARY = {
    "sqrt": "Sqrt", "rsqrt": "InverseSqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan",
    "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
    "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "exp": "Exp",
    "exp2": "Exp2", "log": "Log", "log2": "Log2", "floor": "Floor", "ceil": "Ceil",
    "trunc": "Trunc", "fract": "Fract", "degrees": "Degrees", "radians": "Radians",
}
_GLSL_64 = {"Sqrt", "InverseSqrt", "Floor", "Ceil", "Trunc", "Fract", "RoundEven", "Round",
            "FAbs", "FSign", "FMin", "FMax", "FClamp", "FMix", "Step", "Fma", "NMin", "NMax"}

_MATH_NAMES: dict[int, str] = {}
for _name in ("sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
              "tanh", "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2",
              "log10", "log1p", "pow", "fabs", "floor", "ceil", "trunc", "fmod", "copysign",
              "hypot", "isnan", "isinf", "isfinite", "degrees", "radians", "fma", "cbrt"):
    if hasattr(math, _name):
        _MATH_NAMES[id(getattr(math, _name))] = _name
for _np, _name in ((np.sqrt, "sqrt"), (np.sin, "sin"), (np.cos, "cos"), (np.tan, "tan"),
                   (np.arcsin, "asin"), (np.arccos, "acos"), (np.arctan, "atan"),
                   (np.arctan2, "atan2"), (np.sinh, "sinh"), (np.cosh, "cosh"),
                   (np.tanh, "tanh"), (np.exp, "exp"), (np.exp2, "exp2"), (np.log, "log"),
                   (np.log2, "log2"), (np.log10, "log10"), (np.log1p, "log1p"),
                   (np.expm1, "expm1"), (np.floor, "floor"), (np.ceil, "ceil"),
                   (np.trunc, "trunc"), (np.fabs, "fabs"), (np.abs, "abs"),
                   (np.minimum, "min"), (np.maximum, "max"), (np.fmin, "fmin"),
                   (np.fmax, "fmax"), (np.power, "pow"), (np.fmod, "fmod"),
                   (np.copysign, "copysign"), (np.hypot, "hypot"), (np.isnan, "isnan"),
                   (np.isinf, "isinf"), (np.isfinite, "isfinite"), (np.cbrt, "cbrt")):
    _MATH_NAMES[id(_np)] = _name
_STORAGE_SEM = {"global": 0x40, "local": 0x100}
_BARRIER_SEM = 0x8 | 0x40 | 0x100  # AcquireRelease | UniformMemory | WorkgroupMemory


class Intrinsics:
    """Stateless lowering of operators and calls; `fl` is the FunctionLowering."""

    def __init__(self, module: Any) -> None:
        self.m = module

    # == operators ====================================================================
    def arith(self, fl: Any, op: ast.operator, a: Any, b: Any, node: ast.AST) -> ir.Value:
        x, y = fl.weak_pair(a, b, node)
        if isinstance(op, ast.MatMult):
            raise fl.err(node, "@ is not supported in device code")
        if isinstance(op, ast.Pow):
            return self.power(fl, x, y, b, node)
        if isinstance(op, ast.Div):
            if not x.ty.is_float and not y.ty.is_float:
                t = F64 if max(x.ty.bits, y.ty.bits) == 64 and not x.ty.is_bool else F32
            else:
                t = promote(x.ty, y.ty)
            return ir.Op("OpFDiv", t, [fl.convert(x, t), fl.convert(y, t)])
        if type(op) in _BITS:
            if x.ty.is_bool and y.ty.is_bool:
                return ir.Op(_BITS[type(op)][1], BOOL, [x, y])
            self.need_int(fl, x, y, node, "bitwise operators")
            t = promote(x.ty, y.ty)
            return ir.Op(_BITS[type(op)][0], t, [fl.convert(x, t), fl.convert(y, t)])
        if isinstance(op, ast.LShift | ast.RShift):
            self.need_int(fl, x, y, node, "shifts")
            t = promote(x.ty, x.ty)
            name = "OpShiftLeftLogical" if isinstance(op, ast.LShift) else (
                "OpShiftRightArithmetic" if t.is_signed else "OpShiftRightLogical")
            return ir.Op(name, t, [fl.convert(x, t), fl.convert(y, t)])
        t = promote(x.ty, y.ty)
        if t == F16 and isinstance(op, ast.Mod | ast.FloorDiv):
            # in float32, as numpy does: a half-precision quotient may round across an
            # integer, and floor() would then be off by one
            wide = self.arith(fl, op, fl.convert(x, F32), fl.convert(y, F32), node)
            return fl.convert(wide, F16)
        x, y = fl.convert(x, t), fl.convert(y, t)
        if type(op) in _ARITH:
            return ir.Op(_ARITH[type(op)][t.is_float], t, [x, y])
        if isinstance(op, ast.Mod):
            return floor_mod(x, y, t)
        if isinstance(op, ast.FloorDiv):
            if t.is_float:
                return ir.Ext("Floor", t, [ir.Op("OpFDiv", t, [x, y])])
            if not t.is_signed:
                return ir.Op("OpUDiv", t, [x, y])
            q = ir.Op("OpSDiv", t, [x, y])
            return ir.Op("OpISub", t, [q, ir.Op("OpSelect", t, [
                _rounds_up(x, y, q, t), ir.Const(t, 1), ir.Const(t, 0)])])
        raise fl.err(node, f"unsupported operator {type(op).__name__}")

    def need_int(self, fl: Any, x: ir.Value, y: ir.Value, node: ast.AST, what: str) -> None:
        if x.ty.is_float or y.ty.is_float:
            raise fl.err(node, f"{what} need integers, got {x.ty!r} and {y.ty!r}")

    def power(self, fl: Any, x: ir.Value, y: ir.Value, yraw: Any, node: ast.AST) -> ir.Value:
        if isinstance(yraw, PyV) and isinstance(yraw.obj, int) and not isinstance(yraw.obj, bool) \
                and 0 <= yraw.obj <= 64:
            t = promote(x.ty, x.ty)
            return _pow_const(fl.convert(x, t), yraw.obj, t)
        if not x.ty.is_float and not y.ty.is_float:
            t = promote(x.ty, y.ty)
            return self.int_pow(fl, fl.convert(x, t), fl.convert(y, t), t)
        t = promote(x.ty, y.ty)
        if isinstance(yraw, PyV) and isinstance(yraw.obj, float) and yraw.obj == 0.5:
            return self.glsl(fl, "Sqrt", t, [fl.convert(x, t)])
        x, y = fl.convert(x, t), fl.convert(y, t)
        r = self.glsl(fl, "Pow", t, [ir.Ext("FAbs", t, [x]), y])
        zero = ir.Const(t, 0.0)
        is_int = ir.Op("OpFOrdEqual", BOOL, [ir.Ext("Trunc", t, [y]), y])
        odd = ir.Op("OpFOrdEqual", BOOL, [ir.Ext("FAbs", t, [ir.Op("OpFMod", t, [
            y, ir.Const(t, 2.0)])]), ir.Const(t, 1.0)])
        neg = ir.Op("OpSelect", t, [odd, ir.Op("OpFNegate", t, [r]), r])
        neg = ir.Op("OpSelect", t, [is_int, neg, ir.Const(t, math.nan)])
        r = ir.Op("OpSelect", t, [ir.Op("OpFOrdLessThan", BOOL, [x, zero]), neg, r])
        return ir.Op("OpSelect", t, [ir.Op("OpFOrdEqual", BOOL, [y, zero]), ir.Const(t, 1.0), r])

    def int_pow(self, fl: Any, x: ir.Value, y: ir.Value, t: Scalar) -> ir.Value:
        res, base, e = (fl.new_local(n, t) for n in ("pow.r", "pow.b", "pow.e"))
        one, zero = ir.Const(t, 1), ir.Const(t, 0)
        body = [
            ir.If(ir.Op("OpINotEqual", BOOL, [ir.Op("OpBitwiseAnd", t, [ir.Read(e), one]),
                                              zero]),
                  [ir.Assign(res, ir.Op("OpIMul", t, [ir.Read(res), ir.Read(base)]))], []),
            ir.Assign(base, ir.Op("OpIMul", t, [ir.Read(base), ir.Read(base)])),
            ir.Assign(e, ir.Op("OpShiftRightLogical", t, [ir.Read(e), one])),
        ]
        gt = "OpSGreaterThan" if t.is_signed else "OpUGreaterThan"
        loop = ir.Loop([], ir.Op(gt, BOOL, [ir.Read(e), zero]), body, [])
        return ir.Seq([ir.Assign(res, one), ir.Assign(base, x), ir.Assign(e, y), loop],
                      ir.Read(res))

    def compare(self, fl: Any, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, PtrV) or isinstance(b, PtrV):
            return self.compare_pointers(fl, op, a, b, node)
        x, y = fl.weak_pair(a, b, node)
        if x.ty.is_bool and y.ty.is_bool and isinstance(op, ast.Eq | ast.NotEq):
            return ir.Op("OpLogicalEqual" if isinstance(op, ast.Eq) else "OpLogicalNotEqual",
                         BOOL, [x, y])
        names = _CMP[type(op)]
        if x.ty.is_float or y.ty.is_float:
            t = promote(x.ty, y.ty)
            return ir.Op(names[2], BOOL, [fl.convert(x, t), fl.convert(y, t)])
        px, py = promote(x.ty, x.ty), promote(y.ty, y.ty)
        if px.is_signed == py.is_signed:
            t = promote(px, py)
            return ir.Op(names[0 if t.is_signed else 1], BOOL, [fl.convert(x, t),
                                                                fl.convert(y, t)])
        # signed against unsigned: compare the mathematical values, as Python does
        if not px.is_signed:
            x, y, px, py, op = y, x, py, px, _SWAP[type(op)]()
            names = _CMP[type(op)]
        ut = Scalar("u", max(px.bits, py.bits))
        neg = ir.Op("OpSLessThan", BOOL, [fl.convert(x, px), ir.Const(px, 0)])
        base = ir.Op(names[1], BOOL, [fl.convert(fl.convert(x, px), ut), fl.convert(y, ut)])
        if isinstance(op, ast.Lt | ast.LtE | ast.NotEq):
            return ir.Op("OpLogicalOr", BOOL, [neg, base])
        return ir.Op("OpLogicalAnd", BOOL, [ir.Op("OpLogicalNot", BOOL, [neg]), base])

    def compare_pointers(self, fl: Any, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Any:
        """Pointers compare by position (global memory: by address); None is the null
        pointer, which no work-group or private memory is at."""
        if isinstance(a, PtrV) and isinstance(b, PtrV):
            if a.root is not b.root:
                raise fl.err(node, f"comparing {kind_of(a)} with {kind_of(b)} (they point into "
                             "different memory)")
            x, y = a.offset, b.offset
        else:
            p, other = (a, b) if isinstance(a, PtrV) else (b, a)
            if not (isinstance(other, PyV) and other.obj is None) or \
                    not isinstance(op, ast.Eq | ast.NotEq):
                raise fl.err(node, f"{kind_of(p)} compares with a pointer, or with None by "
                             "==, !=, is and is not")
            if not isinstance(p.root, ir.GlobalRoot):
                return PyV(isinstance(op, ast.NotEq))
            x, y = p.offset, ir.Const(U64, 0)
        return ir.Op(_CMP[type(op)][0 if x.ty.is_signed else 1], BOOL, [x, y])

    # == calls ========================================================================
    def call(self, fl: Any, fn: Any, args: list[Any], kwargs: dict[str, Any],
             node: ast.AST) -> Any:
        if isinstance(fn, MethodV):
            return self.method(fl, fn, args, kwargs, node)
        if not isinstance(fn, PyV):
            raise fl.err(node, f"{_what(fn)} is not callable")
        obj = fn.obj
        target = scalar_of(obj) if isinstance(obj, type | np.dtype) else None
        if target is not None:
            return self.cast(fl, obj, target, args, node)
        name = _MATH_NAMES.get(id(obj)) or getattr(obj, "__vksycl_math__", None)
        if name is not None:
            return self.math(fl, name, args, node)
        dev_name = getattr(obj, "__vksycl_device__", None)
        if dev_name is not None:
            return self.device_call(fl, dev_name, args, kwargs, node)
        if getattr(obj, if_device.MARKER, None) is not None:
            return if_device.call(fl, obj, args, kwargs, node)
        if obj is dev.atomic_ref:
            return self.atomic_ref(fl, args, kwargs, node)
        if obj is dev.work_group_memory:
            shape = kwargs.get("shape", args[1] if len(args) > 1 else PyV(()))
            return self.m.shared_array(fl, self.const(fl, args[0], node),
                                       self.const(fl, shape, node), node)
        if obj in (np.zeros, np.empty):
            return self.private_array(fl, args, kwargs, node)
        if isinstance(obj, type) and hasattr(obj, "__vksycl_struct__"):
            return self.construct(fl, obj.__vksycl_struct__, args, kwargs, node)
        if isinstance(obj, type) and issubclass(obj, dev._BinaryOp):
            return PyV(obj())
        if isinstance(obj, pytypes.BuiltinFunctionType) and getattr(builtins, obj.__name__,
                                                                    None) is obj:
            return self.builtin(fl, obj.__name__, args, kwargs, node)
        if isinstance(obj, pytypes.FunctionType):
            return fl.call_function(obj, args, kwargs, node, fn_path=fn.path)
        op = getattr(getattr(obj, "__func__", None), virtual.OP, None)
        if op is not None and isinstance(obj.__self__, type):
            return virtual.class_op(fl, op, obj.__self__, args, kwargs, node)
        if isinstance(obj, pytypes.MethodType) and isinstance(obj.__func__,
                                                              pytypes.FunctionType):
            owner = fn.path[:-1] if fn.path else None
            return fl.call_function(obj.__func__, args, kwargs, node,
                                    PyV(obj.__self__, owner),
                                    (*fn.path, "__func__") if fn.path else None)
        raise fl.err(node, f"calling {_what(fn)} is not supported in device code")

    def const(self, fl: Any, v: Any, node: ast.AST) -> Any:
        if isinstance(v, PyV):
            return v.obj
        if isinstance(v, TupV):
            return tuple(self.const(fl, x, node) for x in v.items)
        found = self.m.specialize(v)
        if found is None:
            raise fl.err(node, "this argument must be a compile-time constant (a literal, a "
                         "module-level value, or a value captured by the kernel)")
        return found

    def cast(self, fl: Any, obj: Any, target: Scalar, args: list[Any], node: ast.AST) -> Any:
        if obj not in (int, float, bool):
            self.m.use_type(target)  # even a folded constant of the type uses its aspect
        if len(args) != 1:
            if not args:
                return ir.Const(target, False if target.is_bool else 0)
            raise fl.err(node, f"{_what(PyV(obj))}() takes one argument")
        v = args[0]
        if isinstance(v, PyV) and obj in (int, float, bool) and \
                isinstance(v.obj, int | float | bool):
            return PyV(obj(v.obj))
        if target.is_bool:
            return fl.truth(v, node)
        if isinstance(v, PyV) and isinstance(v.obj, float) and target.is_float:
            return ir.Const(target, v.obj)
        return fl.convert(fl.scalar(v, node), target, node)

    def builtin(self, fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
                node: ast.AST) -> Any:
        if name in ("abs",):
            return self.math(fl, "abs", args, node)
        if name in ("min", "max"):
            if len(args) == 1 and isinstance(args[0], TupV):
                args = args[0].items
            if len(args) < 2:
                raise fl.err(node, f"{name}() needs two or more values in device code")
            out = args[0]
            for b in args[1:]:
                out = self.minmax(fl, name, out, b, node)
            return out
        if name == "round":
            if len(args) != 1:
                raise fl.err(node, "round() with ndigits is not supported in device code")
            x = fl.scalar(args[0], node)
            if not x.ty.is_float:
                return x
            return fl.convert(round_even(x, x.ty), I32, node)
        if name == "len":
            v = args[0]
            if isinstance(v, TupV):
                return PyV(len(v.items))
            if isinstance(v, PtrV) and hasattr(v.root, "length"):
                return PyV(v.root.length)
            if isinstance(v, PyV):
                return PyV(len(v.obj))
        if name == "divmod":
            return TupV([fl.binop(ast.FloorDiv(), args[0], args[1], node),
                         fl.binop(ast.Mod(), args[0], args[1], node)])
        if name == "pow":
            return fl.binop(ast.Pow(), args[0], args[1], node)
        if name == "range":
            raise fl.err(node, "range() can only be used in a for loop in device code")
        if name == "print":
            raise fl.err(node, "print() is not supported in device code")
        if name == "isinstance":
            raise fl.err(node, "isinstance() is not supported in device code")
        raise fl.err(node, f"the builtin {name}() is not supported in device code")

    def minmax(self, fl: Any, name: str, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, PyV) and isinstance(b, PyV):
            return PyV(min(a.obj, b.obj) if name == "min" else max(a.obj, b.obj))
        x, y = fl.weak_pair(a, b, node)
        t = BOOL if x.ty.is_bool and y.ty.is_bool else promote(x.ty, y.ty)
        if t.is_bool:
            t = I32
        x, y = fl.convert(x, t), fl.convert(y, t)
        lt = "OpFOrdLessThan" if t.is_float else "OpSLessThan" if t.is_signed else "OpULessThan"
        # Python: min(a, b) is b if b < a else a; max(a, b) is b if a < b else a
        cond = ir.Op(lt, BOOL, [y, x] if name == "min" else [x, y])
        return ir.Op("OpSelect", t, [cond, y, x])

    # == math =========================================================================
    def glsl(self, fl: Any, name: str, t: Scalar, args: list[ir.Value]) -> ir.Value:
        """A GLSL.std.450 call; float64 functions GLSL lacks are computed in float32."""
        if t.is_float and t.bits == 64 and name not in _GLSL_64:
            exact = fp64math.FUNCTIONS.get(name)
            if exact is not None:
                return exact(*args)
            return fl.convert(ir.Ext(name, F32, [fl.convert(a, F32) for a in args]), t)
        return ir.Ext(name, t, args)

    def math(self, fl: Any, name: str, args: list[Any], node: ast.AST) -> Any:
        if all(isinstance(a, PyV) for a in args):
            try:
                return PyV(dev.MATH[name](*(a.obj for a in args)) if name in dev.MATH else
                           getattr(math, name)(*(a.obj for a in args)))
            except Exception as ex:
                raise fl.err(node, f"{name}(): {ex}") from None
        vals = self.unify(fl, args, node)
        t = vals[0].ty
        if name in ("abs", "fabs"):
            if t.is_float:
                return ir.Ext("FAbs", t, vals)
            if t.is_signed:
                return ir.Ext("SAbs", t, vals)
            return vals[0]
        if name in ("min", "max", "fmin", "fmax") and t.is_int:
            op = {"min": "SMin", "max": "SMax"}[name[-3:]]
            return ir.Ext(op if t.is_signed else "U" + op[1:], t, vals)
        if name == "clamp":
            if t.is_float:
                return ir.Ext("FClamp", t, vals)
            return ir.Ext("SClamp" if t.is_signed else "UClamp", t, vals)
        if name == "popcount":
            return ir.Op("OpBitCount", t, vals)
        if name == "sign":
            return ir.Ext("FSign" if t.is_float else "SSign", t, vals)
        if not t.is_float:
            t = F64 if t.bits == 64 else F32
            vals = [fl.convert(v, t) for v in vals]
        x = vals[0]
        if name in _GLSL_UNARY:
            return self.glsl(fl, _GLSL_UNARY[name], t, vals)
        simple = {"atan2": "Atan2", "powr": "Pow", "min": "FMin", "max": "FMax",
                  "fmin": "NMin", "fmax": "NMax", "mix": "FMix", "step": "Step",
                  "fma": "Fma", "mad": "Fma"}
        if name in simple:
            return self.glsl(fl, simple[name], t, vals)
        c = lambda v: ir.Const(t, v)
        if name == "pow":
            return self.power(fl, vals[0], vals[1], args[1], node)
        if name in ("asin", "acos"):  # through atan2, as Vulkan defines their precision
            root = self.glsl(fl, "Sqrt", t, [ir.Op("OpFMul", t, [
                ir.Op("OpFSub", t, [c(1.0), x]), ir.Op("OpFAdd", t, [c(1.0), x])])])
            args = [x, root] if name == "asin" else [root, x]
            return self.glsl(fl, "Atan2", t, args)
        if name == "rint":
            return round_even(x, t)
        if name == "isnan":
            return ir.Op("OpIsNan", BOOL, [x])
        if name == "isinf":
            return ir.Op("OpIsInf", BOOL, [x])
        if name == "isfinite":
            return ir.Op("OpLogicalNot", BOOL, [ir.Op("OpLogicalOr", BOOL, [
                ir.Op("OpIsNan", BOOL, [x]), ir.Op("OpIsInf", BOOL, [x])])])
        if name == "log10":
            return ir.Op("OpFMul", t, [self.glsl(fl, "Log2", t, [x]), c(math.log10(2.0))])
        if name == "exp10":
            return self.glsl(fl, "Exp2", t, [ir.Op("OpFMul", t, [x, c(math.log2(10.0))])])
        if name == "fmod":  # C fmod: the sign of the dividend
            y = vals[1]
            return ir.Op("OpFSub", t, [x, ir.Op("OpFMul", t, [y, ir.Ext("Trunc", t, [
                ir.Op("OpFDiv", t, [x, y])])])])
        if name == "fdim":
            return ir.Ext("FMax", t, [ir.Op("OpFSub", t, [x, vals[1]]), c(0.0)])
        if name == "hypot":
            y = vals[1]
            return self.glsl(fl, "Sqrt", t, [ir.Op("OpFAdd", t, [
                ir.Op("OpFMul", t, [x, x]), ir.Op("OpFMul", t, [y, y])])])
        if name == "copysign":
            return self.copysign(fl, x, vals[1], t)
        if name == "round":  # C round: halfway cases away from zero
            tr = ir.Ext("Trunc", t, [x])
            frac = ir.Ext("FAbs", t, [ir.Op("OpFSub", t, [x, tr])])
            return ir.Op("OpSelect", t, [ir.Op("OpFOrdGreaterThanEqual", BOOL, [frac, c(0.5)]),
                                         ir.Op("OpFAdd", t, [tr, ir.Ext("FSign", t, [x])]), tr])
        if name == "expm1":  # Kahan: exact near zero
            u = self.glsl(fl, "Exp", t, [x])
            um1 = ir.Op("OpFSub", t, [u, c(1.0)])
            inner = ir.Op("OpFDiv", t, [ir.Op("OpFMul", t, [um1, x]),
                                        self.glsl(fl, "Log", t, [u])])
            inner = ir.Op("OpSelect", t, [ir.Op("OpFOrdEqual", BOOL, [um1, c(-1.0)]), c(-1.0),
                                          inner])
            return ir.Op("OpSelect", t, [ir.Op("OpFOrdEqual", BOOL, [u, c(1.0)]), x, inner])
        if name == "log1p":  # exact near zero
            u = ir.Op("OpFAdd", t, [x, c(1.0)])
            um1 = ir.Op("OpFSub", t, [u, c(1.0)])
            inner = ir.Op("OpFDiv", t, [ir.Op("OpFMul", t, [self.glsl(fl, "Log", t, [u]), x]),
                                        um1])
            return ir.Op("OpSelect", t, [ir.Op("OpFOrdEqual", BOOL, [u, c(1.0)]), x, inner])
        if name == "cbrt":
            r = self.glsl(fl, "Pow", t, [ir.Ext("FAbs", t, [x]), c(1.0 / 3.0)])
            # one Newton step: r -= (r^3 - |x|) / (3 r^2)
            r2 = ir.Op("OpFMul", t, [r, r])
            r = ir.Op("OpFSub", t, [r, ir.Op("OpFDiv", t, [
                ir.Op("OpFSub", t, [ir.Op("OpFMul", t, [r2, r]), ir.Ext("FAbs", t, [x])]),
                ir.Op("OpFMul", t, [c(3.0), r2])])])
            r = ir.Op("OpSelect", t, [ir.Op("OpFOrdEqual", BOOL, [x, c(0.0)]), c(0.0), r])
            return self.copysign(fl, r, x, t)
        raise fl.err(node, f"{name}() is not supported in device code")

    def copysign(self, fl: Any, x: ir.Value, y: ir.Value, t: Scalar) -> ir.Value:
        ut = Scalar("u", t.bits)
        sign = 1 << (t.bits - 1)
        xb, yb = ir.Op("OpBitcast", ut, [x]), ir.Op("OpBitcast", ut, [y])
        bits = ir.Op("OpBitwiseOr", ut, [
            ir.Op("OpBitwiseAnd", ut, [xb, ir.Const(ut, sign - 1)]),
            ir.Op("OpBitwiseAnd", ut, [yb, ir.Const(ut, sign)])])
        return ir.Op("OpBitcast", t, [bits])

    def unify(self, fl: Any, args: list[Any], node: ast.AST) -> list[ir.Value]:
        runtime = [fl.scalar(a, node) for a in args if not isinstance(a, PyV)]
        t = runtime[0].ty
        for v in runtime[1:]:
            t = promote(t, v.ty)
        if t.is_bool:
            t = I32
        vals = [fl.scalar(a, node, t) for a in args]
        return [fl.convert(v, promote(t, v.ty) if v.ty.is_float and not t.is_float else t)
                for v in vals] if any(v.ty.is_float for v in vals) and not t.is_float else \
            [fl.convert(v, t) for v in vals]

    # == memory =======================================================================
    def private_array(self, fl: Any, args: list[Any], kwargs: dict[str, Any],
                      node: ast.AST) -> PtrV:
        shape = self.const(fl, args[0] if args else kwargs.get("shape"), node)
        dtype = self.const(fl, args[1] if len(args) > 1 else kwargs.get("dtype",
                                                                          PyV(np.float64)), node)
        return self.m.private_array(fl, dtype, shape, node)

    def construct(self, fl: Any, sty: Struct, args: list[Any], kwargs: dict[str, Any],
                  node: ast.AST) -> AggV:
        names = [n for n, _ in sty.fields if n != virtual.TAG_FIELD]
        values = dict(zip(names, args, strict=False))
        values.update(kwargs)
        fields = []
        for n, t in sty.fields:
            if n not in values:
                default = field_default(sty.pyclass, n)
                if default is None:
                    raise fl.err(node, f"{sty.name}: field '{n}' is not set")
                values[n] = PyV(default)
            v = values[n]
            if isinstance(t, Scalar):
                v = fl.convert(fl.scalar(v, node, t), t, node)
            elif isinstance(t, PtrType):
                v = PtrV(self.m.global_root(t.elem),
                         fl.address(v, t.elem, node, f"{sty.name}.{n}"))
            fields.append(v)
        return AggV(sty, fields)

    def atomic_ref(self, fl: Any, args: list[Any], kwargs: dict[str, Any],
                   node: ast.AST) -> AtomicV:
        if not args or not isinstance(args[0], PtrV):
            raise fl.err(node, "atomic_ref needs a pointer (e.g. atomic_ref(ptr + i))")
        p = args[0]
        order = self.const(fl, kwargs.get("order", args[1] if len(args) > 1 else PyV(0)), node)
        space = p.root.space
        if space == "private":
            raise fl.err(node, "atomic_ref on private memory is not supported")
        default_scope = 1 if space == "global" else 2
        scope = self.const(fl, kwargs.get("scope", args[2] if len(args) > 2 else
                                          PyV(default_scope)), node)
        t = p.elem
        if t not in (I32, U32, F32) and not (isinstance(t, Scalar) and t.bits == 64
                                             and not t.is_bool):
            raise fl.err(node, f"atomic_ref on {t!r} is not supported (32/64-bit int "
                         "and float only)")
        place = ir.Place(p.root, p.offset, (), t)
        return AtomicV(place, int(order), int(scope))

    def device_call(self, fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
                    node: ast.AST) -> Any:
        if name in ("get_nd_item", "get_work_group", "get_sub_group"):
            return self.m.free_query(fl, name, args, node)
        if name == "get_work_group_scratch_memory":
            dtype = self.const(fl, args[0], node) if args else np.uint8
            return self.m.scratch_memory(fl, dtype, node)
        if name == "private_array":
            return self.m.private_array(fl, self.const(fl, args[0], node),
                                        self.const(fl, args[1], node), node)
        return self.m.groups.call(fl, name, args, kwargs, node)

    # == methods ======================================================================
    def method(self, fl: Any, m: MethodV, args: list[Any], kwargs: dict[str, Any],
               node: ast.AST) -> Any:
        base = m.base
        if isinstance(base, ItemV):
            return self.m.queries.call(fl, base, m.name, args, node)
        if isinstance(base, AtomicV):
            return self.atomic(fl, base, m.name, args, kwargs, node)
        if isinstance(base, AggV):
            fn = getattr(base.sty.pyclass, m.name)
            return fl.call_function(fn, args, kwargs, node, base)
        if isinstance(base, ObjV):
            return virtual.method(fl, base, m.name, args, kwargs, node)
        if isinstance(base, dgc.GlobalV):
            return dgc.method(fl, base, m.name, args, kwargs, node)
        if isinstance(base, PtrV):
            place = ir.Place(base.root, base.offset, (), mem_type(base.elem))
            if m.name == "get":
                return fl.load(place, node)
            fl.store(place, args[0], node)
            return PyV(None)
        raise fl.err(node, f"{_what(base)} has no method {m.name}")

    def atomic(self, fl: Any, a: AtomicV, name: str, args: list[Any], kwargs: dict[str, Any],
               node: ast.AST) -> Any:
        t = a.place.ty
        space = a.place.root.space
        sem = (a.order | _STORAGE_SEM[space]) if a.order else 0
        self.m.use_atomic(t, name, node)

        def val(v: Any) -> ir.Value:
            return fl.convert(fl.scalar(v, node, t), t, node)

        if name == "load":
            return ir.Atomic("OpAtomicLoad", a.place, [], t, a.scope, sem)
        if name == "store":
            fl.emit(ir.Eval(ir.Atomic("OpAtomicStore", a.place, [val(args[0])], t, a.scope,
                                      sem)))
            return PyV(None)
        if name == "exchange":
            return ir.Atomic("OpAtomicExchange", a.place, [val(args[0])], t, a.scope, sem)
        if name in ("compare_exchange_strong", "compare_exchange_weak"):
            if t.is_float:
                raise fl.err(node, "compare_exchange on floats is not supported")
            expected, desired = val(args[0]), val(args[1])
            old = ir.Atomic("OpAtomicCompareExchange", a.place, [desired, expected], t,
                            a.scope, sem)
            return TupV([ir.Op("OpIEqual", BOOL, [old, expected]), old])
        ops = {"fetch_add": ("OpAtomicIAdd", "OpAtomicFAddEXT"),
               "fetch_sub": ("OpAtomicISub", "OpAtomicFAddEXT"),
               "fetch_and": ("OpAtomicAnd", None), "fetch_or": ("OpAtomicOr", None),
               "fetch_xor": ("OpAtomicXor", None),
               "fetch_min": ("OpAtomicSMin" if t.is_signed else "OpAtomicUMin",
                             "OpAtomicFMinEXT"),
               "fetch_max": ("OpAtomicSMax" if t.is_signed else "OpAtomicUMax",
                             "OpAtomicFMaxEXT")}
        if name not in ops:
            raise fl.err(node, f"atomic_ref has no method {name}")
        op = ops[name][t.is_float]
        if op is None:
            raise fl.err(node, f"atomic_ref.{name} needs an integer type, got {t!r}")
        v = val(args[0])
        if t.is_float and name == "fetch_sub":
            v = ir.Op("OpFNegate", t, [v])
        return ir.Atomic(op, a.place, [v], t, a.scope, sem)


def round_even(x: ir.Value, t: Scalar) -> ir.Value:
    """Round half to even, exactly (drivers' RoundEven is not reliable for float64)."""
    f = ir.Ext("Floor", t, [x])
    d = ir.Op("OpFSub", t, [x, f])
    half, one, two = ir.Const(t, 0.5), ir.Const(t, 1.0), ir.Const(t, 2.0)
    up = ir.Op("OpFAdd", t, [f, one])
    f_even = ir.Op("OpFOrdEqual", BOOL, [
        ir.Op("OpFSub", t, [f, ir.Op("OpFMul", t, [two, ir.Ext("Floor", t, [
            ir.Op("OpFMul", t, [f, half])])])]), ir.Const(t, 0.0)])
    tie = ir.Op("OpSelect", t, [f_even, f, up])
    r = ir.Op("OpSelect", t, [ir.Op("OpFOrdGreaterThan", BOOL, [d, half]), up, tie])
    return ir.Op("OpSelect", t, [ir.Op("OpFOrdLessThan", BOOL, [d, half]), f, r])


def _rounds_up(x: ir.Value, y: ir.Value, q: ir.Value, t: Scalar) -> ir.Value:
    """Whether truncating x / y (= q) rounded up, i.e. the remainder is non-zero and has
    the opposite sign of y."""
    r = ir.Op("OpISub", t, [x, ir.Op("OpIMul", t, [q, y])])
    return ir.Op("OpLogicalAnd", BOOL, [
        ir.Op("OpINotEqual", BOOL, [r, ir.Const(t, 0)]),
        ir.Op("OpSLessThan", BOOL, [ir.Op("OpBitwiseXor", t, [r, y]), ir.Const(t, 0)])])


def floor_mod(x: ir.Value, y: ir.Value, t: Scalar) -> ir.Value:
    """Python's %: the result takes the divisor's sign. Built from truncating division
    (x - y * trunc(x / y)) rather than OpSMod/OpSRem/OpFMod, which drivers get wrong for
    negative operands (GLSL leaves them undefined; NVIDIA's and lavapipe's differ)."""
    if t.is_int and not t.is_signed:
        return ir.Op("OpUMod", t, [x, y])
    if t.is_float:
        r = ir.Op("OpFRem", t, [x, y])
        zero = ir.Const(t, 0.0)
        fix = ir.Op("OpLogicalAnd", BOOL, [
            ir.Op("OpFUnordNotEqual", BOOL, [r, zero]),
            ir.Op("OpLogicalNotEqual", BOOL, [ir.Op("OpFOrdLessThan", BOOL, [r, zero]),
                                              ir.Op("OpFOrdLessThan", BOOL, [y, zero])])])
        return ir.Op("OpSelect", t, [fix, ir.Op("OpFAdd", t, [r, y]), r])
    q = ir.Op("OpSDiv", t, [x, y])
    r = ir.Op("OpISub", t, [x, ir.Op("OpIMul", t, [q, y])])
    return ir.Op("OpSelect", t, [_rounds_up(x, y, q, t), ir.Op("OpIAdd", t, [r, y]), r])


def _pow_const(x: ir.Value, n: int, t: Scalar) -> ir.Value:
    if n == 0:
        return ir.Const(t, 1.0 if t.is_float else 1)
    mul = "OpFMul" if t.is_float else "OpIMul"
    result: ir.Value | None = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else ir.Op(mul, t, [result, base])
        n >>= 1
        if n:
            base = ir.Op(mul, t, [base, base])
    assert result is not None
    return result


def _what(v: Any) -> str:
    if isinstance(v, PyV):
        o = v.obj
        return getattr(o, "__qualname__", None) or getattr(o, "__name__", None) or repr(o)
    return type(v).__name__

