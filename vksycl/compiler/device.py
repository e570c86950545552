"""The device-side API as host objects: what kernels call, and what the frontend
recognises by identity (structs, atomics, barriers, group algorithms, local memory).

Calling device-only functions on the host raises `errc.feature_not_supported`; the math
functions also work on the host through numpy so device functions can be tested there.
"""

from __future__ import annotations

import enum
import inspect
from typing import Any

import numpy as np

from ..exceptions import errc, exception, invalid
from ..types import dtype_key, pointee
from .typesys import PtrType, Struct, Type, scalar_of


def _device_only(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise exception(errc.feature_not_supported, f"{name} can only be called in device code")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__vksycl_device__ = name  # type: ignore[attr-defined]
    return fn


# -- structs ------------------------------------------------------------------------------

def type_of_annotation(t: Any) -> Type | None:
    """The device type an annotation names (scalar, `sycl.ptr[T]`, struct class)."""
    s = scalar_of(t) if isinstance(t, type | np.dtype) else None
    if s is not None:
        return s
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
    s = scalar_of(dtype)
    if s is not None:
        return s
    st = _STRUCTS_BY_DTYPE.get(dtype_key(dtype))
    if st is None:
        raise invalid(f"no @sycl.struct class has the element type {dtype}")
    return st


_STRUCTS_BY_DTYPE: dict[Any, Struct] = {}  # by dtype_key


def struct(cls: type) -> type:
    """Make a class a device struct: its annotated fields, in order, are the members.

    The class gets `dtype` (the numpy structured dtype of its memory layout, for USM
    arrays of it; pointer fields hold device addresses) and keyword construction on the
    host. A struct may derive from one struct (its fields come first); a class with an
    `indirectly_callable` method in its hierarchy is polymorphic: a hidden type tag
    precedes the fields, and `at` / `construct_at` reach objects in memory."""
    from . import virtual
    from .typesys import U32, struct_dtype

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
    cls.dtype = struct_dtype(st)
    _STRUCTS_BY_DTYPE[dtype_key(cls.dtype)] = st
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


# -- atomics ------------------------------------------------------------------------------

class memory_order(enum.IntEnum):
    relaxed = 0
    acquire = 2
    release = 4
    acq_rel = 8
    seq_cst = 16


class memory_scope(enum.IntEnum):
    """Values are SPIR-V Scope numbers."""

    system = 0
    device = 1
    work_group = 2
    sub_group = 3
    work_item = 4


class atomic_ref:
    """`sycl.atomic_ref(ptr, order=relaxed, scope=device)`: atomic operations on the
    element a USM or local pointer points at. Device code only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise exception(errc.feature_not_supported, "atomic_ref can only be used in device code")


# -- group function objects ---------------------------------------------------------------

class _BinaryOp:
    """SYCL's function objects (sycl::plus<> ...): group algorithms in kernels read `op`;
    on the host they compute."""

    op = ""

    def __call__(self, a: Any, b: Any) -> Any:
        return _HOST_BINOPS[self.op](a, b)


class plus(_BinaryOp):
    op = "plus"


class multiplies(_BinaryOp):
    op = "multiplies"


class minimum(_BinaryOp):
    op = "minimum"


class maximum(_BinaryOp):
    op = "maximum"


class bit_and(_BinaryOp):
    op = "bit_and"


class bit_or(_BinaryOp):
    op = "bit_or"


class bit_xor(_BinaryOp):
    op = "bit_xor"


class logical_and(_BinaryOp):
    op = "logical_and"


class logical_or(_BinaryOp):
    op = "logical_or"


_HOST_BINOPS = {
    "plus": lambda a, b: a + b, "multiplies": lambda a, b: a * b,
    "minimum": min, "maximum": max, "bit_and": lambda a, b: a & b,
    "bit_or": lambda a, b: a | b, "bit_xor": lambda a, b: a ^ b,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
}

GROUP_FUNCTIONS = (
    "group_barrier", "reduce_over_group", "inclusive_scan_over_group",
    "exclusive_scan_over_group", "group_broadcast", "select_from_group", "shift_group_left",
    "shift_group_right", "permute_group_by_xor", "any_of_group", "all_of_group",
    "none_of_group",
)
group_barrier = _device_only("group_barrier")
reduce_over_group = _device_only("reduce_over_group")
inclusive_scan_over_group = _device_only("inclusive_scan_over_group")
exclusive_scan_over_group = _device_only("exclusive_scan_over_group")
group_broadcast = _device_only("group_broadcast")
select_from_group = _device_only("select_from_group")
shift_group_left = _device_only("shift_group_left")
shift_group_right = _device_only("shift_group_right")
permute_group_by_xor = _device_only("permute_group_by_xor")
any_of_group = _device_only("any_of_group")
all_of_group = _device_only("all_of_group")
none_of_group = _device_only("none_of_group")


# -- memory in kernels ------------------------------------------------------------------

class work_group_memory:
    """`syclexp.work_group_memory(dtype, shape=())`: memory shared by a work-group.

    Created on the host and captured by a kernel, or created inside the kernel body; in
    the kernel, `mem[i]` reads and writes elements (`mem[()]`-free scalars use `[0]`)."""

    def __init__(self, dtype: Any, shape: Any = (), handler: Any = None) -> None:
        if isinstance(shape, int):
            shape = (shape,)
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in shape)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        if self.size <= 0:
            raise invalid("work_group_memory needs a positive size")


get_work_group_scratch_memory = _device_only("get_work_group_scratch_memory")
private_array = _device_only("private_array")


class work_group_scratch_size:
    """Kernel property: bytes of dynamic work-group memory for
    `get_work_group_scratch_memory`."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)


# -- free function queries ----------------------------------------------------------------

class this_work_item:
    """`this_work_item.get_nd_item(dims)` and friends. Device code only."""

    get_nd_item = staticmethod(_device_only("get_nd_item"))
    get_work_group = staticmethod(_device_only("get_work_group"))
    get_sub_group = staticmethod(_device_only("get_sub_group"))


# -- math ---------------------------------------------------------------------------------

def _host_math(name: str, impl: Any) -> Any:
    def fn(*args: Any) -> Any:
        return impl(*args)

    fn.__name__ = fn.__qualname__ = name
    fn.__vksycl_math__ = name  # type: ignore[attr-defined]
    return fn


def _fract(x: Any) -> Any:
    return x - np.floor(x)


def _sign(x: Any) -> Any:
    return np.sign(x)


_MATH_HOST = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "fabs": np.fabs, "abs": np.abs,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "pow": np.power,
    "powr": np.power, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "rint": np.rint,
    "fmod": np.fmod, "fmin": np.fmin, "fmax": np.fmax, "min": np.minimum,
    "max": np.maximum, "clamp": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "mix": lambda a, b, t: a + (b - a) * t, "step": lambda e, x: np.where(x < e, 0.0, 1.0),
    "fma": lambda a, b, c: a * b + c, "mad": lambda a, b, c: a * b + c,
    "copysign": np.copysign, "hypot": np.hypot, "fract": _fract, "sign": _sign,
    "degrees": np.degrees, "radians": np.radians, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "cbrt": np.cbrt, "fdim": lambda a, b: np.maximum(a - b, 0),
    "popcount": lambda x: bin(int(x) & 0xFFFFFFFFFFFFFFFF).count("1"),
}
MATH = {name: _host_math(name, fn) for name, fn in _MATH_HOST.items()}


def _native(name: str) -> Any:
    return _host_math(name, _MATH_HOST[name])


class native:
    """Fast variants (same results here)."""

    sqrt = staticmethod(_native("sqrt"))
    rsqrt = staticmethod(_native("rsqrt"))
    sin = staticmethod(_native("sin"))
    cos = staticmethod(_native("cos"))
    tan = staticmethod(_native("tan"))
    exp = staticmethod(_native("exp"))
    exp2 = staticmethod(_native("exp2"))
    log = staticmethod(_native("log"))
    log2 = staticmethod(_native("log2"))
    powr = staticmethod(_native("powr"))
