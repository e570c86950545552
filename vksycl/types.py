"""Scalar element types. They are numpy's scalar types, so `sycl.float32(x)` casts on the
host, numpy dtypes work anywhere a type is expected, and the compiler recognises them."""

from __future__ import annotations

from typing import Any

import numpy as np

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
half, double = float16, float64

SCALAR_TYPES: tuple[type, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64,
)


def as_dtype(t: Any) -> np.dtype:
    """The numpy dtype of an element type given as a sycl/numpy type, dtype or Python type;
    Python `int`/`float`/`bool` mean int32/float32/bool as in device code; `sycl.ptr[T]`
    means a pointer stored in memory (numpy would take the `dtype` it points to)."""
    storage = getattr(t, "storage", None)
    if isinstance(storage, np.dtype):
        return storage
    if t is int:
        return np.dtype(np.int32)
    if t is float:
        return np.dtype(np.float32)
    if t is bool:
        return np.dtype(np.bool_)
    return np.dtype(t)


def typed_view(raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Bytes of memory seen as `dtype` elements; an element type that is an array of
    values (a vector's) gives rows of them."""
    if dtype.subdtype is None:
        return raw.view(dtype)
    base, shape = dtype.subdtype
    return raw.view(base).reshape(-1, *shape)


_POINTEE = "vksycl.pointee"


def pointer_dtype(element: Any) -> np.dtype:
    """The dtype of a USM pointer stored in memory (`sycl.ptr[T]` as an element type or a
    struct field): a 64-bit device address whose metadata names the element type, so the
    compiler and host indexing know what it points to."""
    return np.dtype(np.uint64, metadata={_POINTEE: as_dtype(element)})


def pointee(dtype: np.dtype) -> np.dtype | None:
    """The element type of a pointer dtype made by `pointer_dtype`, else None."""
    meta = dtype.metadata
    return None if meta is None else meta.get(_POINTEE)


_STRUCT = "vksycl.struct"


def struct_dtype_of(cls: type, dtype: np.dtype) -> np.dtype:
    """A struct class's structured dtype, naming the class in its metadata, so that host
    loads from USM give back instances of it."""
    return np.dtype(dtype, metadata={_STRUCT: cls})


def struct_class(dtype: np.dtype) -> type | None:
    """The `@sycl.struct` class whose memory a structured dtype lays out, else None."""
    meta = dtype.metadata
    return None if meta is None else meta.get(_STRUCT)


def device_alignment(dtype: np.dtype) -> int:
    """The alignment kernels need of an element: a struct's is its widest field's (the
    C layout of `@sycl.struct`), which numpy's `alignment` of a structured dtype made
    without `align=True` (1) does not say."""
    if dtype.subdtype is not None and dtype.metadata:  # a vector: aligned to its size
        return dtype.itemsize
    if dtype.names is None:
        return dtype.base.alignment
    return max((device_alignment(dtype.fields[n][0]) for n in dtype.names), default=1)


def dtype_key(dtype: np.dtype) -> Any:
    """A hashable key that tells dtypes apart the way kernels see them: numpy's equality
    ignores metadata, so a pointer dtype would otherwise equal uint64 (and every other
    pointer dtype), a struct with a pointer field its twin with another pointee, and two
    struct classes with the same fields each other."""
    target = pointee(dtype)
    if target is not None:
        return ("ptr", dtype_key(target))
    if dtype.subdtype is not None and dtype.metadata:  # a vector's: its size is in them
        return (dtype, tuple(sorted(dtype.metadata.items())))
    if dtype.names is None:
        return dtype
    return (dtype, struct_class(dtype),
            tuple((name, dtype.fields[name][1], dtype_key(dtype.fields[name][0]))
                  for name in dtype.names))
