"""Kernel bundles and their kernels (SYCL 2020 section 4.11, with the free function
kernel additions of seed 004 and the kernels-from-source bundles): a `kernel_bundle` holds
kernels for some devices of a context in one `bundle_state`, and the state transitions
compile, link and build make new bundles from it.

A `kernel` wraps an implementation that knows how to describe itself and how to build the
command of one launch from arguments set by index (`handler.set_arg`); free function
kernels (`bundle_members`) and kernels built from GLSL or SPIR-V source provide one each.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from mypy_extensions import mypyc_attr

import spirv_gen

from .. import info
from ..exceptions import invalid
from ..ranges import range
from ..runtime import device_globals
from .bundle_members import free_member, kernel_id
from .free_function import free_function_kernel


class bundle_state(enum.Enum):
    input = "input"
    object = "object"
    executable = "executable"
    ext_oneapi_source = "ext_oneapi_source"


# -- kernel objects ----------------------------------------------------------------------------

# Python classes when compiled (`mypyc_modules`): kernels and bundles are weakly
# referenced
@mypyc_attr(native_class=False)
class kernel:
    """A kernel of an executable bundle: queried with `get_info`, enqueued through a handler
    with `set_arg` / `set_args` and `parallel_for(nd_range, k)` or `single_task(k)`."""

    __slots__ = ("__weakref__", "_accepted", "_bundle", "_device_ids", "_impl")

    def __init__(self, impl: Any, bundle: kernel_bundle) -> None:
        self._impl = impl
        self._bundle = bundle
        self._device_ids = frozenset(id(d.vulkan) for d in bundle.get_devices())
        self._accepted: Any = None  # the device of the last enqueue (devices stay theirs)

    def get_context(self) -> Any:
        return self._bundle.get_context()

    def get_kernel_bundle(self) -> kernel_bundle:
        return self._bundle

    def get_backend(self) -> Any:
        return self._bundle.get_backend()

    def __repr__(self) -> str:
        return f"sycl.kernel({self._impl.name})"

    def spirv(self, device: Any = None) -> bytes:
        """The SPIR-V module the kernel runs on `device` (the bundle's first by default)."""
        return self._impl.binary(device or self._bundle.get_devices()[0])

    def spirv_asm(self, device: Any = None) -> str:
        """`spirv()` as SPIR-V assembly text."""
        return spirv_gen.disassemble(self.spirv(device))

    def _vksycl_command(self, device: Any, launch: Any, args: Mapping[int, Any] | tuple,
                        properties: Any, context: Any, required: list | None) -> Any:
        """The command of one enqueue (called by the handler); pointer arguments must
        belong to `context`, the queue's, and accessors be among the command group's
        `required`."""
        if device is not self._accepted:
            if id(device.vulkan) not in self._device_ids:
                raise invalid(f"kernel {self._impl.name} was not built for "
                              f"{device.vulkan.name}")
            self._accepted = device
        return self._impl.command(device, launch, args, properties, context, required,
                                  self._bundle)

    def get_info(self, param: Any, device: Any = None) -> Any:
        impl = self._impl
        if param is info.kernel.num_args:
            return impl.num_args()
        if param is info.kernel.attributes:
            return impl.attributes()
        if param is info.kernel.function_name:
            return impl.name
        if param is info.kernel.context:
            return self.get_context()
        if getattr(param, "namespace", "") != "kernel_device_specific":
            raise invalid(f"{param!r} is not a kernel information descriptor")
        if device is None:
            raise invalid(f"{param!r} is device specific: pass the device")
        if id(device.vulkan) not in self._device_ids:
            raise invalid(f"the kernel bundle of {impl.name} has no device "
                          f"{device.vulkan.name}")
        return _device_info(impl, param, device)


def _device_info(impl: Any, param: Any, device: Any) -> Any:
    ds = info.kernel_device_specific
    vk = device.vulkan
    sub = int(device.get_info(info.device.sub_group_sizes)[0])
    required = impl.required_local()
    if param is ds.global_work_size:
        raise invalid("global_work_size is defined for built-in kernels only")
    if param is ds.compile_work_group_size:
        return range(*(*(required or ()), 0, 0, 0)[:3])
    if param is ds.compile_sub_group_size:
        return impl.required_sub_group()
    if param is ds.max_sub_group_size:
        return impl.required_sub_group() or sub
    if param is ds.preferred_work_group_size_multiple:
        return sub
    limit = vk.max_compute_work_group_invocations
    if required is not None:
        n = 1
        for s in required:
            n *= s
        limit = n
    if param is ds.work_group_size:
        return limit
    if param is ds.max_num_sub_groups:
        return -(-limit // (impl.required_sub_group() or sub))
    if param is ds.compile_num_sub_groups:
        return 0
    local_bytes, private_bytes = impl.memory(device)
    if param is ds.private_mem_size:
        return private_bytes
    if param is ds.ext_vksycl_local_mem_size:
        return local_bytes
    raise invalid(f"{param!r} is not a kernel information descriptor")


# -- bundles -----------------------------------------------------------------------------------

@mypyc_attr(native_class=False)
class kernel_bundle:
    """A set of kernels for some devices of a context, in one `bundle_state`."""

    def __init__(self, context: Any, devices: list[Any], state: bundle_state,
                 members: Iterable[Any], named: dict[str, Any] | None = None,
                 source: Any = None) -> None:
        self._context = context
        self._devices = list(devices)
        self._state = state
        self._members = list(members)
        self._named = dict(named or {})
        self._source = source
        # weak: a kernel holds its bundle, and a bundle that only cycles keep alive would
        # hold its device images' device_global instances until the collector runs
        self._kernels: weakref.WeakValueDictionary[int, kernel] = weakref.WeakValueDictionary()
        if state is bundle_state.executable:  # a device image: its device_global instances
            for d in self._devices:
                device_globals.add_image(self, d, [
                    e for m in self._members if hasattr(m, "compiled")
                    and m.why_incompatible(d) is None for e in m.compiled(d).device_globals])

    # -- queries -------------------------------------------------------------------------
    def get_context(self) -> Any:
        return self._context

    def get_devices(self) -> list[Any]:
        return list(self._devices)

    def get_backend(self) -> Any:
        return self._context.get_backend()

    @property
    def state(self) -> bundle_state:
        return self._state

    def get_bundle_state(self) -> bundle_state:
        return self._state

    def empty(self) -> bool:
        return not self._members and not self._named and self._source is None

    def get_kernel_ids(self) -> list[kernel_id]:
        return [m.id for m in self._members]

    def has_kernel(self, kid: kernel_id, dev: Any = None) -> bool:
        m = kid._impl
        if not any(x is m for x in self._members):
            return False
        return dev is None or (_has_device(self._devices, dev)
                               and m.why_incompatible(dev) is None)

    def get_kernel(self, kid: kernel_id) -> kernel:
        self._require_executable("get_kernel")
        if not self.has_kernel(kid):
            raise invalid(f"the kernel bundle does not contain {kid.get_name()}")
        return self._kernel(kid._impl)

    def _kernel(self, impl: Any) -> kernel:
        k = self._kernels.get(id(impl))
        if k is None:
            k = self._kernels[id(impl)] = kernel(impl, self)
        return k

    def _require_executable(self, what: str) -> None:
        if self._state is not bundle_state.executable:
            raise invalid(f"{what} needs an executable kernel bundle; this one is "
                          f"{self._state.name}")

    # -- seed 004 and the kernel compiler --------------------------------------------------
    def _find(self, f: Any) -> Any:
        if isinstance(f, str):
            name = f.removeprefix("__sycl_kernel_")
            found = self._named.get(f) or self._named.get(name)
            return found or next((m for m in self._members if m.name == name), None)
        m = free_member(free_function_kernel(f))
        return m if any(x is m for x in self._members) else None

    def ext_oneapi_has_kernel(self, f: Any, dev: Any = None) -> bool:
        """Whether the bundle holds the kernel (a free function kernel, or a kernel name
        of a bundle built from source), and with `dev`, whether it runs there."""
        m = self._find(f)
        if m is None:
            return False
        return dev is None or (_has_device(self._devices, dev)
                               and m.why_incompatible(dev) is None)

    def ext_oneapi_get_kernel(self, f: Any) -> kernel:
        self._require_executable("ext_oneapi_get_kernel")
        m = self._find(f)
        if m is None:
            name = f if isinstance(f, str) else getattr(f, "__name__", repr(f))
            raise invalid(f"the kernel bundle does not contain the kernel {name}")
        return self._kernel(m)

    def ext_oneapi_get_raw_kernel_name(self, name: str) -> str:
        m = self._find(name)
        if m is None:
            raise invalid(f"the kernel bundle does not contain the kernel {name}")
        return getattr(m, "entry", f"__sycl_kernel_{m.name}")

    def __repr__(self) -> str:
        names = [m.name for m in self._members] + list(self._named)
        return f"sycl.kernel_bundle({self._state.name}, {names})"


def _has_device(devices: list[Any], dev: Any) -> bool:
    return any(d is dev or d == dev for d in devices)


# -- state transitions (SYCL 2020 4.11.12) -----------------------------------------------------

def compile(bundle: kernel_bundle, devices: Any = None, properties: Any = ()) -> kernel_bundle:
    """An input bundle's kernels as an object bundle."""
    if bundle.state is not bundle_state.input:
        raise invalid("compile takes a kernel bundle in the input state")
    return _transition(bundle, devices, bundle_state.object)


def link(bundles: Any, devices: Any = None, properties: Any = ()) -> kernel_bundle:
    """Object bundles joined into one executable bundle."""
    if isinstance(bundles, kernel_bundle):
        bundles = [bundles]
    if not bundles or any(b.state is not bundle_state.object for b in bundles):
        raise invalid("link takes kernel bundles in the object state")
    members: list[Any] = []
    for b in bundles:
        members += [m for m in b._members if not any(m is x for x in members)]
    first = bundles[0]
    devs = list(devices) if devices is not None else first.get_devices()
    out = kernel_bundle(first.get_context(), devs, bundle_state.object, members)
    return _transition(out, devs, bundle_state.executable)


def build(bundle: kernel_bundle, devices: Any = None, properties: Any = ()) -> kernel_bundle:
    """An input bundle's kernels as an executable bundle (compiled for its devices now)."""
    if bundle.state is not bundle_state.input:
        raise invalid("sycl.build takes a kernel bundle in the input state (bundles from "
                      "source are built with syclexp.build)")
    return _transition(bundle, devices, bundle_state.executable)


def _transition(bundle: kernel_bundle, devices: Any, state: bundle_state) -> kernel_bundle:
    devs = list(devices) if devices is not None else bundle.get_devices()
    for d in devs:
        if not _has_device(bundle.get_devices(), d):
            raise invalid(f"device {d.vulkan.name} is not a device of the kernel bundle")
    members = bundle._members
    if state is bundle_state.executable:
        for m in members:
            for d in devs:
                m.why_incompatible(d)  # compiles now: build errors surface here
    return kernel_bundle(bundle.get_context(), devs, state, members)


__all__ = ["build", "bundle_state", "compile", "kernel", "kernel_bundle", "link"]
