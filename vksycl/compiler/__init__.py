"""The kernel compiler: Python functions to validated SPIR-V kernels.

Frontend (`frontend`, `intrinsics`, `workitem`) → typed IR (`ir`) → passes and codegen
(`codegen`) → reflection and caches (`kernel`). It knows nothing of queues: launching a
compiled kernel is the kernel front ends' job (`vksycl.kernels.launch`).
"""

from .device import (
    GROUP_FUNCTIONS,
    MATH,
    all_of_group,
    any_of_group,
    atomic_ref,
    bit_and,
    bit_or,
    bit_xor,
    exclusive_scan_over_group,
    get_work_group_scratch_memory,
    group_barrier,
    group_broadcast,
    inclusive_scan_over_group,
    logical_and,
    logical_or,
    maximum,
    memory_order,
    memory_scope,
    minimum,
    multiplies,
    native,
    none_of_group,
    permute_group_by_xor,
    plus,
    private_array,
    reduce_over_group,
    select_from_group,
    shift_group_left,
    shift_group_right,
    this_work_item,
    unroll,
    work_group_memory,
)
from .free_function import FreeFunctionKernel, nd_range_kernel, single_task_kernel
from .kernel import COMPILER_VERSION, CompiledKernel
from .structs import struct
from .vectors import aliases as _vec_aliases
from .vectors import vec

VEC_ALIASES = _vec_aliases()

__all__ = [
    "COMPILER_VERSION", "GROUP_FUNCTIONS", "MATH", "VEC_ALIASES", "CompiledKernel",
    "FreeFunctionKernel",
    "all_of_group", "any_of_group", "atomic_ref", "bit_and", "bit_or", "bit_xor",
    "exclusive_scan_over_group", "get_work_group_scratch_memory", "group_barrier",
    "group_broadcast", "inclusive_scan_over_group", "logical_and", "logical_or", "maximum",
    "memory_order", "memory_scope", "minimum", "multiplies", "native", "nd_range_kernel",
    "none_of_group", "permute_group_by_xor", "plus", "private_array", "reduce_over_group",
    "select_from_group", "shift_group_left", "shift_group_right", "single_task_kernel",
    "struct", "this_work_item", "unroll", "vec", "work_group_memory",
]
