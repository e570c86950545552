"""The device-side API as host objects: what kernels call, and what the frontend
recognises by identity (atomics, barriers, group algorithms, local memory, math).

Calling device-only functions on the host raises `errc.feature_not_supported`; the math
functions also work on the host through numpy so device functions can be tested there.
"""

from __future__ import annotations

import enum
import sys
from typing import Any

import numpy as np

from ..exceptions import errc, exception, invalid


def device_only(name: str, doc: str = "") -> Any:
    """A function the compiler lowers in kernels; called on the host it raises
    `errc.feature_not_supported`. `doc` is its docstring."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        raise exception(errc.feature_not_supported, f"{name} can only be called in device code")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = (doc or f"`{name}`, in device code only.") + (
        "\n\nDevice code only: called on the host it raises `errc.feature_not_supported`.")
    # the module that names it, so that documentation tools find it there
    fn.__module__ = sys._getframe(1).f_globals.get("__name__", __name__)
    fn.__vksycl_device__ = name  # type: ignore[attr-defined]
    return fn


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

class BinaryOp:
    """SYCL's function objects (sycl::plus<> ...): group algorithms in kernels read `op`;
    on the host they compute."""

    op = ""

    def __call__(self, a: Any, b: Any) -> Any:
        return _HOST_BINOPS[self.op](a, b)


class plus(BinaryOp):
    op = "plus"


class multiplies(BinaryOp):
    op = "multiplies"


class minimum(BinaryOp):
    op = "minimum"


class maximum(BinaryOp):
    op = "maximum"


class bit_and(BinaryOp):
    op = "bit_and"


class bit_or(BinaryOp):
    op = "bit_or"


class bit_xor(BinaryOp):
    op = "bit_xor"


class logical_and(BinaryOp):
    op = "logical_and"


class logical_or(BinaryOp):
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
group_barrier = device_only(
    "group_barrier",
    "`group_barrier(g[, fence_scope])`: waits until every work-item of the group `g` (a "
    "work-group or a sub-group) reaches it, and makes their memory operations, global and "
    "local, visible to each other (at `fence_scope`, a `sycl.memory_scope`, where it is "
    "wider than the group's). `it.barrier(sycl.access.fence_space.local_space)` orders "
    "local memory alone.")
reduce_over_group = device_only(
    "reduce_over_group",
    "`reduce_over_group(g, x, op)` or `(g, x, init, op)`: combines `x` of every work-item"
    " of `g` with the function object `op` (`sycl.plus()`, ...); every work-item gets the"
    " result.")
inclusive_scan_over_group = device_only(
    "inclusive_scan_over_group",
    "`inclusive_scan_over_group(g, x, op[, init])`: the combination of `x` over the work-"
    "items of `g` up to and including this one.")
exclusive_scan_over_group = device_only(
    "exclusive_scan_over_group",
    "`exclusive_scan_over_group(g, x, op[, init])`: the combination of `x` over the work-"
    "items of `g` before this one (the identity, or `init`, for the first).")
group_broadcast = device_only(
    "group_broadcast",
    "`group_broadcast(g, x[, local_id])`: the value of `x` of the work-item at `local_id`"
    " (default 0) of `g`, to all of them.")
select_from_group = device_only(
    "select_from_group",
    "`select_from_group(sg, x, id)`: the value of `x` of the work-item `id` of the sub-"
    "group.")
shift_group_left = device_only(
    "shift_group_left",
    "`shift_group_left(sg, x, delta=1)`: the value of `x` of the work-item `delta` ids "
    "higher in the sub-group.")
shift_group_right = device_only(
    "shift_group_right",
    "`shift_group_right(sg, x, delta=1)`: the value of `x` of the work-item `delta` ids "
    "lower in the sub-group.")
permute_group_by_xor = device_only(
    "permute_group_by_xor",
    "`permute_group_by_xor(sg, x, mask)`: the value of `x` of the work-item whose id is "
    "this one's XOR `mask`.")
any_of_group = device_only(
    "any_of_group",
    "`any_of_group(g, pred)`: whether `pred` holds for any work-item of `g`.")
all_of_group = device_only(
    "all_of_group",
    "`all_of_group(g, pred)`: whether `pred` holds for every work-item of `g`.")
none_of_group = device_only(
    "none_of_group",
    "`none_of_group(g, pred)`: whether `pred` holds for no work-item of `g`.")


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


get_work_group_scratch_memory = device_only(
    "get_work_group_scratch_memory",
    "`get_work_group_scratch_memory()`: a pointer to the work-group memory a launch asked"
    " for with the `work_group_scratch_size` launch property.")
private_array = device_only(
    "private_array",
    "`private_array(dtype, n)`: an array of `n` elements private to the work-item (in "
    "registers where the driver can keep it there).")


def unroll(iterable: Any, factor: int | None = None) -> Any:
    """`for i in sycl.unroll(range(n))`: unroll this loop; `sycl.unroll(range(n), 4)`:
    unroll it by 4; a factor of 1: do not unroll it.

    DPC++ spells this `#pragma unroll` / `#pragma unroll(4)` before the loop (OpenCL C
    `__attribute__((opencl_unroll_hint(4)))`); neither SYCL 2020 nor a oneAPI extension
    defines a library spelling, and Python has no pragmas, so the request wraps the
    loop's range. On the host it is the range itself: the loop runs as written."""
    return iterable


# -- free function queries ----------------------------------------------------------------

class this_work_item:
    """`this_work_item.get_nd_item(dims)` and friends. Device code only."""

    get_nd_item = staticmethod(device_only("get_nd_item"))
    get_work_group = staticmethod(device_only("get_work_group"))
    get_sub_group = staticmethod(device_only("get_sub_group"))


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
