"""`syclexp.get_device_globals`: the "SYCL/device globals" property set of a kernel, the
metadata the compiler records in place of SPIR-V's HostAccessINTEL decoration."""

from __future__ import annotations

from typing import Any

from ..exceptions import invalid
from .launch import compiled


def get_device_globals(kernel: Any, where: Any, launch: Any = None) -> list[dict[str, Any]]:
    """One entry per device_global the kernel uses, as compiled for `where` (a queue or
    device) and `launch` (a range or nd_range; None for a single task): `unique_id`,
    `size`, `dtype`, `shape`, `host_access`, `device_image_scope`, `init_mode`,
    `implement_in_csr`, and `argument_offset`, the byte offset in the packed kernel
    arguments where the launch puts the variable's device address. A `sycl.kernel` from
    a bundle answers for the launch its bundle compiled."""
    device = where.get_device() if hasattr(where, "get_device") else where
    if not hasattr(device, "vulkan"):
        raise invalid(f"get_device_globals takes a queue or a device, got "
                      f"{type(where).__name__}")
    impl = getattr(kernel, "_impl", None)
    ck = impl.compiled(device) if hasattr(impl, "compiled") else \
        compiled(device, kernel, launch)
    return [dict(e) for e in ck.device_globals]


__all__ = ["get_device_globals"]
