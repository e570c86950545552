"""Vulkan device discovery: the raw facts of every physical device, read once per process.

The facts come from the `vulkan` cffi package (properties, features, limits, memory heaps,
queue families, sub-group properties), gathered into a plain `VulkanDeviceInfo` that the
runtime and compiler can use directly; the SYCL view (`sycl.device`, aspects, `get_info`)
is built on top of it in `vksycl.runtime.platform`. Kompute is not involved: `index` is the
order of `vkEnumeratePhysicalDevices`, the index `kp.Manager(index)` takes, so the
instance is created the way Kompute creates its own (no portability enumeration, which
would add devices Kompute cannot see and shift the indices).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from ..exceptions import errc, exception
from . import validation

# (struct, sType constant, needed: a Vulkan (major, minor) or a device extension,
#  superseded: the version from which an aggregate VulkanXY struct carries the same fields).
# Chaining the promoted structs only below that version keeps every query valid on
# Vulkan 1.1 devices without duplicating what 1.2/1.3 devices report in the aggregates.
_V11, _V12, _V13 = (1, 1), (1, 2), (1, 3)

# what vksycl needs of a device, and why
REQUIRED_FEATURES = {
    "bufferDeviceAddress": "USM pointers are device addresses",
    "timelineSemaphore": "events are timeline semaphore points",
    "shaderInt64": "kernels compute with 64-bit device addresses",
}
# what a machine without a Vulkan loader or driver should install (the package names are
# Debian's and Ubuntu's; other systems' are alike)
INSTALL_LOADER = ("install the Vulkan loader, libvulkan.so.1: the package libvulkan1 "
                  "(Fedora: vulkan-loader)")
INSTALL_DRIVER = ("install a Vulkan driver: mesa-vulkan-drivers for a CPU device (lavapipe) "
                  "or AMD and Intel GPUs, or your GPU's own (NVIDIA's driver carries one); "
                  "VK_LOADER_DEBUG=error,warn shows what the loader found")


def missing_features(vk: VulkanDeviceInfo) -> list[str]:
    """The features of `REQUIRED_FEATURES` the device lacks."""
    return [f for f in REQUIRED_FEATURES if not vk.features.get(f)]
COOPERATIVE_MATRIX_EXTENSION = "VK_KHR_cooperative_matrix"
# work-group-scope cooperative matrices of flexible sizes (NVIDIA), enabled where offered
COOPERATIVE_MATRIX2_EXTENSION = "VK_NV_cooperative_matrix2"
# float atomics: add (32/64-bit) and, in float2, min/max and 16-bit ones; each enabled
# where offered, with every feature the device reports (Kompute patch 0019)
ATOMIC_FLOAT_EXTENSION = "VK_EXT_shader_atomic_float"
ATOMIC_FLOAT2_EXTENSION = "VK_EXT_shader_atomic_float2"
# opaque-fd export and import of memory (syclexp external memory), enabled where offered
EXTERNAL_MEMORY_FD_EXTENSION = "VK_KHR_external_memory_fd"
_PROPERTY_STRUCTS: tuple[tuple[str, str, tuple[int, int] | str, tuple[int, int] | None], ...] = (
    ("VkPhysicalDeviceVulkan11Properties", "VULKAN_1_1_PROPERTIES", _V12, None),
    ("VkPhysicalDeviceVulkan12Properties", "VULKAN_1_2_PROPERTIES", _V12, None),
    ("VkPhysicalDeviceVulkan13Properties", "VULKAN_1_3_PROPERTIES", _V13, None),
    ("VkPhysicalDeviceIDProperties", "ID_PROPERTIES", _V11, _V12),
    ("VkPhysicalDeviceSubgroupProperties", "SUBGROUP_PROPERTIES", _V11, _V12),
    ("VkPhysicalDeviceMaintenance3Properties", "MAINTENANCE_3_PROPERTIES", _V11, _V12),
    ("VkPhysicalDeviceDriverProperties", "DRIVER_PROPERTIES", "VK_KHR_driver_properties", _V12),
    ("VkPhysicalDeviceSubgroupSizeControlProperties", "SUBGROUP_SIZE_CONTROL_PROPERTIES",
     "VK_EXT_subgroup_size_control", _V13),
    ("VkPhysicalDeviceMaintenance4Properties", "MAINTENANCE_4_PROPERTIES",
     "VK_KHR_maintenance4", _V13),
    ("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", "SHADER_SM_BUILTINS_PROPERTIES_NV",
     "VK_NV_shader_sm_builtins", None),
    ("VkPhysicalDeviceShaderCorePropertiesAMD", "SHADER_CORE_PROPERTIES_AMD",
     "VK_AMD_shader_core_properties", None),
    ("VkPhysicalDeviceShaderCoreProperties2AMD", "SHADER_CORE_PROPERTIES_2_AMD",
     "VK_AMD_shader_core_properties2", None),
    ("VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM", "SHADER_CORE_BUILTINS_PROPERTIES_ARM",
     "VK_ARM_shader_core_builtins", None),
)
_FEATURE_STRUCTS: tuple[tuple[str, str, tuple[int, int] | str, tuple[int, int] | None], ...] = (
    ("VkPhysicalDeviceVulkan11Features", "VULKAN_1_1_FEATURES", _V12, None),
    ("VkPhysicalDeviceVulkan12Features", "VULKAN_1_2_FEATURES", _V12, None),
    ("VkPhysicalDeviceVulkan13Features", "VULKAN_1_3_FEATURES", _V13, None),
    ("VkPhysicalDevice16BitStorageFeatures", "16BIT_STORAGE_FEATURES", _V11, _V12),
    ("VkPhysicalDeviceVariablePointersFeatures", "VARIABLE_POINTERS_FEATURES", _V11, _V12),
    ("VkPhysicalDeviceShaderFloat16Int8Features", "SHADER_FLOAT16_INT8_FEATURES",
     "VK_KHR_shader_float16_int8", _V12),
    ("VkPhysicalDevice8BitStorageFeatures", "8BIT_STORAGE_FEATURES", "VK_KHR_8bit_storage", _V12),
    ("VkPhysicalDeviceShaderAtomicInt64Features", "SHADER_ATOMIC_INT64_FEATURES",
     "VK_KHR_shader_atomic_int64", _V12),
    ("VkPhysicalDeviceScalarBlockLayoutFeatures", "SCALAR_BLOCK_LAYOUT_FEATURES",
     "VK_EXT_scalar_block_layout", _V12),
    ("VkPhysicalDeviceVulkanMemoryModelFeatures", "VULKAN_MEMORY_MODEL_FEATURES",
     "VK_KHR_vulkan_memory_model", _V12),
    ("VkPhysicalDeviceSubgroupSizeControlFeatures", "SUBGROUP_SIZE_CONTROL_FEATURES",
     "VK_EXT_subgroup_size_control", _V13),
    ("VkPhysicalDeviceShaderAtomicFloatFeaturesEXT", "SHADER_ATOMIC_FLOAT_FEATURES_EXT",
     ATOMIC_FLOAT_EXTENSION, None),
    ("VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT", "SHADER_ATOMIC_FLOAT_2_FEATURES_EXT",
     ATOMIC_FLOAT2_EXTENSION, None),
    ("VkPhysicalDeviceCooperativeMatrixFeaturesKHR", "COOPERATIVE_MATRIX_FEATURES_KHR",
     COOPERATIVE_MATRIX_EXTENSION, None),
)
# VkComponentTypeKHR values and the element dtypes they name
_COMPONENT_TYPES = {0: "float16", 1: "float32", 2: "float64", 3: "int8", 4: "int16", 5: "int32",
                    6: "int64", 7: "uint8", 8: "uint16", 9: "uint32", 10: "uint64"}
_SUBGROUP_SCOPE = 3

# PCI vendor ids of GPU makers; Khronos-registered ids (Mesa, Codeplay, ...) come from the
# `VK_VENDOR_ID_*` constants of the registry.
_PCI_VENDORS = {
    0x1002: "AMD", 0x1010: "Imagination Technologies", 0x106B: "Apple", 0x10DE: "NVIDIA",
    0x13B5: "ARM", 0x14E4: "Broadcom", 0x5143: "Qualcomm", 0x8086: "Intel",
}

# Sub-group operation bits (VkSubgroupFeatureFlagBits), by their short names.
_SUBGROUP_OPS = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                 "clustered", "quad", "partitioned_nv", "rotate", "rotate_clustered")

# llvmpipe runs compute work on one thread per logical CPU (or LP_NUM_THREADS), at most
# LP_MAX_THREADS, which is 32 in the Mesa releases vksycl was tested with (22.3).
_LLVMPIPE_MAX_THREADS = 32


@dataclass(frozen=True, slots=True)
class MemoryHeap:
    size: int
    device_local: bool
    flags: int


@dataclass(frozen=True, slots=True)
class MemoryType:
    heap_index: int
    flags: int
    device_local: bool
    host_visible: bool
    host_coherent: bool
    host_cached: bool


@dataclass(frozen=True, slots=True)
class QueueFamily:
    flags: int
    count: int
    timestamp_valid_bits: int
    compute: bool
    graphics: bool


@dataclass(frozen=True, slots=True)
class NativeHandles:
    """An application's Vulkan objects a device was made from (`sycl.make_device`), as
    integers: vksycl works on them and never destroys them."""

    instance: int
    physical_device: int
    device: int
    queue_family_index: int
    queue_index: int
    # which `make_device` call: a device made again from handles the application reused
    # (after vksycl released the first) is another device
    serial: int


@dataclass(frozen=True, slots=True)
class VulkanDeviceInfo:
    """What Vulkan says about one physical device; field names follow Vulkan's, snake_cased.

    `features` merges VkPhysicalDeviceFeatures with the 1.1/1.2/1.3 feature structs (and
    their extension forms on older devices) by Vulkan field name; `properties` likewise
    merges the extended property structs; `limits` is VkPhysicalDeviceLimits. They hold
    what the physical device supports, not what a logical device has enabled.
    """

    index: int
    name: str
    vendor_id: int
    vendor: str
    device_id: int
    device_type: str  # discrete_gpu, integrated_gpu, virtual_gpu, cpu, other
    api_version: tuple[int, int, int]
    driver_version: int
    driver_version_string: str
    driver_id: str  # e.g. MESA_LLVMPIPE, NVIDIA_PROPRIETARY; "" when the driver says nothing
    driver_name: str
    driver_info: str
    device_uuid: bytes
    driver_uuid: bytes
    extensions: frozenset[str]
    features: Mapping[str, bool]
    properties: Mapping[str, Any]
    limits: Mapping[str, Any]
    memory_heaps: tuple[MemoryHeap, ...]
    memory_types: tuple[MemoryType, ...]
    queue_families: tuple[QueueFamily, ...]
    compute_queue_family: int  # the family vksycl submits to (`_queue_family`); -1: none
    max_compute_shared_memory_size: int
    max_compute_work_group_invocations: int
    max_compute_work_group_size: tuple[int, int, int]  # Vulkan order: x, y, z
    max_compute_work_group_count: tuple[int, int, int]
    max_storage_buffer_range: int
    max_push_constants_size: int
    min_storage_buffer_offset_alignment: int
    max_memory_allocation_size: int
    max_buffer_size: int | None  # Vulkan 1.3 / VK_KHR_maintenance4, else unknown
    subgroup_size: int
    min_subgroup_size: int
    max_subgroup_size: int
    subgroup_size_control: bool  # compute pipelines may require any size in min..max
    subgroup_in_compute: bool
    subgroup_operations: frozenset[str]
    max_compute_workgroup_subgroups: int | None  # Vulkan 1.3 / subgroup size control
    timestamp_period: float  # nanoseconds per timestamp tick
    timestamp_valid_bits: int  # on the compute queue family; 0: no timestamps there
    timestamp_compute_and_graphics: bool
    compute_units: int | None  # SMs / CUs / cores / CPU threads; None where Vulkan is silent
    # which of the SYCL devices over this physical device (VKSYCL_DEVICE_INSTANCES): each
    # instance gets a Vulkan logical device of its own
    instance: int = 0
    # the sub-group cooperative matrix multiply-adds (VK_KHR_cooperative_matrix): element
    # dtype names of A, B, C and the result, then M, N, K
    cooperative_matrices: tuple[tuple[str, str, str, str, int, int, int], ...] = ()
    # the application's handles of a device made from them; None: vksycl's own device
    native: NativeHandles | None = None

    @property
    def device_local_memory(self) -> int:
        return sum(h.size for h in self.memory_heaps if h.device_local)

    @property
    def identity(self) -> tuple[Any, ...]:
        """Stable across enumerations and processes: equal for the same instance of the
        same physical device."""
        return (self.driver_uuid, self.device_uuid, self.vendor_id, self.device_id, self.name,
                self.instance, self.native)


_lock = threading.Lock()
_cache: tuple[tuple[VulkanDeviceInfo, ...], tuple[int, int, int]] | None = None


def vulkan_devices(refresh: bool = False) -> tuple[VulkanDeviceInfo, ...]:
    """Every Vulkan physical device, in `vkEnumeratePhysicalDevices` order (cached)."""
    return _enumerate(refresh)[0]


def instance_version() -> tuple[int, int, int]:
    """The Vulkan version the loader supports."""
    return _enumerate(False)[1]


def _enumerate(refresh: bool) -> tuple[tuple[VulkanDeviceInfo, ...], tuple[int, int, int]]:
    global _cache
    with _lock:
        if _cache is None or refresh:
            _cache = _query()
        return _cache


def _queue_family(families: tuple[QueueFamily, ...]) -> int:
    """The queue family vksycl submits to: one for compute without graphics where the
    device has it (on an NVIDIA H100 a launch + wait took 21 µs there against 26-35 µs on
    the graphics family), unless it would lose the timestamps the first compute family
    has; else the first family with compute; -1 if none."""
    compute = [i for i, q in enumerate(families) if q.compute]
    if not compute:
        return -1
    first = compute[0]
    dedicated = [i for i in compute if not families[i].graphics and
                 (families[i].timestamp_valid_bits > 0 or
                  families[first].timestamp_valid_bits == 0)]
    return dedicated[0] if dedicated else first


def _query() -> tuple[tuple[VulkanDeviceInfo, ...], tuple[int, int, int]]:
    try:
        import vulkan as vk
    except (OSError, ImportError) as e:  # the cffi package dlopens the loader on import
        raise exception(errc.runtime, f"no Vulkan loader could be loaded ({e}): "
                                      f"{INSTALL_LOADER}") from e
    version = _decode_version(vk.vkEnumerateInstanceVersion())
    if version[:2] < _V11:
        raise exception(errc.runtime, f"the Vulkan loader is {_str(version)}; vksycl needs 1.1")
    api = vk.VK_MAKE_VERSION(*min(version[:2], _V13), 0)
    app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                               pApplicationName="vksycl", pEngineName="vksycl", apiVersion=api)
    messenger = None
    if validation.requested():
        messenger = validation.debug_messenger_info(vk)
        chain, layers, extensions = validation.instance_chain(vk, messenger)
        create = vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pNext=chain,
            pApplicationInfo=app, ppEnabledLayerNames=layers,
            ppEnabledExtensionNames=extensions)
    else:
        create = vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                         pApplicationInfo=app)
    try:
        instance = vk.vkCreateInstance(create, None)
    except vk.VkError as e:
        raise exception(errc.runtime, f"no Vulkan instance ({type(e).__name__}), so no "
                                      f"Vulkan driver was found: {INSTALL_DRIVER}") from e
    reporter = None
    if messenger is not None:
        reporter = vk.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT")(
            instance, messenger, None)
    try:
        handles = vk.vkEnumeratePhysicalDevices(instance)
        devices = tuple(_describe(vk, i, h, version, instance)
                        for i, h in enumerate(handles))
    except vk.VkError as e:
        raise exception(errc.runtime, f"enumerating Vulkan devices failed: {e!r}") from e
    finally:
        if reporter is not None:
            vk.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT")(
                instance, reporter, None)
        vk.vkDestroyInstance(instance, None)
    return devices, version


def describe_native(vk: Any, instance: Any, handle: Any) -> VulkanDeviceInfo:
    """What Vulkan says about an application's physical device (cffi handles of the
    `vulkan` package), with the index of the same device in vksycl's enumeration (-1
    where it has none)."""
    info = _describe(vk, -1, handle, instance_version(), instance)
    same = [d.index for d in vulkan_devices() if d.device_uuid == info.device_uuid
            and d.driver_uuid == info.driver_uuid]
    return replace(info, index=same[0]) if same else info


def _describe(vk: Any, index: int, handle: Any, instance_ver: tuple[int, int, int],
              instance: Any) -> VulkanDeviceInfo:
    ffi = vk.ffi
    extensions = frozenset(_text(ffi, e.extensionName)
                           for e in vk.vkEnumerateDeviceExtensionProperties(handle, None))
    base = vk.vkGetPhysicalDeviceProperties(handle)
    api_version = _decode_version(base.apiVersion)
    usable = min(api_version[:2], instance_ver[:2])

    props2 = ffi.new("VkPhysicalDeviceProperties2*")
    props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    prop_structs = _chain(vk, props2, _PROPERTY_STRUCTS, usable, extensions)
    vk.vkGetPhysicalDeviceProperties2(handle, props2)
    feats2 = ffi.new("VkPhysicalDeviceFeatures2*")
    feats2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
    feat_structs = _chain(vk, feats2, _FEATURE_STRUCTS, usable, extensions)
    vk.vkGetPhysicalDeviceFeatures2(handle, feats2)

    properties: dict[str, Any] = {}
    for s in prop_structs:
        properties.update(_fields(ffi, s[0]))
    features = {k: bool(v) for k, v in _fields(ffi, feats2.features).items()}
    for s in feat_structs:
        features.update((k, bool(v)) for k, v in _fields(ffi, s[0]).items())
    limits = _fields(ffi, props2.properties.limits)

    memory = vk.vkGetPhysicalDeviceMemoryProperties(handle)
    heaps = tuple(
        MemoryHeap(h.size, bool(h.flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT), h.flags)
        for h in memory.memoryHeaps[0 : memory.memoryHeapCount])
    types = tuple(
        MemoryType(t.heapIndex, t.propertyFlags,
                   bool(t.propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
                   bool(t.propertyFlags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT),
                   bool(t.propertyFlags & vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
                   bool(t.propertyFlags & vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT))
        for t in memory.memoryTypes[0 : memory.memoryTypeCount])
    families = tuple(
        QueueFamily(q.queueFlags, q.queueCount, q.timestampValidBits,
                    bool(q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT),
                    bool(q.queueFlags & vk.VK_QUEUE_GRAPHICS_BIT))
        for q in vk.vkGetPhysicalDeviceQueueFamilyProperties(handle))
    compute_family = _queue_family(families)

    name = _text(ffi, base.deviceName)
    vendor_id = base.vendorID
    device_type = _device_type(vk, base.deviceType)
    driver_id = _enum_name(vk, "VK_DRIVER_ID_", properties.get("driverID", 0))
    sg_size = properties.get("subgroupSize", 1)
    sg_min = properties.get("minSubgroupSize") or sg_size
    sg_max = properties.get("maxSubgroupSize") or sg_size
    stages = properties.get("subgroupSupportedStages", properties.get("supportedStages", 0))
    ops = properties.get("subgroupSupportedOperations",
                         properties.get("supportedOperations", 0))
    required_stages = properties.get("requiredSubgroupSizeStages", 0)
    max_alloc = properties.get("maxMemoryAllocationSize") or max((h.size for h in heaps),
                                                                 default=0)
    invocations = limits["maxComputeWorkGroupInvocations"]
    return VulkanDeviceInfo(
        index=index,
        name=name,
        vendor_id=vendor_id,
        vendor=_vendor_name(vk, vendor_id),
        device_id=base.deviceID,
        device_type=device_type,
        api_version=api_version,
        driver_version=base.driverVersion,
        driver_version_string=_driver_version(vendor_id, base.driverVersion),
        driver_id=driver_id,
        driver_name=properties.get("driverName", ""),
        driver_info=properties.get("driverInfo", ""),
        device_uuid=bytes(properties.get("deviceUUID", ())),
        driver_uuid=bytes(properties.get("driverUUID", ())),
        extensions=extensions,
        features=MappingProxyType(features),
        properties=MappingProxyType(properties),
        limits=MappingProxyType(limits),
        memory_heaps=heaps,
        memory_types=types,
        queue_families=families,
        compute_queue_family=compute_family,
        max_compute_shared_memory_size=limits["maxComputeSharedMemorySize"],
        max_compute_work_group_invocations=invocations,
        max_compute_work_group_size=tuple(limits["maxComputeWorkGroupSize"]),
        max_compute_work_group_count=tuple(limits["maxComputeWorkGroupCount"]),
        max_storage_buffer_range=limits["maxStorageBufferRange"],
        max_push_constants_size=limits["maxPushConstantsSize"],
        min_storage_buffer_offset_alignment=limits["minStorageBufferOffsetAlignment"],
        max_memory_allocation_size=max_alloc,
        max_buffer_size=properties.get("maxBufferSize"),
        subgroup_size=sg_size,
        min_subgroup_size=sg_min,
        max_subgroup_size=sg_max,
        subgroup_size_control=bool(features.get("subgroupSizeControl")
                                   and required_stages & vk.VK_SHADER_STAGE_COMPUTE_BIT),
        subgroup_in_compute=bool(stages & vk.VK_SHADER_STAGE_COMPUTE_BIT),
        subgroup_operations=frozenset(n for bit, n in enumerate(_SUBGROUP_OPS)
                                      if ops & (1 << bit)),
        max_compute_workgroup_subgroups=properties.get("maxComputeWorkgroupSubgroups"),
        timestamp_period=float(limits["timestampPeriod"]),
        timestamp_valid_bits=families[compute_family].timestamp_valid_bits
        if compute_family >= 0 else 0,
        timestamp_compute_and_graphics=bool(limits["timestampComputeAndGraphics"]),
        compute_units=_compute_units(properties, device_type, driver_id),
        cooperative_matrices=_cooperative_matrices(vk, instance, handle, extensions),
    )


def _cooperative_matrices(vk: Any, instance: Any, handle: Any, extensions: frozenset[str]
                          ) -> tuple[tuple[str, str, str, str, int, int, int], ...]:
    """The sub-group-scope combinations the device lists, with element types numpy has."""
    if COOPERATIVE_MATRIX_EXTENSION not in extensions:
        return ()
    query = vk.vkGetInstanceProcAddr(instance,
                                     "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    found = []
    for p in query(handle):
        types = [_COMPONENT_TYPES.get(t) for t in (p.AType, p.BType, p.CType, p.ResultType)]
        if p.scope == _SUBGROUP_SCOPE and None not in types and not p.saturatingAccumulation:
            found.append((*types, p.MSize, p.NSize, p.KSize))
    return tuple(sorted(set(found)))


def _chain(vk: Any, head: Any, table: tuple, usable: tuple[int, int],
           extensions: frozenset[str]) -> list[Any]:
    """Link every struct of `table` this device can fill after `head`; returns them (the
    caller keeps them alive until the query has run)."""
    ffi = vk.ffi
    structs = []
    for struct, stype, needed, superseded in table:
        if superseded is not None and usable >= superseded:
            continue
        if (usable < needed) if isinstance(needed, tuple) else (needed not in extensions):
            continue
        s = ffi.new(f"{struct}*")
        s.sType = getattr(vk, f"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_{stype}")
        structs.append(s)
    prev = head
    for s in structs:
        prev.pNext = ffi.cast("void*", s)
        prev = s
    return structs


def _fields(ffi: Any, struct: Any) -> dict[str, Any]:
    """A cffi struct as a dict: char arrays as str, other arrays as tuples, nested
    structs as dicts (nothing in it refers to cffi memory)."""
    out: dict[str, Any] = {}
    for name, field in ffi.typeof(struct).fields:
        if name in ("sType", "pNext"):
            continue
        value = getattr(struct, name)
        t = field.type
        if t.kind == "array":
            value = _text(ffi, value) if t.item.cname == "char" else tuple(value)
        elif t.kind == "struct":
            value = _fields(ffi, value)
        out[name] = value
    return out


def _text(ffi: Any, value: Any) -> str:
    """A char array as str (the cffi package's wrappers sometimes convert it already)."""
    return value if isinstance(value, str) else ffi.string(value).decode(errors="replace")


def _decode_version(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def _str(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def _driver_version(vendor_id: int, v: int) -> str:
    """Drivers pack their versions differently; these are the encodings in common use."""
    if vendor_id == 0x10DE:  # NVIDIA: 10.8.8.6 bits
        return f"{v >> 22}.{(v >> 14) & 0xFF}.{(v >> 6) & 0xFF}.{v & 0x3F}"
    if vendor_id == 0x8086 and os.name == "nt":  # Intel on Windows: 18.14 bits
        return f"{v >> 14}.{v & 0x3FFF}"
    return _str(_decode_version(v))


def _device_type(vk: Any, t: int) -> str:
    return {
        vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete_gpu",
        vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated_gpu",
        vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual_gpu",
        vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu",
    }.get(t, "other")


def _enum_name(vk: Any, prefix: str, value: int) -> str:
    """The registry name of an enum value, without its prefix; "" for 0 or unknown."""
    if not value:
        return ""
    names = [n for n in dir(vk) if n.startswith(prefix) and getattr(vk, n) == value
             and not n.endswith("_KHR")]
    return names[0][len(prefix):] if names else str(value)


def _vendor_name(vk: Any, vendor_id: int) -> str:
    if vendor_id in _PCI_VENDORS:
        return _PCI_VENDORS[vendor_id]
    name = _enum_name(vk, "VK_VENDOR_ID_", vendor_id)
    return name.capitalize() if name and not name.isdigit() else f"0x{vendor_id:04x}"


def _compute_units(props: Mapping[str, Any], device_type: str, driver_id: str) -> int | None:
    """Where a vendor extension counts them: NVIDIA SMs, AMD compute units, ARM shader
    cores; for a CPU device, the host threads it runs compute on. Otherwise unknown."""
    if props.get("shaderSMCount"):
        return int(props["shaderSMCount"])
    if props.get("activeComputeUnitCount"):
        return int(props["activeComputeUnitCount"])
    if props.get("computeUnitsPerShaderArray"):
        return int(props["shaderEngineCount"] * props["shaderArraysPerEngineCount"]
                   * props["computeUnitsPerShaderArray"])
    if props.get("shaderCoreCount"):
        return int(props["shaderCoreCount"])
    if device_type == "cpu":
        cpus = os.cpu_count() or 1
        if driver_id == "MESA_LLVMPIPE":
            threads = os.environ.get("LP_NUM_THREADS", "")
            cpus = int(threads) if threads.isdigit() and int(threads) > 0 else cpus
            return min(cpus, _LLVMPIPE_MAX_THREADS)
        return cpus
    return None


def as_handle(value: Any, what: str) -> int:
    """A Vulkan handle as an integer: given as one, or as a cffi handle of the `vulkan`
    package (an application's)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        import vulkan as vk
        return int(vk.ffi.cast("uintptr_t", value))
    except (TypeError, ImportError):
        raise exception(errc.invalid, f"{what} must be a Vulkan handle (an integer or a "
                        f"handle of the vulkan package), not {type(value).__name__}") from None
