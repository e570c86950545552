"""How error messages name frontend values and compile-time objects."""

from __future__ import annotations

from typing import Any

from .. import accessors, ir
from ..matrix_code import MatrixV
from ..reduction import ReducerV
from ..values import AccessorV, AggV, ItemV, ObjV, PtrV, PyV, RangeV, TupV


def describe(obj: Any) -> str:
    """How an error message names a compile-time object."""
    if isinstance(obj, type):
        return f"type {obj.__name__}"
    if callable(obj):
        return f"{getattr(obj, '__name__', obj)!s}"
    return f"{type(obj).__name__} {obj!r}"


def kind_of(v: Any) -> str:
    """How an error message names a frontend value."""
    if isinstance(v, ir.Value):
        name = repr(v.ty)
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name} value"
    if isinstance(v, PtrV):
        return f"a pointer to {v.elem!r}"
    if isinstance(v, AggV):
        return f"a {v.sty.name}"
    if isinstance(v, ObjV):
        return f"a {v.cls.__name__} object in memory"
    if isinstance(v, TupV):
        return "a tuple"
    if isinstance(v, ItemV):
        return f"a {v.kind}"
    if isinstance(v, AccessorV):
        return accessors.describe(v)
    if isinstance(v, RangeV):
        return f"an accessor's {len(v.items)}-dimensional {v.kind}"
    if isinstance(v, ReducerV):
        return "a reducer" if v.element is None else "a reducer's element"
    if isinstance(v, MatrixV):
        return v.describe()
    if isinstance(v, PyV):
        return describe(v.obj)
    if v is None:
        return "nothing"
    return type(v).__name__

