"""The scalar types of device code and the rules vksycl documents for them, written here
independently of the compiler: C++'s usual arithmetic conversions, Python literals as
int32/float32 unless the other operand's type can hold them, two's complement wrapping,
and which float values a type holds exactly."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Ty:
    """A device scalar type: kind 'b' (bool), 'i' (signed), 'u' (unsigned), 'f' (float)."""

    kind: str
    bits: int

    @property
    def name(self) -> str:
        if self.kind == "b":
            return "bool"
        return {"i": "int", "u": "uint", "f": "float"}[self.kind] + str(self.bits)

    @property
    def source(self) -> str:
        """How kernel source names the type."""
        return "sycl.bool_" if self.kind == "b" else f"sycl.{self.name}"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.bool_) if self.kind == "b" else np.dtype(self.name)

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.kind == "i" else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.kind == "i" else (1 << self.bits) - 1

    def __repr__(self) -> str:
        return self.name


BOOL = Ty("b", 8)
I8, I16, I32, I64 = (Ty("i", b) for b in (8, 16, 32, 64))
U8, U16, U32, U64 = (Ty("u", b) for b in (8, 16, 32, 64))
F16, F32, F64 = (Ty("f", b) for b in (16, 32, 64))
INTS = (I8, I16, I32, I64, U8, U16, U32, U64)
FLOATS = (F16, F32, F64)
BY_NAME = {t.name: t for t in (BOOL, *INTS, *FLOATS)}


def int_promote(t: Ty) -> Ty:
    """C++ integral promotion: bool and integers narrower than int become int."""
    return I32 if t.is_bool or (t.is_int and t.bits < 32) else t


def promote(a: Ty, b: Ty) -> Ty:
    """C++'s usual arithmetic conversions."""
    if a.is_float or b.is_float:
        return Ty("f", max(t.bits for t in (a, b) if t.is_float))
    a, b = int_promote(a), int_promote(b)
    if a == b:
        return a
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    s, u = (a, b) if a.is_signed else (b, a)
    return u if u.bits >= s.bits else s


def wrap(v: int, t: Ty) -> int:
    """`v` reduced to `t`'s width in two's complement."""
    v &= (1 << t.bits) - 1
    if t.is_signed and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


def literal_type(obj: object, want: Ty | None = None) -> Ty:
    """The type a Python literal takes in device code: int32 (int64 when it does not fit)
    and float32, or `want` when it is of the literal's kind."""
    if isinstance(obj, bool):
        return BOOL
    if isinstance(obj, int):
        if want is not None and want.is_int:
            return want
        return I32 if -(2**31) <= obj < 2**31 else I64 if -(2**63) <= obj < 2**63 else U64
    return want if want is not None and want.is_float else F32


def weak_want(obj: object, other: Ty) -> Ty | None:
    """The type a literal takes beside a value of type `other`: `other` when it is of the
    literal's kind (an integer type of 32 bits or more that holds it, or any float type),
    else None (the literal's own type)."""
    if isinstance(obj, bool):
        return None
    if isinstance(obj, int) and other.is_int and other.bits >= 32:
        return other if other.lo <= obj <= other.hi else None
    if isinstance(obj, int | float) and other.is_float:
        return other
    return None


MANTISSA = {16: 11, 32: 24, 64: 53}
MIN_EXP = {16: -14, 32: -126, 64: -1022}  # smallest normal exponent: no subnormals
MAX = {16: 65504.0, 32: float(np.finfo(np.float32).max), 64: float(np.finfo(np.float64).max)}


def float_holds(t: Ty, x: Fraction | int) -> bool:
    """Whether float type `t` holds `x` exactly, as a normal number or zero (drivers may
    flush subnormals)."""
    x = Fraction(x)
    if x == 0:
        return True
    if abs(x) > MAX[t.bits]:
        return False
    num, den = abs(x.numerator), x.denominator
    if den & (den - 1):
        return False  # not a dyadic rational
    exp = num.bit_length() - 1 - (den.bit_length() - 1)  # floor(log2 |x|)
    if exp < MIN_EXP[t.bits]:
        return False
    significand = num >> ((num & -num).bit_length() - 1)  # without its trailing zeros
    return significand.bit_length() <= MANTISSA[t.bits]
