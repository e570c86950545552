"""Math functions in device code: `math`, numpy and sycl math functions on runtime scalars,
as GLSL.std.450 instructions where those are exact enough, as exact formulas where they
are not (float64 functions GLSL lacks, rounding, `fmod`, `expm1`, `log1p`, `cbrt`), and
powers with Python's meaning."""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

from . import device as dev
from . import fp64math, ir
from .typesys import BOOL, F32, F64, I32, Scalar, promote
from .values import PyV

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

MATH_NAMES: dict[int, str] = {}
for _name in ("sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
              "tanh", "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2",
              "log10", "log1p", "pow", "fabs", "floor", "ceil", "trunc", "fmod", "copysign",
              "hypot", "isnan", "isinf", "isfinite", "degrees", "radians", "fma", "cbrt"):
    if hasattr(math, _name):
        MATH_NAMES[id(getattr(math, _name))] = _name
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
    MATH_NAMES[id(_np)] = _name


class MathFunctions:
    """Math calls and powers, a part of `Intrinsics`."""

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

    def glsl(self, fl: Any, name: str, t: Scalar, args: list[ir.Value]) -> ir.Value:
        """A GLSL.std.450 call. An adjoint kernel keeps each function whole until it is
        differentiated (`adjoint.expand_math` lowers it then)."""
        if self.m.spec.adjoint:
            return ir.Ext(name, t, args)
        return glsl_call(name, t, args)

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
            if t.bits < 32:  # C++ integral promotion: abs(int8(-128)) is the int 128
                t = I32
                vals = [fl.convert(vals[0], t)]
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


def is_exact_glsl(name: str, t: Any) -> bool:
    """Whether GLSL.std.450 computes `name` in type `t` (float64 lacks most functions)."""
    return not (isinstance(t, Scalar) and t.is_float and t.bits == 64 and name not in _GLSL_64)


def glsl_call(name: str, t: Scalar, args: list[ir.Value]) -> ir.Value:
    """A GLSL.std.450 call; float64 functions GLSL lacks are exact formulas
    (`fp64math`), or else computed in float32."""
    if is_exact_glsl(name, t):
        return ir.Ext(name, t, args)
    exact = fp64math.FUNCTIONS.get(name)
    if exact is not None:
        return exact(*args)
    narrow = [a if a.ty == F32 else ir.Op("OpFConvert", F32, [a]) for a in args]
    return ir.Op("OpFConvert", t, [ir.Ext(name, F32, narrow)])


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
