"""SYCL 2020's `vec<T, N>` on the host: `sycl.vec(sycl.float32, 4)` is a type (the same
one as the alias `sycl.float4`), whose values are numpy arrays of N elements with SYCL's
swizzles (`v.x`, `v.xy`, `v.wzyx`, `v.rgba`, `v.s0`, `v.lo`), so host code and kernels
called as Python functions compute as kernels do; as an element type of memory (USM,
buffers, struct fields) a vector has its device layout, a 3-element one that of 4.
The compiler sees the type as its `VecType` (`vector_code` lowers the operations)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import invalid
from ..types import as_dtype
from .typesys import VecType, scalar_of, vec_type

SIZES = (2, 3, 4, 8, 16)
# SYCL 2020's vector element types (bool, whose vectors SYCL leaves to extensions, aside)
ELEMENT_TYPES = tuple(np.dtype(t) for t in (
    np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64))
_META = "vksycl.vec"
_TYPES: dict[tuple[np.dtype, int], type] = {}


def swizzle_indices(name: str, count: int) -> tuple[int, ...] | None:
    """The elements a swizzle names, in order, or None when `name` is none of a
    `count`-element vector's: x y z w (up to 4 elements), r g b a (4), s0 .. sF (one
    element), lo hi even odd (the halves and the even and odd elements)."""
    if name.startswith("s") and len(name) == 2:
        k = int(name[1], 16) if name[1] in "0123456789ABCDEF" else -1
        return (k,) if 0 <= k < count else None
    if name in ("lo", "hi", "even", "odd"):
        if count == 3:
            return None
        half = count // 2
        return {"lo": tuple(range(half)), "hi": tuple(range(half, count)),
                "even": tuple(range(0, count, 2)), "odd": tuple(range(1, count, 2))}[name]
    for letters, most in (("xyzw", 4), ("rgba", 4)):
        if name and all(c in letters for c in name) and count <= most and \
                (letters == "xyzw" or count == 4) and len(name) in (1, 2, 3, 4):
            idx = tuple(letters.index(c) for c in name)
            return idx if max(idx) < count else None
    return None


class vec(np.ndarray):
    """`sycl.vec(T, N)`: the type of vectors of N (2, 3, 4, 8 or 16) elements of scalar
    type T. Its values are constructed from N scalars, from one (every element), or from
    smaller vectors and scalars that together give N elements."""

    element_type: Any = None
    count: int = 0
    storage: np.dtype = np.dtype(np.uint8)  # its layout as an element of memory
    __vksycl_struct__: VecType

    def __new__(cls, *args: Any) -> Any:
        if cls is vec:
            if len(args) != 2:
                raise invalid("sycl.vec(T, N) takes an element type and a size")
            return vec_class(*args)
        values = _flatten(args)
        if not values:
            values = [0] * cls.count
        elif len(values) == 1:
            values = values * cls.count
        if len(values) != cls.count:
            raise invalid(f"{cls.__name__} takes {cls.count} elements, got {len(values)}")
        return np.array(values).astype(cls.element_type).view(cls)

    def __getattr__(self, name: str) -> Any:
        idx = swizzle_indices(name, self.shape[-1] if self.ndim else 0)
        if idx is None:
            raise AttributeError(f"{type(self).__name__} has no attribute or swizzle "
                                 f"'{name}'")
        plain = self.view(np.ndarray)
        if len(idx) == 1:
            return plain[idx[0]]
        return plain[list(idx)].view(vec_class(self.dtype, len(idx)))

    def __setattr__(self, name: str, value: Any) -> None:
        idx = swizzle_indices(name, self.shape[-1] if self.ndim else 0)
        if idx is None:
            super().__setattr__(name, value)
            return
        if len(set(idx)) != len(idx):
            raise invalid(f"cannot assign to the swizzle {name}: it repeats an element")
        self.view(np.ndarray)[list(idx)] = value

    def swizzle(self, *indices: int) -> Any:
        """`v.swizzle(3, 2, 1, 0)`: the elements at these indices, as a vector."""
        plain = self.view(np.ndarray)[list(indices)]
        return plain[0] if len(indices) == 1 else plain.view(vec_class(self.dtype, len(indices)))

    def convert(self, t: Any) -> Any:
        """The vector with each element converted to scalar type `t`."""
        return self.view(np.ndarray).astype(as_dtype(t)).view(vec_class(t, self.count))

    def load(self, offset: int, ptr: Any) -> None:
        """Reads the vector from `ptr`'s memory at `offset` vectors (`offset * N`
        elements) past it."""
        n = self.count
        self.view(np.ndarray)[...] = np.asarray(ptr).reshape(-1)[offset * n: offset * n + n]

    def store(self, offset: int, ptr: Any) -> None:
        """Writes the vector to `ptr`'s memory at `offset` vectors past it."""
        n = self.count
        np.asarray(ptr).reshape(-1)[offset * n: offset * n + n] = self.view(np.ndarray)

    @classmethod
    def byte_size(cls) -> int:
        return cls.storage.itemsize

    def _compare(self, other: Any, op: Any) -> Any:
        """SYCL's vector comparisons: -1 where true, 0 where false, as signed integers of
        the elements' width."""
        mask = op(self.view(np.ndarray), np.asarray(other))
        t = np.dtype(f"i{self.dtype.itemsize}")
        return (mask.astype(t) * t.type(-1)).view(vec_class(t, self.count))

    def __lt__(self, o: Any) -> Any:
        return self._compare(o, np.less)

    def __le__(self, o: Any) -> Any:
        return self._compare(o, np.less_equal)

    def __gt__(self, o: Any) -> Any:
        return self._compare(o, np.greater)

    def __ge__(self, o: Any) -> Any:
        return self._compare(o, np.greater_equal)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._compare(o, np.equal)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._compare(o, np.not_equal)

    __hash__ = None  # type: ignore[assignment]


def _flatten(args: tuple) -> list[Any]:
    out: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.extend(a.view(np.ndarray).ravel().tolist())
        else:
            out.append(a)
    return out


def vec_class(t: Any, count: int) -> type:
    """The vector type of `count` elements of scalar type `t` (one class per pair)."""
    dtype = as_dtype(t)
    if dtype not in ELEMENT_TYPES or count not in SIZES:
        raise invalid(f"sycl.vec({t!r}, {count}): vectors hold 2, 3, 4, 8 or 16 elements "
                      f"of an integer or floating-point type")
    key = (dtype, count)
    cls = _TYPES.get(key)
    if cls is None:
        name = {"f": "float", "i": "int", "u": "uint"}[dtype.kind]
        name = {"float16": "half", "float32": "float", "float64": "double", "int8": "char",
                "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
                "uint32": "uint", "int64": "long", "uint64": "ulong"}.get(dtype.name, name)
        storage = np.dtype((dtype, (4 if count == 3 else count,)), metadata={_META: count})
        cls = type(f"{name}{count}", (vec,), {
            "element_type": dtype.type, "count": count, "storage": storage,
            "__module__": "vksycl", "__doc__": f"`sycl::{name}{count}`: "
            f"`sycl.vec(sycl.{dtype.name}, {count})`."})
        elem = scalar_of(dtype)
        assert elem is not None
        cls.__vksycl_struct__ = vec_type(elem, count, cls)
        _TYPES[key] = cls
    return cls


def vec_of_dtype(dtype: np.dtype) -> VecType | None:
    """The vector type whose memory layout `dtype` is (a vector type's `storage`)."""
    meta = dtype.metadata
    count = None if meta is None else meta.get(_META)
    if count is None or dtype.subdtype is None:
        return None
    return vec_class(dtype.base, count).__vksycl_struct__


def aliases() -> dict[str, type]:
    """SYCL 2020's vector aliases: `sycl::float4`, `sycl::int2`, `sycl::half8`, ...,
    but for the five that are scalar types' names here, as numpy's (`sycl.float16` is
    half precision, `sycl.int8` an 8-bit integer): `sycl.vec(sycl.float32, 16)` and
    `sycl.vec(sycl.int32, 8)` name those vectors."""
    out = {}
    for dtype in ELEMENT_TYPES:
        for n in SIZES:
            cls = vec_class(dtype, n)
            if not hasattr(np, cls.__name__):
                out[cls.__name__] = cls
    return out

