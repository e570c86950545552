"""The Vulkan device features a SPIR-V module needs, read from the module itself.

A capability alone does not say which feature a shader uses: `AtomicFloat32AddEXT` needs
`shaderBufferFloat32AtomicAdd` for an add on memory reached through a pointer and
`shaderSharedFloat32AtomicAdd` for one on work-group memory, and a sub-group operation on
an 8-, 16- or 64-bit value needs `shaderSubgroupExtendedTypes` with no capability of its
own. So the instructions are read, as the validation layer reads them
(VUID-RuntimeSpirv-*), and kernels from Python, GLSL and SPIR-V are checked alike before
any driver sees them.
"""

from __future__ import annotations

import functools

import spirv_gen
from spirv_gen.grammar import grammar

# capabilities that each need one feature, wherever they are used
CAPABILITY_FEATURES = {
    "Int64": "shaderInt64", "Int16": "shaderInt16", "Int8": "shaderInt8",
    "Float64": "shaderFloat64", "Float16": "shaderFloat16",
    "StorageBuffer8BitAccess": "storageBuffer8BitAccess",
    "UniformAndStorageBuffer8BitAccess": "uniformAndStorageBuffer8BitAccess",
    "StoragePushConstant8": "storagePushConstant8",
    "StorageBuffer16BitAccess": "storageBuffer16BitAccess",
    "UniformAndStorageBuffer16BitAccess": "uniformAndStorageBuffer16BitAccess",
    "StoragePushConstant16": "storagePushConstant16",
    "PhysicalStorageBufferAddresses": "bufferDeviceAddress",
    "VulkanMemoryModel": "vulkanMemoryModel",
    "VulkanMemoryModelDeviceScope": "vulkanMemoryModelDeviceScope",
    "CooperativeMatrixKHR": "cooperativeMatrix",
    "VariablePointersStorageBuffer": "variablePointersStorageBuffer",
    "VariablePointers": "variablePointers",
}
# atomic instructions on floats, and the operation their feature names
_FLOAT_ATOMIC_OPS = {"OpAtomicFAddEXT": "AtomicAdd", "OpAtomicFMinEXT": "AtomicMinMax",
                     "OpAtomicFMaxEXT": "AtomicMinMax", "OpAtomicLoad": "Atomics",
                     "OpAtomicStore": "Atomics", "OpAtomicExchange": "Atomics"}
# storage classes whose atomics are "shared" (work-group memory); the rest are "buffer"
_SHARED = {"Workgroup"}
_EXTENDED_SUBGROUP = {("int", 8), ("int", 16), ("int", 64), ("float", 16)}


@functools.lru_cache(maxsize=4096)
def required_features(binary: bytes) -> frozenset[str]:
    """The VkPhysicalDevice*Features members (Vulkan's names) that `binary` needs."""
    g = grammar()
    storage_classes = g.kinds["StorageClass"].by_value
    module = spirv_gen.read(binary)
    scalars: dict[int, tuple[str, int]] = {}  # type id -> ("int" | "float", width)
    components: dict[int, int] = {}  # vector type id -> component type id
    pointers: dict[int, tuple[str, int]] = {}  # pointer type id -> (storage class, pointee)
    value_types: dict[int, int] = {}  # result id -> type id
    found: set[str] = set()
    for inst in module.instructions:
        info = inst.info
        if info is None:
            continue
        w, name = inst.words, info.opname
        if info.has_type and len(w) >= 2:
            value_types[w[1]] = w[0]
        if name == "OpCapability":
            cap = g.kinds["Capability"].by_value.get(w[0])
            if cap is not None and cap.name in CAPABILITY_FEATURES:
                found.add(CAPABILITY_FEATURES[cap.name])
        elif name == "OpTypeInt":
            scalars[w[0]] = ("int", w[1])
        elif name == "OpTypeFloat":
            scalars[w[0]] = ("float", w[1])
        elif name == "OpTypeVector":
            components[w[0]] = w[1]
        elif name in ("OpTypePointer", "OpTypeForwardPointer") and len(w) >= 3:
            sc = storage_classes.get(w[1])
            pointers[w[0]] = (sc.name if sc else str(w[1]), w[2])
        elif name.startswith("OpAtomic"):
            pointer = w[0] if name == "OpAtomicStore" else w[2]
            sc, pointee = pointers.get(value_types.get(pointer, -1), ("", -1))
            kind, width = scalars.get(pointee, ("", 0))
            where = "Shared" if sc in _SHARED else "Buffer"
            if kind == "float" and name in _FLOAT_ATOMIC_OPS:
                found.add(f"shader{where}Float{width}{_FLOAT_ATOMIC_OPS[name]}")
            elif kind == "int" and width == 64:
                found.add(f"shader{where}Int64Atomics")
        elif name.startswith("OpGroupNonUniform") and info.has_type:
            t = components.get(w[0], w[0])
            if scalars.get(t) in _EXTENDED_SUBGROUP:
                found.add("shaderSubgroupExtendedTypes")
    return frozenset(found)
