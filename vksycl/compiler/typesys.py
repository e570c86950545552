"""Device-code types: scalars, structs, pointers, fixed arrays, and C++ promotion.

Types are small frozen values so they can key caches and specialise device functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..access import access_mode
from ..types import pointer_dtype


class Type:
    """Base of every device type."""


@dataclass(frozen=True)
class Scalar(Type):
    kind: str  # 'b' bool, 'i' signed, 'u' unsigned, 'f' float
    bits: int

    @property
    def dtype(self) -> np.dtype:
        if self.kind == "b":
            return np.dtype(np.bool_)
        return np.dtype(f"{self.kind}{self.bits // 8}")

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def nbytes(self) -> int:
        return 1 if self.kind == "b" else self.bits // 8

    def __repr__(self) -> str:
        return "bool" if self.kind == "b" else self.dtype.name


@dataclass(frozen=True)
class Void(Type):
    def __repr__(self) -> str:
        return "void"


@dataclass(frozen=True, eq=False)
class Struct(Type):
    """A user struct (`@sycl.struct` class): named typed fields, C layout in memory."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    pyclass: Any = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and other.pyclass is self.pyclass \
            and other.fields == self.fields

    def __hash__(self) -> int:
        return hash((self.name, self.fields))

    def field_index(self, name: str) -> int:
        for i, (n, _) in enumerate(self.fields):
            if n == name:
                return i
        return -1

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class VecType(Struct):
    """A SYCL `vec<T, N>`: a struct of N `elem`s as far as values go (held, passed and
    returned element by element), one SPIR-V vector in memory, where it has the vector's
    size and alignment (a 3-element vector those of a 4-element one, as SYCL says)."""

    elem: Scalar = None  # type: ignore[assignment]
    count: int = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VecType) and (other.elem, other.count) == \
            (self.elem, self.count)

    def __hash__(self) -> int:
        return hash(("vec", self.elem, self.count))

    @property
    def slots(self) -> int:
        """Elements of memory the vector takes: 4 for a 3-element vector."""
        return 4 if self.count == 3 else self.count

    def __repr__(self) -> str:
        return self.name


def vec_type(elem: Scalar, count: int, pyclass: Any = None) -> VecType:
    """The device type of `vec<elem, count>`, its elements named s0, s1, ..."""
    fields = tuple((f"s{k:X}", elem) for k in range(count))
    return VecType(pyclass.__name__ if pyclass is not None else f"vec[{elem!r}, {count}]",
                   fields, pyclass, elem, count)


@dataclass(frozen=True)
class PtrType(Type):
    """A pointer to `elem`s: a 64-bit device address for global memory (USM pointers,
    also as stored in memory), a position in a work-group or private array otherwise."""

    elem: Type
    space: str = "global"  # global, local, private

    def __repr__(self) -> str:
        return f"ptr[{self.elem!r}]"


@dataclass(frozen=True)
class ArrayType(Type):
    elem: Type
    length: int


@dataclass(frozen=True)
class TupleType(Type):
    items: tuple[Type, ...]


@dataclass(frozen=True)
class AccessorType(Type):
    """A free function kernel's accessor parameter (`sycl.accessor[T, dims, mode]`): the
    kernel reads it as an accessor object of these, whatever buffer it is made of."""

    elem: Type
    dims: int
    mode: access_mode

    def __repr__(self) -> str:
        return f"sycl.accessor[{self.elem!r}, {self.dims}, {self.mode.name}]"


@dataclass(frozen=True)
class LocalAccessorType(Type):
    """A `sycl.local_accessor[T, dims]` parameter: work-group memory, whose shape is in the
    code, so a kernel is compiled for the shape of the local_accessor a launch passes
    (None before one does)."""

    elem: Type
    dims: int
    shape: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        shape = "" if self.shape is None else f", shape {self.shape}"
        return f"sycl.local_accessor[{self.elem!r}, {self.dims}{shape}]"


@dataclass(frozen=True)
class MatrixType(Type):
    """A `joint_matrix` held by a sub-group: a SPIR-V cooperative matrix of `elem`s whose
    `use` ("a", "b" or "accumulator") is its role in a multiply-add."""

    elem: Scalar
    rows: int
    cols: int
    use: str

    def __repr__(self) -> str:
        return f"joint_matrix[{self.elem!r}, {self.use}, {self.rows}x{self.cols}]"


BOOL = Scalar("b", 8)
I8, I16, I32, I64 = (Scalar("i", b) for b in (8, 16, 32, 64))
U8, U16, U32, U64 = (Scalar("u", b) for b in (8, 16, 32, 64))
F16, F32, F64 = (Scalar("f", b) for b in (16, 32, 64))
VOID = Void()

_BY_DTYPE = {t.dtype: t for t in (BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32, F64)}


def scalar_of(t: Any) -> Scalar | None:
    """The scalar type a Python/numpy type or dtype names, or None."""
    if t is int:
        return I32
    if t is float:
        return F32
    if t is bool:
        return BOOL
    try:
        return _BY_DTYPE.get(np.dtype(t))
    except TypeError:
        return None


def mem_type(t: Type) -> Type:
    """How a type is held in memory: bools as bytes, pointers as 64-bit addresses."""
    if t == BOOL:
        return Scalar("u", 8)
    return U64 if isinstance(t, PtrType) else t


def layout(t: Type) -> tuple[int, int]:
    """(size, alignment) in bytes of a type stored in device memory (C rules)."""
    if isinstance(t, Scalar):
        return t.nbytes, t.nbytes
    if isinstance(t, PtrType):
        return 8, 8
    if isinstance(t, ArrayType):
        size, align = layout(t.elem)
        return size * t.length, align
    if isinstance(t, VecType):
        size = t.elem.nbytes * t.slots
        return size, size
    if isinstance(t, Struct):
        offset, align = 0, 1
        for _, ft in t.fields:
            size, a = layout(ft)
            offset = (offset + a - 1) // a * a + size
            align = max(align, a)
        return (offset + align - 1) // align * align, align
    raise TypeError(f"{t!r} has no memory layout")


def field_offsets(t: Struct) -> list[int]:
    if isinstance(t, VecType):
        return [k * t.elem.nbytes for k in range(t.count)]
    offsets, offset = [], 0
    for _, ft in t.fields:
        size, a = layout(ft)
        offset = (offset + a - 1) // a * a
        offsets.append(offset)
        offset += size
    return offsets


def struct_dtype(t: Struct) -> np.dtype:
    """The numpy structured dtype with the same layout as the device struct."""
    names, formats, offsets = [], [], field_offsets(t)
    for name, ft in t.fields:
        names.append(name)
        formats.append(dtype_of(ft))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": layout(t)[0]})


def dtype_of(t: Type) -> np.dtype:
    """The numpy dtype of a device type held in memory (pointers as `pointer_dtype`)."""
    if isinstance(t, Scalar):
        return t.dtype
    if isinstance(t, PtrType):
        return pointer_dtype(dtype_of(t.elem))
    if isinstance(t, VecType):
        return t.pyclass.storage
    if isinstance(t, Struct):
        dtype = getattr(t.pyclass, "dtype", None)
        return dtype if isinstance(dtype, np.dtype) else struct_dtype(t)
    raise TypeError(f"{t!r} has no dtype")


def _int_rank_promote(t: Scalar) -> Scalar:
    """C++ integral promotion: bool and integers narrower than int become int."""
    if t.kind == "b" or (t.is_int and t.bits < 32):
        return I32
    return t


def promote(a: Scalar, b: Scalar) -> Scalar:
    """C++ usual arithmetic conversions."""
    if a.is_float or b.is_float:
        bits = max(t.bits for t in (a, b) if t.is_float)
        return Scalar("f", bits)
    a, b = _int_rank_promote(a), _int_rank_promote(b)
    if a == b:
        return a
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    s, u = (a, b) if a.is_signed else (b, a)
    if u.bits >= s.bits:
        return u
    return s


def literal_int_type(v: int) -> Scalar:
    if -(2**31) <= v < 2**31:
        return I32
    if -(2**63) <= v < 2**63:
        return I64
    return U64
