"""`sycl.info`: the descriptors `get_info` takes, and the enums some of them return.

SYCL spells queries as types (`info::device::name`); here each is a unique `descriptor`
object, grouped in one class per namespace (`info.device.name`). Namespaces for other
objects (`info.kernel`, ...) are added here the same way: a class of `descriptor()`s.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class descriptor:
    """One `get_info` query; hashable by identity, named by the class it is defined in."""

    __slots__ = ("name", "namespace")

    def __init__(self) -> None:
        self.namespace = ""
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.namespace = owner.__name__
        self.name = name

    def __repr__(self) -> str:
        return f"info.{self.namespace}.{self.name}"


class device_type(enum.Enum):
    cpu = "cpu"
    gpu = "gpu"
    accelerator = "accelerator"
    custom = "custom"
    automatic = "automatic"
    host = "host"
    all = "all"


class local_mem_type(enum.Enum):
    none = "none"
    local = "local"
    global_ = "global"


class event_command_status(enum.Enum):
    submitted = "submitted"
    running = "running"
    complete = "complete"


class platform:
    name = descriptor()
    vendor = descriptor()
    version = descriptor()
    profile = descriptor()
    extensions = descriptor()


class device:
    device_type = descriptor()
    vendor_id = descriptor()
    name = descriptor()
    vendor = descriptor()
    driver_version = descriptor()
    version = descriptor()
    backend_version = descriptor()
    extensions = descriptor()
    aspects = descriptor()
    is_available = descriptor()
    platform = descriptor()
    max_compute_units = descriptor()
    max_work_item_dimensions = descriptor()
    max_work_item_sizes_1d = descriptor()
    max_work_item_sizes_2d = descriptor()
    max_work_item_sizes_3d = descriptor()
    max_work_group_size = descriptor()
    max_num_sub_groups = descriptor()
    sub_group_sizes = descriptor()
    local_mem_type = descriptor()
    local_mem_size = descriptor()
    global_mem_size = descriptor()
    max_mem_alloc_size = descriptor()
    mem_base_addr_align = descriptor()
    host_unified_memory = descriptor()
    profiling_timer_resolution = descriptor()
    # vksycl-specific: the raw Vulkan facts (a `VulkanDeviceInfo`) and the ones the runtime
    # and compiler ask for most.
    ext_vksycl_vulkan_info = descriptor()
    ext_vksycl_vulkan_index = descriptor()
    ext_vksycl_max_storage_buffer_range = descriptor()
    ext_vksycl_max_push_constants_size = descriptor()
    ext_vksycl_max_compute_work_group_count = descriptor()
    ext_vksycl_max_compute_work_group_size = descriptor()
    ext_vksycl_timestamp_period = descriptor()
    ext_vksycl_timestamp_valid_bits = descriptor()
    ext_vksycl_min_storage_buffer_offset_alignment = descriptor()
    ext_vksycl_sub_group_operations = descriptor()


class context:
    devices = descriptor()
    platform = descriptor()
    reference_count = descriptor()
    backend_version = descriptor()


class queue:
    context = descriptor()
    device = descriptor()
    reference_count = descriptor()


class event:
    command_execution_status = descriptor()


class event_profiling:
    command_submit = descriptor()
    command_start = descriptor()
    command_end = descriptor()


class kernel:
    num_args = descriptor()
    attributes = descriptor()
    function_name = descriptor()
    context = descriptor()


class kernel_device_specific:
    global_work_size = descriptor()
    work_group_size = descriptor()
    compile_work_group_size = descriptor()
    preferred_work_group_size_multiple = descriptor()
    private_mem_size = descriptor()
    max_num_sub_groups = descriptor()
    compile_num_sub_groups = descriptor()
    max_sub_group_size = descriptor()
    compile_sub_group_size = descriptor()
    # vksycl-specific: bytes of work-group local memory the kernel declares
    ext_vksycl_local_mem_size = descriptor()


# -- sycl_ext_oneapi_matrix: what `experimental.device.matrix_combinations` returns ----------

class matrix_type(enum.Enum):
    """Element types of joint_matrix combinations (their numpy dtype names as values)."""

    fp16 = "float16"
    fp32 = "float32"
    fp64 = "float64"
    sint8 = "int8"
    sint16 = "int16"
    sint32 = "int32"
    sint64 = "int64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"


@dataclass(frozen=True)
class combination:
    """One multiply-add shape a device runs: D (MxN, dtype) = A (MxK, atype) * B (KxN,
    btype) + C (MxN, ctype). The sizes are exact where the device lists shapes (the
    max_* are then 0), as in sycl_ext_oneapi_matrix."""

    max_msize: int
    max_nsize: int
    max_ksize: int
    msize: int
    nsize: int
    ksize: int
    atype: matrix_type
    btype: matrix_type
    ctype: matrix_type
    dtype: matrix_type


class experimental:
    """`sycl::ext::oneapi::experimental::info`."""

    class device:
        matrix_combinations = descriptor()
