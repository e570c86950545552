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


class _PythonCapturePath:
    """What `vksycl._native.CapturePath` (`native/capture_path.c`) does, where vksycl's
    native module was not built: `CapturePath(root, index, key, fields, outer)(function,
    arguments)` reads one capture path. `root` names where it starts: "self", a closure
    "cell" at `index`, a device function's cell named `key` ("fncell", the function read
    by path `outer`), a "param" at `index`, a "global" named `key` of the kernel's own
    module, or one of another "module" (`key`: (module, name)); then the attributes
    `fields`."""

    __slots__ = ("fields", "index", "key", "outer", "root")

    def __init__(self, root: str, index: int, key: Any, fields: tuple, outer: Any) -> None:
        if root not in _ROOTS or index < 0:
            raise ValueError(f"CapturePath: no root {root} at {index}")
        if not all(isinstance(f, str) for f in fields):
            raise TypeError("CapturePath: fields are attribute names")
        if (root == "module" and not (type(key) is tuple and len(key) == 2)) or \
                (root == "fncell" and not callable(outer)):
            raise TypeError("CapturePath: a key or outer path of another kind")
        self.root, self.index, self.key, self.fields, self.outer = root, index, key, fields, \
            outer

    def __call__(self, fn: Any, args: Any) -> Any:
        root = self.root
        if root == "self":
            v = fn.__self__
        elif root == "cell":
            v = fn.__closure__[self.index].cell_contents
        elif root == "fncell":
            f = self.outer(fn, args)
            v = f.__closure__[f.__code__.co_freevars.index(self.key)].cell_contents
        elif root == "param":
            v = args[self.index]
        elif root == "global":
            v = fn.__globals__[self.key]
        else:
            v = sys.modules[self.key[0]].__dict__[self.key[1]]
        for f in self.fields:
            v = getattr(v, f)
        return v


_ROOTS = ("self", "cell", "fncell", "param", "global", "module")
CapturePath: Any
try:
    from .._native import CapturePath
except ImportError:  # a source checkout where vksycl's C was not built
    CapturePath = _PythonCapturePath


def path_getter(path: tuple, pyfn: Any) -> Callable[[Any, tuple], Any]:
    """How to read a capture path from (kernel function, arguments): built once, called
    at every launch. A path starts at a closure cell of the kernel, a module global, an
    explicit argument, a closure cell of a device function (`("fncell", path of the
    function, name)`), or the object a kernel method is bound to (`("self",)`), then
    reads attributes. A `CapturePath` reads it: in C, no interpreter frame per launch."""
    reader = CapturePath
    kind = path[0]
    fields = path[ROOT_LENGTH.get(kind, 3):]
    if kind == "self":
        return reader("self", 0, None, fields, None)
    if kind == "cell":
        return reader("cell", pyfn.__code__.co_freevars.index(path[1]), None, fields, None)
    if kind == "fncell":
        return reader("fncell", 0, path[2], fields, path_getter(path[1], pyfn))
    if kind == "param":
        return reader("param", path[1], None, fields, None)
    mod, name = path[1], path[2]
    if mod == pyfn.__module__:
        return reader("global", 0, name, fields, None)
    return reader("module", 0, (mod, name), fields, None)


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
