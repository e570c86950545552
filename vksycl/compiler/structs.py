"""Device struct classes: `@sycl.struct`, which turns an annotated class into a struct
kernels can take, hold and point to (polymorphic ones included), and
`syclexp.storage_for`, the element type of memory that holds any of several of them.
"""

from __future__ import annotations

import copyreg
import inspect
import zlib
from typing import Any

import numpy as np

from ..exceptions import invalid
from ..types import struct_dtype_of
from . import virtual
from .type_registry import register_struct, type_of_annotation
from .typesys import U32, Struct, Type, layout, struct_dtype


def struct(cls: type) -> type:
    """Make a class a device struct: its annotated fields, in order, are the members.

    The class gets `dtype` (the numpy structured dtype of its memory layout, for USM
    arrays of it; pointer fields hold device addresses) and keyword construction on the
    host. A struct may derive from one struct (its fields come first); a class with an
    `indirectly_callable` method in its hierarchy is polymorphic: a hidden type tag
    precedes the fields, and `at` / `construct_at` reach objects in memory."""
    base = virtual.struct_base(cls)
    fields: list[tuple[str, Type]] = list(base.__vksycl_struct__.fields) if base else []
    if virtual.declares_virtual(cls) and not virtual.is_polymorphic(base or cls):
        if base is not None:
            raise invalid(f"struct {cls.__name__}: declares virtual methods but its base "
                          f"{base.__name__} has none; declare them in the base")
        fields = [(virtual.TAG_FIELD, U32)]
    for name, ann in inspect.get_annotations(cls, eval_str=True).items():
        if any(n == name for n, _ in fields):
            raise invalid(f"struct {cls.__name__}: field {name} is already a field of "
                          f"{base.__name__ if base else 'the struct'}")
        t = type_of_annotation(ann)
        if t is None:
            raise invalid(f"struct {cls.__name__}: field {name} has no device type ({ann!r})")
        fields.append((name, t))
    st = Struct(cls.__name__, tuple(fields), cls)
    cls.__vksycl_struct__ = st
    cls.dtype = struct_dtype_of(cls, struct_dtype(st))
    register_struct(st, cls.dtype)
    if virtual.is_polymorphic(cls):
        virtual.register(cls)
        virtual.class_ops(cls)
    names = [n for n, _ in fields if n != virtual.TAG_FIELD]
    defaults = {n: d for n in (*names, virtual.TAG_FIELD)
                if (d := field_default(cls, n)) is not None}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise invalid(f"{cls.__name__} takes {len(names)} fields")
        values = dict(defaults)
        values.update(zip(names, args, strict=False))
        values.update(kwargs)
        for n in names:
            if n not in values:
                raise invalid(f"{cls.__name__}: field {n} is not set")
        for n in (*names, virtual.TAG_FIELD):
            if n in values:
                setattr(self, n, values[n])

    def __repr__(self: Any) -> str:
        return f"{cls.__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    if "__init__" not in cls.__dict__:
        cls.__init__ = __init__
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = __repr__
    return cls


def field_default(cls: type, name: str) -> Any:
    """A field's default: the class attribute of that name on the struct or its struct
    bases (None when there is none)."""
    for k in cls.__mro__:
        if hasattr(k, "__vksycl_struct__") and name in k.__dict__:
            return k.__dict__[name]
    return None


# -- storage ---------------------------------------------------------------------------------

_STORAGE: dict[tuple[type, ...], type] = {}


class _StorageType(type):
    """The type of `storage_for` classes: they pickle as the call that makes them, so a
    kernel taking a pointer to storage can go to the disk cache."""


def storage_for(*classes: type) -> type:
    """`syclexp.storage_for(A, B, ...)`: an element type sized and aligned for the largest
    of the classes, for USM memory that holds objects of any of them."""
    if not classes:
        raise invalid("storage_for needs at least one class")
    for c in classes:
        if not isinstance(c, type) or not hasattr(c, "__vksycl_struct__"):
            raise invalid(f"storage_for: {c!r} is not a @sycl.struct class")
    hit = _STORAGE.get(classes)
    if hit is not None:
        return hit
    sizes = [layout(c.__vksycl_struct__) for c in classes]
    align = max(max(a for _, a in sizes), 4)
    size = -(-max(s for s, _ in sizes) // align) * align
    word = "uint64" if align == 8 else "uint32"
    key = zlib.crc32(repr([(c.__module__, c.__qualname__) for c in classes]).encode())
    names = ", ".join(c.__name__ for c in classes)
    cls = _StorageType(f"storage_for({names})", (), {
        "__annotations__": {f"_s{key:08x}_{i}": getattr(np, word) for i in
                            range(size // align)},
        virtual.STORAGE: classes, "__module__": __name__,
        "__doc__": f"Storage for one object of any of {names}.",
    })
    _STORAGE[classes] = struct(cls)
    return cls


copyreg.pickle(_StorageType, lambda c: (storage_for, c.__dict__[virtual.STORAGE]))
