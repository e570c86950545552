"""Python's operators on runtime scalars and pointers: arithmetic, bitwise operators,
shifts and comparisons, with Python's meaning where it differs from C++ (true division,
floor division and modulo, comparisons of signed with unsigned values)."""

from __future__ import annotations

import ast
from typing import Any

from . import ir
from .frontend.describe import kind_of
from .typesys import BOOL, F16, F32, F64, U64, Scalar, promote
from .values import PtrV, PyV

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


class Operators:
    """Binary operators and comparisons, a part of `Intrinsics` (powers are its
    `MathFunctions` part's)."""

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
        shift = _power_of_two(y)
        if shift is not None and t.is_int and isinstance(op, ast.Mod | ast.FloorDiv):
            # Python's // and % by 2**k are an arithmetic shift and a mask in two's
            # complement, negative x too: one instruction for a tile's index arithmetic
            if isinstance(op, ast.Mod):
                return ir.Op("OpBitwiseAnd", t, [x, ir.Const(t, (1 << shift) - 1)])
            name = "OpShiftRightArithmetic" if t.is_signed else "OpShiftRightLogical"
            return ir.Op(name, t, [x, ir.Const(t, shift)])
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
            if t.is_signed:
                return signed_compare(names, fl.convert(x, t), fl.convert(y, t))
            return ir.Op(names[1], BOOL, [fl.convert(x, t), fl.convert(y, t)])
        # signed against unsigned: compare the mathematical values, as Python does
        if not px.is_signed:
            x, y, px, py, op = y, x, py, px, _SWAP[type(op)]()
            names = _CMP[type(op)]
        ut = Scalar("u", max(px.bits, py.bits))
        neg = signed_compare(_CMP[ast.Lt], fl.convert(x, px), ir.Const(px, 0))
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


def signed_compare(names: tuple[str, str, str], x: ir.Value, y: ir.Value) -> ir.Value:
    """A comparison of two signed integers. Ordered comparisons of 64-bit ones compare
    them unsigned with their sign bits flipped, which is the same: lavapipe (Mesa 22.3)
    gets `x < c` wrong when x is an int32 sign-extended to 64 bits and c a constant (it
    answers false for <, <= and true for >, >=, whatever x is)."""
    t = x.ty
    if t.bits != 64 or names[0] in ("OpIEqual", "OpINotEqual"):
        return ir.Op(names[0], BOOL, [x, y])
    sign = ir.Const(t, -(1 << 63))
    return ir.Op(names[1], BOOL, [ir.Op("OpBitwiseXor", t, [x, sign]),
                                  ir.Op("OpBitwiseXor", t, [y, sign])])


def _power_of_two(y: ir.Value) -> int | None:
    """k where `y` is the constant 2**k (k >= 0), else None."""
    if isinstance(y, ir.Const) and type(y.value) is int and y.value > 0 and \
            y.value & (y.value - 1) == 0:
        return y.value.bit_length() - 1
    return None


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
