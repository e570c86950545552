"""`sycl::ext::oneapi::experimental` (`syclexp`): re-exports only.

Free function kernels (seed 004), kernel properties, enqueue functions, work-group
memory, kernel bundles of free function kernels, kernels from GLSL / SPIR-V source,
if_device / if_host (seed 002), device_global (seed 001), virtual functions (seed 000),
command graphs (seed 003), `matrix` (sycl_ext_oneapi_matrix) with its `info` query,
`make_usm_from_native` (USM over an application's VkBuffer), an application's semaphores
in queues (`make_external_semaphore`), and memory exported and imported as file
descriptors (`alloc_exportable_device_mem`, `import_external_memory`), which CUDA sees
without a copy (`cuda_view`), and memory CUDA allocates, which vksycl sees without a copy
(`cuda_exportable`).
"""

from ....compiler import (
    get_work_group_scratch_memory,
    nd_range_kernel,
    single_task_kernel,
    work_group_memory,
)
from ....compiler.device_global import (
    device_global,
    device_image_scope,
    host_access_none,
    host_access_read,
    host_access_read_write,
    host_access_write,
    implement_in_csr,
    init_mode_reprogram,
    init_mode_reset,
)
from ....compiler.printing import printf
from ....compiler.structs import storage_for
from ....graph import (
    command_graph,
    dynamic_command_group,
    dynamic_parameter,
    graph_state,
    node,
    node_type,
    property,
    queue_state,
)
from ....info import experimental as info
from ....kernels.bundle_members import get_kernel_id
from ....kernels.bundle_selection import (
    get_kernel_bundle,
    get_kernel_info,
    has_kernel_bundle,
    is_compatible,
)
from ....kernels.device_globals import get_device_globals
from ....kernels.free_function import (
    is_kernel,
    is_nd_range_kernel,
    is_single_task_kernel,
    kernel_function,
    kernel_function_s,
    nd_launch,
    single_task,
)
from ....kernels.if_device import if_device, if_host
from ....kernels.properties import (
    device_has,
    fast_math,
    fp_contract,
    launch_config,
    properties,
    sub_group_size,
    work_group_size,
    work_group_size_hint,
)
from ....kernels.source import (
    build,
    build_options,
    create_kernel_bundle_from_source,
    is_source_kernel_bundle_supported,
    kernel_args,
    save_log,
    source_language,
)
from ....kernels.virtual import (
    assume_indirect_calls,
    assume_indirect_calls_to,
    indirectly_callable,
    indirectly_callable_in,
)
from ....properties import work_group_scratch_size
from ....runtime.cuda_export import cuda_allocation, cuda_exportable
from ....runtime.cuda_interop import cuda_device_of, cuda_memory, cuda_view
from ....runtime.external_memory import (
    alloc_exportable_device_mem,
    export_device_mem_handle,
    exportable_mem_size,
    external_mem,
    external_mem_descriptor,
    external_mem_handle_type,
    free_exportable_memory,
    import_external_memory,
    map_external_linear_memory,
    release_external_memory,
    resource_fd,
    unmap_external_linear_memory,
)
from ....runtime.external_semaphores import (
    external_semaphore,
    make_external_semaphore,
    release_external_semaphore,
    semaphore_type,
)
from ....runtime.native_usm import make_usm_from_native, native_memory
from . import matrix

__all__ = [
    "alloc_exportable_device_mem",
    "assume_indirect_calls",
    "assume_indirect_calls_to",
    "build",
    "build_options",
    "command_graph",
    "create_kernel_bundle_from_source",
    "cuda_allocation",
    "cuda_device_of",
    "cuda_exportable",
    "cuda_memory",
    "cuda_view",
    "device_global",
    "device_has",
    "device_image_scope",
    "dynamic_command_group",
    "dynamic_parameter",
    "export_device_mem_handle",
    "exportable_mem_size",
    "external_mem",
    "external_mem_descriptor",
    "external_mem_handle_type",
    "external_semaphore",
    "fast_math",
    "fp_contract",
    "free_exportable_memory",
    "get_device_globals",
    "get_kernel_bundle",
    "get_kernel_id",
    "get_kernel_info",
    "get_work_group_scratch_memory",
    "graph_state",
    "has_kernel_bundle",
    "host_access_none",
    "host_access_read",
    "host_access_read_write",
    "host_access_write",
    "if_device",
    "if_host",
    "implement_in_csr",
    "import_external_memory",
    "indirectly_callable",
    "indirectly_callable_in",
    "info",
    "init_mode_reprogram",
    "init_mode_reset",
    "is_compatible",
    "is_kernel",
    "is_nd_range_kernel",
    "is_single_task_kernel",
    "is_source_kernel_bundle_supported",
    "kernel_args",
    "kernel_function",
    "kernel_function_s",
    "launch_config",
    "make_external_semaphore",
    "make_usm_from_native",
    "map_external_linear_memory",
    "matrix",
    "native_memory",
    "nd_launch",
    "nd_range_kernel",
    "node",
    "node_type",
    "printf",
    "properties",
    "property",
    "queue_state",
    "release_external_memory",
    "release_external_semaphore",
    "resource_fd",
    "save_log",
    "semaphore_type",
    "single_task",
    "single_task_kernel",
    "source_language",
    "storage_for",
    "sub_group_size",
    "unmap_external_linear_memory",
    "work_group_memory",
    "work_group_scratch_size",
    "work_group_size",
    "work_group_size_hint",
]
