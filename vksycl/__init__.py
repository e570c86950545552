"""vksycl: SYCL's programming model in Python, on Vulkan.

    import vksycl as sycl
    from vksycl.ext.oneapi import experimental as syclexp
"""

# first: from here on the modules mypyc compiled, if built from these sources, load
from . import mypyc_modules  # noqa: F401  (installs its finder)

# isort: split
from . import info
from ._version import __version__ as __version__
from .access import access_mode, host_task, no_init, read_only, read_write, write_only
from .compiler import MATH as _MATH
from .compiler import VEC_ALIASES as _VEC_ALIASES
from .compiler import (
    all_of_group,
    any_of_group,
    atomic_ref,
    bit_and,
    bit_or,
    bit_xor,
    exclusive_scan_over_group,
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
    struct,
    unroll,
    vec,
)
from .exceptions import errc, exception, exception_list
from .kernels.bundle import build, bundle_state, compile, kernel, kernel_bundle, link
from .kernels.bundle_members import get_kernel_ids, kernel_id
from .kernels.bundle_selection import get_kernel_bundle, has_kernel_bundle, is_compatible
from .kernels.reduction import reduction, span
from .properties import property
from .ranges import id, nd_range, range
from .runtime.aspects import aspect
from .runtime.buffers import accessor, buffer, host_accessor, local_accessor
from .runtime.context import context
from .runtime.event import event
from .runtime.handler import handler, interop_handle
from .runtime.interop import (
    get_native,
    make_context,
    make_device,
    make_queue,
    native_event,
    native_queue,
)
from .runtime.malloc import (
    aligned_alloc_device,
    aligned_alloc_host,
    aligned_alloc_shared,
    free,
    get_pointer_device,
    get_pointer_type,
    malloc,
    malloc_device,
    malloc_host,
    malloc_shared,
    usm_memory_stats,
    usm_release_cached,
)
from .runtime.platform import backend, device, platform
from .runtime.queue import queue
from .runtime.selectors import (
    accelerator_selector_v,
    aspect_selector,
    cpu_selector_v,
    default_selector_v,
    gpu_selector_v,
)
from .runtime.usm import alloc as _alloc
from .runtime.usm import ptr
from .types import (
    bool_,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)


class usm:
    """`sycl::usm`: `usm.alloc.host`, `.device`, `.shared`, `.unknown`, the kinds of USM."""

    alloc = _alloc


# SYCL math functions (sycl.sqrt, sycl.fmin, ...): compiled in kernels, numpy on the host
globals().update(_MATH)
# SYCL 2020's vector aliases (sycl.float4, sycl.int2, sycl.half8, ...)
globals().update(_VEC_ALIASES)

__all__ = [
    "accelerator_selector_v",
    "access_mode",
    "accessor",
    "aligned_alloc_device",
    "aligned_alloc_host",
    "aligned_alloc_shared",
    "all_of_group",
    "any_of_group",
    "aspect",
    "aspect_selector",
    "atomic_ref",
    "backend",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bool_",
    "buffer",
    "build",
    "bundle_state",
    "compile",
    "context",
    "cpu_selector_v",
    "default_selector_v",
    "device",
    "double",
    "errc",
    "event",
    "exception",
    "exception_list",
    "exclusive_scan_over_group",
    "float16",
    "float32",
    "float64",
    "free",
    "get_kernel_bundle",
    "get_kernel_ids",
    "get_native",
    "get_pointer_device",
    "get_pointer_type",
    "gpu_selector_v",
    "group_barrier",
    "group_broadcast",
    "half",
    "handler",
    "has_kernel_bundle",
    "host_accessor",
    "host_task",
    "id",
    "inclusive_scan_over_group",
    "info",
    "int8",
    "int16",
    "int32",
    "int64",
    "interop_handle",
    "is_compatible",
    "kernel",
    "kernel_bundle",
    "kernel_id",
    "link",
    "local_accessor",
    "logical_and",
    "logical_or",
    "make_context",
    "make_device",
    "make_queue",
    "malloc",
    "malloc_device",
    "malloc_host",
    "malloc_shared",
    "maximum",
    "memory_order",
    "memory_scope",
    "minimum",
    "multiplies",
    "native",
    "native_event",
    "native_queue",
    "nd_range",
    "no_init",
    "none_of_group",
    "permute_group_by_xor",
    "platform",
    "plus",
    "private_array",
    "property",
    "ptr",
    "queue",
    "range",
    "read_only",
    "read_write",
    "reduce_over_group",
    "reduction",
    "select_from_group",
    "shift_group_left",
    "shift_group_right",
    "span",
    "struct",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "unroll",
    "usm",
    "usm_memory_stats",
    "usm_release_cached",
    "vec",
    "write_only",
]
