"""Kernel properties (sycl_ext_oneapi_kernel_properties) and the launch configuration of
sycl_ext_oneapi_enqueue_functions.

A kernel property decorates a free function kernel, above or below its
`@nd_range_kernel` / `@single_task_kernel` decorator, as C++ applies
`SYCL_EXT_ONEAPI_FUNCTION_PROPERTY` before or after the kernel property.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import info
from ..compiler.free_function import add_property
from ..exceptions import errc, exception, invalid
from ..properties import Property
from ..runtime.aspects import aspect


def _sizes(values: tuple[Any, ...], what: str) -> tuple[int, ...]:
    if len(values) == 1 and isinstance(values[0], Iterable):
        values = tuple(values[0])
    if not 1 <= len(values) <= 3 or any(int(v) <= 0 for v in values):
        raise invalid(f"{what} takes 1 to 3 positive sizes, got {values}")
    return tuple(int(v) for v in values)


class _KernelProperty(Property):
    """A property that is also a decorator of free function kernels."""

    __slots__ = ()

    def __call__(self, fn: Any) -> Any:
        add_property(fn, self)
        return fn


class work_group_size(_KernelProperty):
    """`work_group_size(d0[, d1, d2])`: the kernel must be launched with this local range
    (SYCL order); another local range raises `errc.nd_range`."""

    __slots__ = ("sizes",)

    def __init__(self, *sizes: Any) -> None:
        self.sizes = _sizes(sizes, "work_group_size")

    def attribute(self) -> str:
        return "reqd_work_group_size(" + ",".join(map(str, self.sizes)) + ")"


class work_group_size_hint(_KernelProperty):
    """`work_group_size_hint(d0[, d1, d2])`: the local range the kernel is tuned for."""

    __slots__ = ("sizes",)

    def __init__(self, *sizes: Any) -> None:
        self.sizes = _sizes(sizes, "work_group_size_hint")

    def attribute(self) -> str:
        return "work_group_size_hint(" + ",".join(map(str, self.sizes)) + ")"


class sub_group_size(_KernelProperty):
    """`sub_group_size(n)`: the kernel needs sub-groups of n work-items; a device without
    that sub-group size cannot run it (`errc.kernel_not_supported`)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        if int(size) <= 0:
            raise invalid(f"sub_group_size must be positive, got {size}")
        self.size = int(size)

    def attribute(self) -> str:
        return f"intel_reqd_sub_group_size({self.size})"


class device_has(_KernelProperty):
    """`device_has(aspect, ...)`: the optional features the kernel may use. It fails to
    build (`errc.build`) if its code, or a method of a set of virtual functions it
    declares, uses another; a device lacking a listed one cannot run it
    (`errc.kernel_not_supported`)."""

    __slots__ = ("aspects",)

    def __init__(self, *aspects: Any) -> None:
        for a in aspects:
            if not isinstance(a, aspect):
                raise invalid(f"device_has takes sycl.aspect values, got {a!r}")
        self.aspects = tuple(dict.fromkeys(aspects))

    def names(self) -> tuple[str, ...]:
        return tuple(a.value for a in self.aspects)


class fp_contract(_KernelProperty):
    """`fp_contract("fast")` (the default) lets the driver fuse a multiply and an add
    into one operation with one rounding, as DPC++ does by default (its `-fp-model=fast`
    implies `-ffp-contract=fast`); `fp_contract("off")` rounds every operation, as
    `#pragma clang fp contract(off)` asks (each float operation is decorated
    `NoContraction`)."""

    __slots__ = ("mode",)

    def __init__(self, mode: str) -> None:
        if mode not in ("fast", "off"):
            raise invalid(f"fp_contract takes \"fast\" or \"off\", got {mode!r}")
        self.mode = mode


class fast_math(_KernelProperty):
    """`fast_math`: the kernel's float operations may assume no NaNs, infinities or
    signed zeros, as `-ffast-math` lets them. Without it (the default) the device is
    asked to keep them where it can, so results compare with Python's and numpy's.
    (SPIR-V's per-instruction `FPFastMathMode` needs the Kernel capability, or
    SPV_KHR_float_controls2, which Vulkan shaders lack: fast math is the module's not
    asking for `SignedZeroInfNanPreserve`.)"""

    __slots__ = ()


def float_controls(properties: Any, own: Any = ()) -> tuple[bool, bool]:
    """(contraction allowed, fast math) from a launch's and a kernel's own properties."""
    contract, fast = True, False
    for p in (*(properties or ()), *own):
        if isinstance(p, fp_contract):
            contract = p.mode == "fast"
        elif isinstance(p, fast_math):
            fast = True
    return contract, fast


def properties(*props: Any) -> list[Any]:
    """`syclexp.properties(p1, p2, ...)`: a property list (a plain list)."""
    return list(props)


class launch_config:
    """`launch_config(nd_range, properties)`: an nd_range and launch properties such as
    `work_group_scratch_size`."""

    __slots__ = ("properties", "range")

    def __init__(self, range: Any, properties: Iterable[Any] = ()) -> None:
        self.range = range
        self.properties = list(properties)

    def get_range(self) -> Any:
        return self.range

    def get_properties(self) -> list[Any]:
        return self.properties


def launch_properties(properties: Any, launch: Any, device: Any) -> list[Any]:
    """The property list of a kernel launch, checked as for free function kernels: a
    `work_group_size` must be the nd_range's local range (`errc.nd_range`), and a
    `sub_group_size` one the device has (`errc.kernel_not_supported`)."""
    if isinstance(properties, Property):
        properties = [properties]
    if isinstance(properties, str | bytes) or not isinstance(properties, Iterable):
        raise exception(errc.invalid, "properties takes a list of kernel properties "
                        f"(syclexp.properties(...)), got {type(properties).__name__}")
    props = list(properties)
    for p in props:
        if p is None or isinstance(p, str | bytes | int | float):
            raise exception(errc.invalid, f"{p!r} is not a kernel property")
        if isinstance(p, work_group_size) and hasattr(launch, "get_local_range"):
            local = tuple(launch.get_local_range())
            if local != p.sizes:
                raise exception(errc.nd_range, f"the kernel has the property "
                                f"work_group_size{p.sizes}, launched with local range {local}")
        if isinstance(p, sub_group_size):
            sizes = device.get_info(info.device.sub_group_sizes)
            if p.size not in sizes:
                raise exception(errc.kernel_not_supported, f"the kernel needs sub-groups of "
                                f"{p.size}; {device.get_info(info.device.name)} has {sizes}")
    return props


__all__ = ["device_has", "fast_math", "fp_contract", "launch_config", "properties",
           "sub_group_size", "work_group_size", "work_group_size_hint"]
