"""Getting kernel bundles: `get_kernel_bundle` and `has_kernel_bundle` take SYCL's
overloads and select the kernels compatible with the devices; `is_compatible` is that
test for given kernels, and `get_kernel_info` asks the bundle of one kernel.
"""

from __future__ import annotations

from typing import Any

from ..compiler.free_function import registered_kernels
from ..exceptions import errc, exception, invalid
from .bundle import bundle_state, kernel_bundle
from .bundle_members import free_member, kernel_id
from .free_function import free_function_kernel


def _parse(ctx: Any, args: tuple, what: str) -> tuple[list[Any], Any, Any, bundle_state]:
    """(devices, kernel selector, kernel ids, state) from the overloads of
    get_kernel_bundle / has_kernel_bundle: ([f | kernel_ids,] [devices,] state) in any
    of SYCL's orders."""
    if not args or not isinstance(args[-1], bundle_state):
        raise invalid(f"{what} takes the bundle state last, e.g. sycl.bundle_state.executable")
    state = args[-1]
    if state is bundle_state.ext_oneapi_source:
        raise invalid(f"{what}: bundles in the ext_oneapi_source state come from "
                      "create_kernel_bundle_from_source")
    devices = None
    f = None
    ids = None
    for a in args[:-1]:
        if isinstance(a, list | tuple):
            if a and all(isinstance(x, kernel_id) for x in a):
                ids = list(a)
            elif all(hasattr(x, "vulkan") for x in a):
                if devices is not None:
                    raise invalid(f"{what}: two device lists")
                devices = list(a)
            else:
                raise invalid(f"{what}: expected a list of devices or of kernel ids")
        elif isinstance(a, kernel_id):
            ids = [a]
        else:
            f = a
    if devices is None:
        devices = list(ctx.get_devices())
    if not devices:
        raise invalid(f"{what}: the device list is empty")
    for d in devices:
        if not ctx.has_device(d):
            raise invalid(f"{what}: device {d.vulkan.name} is not in the context")
    return devices, f, ids, state


def _select(devices: list[Any], f: Any, ids: Any) -> tuple[list[Any], bool]:
    """The members, and whether they were asked for by name (then each must be
    compatible with some device)."""
    if f is not None:
        return [free_member(free_function_kernel(f))], True
    if ids is not None:
        return [i._impl for i in ids], True
    return [free_member(k) for k in registered_kernels()
            if not (k.type_vars() and not k.bindings)], False


def _compatible_somewhere(m: Any, devices: list[Any]) -> bool:
    return any(m.why_incompatible(d) is None for d in devices)


def get_kernel_bundle(ctx: Any, *args: Any) -> kernel_bundle:
    """`get_kernel_bundle(ctx, [f | kernel_ids,] [devices,] state)`.

    With a free function kernel or kernel ids, each must be compatible with one of the
    devices (else `errc.invalid`); without, the bundle holds every kernel of the
    application that one of the devices can run."""
    devices, f, ids, state = _parse(ctx, args, "get_kernel_bundle")
    members, named = _select(devices, f, ids)
    if named:
        for m in members:
            if not _compatible_somewhere(m, devices):
                why = m.why_incompatible(devices[0])
                raise invalid(f"kernel {m.name} is compatible with none of the devices: {why}")
    else:
        members = [m for m in members if _safe_compatible(m, devices)]
    return kernel_bundle(ctx, devices, state, members)


def _safe_compatible(m: Any, devices: list[Any]) -> bool:
    """Compatibility for the bundle of all kernels: one that does not compile runs nowhere."""
    try:
        return _compatible_somewhere(m, devices)
    except exception as ex:
        if ex.code() is errc.build:
            return False
        raise


def has_kernel_bundle(ctx: Any, *args: Any) -> bool:
    """`has_kernel_bundle(ctx, [f | kernel_ids,] [devices,] state)`."""
    devices, f, ids, _state = _parse(ctx, args, "has_kernel_bundle")
    members, named = _select(devices, f, ids)
    if not named:
        return any(_safe_compatible(m, devices) for m in members) or not members
    return all(_compatible_somewhere(m, devices) for m in members)


def is_compatible(f: Any, dev: Any) -> bool:
    """`is_compatible(f | kernel_ids, dev)`: whether `dev` can run the kernel(s): the
    aspects and SPIR-V features they use, and their required sub-group size."""
    if isinstance(f, list | tuple):
        return all(i._impl.why_incompatible(dev) is None for i in f)
    if isinstance(f, kernel_id):
        return f._impl.why_incompatible(dev) is None
    return free_member(free_function_kernel(f)).why_incompatible(dev) is None


def get_kernel_info(f: Any, param: Any, *where: Any) -> Any:
    """`syclexp.get_kernel_info(f, param, ctx [, dev])` or `(f, param, q)`."""
    if len(where) == 1 and hasattr(where[0], "get_device") and hasattr(where[0], "submit"):
        q = where[0]
        ctx, dev = q.get_context(), q.get_device()
    elif len(where) in (1, 2):
        ctx, dev = where[0], (where[1] if len(where) == 2 else None)
    else:
        raise invalid("get_kernel_info takes (f, param, context [, device]) or (f, param, queue)")
    bundle = get_kernel_bundle(ctx, f, bundle_state.executable)
    return bundle.ext_oneapi_get_kernel(f).get_info(param, dev)


__all__ = ["get_kernel_bundle", "get_kernel_info", "has_kernel_bundle", "is_compatible"]
