"""`sycl::ext::oneapi::experimental` (`syclexp`): re-exports only.

Free function kernels (seed 004), kernel properties, enqueue functions, work-group
memory, kernel bundles of free function kernels, kernels from GLSL / SPIR-V source, and
if_device / if_host (seed 002), virtual functions (seed 000).
"""

from ....compiler import (
    get_work_group_scratch_memory,
    nd_range_kernel,
    single_task_kernel,
    work_group_memory,
    work_group_scratch_size,
)
from ....free_function_kernels import (
    is_kernel,
    is_nd_range_kernel,
    is_single_task_kernel,
    kernel_function,
    kernel_function_s,
    nd_launch,
    single_task,
)
from ....if_device import if_device, if_host
from ....kernel_bundle import (
    get_kernel_bundle,
    get_kernel_id,
    get_kernel_info,
    has_kernel_bundle,
    is_compatible,
)
from ....kernel_properties import (
    device_has,
    launch_config,
    properties,
    sub_group_size,
    work_group_size,
    work_group_size_hint,
)
from ....source_kernels import (
    build,
    build_options,
    create_kernel_bundle_from_source,
    is_source_kernel_bundle_supported,
    kernel_args,
    save_log,
    source_language,
)
from ....virtual_functions import (
    assume_indirect_calls,
    assume_indirect_calls_to,
    indirectly_callable,
    indirectly_callable_in,
    storage_for,
)

__all__ = [
    "assume_indirect_calls", "assume_indirect_calls_to",
    "build", "build_options", "create_kernel_bundle_from_source", "device_has",
    "get_kernel_bundle", "get_kernel_id", "get_kernel_info",
    "get_work_group_scratch_memory", "has_kernel_bundle", "if_device", "if_host",
    "indirectly_callable", "indirectly_callable_in",
    "is_compatible", "is_kernel",
    "is_nd_range_kernel", "is_single_task_kernel", "is_source_kernel_bundle_supported",
    "kernel_args", "kernel_function", "kernel_function_s", "launch_config", "nd_launch",
    "nd_range_kernel", "properties", "save_log", "single_task", "single_task_kernel",
    "source_language", "storage_for", "sub_group_size", "work_group_memory",
    "work_group_scratch_size", "work_group_size", "work_group_size_hint",
]
