"""Float64 transcendental functions, which GLSL.std.450 only defines for 16/32-bit floats.

Each is an exact formulation in float64 arithmetic: argument reduction (Cody-Waite with
split constants, or exponent extraction) then a polynomial whose truncation error is
below 1e-17 on the reduced range, so results are within a few ulp of the true value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from . import ir
from .typesys import BOOL, F64, I32, U32, U64

LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
PIO2_1, PIO2_2, PIO2_2T = 1.57079632673412561417e00, 6.07710050630396597660e-11, \
    2.02226624879595063154e-21


def c(v: float) -> ir.Const:
    return ir.Const(F64, v)


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFAdd", F64, [a, b])


def sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFSub", F64, [a, b])


def mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFMul", F64, [a, b])


def div(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFDiv", F64, [a, b])


def select(cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpSelect", F64, [cond, a, b])


def lt(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFOrdLessThan", BOOL, [a, b])


def gt(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.Op("OpFOrdGreaterThan", BOOL, [a, b])


def horner(x: ir.Value, coeffs: list[float]) -> ir.Value:
    """coeffs[0] + coeffs[1] x + coeffs[2] x^2 + ..."""
    p: ir.Value = c(coeffs[-1])
    for k in reversed(coeffs[:-1]):
        p = add(mul(p, x), c(k))
    return p


def exp(x: ir.Value) -> ir.Value:
    kf = ir.Ext("FClamp", F64, [ir.Ext("Floor", F64, [add(mul(x, c(1 / math.log(2))),
                                                            c(0.5))]), c(-1100.0), c(1100.0)])
    r = sub(sub(x, mul(kf, c(LN2_HI))), mul(kf, c(LN2_LO)))
    p = horner(r, [1 / math.factorial(i) for i in range(14)])
    out = ir.Ext("Ldexp", F64, [p, ir.Op("OpConvertFToS", I32, [kf])])
    out = select(gt(x, c(709.782712893384)), c(math.inf), out)
    return select(lt(x, c(-745.2)), c(0.0), out)


def log(x: ir.Value) -> ir.Value:
    tiny = lt(x, c(2.2250738585072014e-308))
    xs = select(tiny, mul(x, c(2.0**54)), x)
    bits = ir.Op("OpBitcast", U64, [xs])
    field = ir.Op("OpUConvert", U32, [ir.Op("OpShiftRightLogical", U64, [
        bits, ir.Const(U64, 52)])])
    e = ir.Op("OpISub", I32, [ir.Op("OpBitcast", I32, [ir.Op("OpBitwiseAnd", U32, [
        field, ir.Const(U32, 0x7FF)])]), ir.Const(I32, 1023)])
    e = ir.Op("OpSelect", I32, [tiny, ir.Op("OpISub", I32, [e, ir.Const(I32, 54)]), e])
    m = ir.Op("OpBitcast", F64, [ir.Op("OpBitwiseOr", U64, [
        ir.Op("OpBitwiseAnd", U64, [bits, ir.Const(U64, (1 << 52) - 1)]),
        ir.Const(U64, 1023 << 52)])])
    big = gt(m, c(math.sqrt(2.0)))
    m = select(big, mul(m, c(0.5)), m)
    ef = ir.Op("OpConvertSToF", F64, [ir.Op("OpSelect", I32, [
        big, ir.Op("OpIAdd", I32, [e, ir.Const(I32, 1)]), e])])
    f = sub(m, c(1.0))
    s = div(f, add(c(2.0), f))
    s2 = mul(s, s)
    poly = horner(s2, [1 / (2 * k + 1) for k in range(12)])
    out = add(mul(ef, c(LN2_HI)), add(mul(mul(c(2.0), s), poly), mul(ef, c(LN2_LO))))
    out = select(ir.Op("OpIsInf", BOOL, [x]), x, out)
    out = select(ir.Op("OpFOrdEqual", BOOL, [x, c(0.0)]), c(-math.inf), out)
    out = select(lt(x, c(0.0)), c(math.nan), out)
    return select(ir.Op("OpIsNan", BOOL, [x]), x, out)


def _sincos(x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(sin r, cos r, quadrant) with x = k pi/2 + r, |r| <= pi/4."""
    k = ir.Ext("Floor", F64, [add(mul(x, c(2 / math.pi)), c(0.5))])
    r = sub(sub(sub(x, mul(k, c(PIO2_1))), mul(k, c(PIO2_2))), mul(k, c(PIO2_2T)))
    r2 = mul(r, r)
    s = mul(r, horner(r2, [(-1) ** i / math.factorial(2 * i + 1) for i in range(9)]))
    co = horner(r2, [(-1) ** i / math.factorial(2 * i) for i in range(10)])
    q = ir.Op("OpBitwiseAnd", I32, [ir.Op("OpConvertFToS", I32, [k]), ir.Const(I32, 3)])
    return s, co, q


def _quadrant(q: ir.Value, values: list[ir.Value]) -> ir.Value:
    out = values[3]
    for i in (2, 1, 0):
        out = select(ir.Op("OpIEqual", BOOL, [q, ir.Const(I32, i)]), values[i], out)
    return out


def sin(x: ir.Value) -> ir.Value:
    s, co, q = _sincos(x)
    return _quadrant(q, [s, co, ir.Op("OpFNegate", F64, [s]), ir.Op("OpFNegate", F64, [co])])


def cos(x: ir.Value) -> ir.Value:
    s, co, q = _sincos(x)
    return _quadrant(q, [co, ir.Op("OpFNegate", F64, [s]), ir.Op("OpFNegate", F64, [co]), s])


def tan(x: ir.Value) -> ir.Value:
    s, co, q = _sincos(x)
    odd = ir.Op("OpIEqual", BOOL, [ir.Op("OpBitwiseAnd", I32, [q, ir.Const(I32, 1)]),
                                   ir.Const(I32, 0)])
    return select(odd, div(s, co), ir.Op("OpFNegate", F64, [div(co, s)]))


def atan(x: ir.Value) -> ir.Value:
    ax = ir.Ext("FAbs", F64, [x])
    inv = gt(ax, c(1.0))
    a = select(inv, div(c(1.0), ax), ax)  # [0, 1]
    shift = gt(a, c(2 - math.sqrt(3)))
    sq3 = math.sqrt(3)
    b = select(shift, div(sub(mul(a, c(sq3)), c(1.0)), add(c(sq3), a)), a)  # |b| <= 0.268
    b2 = mul(b, b)
    t = mul(b, horner(b2, [(-1) ** i / (2 * i + 1) for i in range(14)]))
    t = select(shift, add(c(math.pi / 6), t), t)
    t = select(inv, sub(c(math.pi / 2), t), t)
    return _copysign(t, x)


def _copysign(mag: ir.Value, sign: ir.Value) -> ir.Value:
    return select(lt(sign, c(0.0)), ir.Op("OpFNegate", F64, [mag]), mag)


def atan2(y: ir.Value, x: ir.Value) -> ir.Value:
    base = atan(div(y, x))
    neg_x = lt(x, c(0.0))
    fix = select(lt(y, c(0.0)), sub(base, c(math.pi)), add(base, c(math.pi)))
    out = select(neg_x, fix, base)
    zero_x = ir.Op("OpFOrdEqual", BOOL, [x, c(0.0)])
    return select(zero_x, _copysign(c(math.pi / 2), y), out)


def pow_(x: ir.Value, y: ir.Value) -> ir.Value:
    return exp(mul(y, log(x)))


def sinh(x: ir.Value) -> ir.Value:
    e = exp(x)
    return mul(sub(e, div(c(1.0), e)), c(0.5))


def cosh(x: ir.Value) -> ir.Value:
    e = exp(x)
    return mul(add(e, div(c(1.0), e)), c(0.5))


def tanh(x: ir.Value) -> ir.Value:
    e2 = exp(mul(c(-2.0), ir.Ext("FAbs", F64, [x])))
    return _copysign(div(sub(c(1.0), e2), add(c(1.0), e2)), x)


FUNCTIONS: dict[str, Callable[..., ir.Value]] = {
    "Exp": exp, "Log": log, "Sin": sin, "Cos": cos, "Tan": tan, "Atan": atan,
    "Atan2": atan2, "Pow": pow_, "Sinh": sinh, "Cosh": cosh, "Tanh": tanh,
    "Exp2": lambda x: exp(mul(x, c(math.log(2)))),
    "Log2": lambda x: mul(log(x), c(1 / math.log(2))),
    "Asinh": lambda x: _copysign(log(add(ir.Ext("FAbs", F64, [x]), ir.Ext("Sqrt", F64, [
        add(mul(x, x), c(1.0))]))), x),
    "Acosh": lambda x: log(add(x, ir.Ext("Sqrt", F64, [sub(mul(x, x), c(1.0))]))),
    "Atanh": lambda x: mul(c(0.5), log(div(add(c(1.0), x), sub(c(1.0), x)))),
}
