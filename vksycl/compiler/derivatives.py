"""Derivatives for the adjoint of a kernel (`adjoint`): how the adjoint of a float value
reaches the values it is computed from, for each operation and math function.

`min`/`max`/`clamp`, `abs` and choices take subgradients: the side taken, whose derivative
alone is evaluated. Rounding, signs and steps have none. Math functions arrive whole
(`Ext`): float64 ones are differentiated as functions, not through their expansion.
"""

from __future__ import annotations

import math

from . import ir
from .typesys import BOOL, Scalar, Type

_NO_DERIVATIVE = ("Floor", "Ceil", "Trunc", "Round", "RoundEven", "FSign", "Step")


def is_float(t: Type) -> bool:
    return isinstance(t, Scalar) and t.is_float


def zero_of(t: Type) -> ir.Const:
    if not isinstance(t, Scalar):
        raise TypeError(f"no zero of {t!r}")
    return ir.Const(t, 0.0 if t.is_float else 0)


class Derivatives:
    """The reverse rules, a part of `adjoint.Adjoint`, which accumulates adjoints into
    locals (`accumulate`), memory (`scatter`) and scalar arguments' gradients
    (`argument`), and names what has none (`error`)."""

    def back(self, v: ir.Value, a: ir.Value, out: list[ir.Stmt]) -> None:
        """Adds `a`, the adjoint of value `v`, to the adjoints of what `v` is computed
        from."""
        if not is_float(v.ty) or isinstance(v, ir.Const | ir.Builtin):
            return
        if isinstance(v, ir.PushField):
            self.argument(v, a, out)
        elif isinstance(v, ir.Read):
            self.accumulate(v.local, a, out)
        elif isinstance(v, ir.Load):
            self.scatter(v.place, a, out, v)
        elif isinstance(v, ir.Op):
            self.back_op(v, a, out)
        elif isinstance(v, ir.Ext):
            self.back_ext(v, a, out)
        elif isinstance(v, ir.Cond):
            self.branch(v.cond, v.a, v.b, a, out)
        else:
            raise self.error(v, f"a {type(v).__name__} value")

    def branch(self, cond: ir.Value, x: ir.Value, y: ir.Value, a: ir.Value,
               out: list[ir.Stmt]) -> None:
        """The adjoint of a choice goes to the side chosen (and only that side's
        derivative is evaluated, so `where(x > 0, sqrt(x), 0)` has no NaN)."""
        then: list[ir.Stmt] = []
        orelse: list[ir.Stmt] = []
        self.back(x, a, then)
        self.back(y, a, orelse)
        if then or orelse:
            out.append(ir.If(cond, then, orelse))

    def back_op(self, v: ir.Op, a: ir.Value, out: list[ir.Stmt]) -> None:
        t, name, args = v.ty, v.opname, v.args
        f = _Builder(t)
        x = args[0]
        if name == "OpFAdd":
            self.back(x, a, out)
            self.back(args[1], a, out)
        elif name == "OpFSub":
            self.back(x, a, out)
            self.back(args[1], f.neg(a), out)
        elif name == "OpFMul":
            self.back(x, f.mul(a, args[1]), out)
            self.back(args[1], f.mul(a, x), out)
        elif name == "OpFDiv":
            self.back(x, f.div(a, args[1]), out)
            self.back(args[1], f.neg(f.mul(a, f.div(v, args[1]))), out)
        elif name == "OpFNegate":
            self.back(x, f.neg(a), out)
        elif name in ("OpFMod", "OpFRem"):
            self.back(x, a, out)
            whole = ir.Ext("Floor" if name == "OpFMod" else "Trunc", t, [f.div(x, args[1])])
            self.back(args[1], f.neg(f.mul(a, whole)), out)
        elif name == "OpSelect":
            self.branch(x, args[1], args[2], a, out)
        elif name == "OpFConvert":
            self.back(x, ir.Op("OpFConvert", x.ty, [a]), out)
        elif name in ("OpConvertSToF", "OpConvertUToF"):
            if self.is_active(x):
                raise self.error(v, "an integer-to-float conversion of a value computed "
                                 "from floats")
        elif name == "OpBitcast" and _copysign_source(v) is not None:
            src = _copysign_source(v)
            assert src is not None
            self.back(src, f.mul(a, f.mul(ir.Ext("FSign", t, [src]),
                                          ir.Ext("FSign", t, [v]))), out)
        elif name == "OpBitcast" and not self.is_active(x):
            return
        else:
            raise self.error(v, f"{name[2:]} on floats")

    def back_ext(self, v: ir.Ext, a: ir.Value, out: list[ir.Stmt]) -> None:
        t, name, args = v.ty, v.name, v.args
        f = _Builder(t)
        x = args[0]
        one = f.c(1.0)
        rules = {
            "Sqrt": lambda: f.div(f.mul(a, f.c(0.5)), v),
            "InverseSqrt": lambda: f.mul(a, f.mul(f.c(-0.5), f.div(v, x))),
            "Sin": lambda: f.mul(a, f.ext("Cos", x)),
            "Cos": lambda: f.neg(f.mul(a, f.ext("Sin", x))),
            "Tan": lambda: f.mul(a, f.add(one, f.mul(v, v))),
            "Atan": lambda: f.div(a, f.add(one, f.mul(x, x))),
            "Sinh": lambda: f.mul(a, f.ext("Cosh", x)),
            "Cosh": lambda: f.mul(a, f.ext("Sinh", x)),
            "Tanh": lambda: f.mul(a, f.sub(one, f.mul(v, v))),
            "Asinh": lambda: f.div(a, f.ext("Sqrt", f.add(f.mul(x, x), one))),
            "Acosh": lambda: f.div(a, f.ext("Sqrt", f.sub(f.mul(x, x), one))),
            "Atanh": lambda: f.div(a, f.sub(one, f.mul(x, x))),
            "Exp": lambda: f.mul(a, v),
            "Exp2": lambda: f.mul(a, f.mul(v, f.c(math.log(2.0)))),
            "Log": lambda: f.div(a, x),
            "Log2": lambda: f.div(a, f.mul(x, f.c(math.log(2.0)))),
            "Fract": lambda: a,
            "Degrees": lambda: f.mul(a, f.c(180.0 / math.pi)),
            "Radians": lambda: f.mul(a, f.c(math.pi / 180.0)),
            "FAbs": lambda: f.mul(a, f.ext("FSign", x)),
            "Ldexp": lambda: ir.Ext("Ldexp", t, [a, args[1]]),
        }
        if name in rules:
            self.back(x, rules[name](), out)
        elif name in _NO_DERIVATIVE:
            return
        elif name == "Atan2":
            y, x = args
            den = f.add(f.mul(x, x), f.mul(y, y))
            self.back(y, f.mul(a, f.div(x, den)), out)
            self.back(x, f.neg(f.mul(a, f.div(y, den))), out)
        elif name == "Pow":
            u, w = args
            self.back(u, f.mul(a, f.mul(w, ir.Ext("Pow", t, [u, f.sub(w, one)]))), out)
            positive: list[ir.Stmt] = []
            self.back(w, f.mul(a, f.mul(f.ext("Log", u), v)), positive)
            if positive:
                out.append(ir.If(ir.Op("OpFOrdGreaterThan", BOOL, [u, f.c(0.0)]), positive,
                                 []))
        elif name in ("FMin", "NMin", "FMax", "NMax"):
            cmp = "OpFOrdLessThanEqual" if "Min" in name else "OpFOrdGreaterThanEqual"
            self.branch(ir.Op(cmp, BOOL, [x, args[1]]), x, args[1], a, out)
        elif name == "FClamp":
            lo, hi = args[1], args[2]
            inner: list[ir.Stmt] = []
            self.branch(ir.Op("OpFOrdGreaterThan", BOOL, [x, hi]), hi, x, a, inner)
            below: list[ir.Stmt] = []
            self.back(lo, a, below)
            out.append(ir.If(ir.Op("OpFOrdLessThan", BOOL, [x, lo]), below, inner))
        elif name == "FMix":
            y, s = args[1], args[2]
            self.back(x, f.mul(a, f.sub(one, s)), out)
            self.back(y, f.mul(a, s), out)
            self.back(s, f.mul(a, f.sub(y, x)), out)
        elif name == "Fma":
            self.back(x, f.mul(a, args[1]), out)
            self.back(args[1], f.mul(a, x), out)
            self.back(args[2], a, out)
        else:
            raise self.error(v, f"math function {name}")


class _Builder:
    """Float arithmetic of one type, for derivative formulas."""

    def __init__(self, t: Type) -> None:
        self.t = t

    def c(self, value: float) -> ir.Const:
        return ir.Const(self.t, value)

    def add(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return ir.Op("OpFAdd", self.t, [x, y])

    def sub(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return ir.Op("OpFSub", self.t, [x, y])

    def mul(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return ir.Op("OpFMul", self.t, [x, y])

    def div(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return ir.Op("OpFDiv", self.t, [x, y])

    def neg(self, x: ir.Value) -> ir.Value:
        return ir.Op("OpFNegate", self.t, [x])

    def ext(self, name: str, x: ir.Value) -> ir.Value:
        return ir.Ext(name, self.t, [x])


def _copysign_source(v: ir.Op) -> ir.Value | None:
    """x of `copysign(x, y)` as `MathFunctions.copysign` builds it from bits, or None."""
    bits = v.args[0]
    if not (isinstance(bits, ir.Op) and bits.opname == "OpBitwiseOr"):
        return None
    magnitude = bits.args[0]
    if isinstance(magnitude, ir.Op) and magnitude.opname == "OpBitwiseAnd":
        cast = magnitude.args[0]
        if isinstance(cast, ir.Op) and cast.opname == "OpBitcast" and \
                is_float(cast.args[0].ty):
            return cast.args[0]
    return None


__all__ = ["Derivatives", "is_float", "zero_of"]
