"""The keys prepared kernels are cached under: the signature of each value a kernel
captures or reads.

A kernel compiles for the types of what it captures, not their values (those become
arguments), so a value's signature is its type: a pointer by the element type it points
to, an accessor by its element type, dimensions and access mode (a new accessor per
command group runs the same kernel), a work_group_memory or local accessor by its shape,
a struct by its fields' signatures, a closure the kernel calls by its code, defaults and
captures. Numbers among the module globals the code reads are compiled in, so they are
keyed by value. Any other hashable object is keyed by itself (its hash and equality), an
unhashable one by identity.
"""

from __future__ import annotations

import types as pytypes
from typing import Any

import numpy as np

from ..compiler import device as dev
from ..compiler.captures import frozen
from ..compiler.host_bodies import host_names
from ..compiler.kernel import _names
from ..types import dtype_key


def signature(v: Any, depth: int = 0) -> Any:
    """What a captured value contributes to the key of the kernel that captures it."""
    t = type(v)
    if t in (int, float, bool):
        return t
    if hasattr(v, "allocation") and hasattr(v, "byte_offset"):
        return ("p", dtype_key(v.dtype))
    accessor = getattr(t, "__vksycl_accessor__", None)
    if accessor == "global":
        return ("a", dtype_key(v.dtype), v.dims, v.access_mode)
    if accessor == "local":
        return ("l", dtype_key(v.dtype), tuple(v.shape))
    if isinstance(v, np.generic):
        return v.dtype
    if isinstance(v, dev.work_group_memory):
        return ("w", v.dtype, v.shape)
    st = getattr(t, "__vksycl_struct__", None)
    if st is not None:
        return ("s", t, tuple(signature(getattr(v, n), depth) for n, ft in st.fields
                              if not hasattr(ft, "bits")))
    if t is pytypes.FunctionType and v.__closure__ and depth < 4:
        return _closure_signature(v, depth + 1)
    if t is tuple:  # compiled in: by its values as kernels tell them apart
        k = value_key(frozen(v))
        try:
            hash(k)
        except TypeError:  # an array among them: no value to key by
            return ("id", id(v))
        return ("o", k)
    try:
        hash(v)
        return ("o", v)
    except TypeError:
        return ("id", id(v))


def value_key(v: Any) -> Any:
    """A value compiled into a kernel as the code tells values apart: numbers by type and
    exact value (`repr`), so that 0.0 and -0.0, 3 and 3.0, or two NaNs, which `==` and
    hashing mix up or never match, key the code each compiles to; tuples by their items."""
    if type(v) is tuple:
        return tuple(map(value_key, v))
    if isinstance(v, bool | int | float | complex | np.generic):
        return (type(v), repr(v))
    return v


def _closure_signature(f: Any, depth: int) -> Any:
    """A closure the kernel reaches by a path is keyed as the kernel is: by its code, its
    defaults (compiled in) and the types of what it captures (kernel arguments), not by
    identity, since the function that defines it makes a new one at each call."""
    kwdefaults = tuple(sorted((f.__kwdefaults__ or {}).items()))
    try:
        hash((f.__defaults__, kwdefaults))
    except TypeError:
        return ("o", f)
    cells = []
    for c in f.__closure__:
        try:
            cells.append(signature(c.cell_contents, depth))
        except ValueError:  # not bound yet
            cells.append(None)
    return ("f", f.__code__, f.__defaults__, kwdefaults, tuple(cells))


_GLOBAL_NAMES: dict[Any, tuple[str, ...]] = {}


def global_names(pyfn: Any) -> tuple[str, ...]:
    """The module globals the compiled code may depend on (modules and host-only names
    aside)."""
    code = pyfn.__code__
    names = _GLOBAL_NAMES.get(code)
    if names is None:
        g = pyfn.__globals__
        names = tuple(sorted(n for n in _names(code) - host_names(pyfn) if n in g and
                             not isinstance(g[n], pytypes.ModuleType)))
        _GLOBAL_NAMES[code] = names
    return names


def global_signature(v: Any) -> Any:
    """Numbers by value (they are compiled in), pointers and structs by type, functions by
    identity."""
    if isinstance(v, int | float | bool | np.generic):
        return value_key(v)
    return signature(v)
