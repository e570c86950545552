"""Capture paths: how a value a kernel captured is found again at each launch.

The compiler records where each captured value came from (a closure cell, a module global,
an explicit argument, then attributes) and the launch reads the same path afresh, so a
kernel sees the values its captures hold when it runs. The compiler and the launch glue
share these rules: what a path reads, how it is named to the user, and which values are
compiled in rather than passed.
"""

from __future__ import annotations

import enum
import sys
import types as pytypes
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from .._native import (
        ROOT_CELL,
        ROOT_FNCELL,
        ROOT_GLOBAL,
        ROOT_MODULE,
        ROOT_PARAM,
        ROOT_SELF,
        CapturePath,
    )
except ImportError:  # a source checkout where vksycl's C was not built
    CapturePath = None


def is_usm_ptr(obj: Any) -> bool:
    return hasattr(obj, "allocation") and hasattr(obj, "byte_offset") and hasattr(obj, "dtype")


def frozen(v: Any) -> Any:
    """A captured list as the tuple it holds now: lists are compiled in by value, and a
    kernel is compiled again when the value changes."""
    if isinstance(v, list):
        return tuple(frozen(x) for x in v)
    if isinstance(v, tuple) and any(isinstance(x, list | tuple) for x in v):
        return tuple(frozen(x) for x in v)
    return v


def path_getter(path: tuple, pyfn: Any) -> Callable[[Any, tuple], Any]:
    """How to read a capture path from (kernel function, arguments): built once, called
    at every launch. A path starts at a closure cell of the kernel, a module global, an
    explicit argument, a closure cell of a device function (`("fncell", path of the
    function, name)`), or the object a kernel method is bound to (`("self",)`), then
    reads attributes. In C (`native/capture_path.c`) where vksycl's native module is
    built: a launch reads each path with no interpreter frame."""
    fields = path[ROOT_LENGTH.get(path[0], 3):]
    if CapturePath is None:
        return python_path_getter(path, pyfn, fields)
    return native_path_getter(path, pyfn, fields)


def native_path_getter(path: tuple, pyfn: Any, fields: tuple) -> Callable[[Any, tuple], Any]:
    """`path_getter`'s getter in C."""
    assert CapturePath is not None
    kind = path[0]
    if kind == "self":
        return CapturePath(ROOT_SELF, 0, None, fields, None)
    if kind == "cell":
        return CapturePath(ROOT_CELL, pyfn.__code__.co_freevars.index(path[1]), None,
                           fields, None)
    if kind == "fncell":
        return CapturePath(ROOT_FNCELL, 0, path[2], fields, path_getter(path[1], pyfn))
    if kind == "param":
        return CapturePath(ROOT_PARAM, path[1], None, fields, None)
    mod, name = path[1], path[2]
    if mod == pyfn.__module__:
        return CapturePath(ROOT_GLOBAL, 0, name, fields, None)
    return CapturePath(ROOT_MODULE, 0, (mod, name), fields, None)


def python_path_getter(path: tuple, pyfn: Any, fields: tuple) -> Callable[[Any, tuple], Any]:
    """`path_getter`'s getter where vksycl's native module was not built."""
    base: Callable[[Any, tuple], Any]
    if path[0] == "self":
        base = lambda fn, args: fn.__self__
    elif path[0] == "cell":
        i = pyfn.__code__.co_freevars.index(path[1])
        base = lambda fn, args: fn.__closure__[i].cell_contents
    elif path[0] == "fncell":
        outer, name = path_getter(path[1], pyfn), path[2]

        def base(fn: Any, args: tuple) -> Any:
            f = outer(fn, args)
            return f.__closure__[f.__code__.co_freevars.index(name)].cell_contents
    elif path[0] == "param":
        i = path[1]
        base = lambda fn, args: args[i]
    else:
        mod, name = path[1], path[2]
        if mod == pyfn.__module__:
            base = lambda fn, args: fn.__globals__[name]
        else:
            base = lambda fn, args: sys.modules[mod].__dict__[name]
    if not fields:
        return base

    def get(fn: Any, args: tuple) -> Any:
        v = base(fn, args)
        for f in fields:
            v = getattr(v, f)
        return v

    return get


def captured_value(pyfn: Any, path: tuple) -> Any:
    """The value a capture path holds now, lists frozen."""
    return frozen(path_getter(path, pyfn)(pyfn, ()))


def path_name(path: tuple) -> str:
    """How the user spells a capture path: `cfg.scale`, `self.x`."""
    return ".".join(str(p) for p in path[0 if path[0] == "self" else
                                         1 if path[0] == "cell" else 2:])


# how many entries of a capture path name its root, by the kind of root (3 otherwise:
# a global's module and name, a device function's path and cell name)
ROOT_LENGTH = {"self": 1, "cell": 2, "param": 2}


def runtime_number(v: Any) -> bool:
    """A captured number, passed as a kernel argument read at each launch (its type, not
    its value, keys the kernel); an enum member, an IntEnum such as `memory_scope` too, is
    compiled in instead."""
    return isinstance(v, bool | int | float | np.generic) and not isinstance(v, enum.Enum)


def is_data(v: Any) -> bool:
    """Numbers, None and tuples of them: values a kernel can be compiled for."""
    if isinstance(v, tuple):
        return all(is_data(x) for x in v)
    return v is None or isinstance(v, bool | int | float | complex | np.generic)


# packages whose modules and classes hold constants: their attributes are compiled in
_LIBRARIES = frozenset({"vksycl", "spirv_gen", "numpy", *sys.stdlib_module_names})


def namespace(obj: Any) -> bool:
    """A module or class of the user's (not vksycl's, numpy's or the standard library's,
    nor a struct or enum class): a kernel reading a number from it is compiled for the
    value it holds at each launch, which is read through the path afresh, so a rebound
    `Config.SCALE` or `consts.K` is seen."""
    if isinstance(obj, pytypes.ModuleType):
        home = obj.__name__
    elif isinstance(obj, type) and not hasattr(obj, "__vksycl_struct__") and \
            not issubclass(obj, enum.Enum):
        home = obj.__module__
    else:
        return False
    return home.split(".")[0] not in _LIBRARIES


def plain_object(obj: Any) -> bool:
    """A user's own mutable object (not a module, class, function, enum or vksycl or
    numpy value): its attributes are read at each launch, as captured locals are."""
    t = type(obj)
    return hasattr(obj, "__dict__") and not callable(obj) and not isinstance(
        obj, type | pytypes.ModuleType | enum.Enum) and \
        t.__module__.split(".")[0] not in ("vksycl", "numpy", "builtins")
