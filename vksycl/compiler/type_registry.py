"""The device types that host-side type names stand for: scalar types and dtypes,
`sycl.ptr[T]`, `sycl.accessor[T, dims, mode]` and `sycl.local_accessor[T, dims]`
annotations, vector types, and `@sycl.struct` classes, which are registered here by their
dtype so a USM array's element dtype leads back to its struct.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..access import accessor_type, local_accessor_type
from ..exceptions import invalid
from ..types import dtype_key, pointee, struct_class
from .typesys import AccessorType, LocalAccessorType, PtrType, Struct, Type, scalar_of
from .vectors import vec_of_dtype

_STRUCTS_BY_DTYPE: dict[Any, Struct] = {}  # by dtype_key, which names the struct class
_STRUCTS_BY_LAYOUT: dict[Any, Struct] = {}  # for a dtype that names no class: the latest


def register_struct(st: Struct, dtype: np.dtype) -> None:
    """Makes `dtype` (a struct class's memory layout) name the struct `st`."""
    _STRUCTS_BY_DTYPE[dtype_key(dtype)] = st
    _STRUCTS_BY_LAYOUT[_layout(dtype)] = st


def _layout(dtype: np.dtype) -> Any:
    """A dtype's `dtype_key` without the struct classes it names."""
    target = pointee(dtype)
    if target is not None:
        return ("ptr", _layout(target))
    if dtype.names is None:
        return dtype
    return (dtype, tuple((name, dtype.fields[name][1], _layout(dtype.fields[name][0]))
                         for name in dtype.names))


def type_of_annotation(t: Any) -> Type | None:
    """The device type an annotation names (scalar, `sycl.ptr[T]`, accessor, struct
    class)."""
    s = scalar_of(t) if isinstance(t, type | np.dtype) else None
    if s is not None:
        return s
    if isinstance(t, accessor_type):
        return AccessorType(element_type(np.dtype(t.dtype)), t.dims, t.mode)
    if isinstance(t, local_accessor_type):
        return LocalAccessorType(element_type(np.dtype(t.dtype)), t.dims)
    st = getattr(t, "__vksycl_struct__", None)
    if st is not None:
        return st
    dtype = getattr(t, "dtype", None)
    if type(t).__name__ == "PointerType" and dtype is not None:
        return PtrType(element_type(dtype))
    return None


def element_type(dtype: np.dtype) -> Type:
    """The device type of a USM pointer's element dtype (pointer, scalar or registered
    struct). Pointers first: their dtype is a uint64 that only its metadata tells apart."""
    dtype = np.dtype(dtype)
    target = pointee(dtype)
    if target is not None:
        return PtrType(element_type(target))
    v = vec_of_dtype(dtype)
    if v is not None:
        return v
    s = scalar_of(dtype)
    if s is not None:
        return s
    st = _STRUCTS_BY_DTYPE.get(dtype_key(dtype))
    if st is None and struct_class(dtype) is None:
        st = _STRUCTS_BY_LAYOUT.get(_layout(dtype))
    if st is None:
        raise invalid(f"no @sycl.struct class has the element type {dtype}")
    return st
