"""`sycl.aspect` and how each one follows from a Vulkan device's real features.

`VKSYCL_HIDE_ASPECTS=fp64,fp16` makes every device report the named aspects absent, to
emulate weaker devices (SwiftShader and many mobile GPUs lack fp64); it is read on every
query, so it can be changed while the process runs.
"""

from __future__ import annotations

import enum
import os

from ..exceptions import invalid
from .devices import VulkanDeviceInfo

HIDE_ASPECTS_ENV = "VKSYCL_HIDE_ASPECTS"


class aspect(enum.Enum):
    cpu = "cpu"
    gpu = "gpu"
    accelerator = "accelerator"
    custom = "custom"
    emulated = "emulated"
    host_debuggable = "host_debuggable"
    fp16 = "fp16"
    fp64 = "fp64"
    atomic64 = "atomic64"
    image = "image"
    online_compiler = "online_compiler"
    online_linker = "online_linker"
    queue_profiling = "queue_profiling"
    usm_device_allocations = "usm_device_allocations"
    usm_host_allocations = "usm_host_allocations"
    usm_atomic_host_allocations = "usm_atomic_host_allocations"
    usm_shared_allocations = "usm_shared_allocations"
    usm_atomic_shared_allocations = "usm_atomic_shared_allocations"
    usm_system_allocations = "usm_system_allocations"
    ext_oneapi_graph = "ext_oneapi_graph"
    ext_oneapi_limited_graph = "ext_oneapi_limited_graph"
    ext_oneapi_virtual_functions = "ext_oneapi_virtual_functions"
    # vksycl-specific: integer widths beyond 32 bits and below need optional SPIR-V
    # capabilities (Int64, Int16, Int8) that not every Vulkan device has.
    int64 = "int64"
    int16 = "int16"
    int8 = "int8"
    # vksycl-specific: joint_matrix runs on cooperative matrices (tensor cores), not the
    # portable form every device has
    ext_oneapi_cooperative_matrix = "ext_oneapi_cooperative_matrix"
    # vksycl-specific: what kernels may use beyond Vulkan 1.0's guarantees, each from the
    # device feature of the same meaning (`FEATURE_ASPECTS`): float atomics on USM and
    # accessors (atomic_ref fetch_add; fetch_min / fetch_max), 8- and 16-bit loads and
    # stores, the Vulkan memory model, sub-group operations on 8/16/64-bit values
    atomic_float16_add = "atomic_float16_add"
    atomic_float32_add = "atomic_float32_add"
    atomic_float64_add = "atomic_float64_add"
    atomic_float16_minmax = "atomic_float16_minmax"
    atomic_float32_minmax = "atomic_float32_minmax"
    atomic_float64_minmax = "atomic_float64_minmax"
    storage_buffer_8bit = "storage_buffer_8bit"
    storage_buffer_16bit = "storage_buffer_16bit"
    vulkan_memory_model = "vulkan_memory_model"
    subgroup_extended_types = "subgroup_extended_types"


# The aspect each device feature a kernel may need belongs to (Vulkan's feature names, as
# `runtime.shader_features` reads them from SPIR-V). An aspect is present where its first
# feature here is; a kernel using any feature of an aspect needs the aspect too, so
# VKSYCL_HIDE_ASPECTS refuses it.
FEATURE_ASPECTS = {
    "shaderFloat16": aspect.fp16, "shaderFloat64": aspect.fp64,
    "shaderInt64": aspect.int64, "shaderInt16": aspect.int16, "shaderInt8": aspect.int8,
    "shaderBufferInt64Atomics": aspect.atomic64, "shaderSharedInt64Atomics": aspect.atomic64,
    **{f"shader{where}Float{bits}Atomic{op}": aspect[f"atomic_float{bits}_{name}"]
       for where in ("Buffer", "Shared") for bits in (16, 32, 64)
       for op, name in (("Add", "add"), ("MinMax", "minmax"))},
    "storageBuffer8BitAccess": aspect.storage_buffer_8bit,
    "storageBuffer16BitAccess": aspect.storage_buffer_16bit,
    "vulkanMemoryModel": aspect.vulkan_memory_model,
    "vulkanMemoryModelDeviceScope": aspect.vulkan_memory_model,
    "shaderSubgroupExtendedTypes": aspect.subgroup_extended_types,
    "cooperativeMatrix": aspect.ext_oneapi_cooperative_matrix,
}
# the aspects granted by one feature alone
_FEATURE_GRANTS = {
    "shaderFloat16": aspect.fp16, "shaderFloat64": aspect.fp64, "shaderInt16": aspect.int16,
    "shaderInt8": aspect.int8,
    **{f"shaderBufferFloat{bits}Atomic{op}": aspect[f"atomic_float{bits}_{name}"]
       for bits in (16, 32, 64) for op, name in (("Add", "add"), ("MinMax", "minmax"))},
    "storageBuffer8BitAccess": aspect.storage_buffer_8bit,
    "storageBuffer16BitAccess": aspect.storage_buffer_16bit,
    "shaderSubgroupExtendedTypes": aspect.subgroup_extended_types,
}

_TYPE_ASPECT = {
    "discrete_gpu": aspect.gpu, "integrated_gpu": aspect.gpu, "virtual_gpu": aspect.gpu,
    "cpu": aspect.cpu, "other": aspect.custom,
}

# What vksycl itself provides on every Vulkan device: USM through its own allocator, graphs
# through pre-recorded command buffers.
_ALWAYS = frozenset({
    aspect.usm_device_allocations, aspect.usm_host_allocations, aspect.usm_shared_allocations,
    aspect.ext_oneapi_graph, aspect.ext_oneapi_limited_graph,
})


# the aspects of each device, by the id of its facts (kept, so the id stays theirs):
# launches ask for them each time a kernel variant is looked up
_ASPECTS: dict[int, tuple[VulkanDeviceInfo, frozenset[aspect]]] = {}


def vulkan_aspects(info: VulkanDeviceInfo) -> frozenset[aspect]:
    """The aspects a device really has, before `VKSYCL_HIDE_ASPECTS` applies."""
    hit = _ASPECTS.get(id(info))
    if hit is None or hit[0] is not info:
        hit = _ASPECTS[id(info)] = (info, _device_aspects(info))
    return hit[1]


def _device_aspects(info: VulkanDeviceInfo) -> frozenset[aspect]:
    """What `vulkan_aspects` finds in a device's Vulkan facts.

    Absent by construction: `accelerator` (Vulkan has no such device type), `emulated`
    and `host_debuggable` (no Vulkan driver runs kernels in a host debugger), `image`
    (no image API yet), `online_compiler`/`online_linker` (no OpenCL C/SPIR path),
    `usm_system_allocations` (Vulkan cannot access malloc'ed memory), and the
    `usm_atomic_*` aspects (Vulkan does not promise atomicity between host and device).
    """
    f = info.features
    found = set(_ALWAYS)
    found.add(_TYPE_ASPECT[info.device_type])
    found.update(a for feature, a in _FEATURE_GRANTS.items() if f.get(feature))
    if f.get("vulkanMemoryModel") and f.get("vulkanMemoryModelDeviceScope"):
        found.add(aspect.vulkan_memory_model)
    if f.get("shaderInt64"):
        found.add(aspect.int64)
        # virtual calls reach objects through 64-bit device addresses and switch on the
        # stored type tag (the compiler's dispatch; no function pointers needed)
        found.add(aspect.ext_oneapi_virtual_functions)
        if f.get("shaderBufferInt64Atomics"):
            found.add(aspect.atomic64)
    # The compute family's own timestampValidBits decides; timestampComputeAndGraphics
    # only promises it for every family at once.
    if info.timestamp_valid_bits > 0:
        found.add(aspect.queue_profiling)
    if info.cooperative_matrices and f.get("cooperativeMatrix") and \
            f.get("vulkanMemoryModel") and f.get("vulkanMemoryModelDeviceScope"):
        found.add(aspect.ext_oneapi_cooperative_matrix)
    return frozenset(found)


def hidden_aspects() -> frozenset[aspect]:
    """The aspects `VKSYCL_HIDE_ASPECTS` names; a name that is no aspect is an error, so
    a typo cannot silently leave a test running with the aspect present."""
    raw = os.environ.get(HIDE_ASPECTS_ENV, "")
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in aspect.__members__]
    if unknown:
        raise invalid(f"{HIDE_ASPECTS_ENV} names unknown aspects {unknown}; "
                      f"known: {', '.join(aspect.__members__)}")
    return frozenset(aspect[n] for n in names)


# The joint_matrix shapes every device runs without cooperative matrices (the portable
# form takes any shape; these are the ones tensor-core hardware commonly has, so code
# written against them runs on both forms): element dtypes of A, B, C and D, M, N, K.
PORTABLE_MATRICES = tuple(
    (*types, m, n, k)
    for types, shapes in (
        (("float16", "float16", "float32", "float32"), ((16, 16, 16), (16, 8, 16), (16, 8, 8))),
        (("float16", "float16", "float16", "float16"), ((16, 16, 16), (16, 8, 16), (16, 8, 8))),
        (("int8", "int8", "int32", "int32"), ((16, 16, 32), (16, 8, 32))),
        (("uint8", "uint8", "uint32", "uint32"), ((16, 16, 32), (16, 8, 32))),
    )
    for m, n, k in shapes)


def matrix_combinations(info: VulkanDeviceInfo) -> tuple[tuple[str, str, str, str, int, int,
                                                               int], ...]:
    """The joint_matrix multiply-adds a device runs: its cooperative ones where it has the
    aspect (and it is not hidden), else the portable set."""
    if aspect.ext_oneapi_cooperative_matrix in vulkan_aspects(info) and \
            aspect.ext_oneapi_cooperative_matrix not in hidden_aspects():
        return info.cooperative_matrices
    return PORTABLE_MATRICES
