"""Frontend values as runtime scalars: Python literals take their C++ types (or the
other operand's), conversions follow C++ and fold on constants, and truth tests."""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

from .. import if_device, ir
from ..typesys import BOOL, F32, U64, Scalar, Type, literal_int_type, scalar_of
from ..values import ItemV, PtrV, PyV, RangeV
from .base import LoweringState
from .describe import describe, kind_of


class Scalars(LoweringState):
    """Values as typed scalars."""

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
            raise self.err(node, f"{describe(obj)} is not a device value")
        if isinstance(v, ItemV) and v.kind in ("id", "item") and v.dims == 1:
            return self.m.queries.scalar_query(self, "get_id", 0, node)
        if isinstance(v, ItemV):
            raise self.err(node, f"a {v.dims}-dimensional {v.kind} is not a scalar; "
                           "index it ([0]) or call a query")
        if isinstance(v, RangeV) and len(v.items) == 1:
            return v.items[0]
        if isinstance(v, RangeV):
            raise self.err(node, f"an accessor's {len(v.items)}-dimensional {v.kind} is not "
                           "a scalar; index it ([0])")
        raise self.err(node, f"expected a scalar value, got {kind_of(v)}")

    def weak_pair(self, a: Any, b: Any, node: ast.AST) -> tuple[ir.Value, ir.Value]:
        """Both operands as Values; a Python literal takes the other side's type when
        it has the same kind (so `x * 2.0` keeps x's float width)."""
        if isinstance(a, PyV) and not isinstance(b, PyV):
            bv = self.scalar(b, node)
            return self.scalar(a, node, weak_want(a.obj, bv.ty)), bv
        if isinstance(b, PyV) and not isinstance(a, PyV):
            av = self.scalar(a, node)
            return av, self.scalar(b, node, weak_want(b.obj, av.ty))
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
                raise self.err(node, f"{describe(v.obj)} has no truth value") from None
        return self.convert(self.scalar(v, node), BOOL, node)


def weak_want(obj: Any, other: Type) -> Scalar | None:
    """The type a Python literal takes beside a value of type `other`: `other` when the
    literal is of its kind and fits, else None (the literal's own type)."""
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


def wrap(v: int, t: Scalar) -> int:
    """An integer reduced to `t`'s width, as the device's two's complement holds it."""
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
    return wrap(int(value), to)
