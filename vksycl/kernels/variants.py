"""Which compiled variant of a kernel a launch runs: the work-group shape of its launch
shape, the scratch memory and required aspects its properties ask for, work-groups
numbered linearly where a dimension has more than the device dispatches, the virtual
call sets it may reach, whether it reads its arguments from memory, how joint_matrix
lowers on the device, and the floating-point controls its properties ask for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..compiler import coarsen as coarsening
from ..compiler import virtual
from ..compiler.kernel import kernel_name
from ..compiler.matrix_code import MatrixTarget
from ..compiler.module import KernelSpec
from ..compiler.reduction import ReductionSpec
from ..properties import work_group_scratch_size
from ..runtime.aspects import aspect, matrix_combinations
from .device_checks import group_arithmetic, required_aspects, too_many_groups
from .properties import float_controls
from .virtual import check_sets, indirect_sets

# work-group shapes for range kernels: 256 work-items where the device allows (measured
# on an H100: 1.5x the bandwidth of 128), 128 otherwise (every Vulkan device takes 128);
# a one-dimensional range smaller than that runs one work-group of the next power of two
# (at least a sub-group): on lavapipe, whose SIMD lanes step through every work-item, a
# 64-item launch's shader ran 11.5k instructions in a work-group of 256, 5.1k in one of 64
RANGE_LOCAL = {1: (256,), 2: (8, 32), 3: (2, 8, 16)}
RANGE_LOCAL_SMALL = {1: (128,), 2: (4, 32), 3: (2, 4, 16)}


def launch_shape(launch: Any, device: Any) -> tuple[str, int, tuple[int, ...], bool]:
    """(kind, dimensions, work-group size, whether it has an offset) of a launch."""
    if launch is None:
        return "single_task", 1, (1,), False
    if hasattr(launch, "get_local_range"):
        local = tuple(launch.get_local_range())
        return "nd_range", len(local), local, any(launch.get_offset())
    dims = len(launch)
    vk = device.vulkan
    big = vk.max_compute_work_group_invocations >= 256 and \
        vk.max_compute_work_group_size[0] >= 256
    local = (RANGE_LOCAL if big else RANGE_LOCAL_SMALL)[dims]
    if dims == 1 and launch[0] < local[0]:  # one work-group, no bigger than it needs
        local = (min(local[0], max(vk.subgroup_size, 1 << (launch[0] - 1).bit_length())),)
    return "range", dims, local, False


def _scratch(properties: Any) -> int:
    for p in properties or ():
        if isinstance(p, work_group_scratch_size):
            return p.nbytes
    return 0


def ieee_floats(device: Any) -> tuple[int, ...]:
    """The float widths whose infinities, NaNs and signed zeros the device can be asked to
    keep (Vulkan 1.2's shaderSignedZeroInfNanPreserveFloat16/32/64)."""
    props = device.vulkan.properties
    return tuple(bits for bits in (16, 32, 64)
                 if props.get(f"shaderSignedZeroInfNanPreserveFloat{bits}"))


def matrix_target(device: Any) -> MatrixTarget:
    """Cooperative matrices where the device has them (and `VKSYCL_HIDE_ASPECTS` does not
    hide them), else the portable form; either multiplies only the combinations
    `info.device.matrix_combinations` lists."""
    vk = device.vulkan
    cooperative = device.has(aspect.ext_oneapi_cooperative_matrix)
    return MatrixTarget(cooperative, vk.subgroup_size, matrix_combinations(vk))


def launch_facts(launch: Any, device: Any, shape: tuple | None = None) -> tuple:
    """What a launch's variant takes from the launch itself: its shape (`launch_shape`),
    whether its work-groups are numbered linearly (more than the device dispatches along a
    dimension), and whether a work-item may run several ids. Launches with equal facts
    run the same variants, whatever their sizes. Kept by launch and device (ranges are
    immutable): a size changing every launch among a few finds its facts."""
    if shape is not None:  # worked out by the caller: nothing to look up
        return _facts(launch, device, shape)
    key = (launch, id(device.vulkan))  # the device's Vulkan facts live as long as it
    facts = _FACTS.get(key)
    if facts is None:
        if len(_FACTS) >= _FACTS_KEPT:
            _FACTS.clear()
        facts = _FACTS[key] = _facts(launch, device, launch_shape(launch, device))
    return facts


def _facts(launch: Any, device: Any, shape: tuple) -> tuple:
    kind, dims, local, _ = shape
    fold = dims > 1 and too_many_groups(launch, local, device)
    coarsenable = kind != "single_task" and dims == 1 and \
        (launch.get_global_range() if kind == "nd_range" else launch)[0] >= \
        local[0] * coarsening.COARSEN
    return shape, fold, coarsenable


# (launch, id of its device's Vulkan facts) -> its `launch_facts`
_FACTS: dict[tuple, tuple] = {}
_FACTS_KEPT: Final = 256


def launch_variant(pyfn: Any, info: Any, shape: tuple, launch: Any, device: Any,
                   properties: Any, args_in_memory: bool = False,
                   reductions: tuple[ReductionSpec, ...] = (),
                   ) -> tuple[tuple, Callable[[], KernelSpec]]:
    """The cache key of the kernel a launch of this shape runs, and how to make its spec."""
    kind, dims, local, has_offset = shape
    param_types = info.param_types() if info is not None else None
    scratch = _scratch(properties)
    _, fold, coarsenable = launch_facts(launch, device, shape)
    sets = indirect_sets(properties, info)
    if sets is not None:
        check_sets(sets)
    has = required_aspects(properties, info)
    # the name, not the function: plans keep `spec`, and a closure's cells may hold
    # accessors, whose buffers write back only when they go
    name = info.name if info is not None else kernel_name(pyfn)
    matrix = matrix_target(device)
    arithmetic = bool(reductions) and group_arithmetic(device)

    contract, fast = float_controls(properties, info.properties if info is not None else ())
    ieee = () if fast else ieee_floats(device)

    def spec() -> KernelSpec:
        return KernelSpec(name, kind, dims, local, has_offset, param_types, scratch, fold,
                          args_in_memory, sets, virtual.digest(sets) if sets else "", has,
                          reductions, matrix, arithmetic, coarsenable, ieee, contract)

    return (kind, dims, local, has_offset, scratch, param_types, fold, args_in_memory, sets,
            virtual.version() if sets else 0, has, reductions, matrix, arithmetic,
            coarsenable, ieee, contract), spec
