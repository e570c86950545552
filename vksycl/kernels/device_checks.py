"""Whether a device can run a compiled kernel, and how many work-groups a launch
dispatches: the aspects, Vulkan features (read from its SPIR-V by
`runtime.shader_features`) and sub-group operations the kernel needs, its push-constant
and work-group sizes against the device's limits, and its work-group counts against
maxComputeWorkGroupCount.
"""

from __future__ import annotations

from typing import Any

from ..compiler.kernel import CompiledKernel
from ..exceptions import errc, exception
from ..runtime.aspects import FEATURE_ASPECTS, aspect
from ..runtime.shader_features import required_features
from .marshal import Prepared
from .properties import device_has

# sub-group capabilities and the operations (`VulkanDevice.subgroup_operations`) they need
_SUBGROUP_OPERATIONS = {
    "GroupNonUniform": "basic", "GroupNonUniformVote": "vote",
    "GroupNonUniformArithmetic": "arithmetic", "GroupNonUniformBallot": "ballot",
    "GroupNonUniformShuffle": "shuffle", "GroupNonUniformShuffleRelative": "shuffle_relative",
}


def group_arithmetic(device: Any) -> bool:
    """Whether the device's sub-groups do arithmetic (reduce, scan)."""
    return "arithmetic" in device.vulkan.subgroup_operations


def required_aspects(properties: Any, info: Any) -> tuple[str, ...] | None:
    """The aspect names a device_has property lists (at launch, or a free function
    kernel's own), or None."""
    own = info.properties if info is not None else ()
    for p in (*(properties or ()), *own):
        if isinstance(p, device_has):
            return p.names()
    return None


def group_counts(ck: CompiledKernel, launch: Any, device: Any) -> tuple[int, int, int]:
    """The work-groups a launch of `ck` dispatches along x, y and z."""
    spec = ck.spec
    kind, dims = spec.kind, spec.dims
    if kind == "single_task":
        return (1, 1, 1)
    g = tuple(launch.get_global_range()) if kind == "nd_range" else tuple(launch)
    local = list(spec.local)
    local[0] *= ck.coarsen
    limits = _limits(device)
    if dims == 1 and not spec.fold_groups:  # the common case, in short
        x = -(-g[0] // local[0])
        if x <= limits[0]:
            return (x, 1, 1)
    counts = [-(-g[d] // local[d]) for d in range(dims)][::-1] + [1] * (3 - dims)
    if spec.fold_groups:
        total = counts[0] * counts[1] * counts[2]
        x = min(total, limits[0])
        y = -(-total // x)
        if y > limits[1]:
            raise exception(errc.nd_range, f"range {g} needs {total} work-groups, more "
                            "than this device can dispatch")
        return (x, y, 1)
    if dims == 1 and counts[0] > limits[0]:
        x = limits[0]
        y = -(-counts[0] // x)
        if y > limits[1]:
            raise exception(errc.nd_range, f"{g[0]} work-items need more work-groups than "
                            "this device can dispatch")
        return (x, y, 1)
    for c, lim in zip(counts, limits, strict=True):
        if c > lim:
            raise exception(errc.nd_range, f"range {g} needs {counts} work-groups; this "
                            f"device dispatches at most {limits}")
    return (counts[0], counts[1], counts[2])


def too_many_groups(launch: Any, local: tuple[int, ...], device: Any) -> bool:
    """Whether a 2-/3-dimensional launch needs more work-groups along a dimension than
    the device dispatches (its kernel then numbers work-groups linearly)."""
    g = tuple(launch.get_global_range()) if hasattr(launch, "get_global_range") else \
        tuple(launch)
    limits = _limits(device)
    return any(-(-g[d] // local[d]) > limits[len(g) - 1 - d] for d in range(len(g)))


def _limits(device: Any) -> tuple[int, int, int]:
    """maxComputeWorkGroupCount of the device."""
    return device.vulkan.max_compute_work_group_count


def check_supported(p: Prepared, device: Any) -> None:
    """Raises if `device` lacks an aspect, feature or limit the kernel needs (its
    work-group memory too: errc.memory_allocation, as sycl_ext_oneapi_work_group_static
    has it); else marks the device checked for it, so later launches skip the checks."""
    _check(p.ck, device)
    p.checked.add(id(device.vulkan))


def _check(ck: CompiledKernel, device: Any) -> None:
    vk = device.vulkan
    for feature in sorted(required_features(ck.binary)):
        needs_aspect = FEATURE_ASPECTS.get(feature)
        if needs_aspect is not None and not device.has(needs_aspect):
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} uses "
                            f"{needs_aspect.name} (the Vulkan feature {feature}), which "
                            f"{vk.name} does not support")
        if not vk.features.get(feature, False):
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} needs the Vulkan "
                            f"feature {feature}, which {vk.name} lacks")
    for a in ck.aspects:
        if a in aspect.__members__ and not device.has(aspect[a]):
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} uses {a}, which "
                            f"{vk.name} does not support")
    for cap in ck.capabilities:
        needs = _SUBGROUP_OPERATIONS.get(cap)
        if needs is not None and needs not in vk.subgroup_operations:
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} uses sub-group "
                            f"operations ({cap}) that {vk.name} does not support")
    if ck.push_size > vk.max_push_constants_size:
        raise exception(errc.kernel_argument, f"kernel {ck.name} needs {ck.push_size} bytes "
                        f"of arguments; this device takes {vk.max_push_constants_size}")
    if ck.local_bytes > vk.max_compute_shared_memory_size:  # as work_group_static says
        raise exception(errc.memory_allocation, f"kernel {ck.name} needs {ck.local_bytes} "
                        f"bytes of work-group memory; {vk.name} has "
                        f"{vk.max_compute_shared_memory_size} (info.device.local_mem_size)")
    n = 1
    for s in ck.local_size:
        n *= s
    if n > vk.max_compute_work_group_invocations or any(
            s > m for s, m in zip(ck.local_size, vk.max_compute_work_group_size, strict=True)):
        raise exception(errc.nd_range, f"work-group size {ck.spec.local} exceeds this "
                        "device's limits")


def unsupported(device: Any, ck: CompiledKernel) -> exception | None:
    """The exception a launch of `ck` on `device` would raise for a missing feature or
    limit (aspects, SPIR-V capabilities, push-constant size, work-group memory and size),
    or None."""
    try:
        _check(ck, device)
    except exception as ex:
        return ex
    return None

