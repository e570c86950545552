"""What kernel bundles hold: the free function kernels of the application as bundle
members (compiled for a representative launch, checked for each device, launched with
the arguments set by index), and the `kernel_id` naming each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .. import info
from ..compiler.free_function import FreeFunctionKernel, registered_kernels
from ..exceptions import errc, exception, invalid
from ..ranges import nd_range
from .device_checks import unsupported
from .free_function import free_function_kernel, launch_command, plan
from .launch import compiled
from .properties import sub_group_size, work_group_size, work_group_size_hint
from .reflect import reflect
from .variants import RANGE_LOCAL


class kernel_id:
    """Identifies one kernel of the application: one per free function kernel (or template
    instantiation), the same object every time it is asked for."""

    __slots__ = ("_impl",)

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def get_name(self) -> str:
        return self._impl.name

    def __repr__(self) -> str:
        return f"kernel_id({self._impl.name})"


class FreeKernel:
    """A free function kernel as a member of bundles."""

    def __init__(self, k: FreeFunctionKernel) -> None:
        self.kernel = k
        self.name = k.name
        self.id = kernel_id(self)
        self._compat: dict[int, exception | None] = {}
        self._compiled: Any = None
        # the last launch object `command` accepted (launch objects are immutable)
        self._accepted: Any = False

    def _local(self) -> tuple[int, ...]:
        for p in self.kernel.properties:
            if isinstance(p, work_group_size | work_group_size_hint):
                return p.sizes
        return (1,) if self.kernel.kind == "single_task" else RANGE_LOCAL[self.kernel.dims]

    def compiled(self, device: Any) -> Any:
        """The kernel compiled for a representative launch (reflection, aspects)."""
        if self._compiled is None:
            k = self.kernel
            local = self._local()
            launch = None if k.kind == "single_task" else nd_range(local, local)
            self._compiled = compiled(device, k, launch)
        return self._compiled

    def why_incompatible(self, device: Any) -> exception | None:
        key = id(device.vulkan)
        if key not in self._compat:
            why = unsupported(device, self.compiled(device))
            if why is None:
                sgs = next((p for p in self.kernel.properties if isinstance(p, sub_group_size)),
                           None)
                if sgs is not None and sgs.size not in device.get_info(
                        info.device.sub_group_sizes):
                    why = exception(errc.kernel_not_supported, f"{self.name} needs sub-groups "
                                    f"of {sgs.size}")
            self._compat[key] = why
        return self._compat[key]

    def num_args(self) -> int:
        return len(self.kernel.param_types())

    def attributes(self) -> str:
        return " ".join(p.attribute() for p in self.kernel.properties
                        if hasattr(p, "attribute"))

    def required_local(self) -> tuple[int, ...] | None:
        p = next((p for p in self.kernel.properties if isinstance(p, work_group_size)), None)
        return p.sizes if p is not None else None

    def required_sub_group(self) -> int:
        p = next((p for p in self.kernel.properties if isinstance(p, sub_group_size)), None)
        return p.size if p is not None else 0

    def binary(self, device: Any) -> bytes:
        return self.compiled(device).binary

    def memory(self, device: Any) -> tuple[int, int]:
        """(work-group local bytes, private bytes) the compiled kernel declares."""
        r = reflect(self.compiled(device).binary)
        return r.workgroup_bytes, r.private_bytes

    def command(self, device: Any, launch: Any, args: Mapping[int, Any] | tuple,
                properties: Any, context: Any, required: list | None, image: Any = None
                ) -> Any:
        k = self.kernel
        if launch is not self._accepted:
            self._check_launch(launch)
            self._accepted = launch
        p = plan(k)
        return launch_command(device, k, launch, p.matched(args), properties, p, context,
                              required, image)

    def _check_launch(self, launch: Any) -> None:
        """Refuses a launch object of the wrong kind or dimensions for the kernel."""
        k = self.kernel
        if launch is None:
            if k.kind != "single_task":
                raise invalid(f"{k.name} is an nd_range_kernel({k.dims}); enqueue it with "
                              "parallel_for(nd_range, kernel), not single_task")
        elif not isinstance(launch, nd_range):
            raise invalid(f"{k.name} is a free function kernel: enqueue it with "
                          "parallel_for(sycl.nd_range, kernel), not with a sycl.range")
        elif k.kind != "nd_range":
            raise invalid(f"{k.name} is a single_task_kernel; enqueue it with single_task")
        elif launch.dimensions != k.dims:
            raise invalid(f"{k.name} is an nd_range_kernel({k.dims}), enqueued with a "
                          f"{launch.dimensions}-dimensional nd_range")


_FREE: Final[dict[FreeFunctionKernel, FreeKernel]] = {}


def free_member(k: FreeFunctionKernel) -> FreeKernel:
    """The one bundle member of a free function kernel (of a template, of one named
    instantiation)."""
    if k.type_vars() and not k.bindings:
        raise invalid(f"{k.name} is a template: name one instantiation, e.g. "
                      f"{k.name}[sycl.float32]")
    m = _FREE.get(k)
    if m is None:
        m = _FREE[k] = FreeKernel(k)
    return m


def get_kernel_id(f: Any) -> kernel_id:
    """`syclexp.get_kernel_id(f)`: the identifier of a free function kernel."""
    return free_member(free_function_kernel(f)).id


def get_kernel_ids() -> list[kernel_id]:
    """`sycl.get_kernel_ids()`: every kernel the application defined so far (free function
    kernels and the instantiations of templates that were named)."""
    out = []
    for k in registered_kernels():
        if k.type_vars() and not k.bindings:
            continue
        out.append(free_member(k).id)
    return out


__all__ = ["get_kernel_id", "get_kernel_ids", "kernel_id"]
