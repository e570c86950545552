"""From a Python kernel and a launch shape to a `KernelLaunch` command: the glue above
the compiler (which knows nothing of queues) and the runtime (which knows nothing of
Python kernels).

The first launch of a kernel shape compiles it (or loads it from the caches) and prepares
a marshaller: how to fetch each argument the code uses (closure cell, module global,
explicit argument, launch range) and a `struct.Struct` packing the push constants, where a
pointer is its 64-bit device address. Later launches only fetch, pack and build the
command, which keeps eager launches cheap. A kernel whose arguments outgrow the device's
push constants runs as a variant compiled to read them from an argument block: launches
write the packed bytes into host-visible memory and push the block's address.
"""

from __future__ import annotations

import operator
import struct
import types as pytypes
from collections.abc import Callable
from enum import Enum
from typing import Any

import numpy as np

from ..compiler import device as dev
from ..compiler import virtual
from ..compiler.device_global import device_global
from ..compiler.host_bodies import host_names
from ..compiler.kernel import CompiledKernel, _names, kernel_name, load_or_compile
from ..compiler.module import KernelSpec, frozen, path_getter, path_name
from ..compiler.typesys import layout
from ..exceptions import errc, exception
from ..ranges import check_work_items
from ..runtime import device_globals
from ..runtime import handler as _handler
from ..runtime.aspects import aspect
from ..runtime.commands import KernelLaunch
from ..runtime.context import scheduler_for
from ..runtime.usm import Allocation, alloc
from ..runtime.usm import ptr as usm_ptr
from ..types import dtype_key
from .properties import device_has, launch_properties
from .virtual import check_sets, indirect_sets

# work-group shapes for range kernels: 256 work-items where the device allows (measured
# on an H100: 1.5x the bandwidth of 128), 128 otherwise (every Vulkan device takes 128)
RANGE_LOCAL = {1: (256,), 2: (8, 32), 3: (2, 8, 16)}
RANGE_LOCAL_SMALL = {1: (128,), 2: (4, 32), 3: (2, 4, 16)}
_FORMAT = {"i": "i", "u": "I", "f": "f", "b": "I"}
_FORMAT64 = {"i": "q", "u": "Q", "f": "d"}
# SPIR-V capabilities and the Vulkan features a device needs to accept them
_CAPABILITY_FEATURES = {
    "Int64": "shaderInt64", "Int16": "shaderInt16", "Int8": "shaderInt8",
    "Float64": "shaderFloat64", "Float16": "shaderFloat16",
    "StorageBuffer8BitAccess": "storageBuffer8BitAccess",
    "StorageBuffer16BitAccess": "storageBuffer16BitAccess",
    "Int64Atomics": "shaderBufferInt64Atomics",
    "AtomicFloat32AddEXT": "shaderBufferFloat32AtomicAdd",
    "AtomicFloat64AddEXT": "shaderBufferFloat64AtomicAdd",
    "AtomicFloat32MinMaxEXT": "shaderBufferFloat32AtomicMinMax",
    "AtomicFloat64MinMaxEXT": "shaderBufferFloat64AtomicMinMax",
    "PhysicalStorageBufferAddresses": "bufferDeviceAddress",
}
_ADDRESS = struct.Struct("<Q")
# SPIR-V capabilities of integer types and the aspects that name them
_CAPABILITY_ASPECTS = {"Int64": "int64", "Int16": "int16", "Int8": "int8"}
# sub-group capabilities and their VkSubgroupFeatureFlagBits
_SUBGROUP_BITS = {
    "GroupNonUniform": 1, "GroupNonUniformVote": 2, "GroupNonUniformArithmetic": 4,
    "GroupNonUniformBallot": 8, "GroupNonUniformShuffle": 16,
    "GroupNonUniformShuffleRelative": 32,
}


def _fmt(dtype: np.dtype) -> str:
    if dtype.itemsize == 8:
        return _FORMAT64[dtype.kind]
    return _FORMAT[dtype.kind]


class Prepared:
    """A compiled kernel plus everything needed to launch it quickly."""

    __slots__ = ("attr_getters", "attr_sigs", "checked", "ck", "globals", "groups", "key",
                 "last_launch", "launch_slots", "n", "packer", "ptrs", "scalar_paths",
                 "scalars", "spec_getters", "variants")

    def __init__(self, ck: CompiledKernel, pyfn: Any, key: Any) -> None:
        self.ck = ck
        self.key = key  # what it is cached under
        self.checked: set[int] = set()
        self.groups: dict[Any, tuple[int, int, int]] = {}
        self.spec_getters = [path_getter(path, pyfn) for path in ck.specialized]
        self.variants: dict[tuple, Prepared] = {ck.spec_values: self}
        slots = sorted((a for a in ck.args if a.push_offset >= 0), key=lambda a: a.push_offset)
        fmt, at = "<", 0
        for a in slots:
            if a.push_offset > at:
                fmt += f"{a.push_offset - at}x"
                at = a.push_offset
            dt = np.dtype(np.uint64) if a.kind in ("ptr", "device_global") else \
                np.dtype(a.dtype)
            fmt += _fmt(dt)
            at += dt.itemsize
        if ck.args_size > at:
            fmt += f"{ck.args_size - at}x"
        self.packer = struct.Struct(fmt)
        self.n = len(slots)
        order = {id(a): k for k, a in enumerate(slots)}
        # (getter, push position, alignment, element dtype, path) per pointer
        self.ptrs = []
        self.scalars = []
        self.scalar_paths = []
        self.launch_slots = []
        # (launch object, its (position, value) pairs): ranges are immutable, so a launch
        # with the same one reads none of them again
        self.last_launch: tuple[Any, list[tuple[int, int]]] = (None, [])
        # attributes of captured objects are read at each launch; if one changes type,
        # the kernel is compiled again for the new types
        self.attr_getters = [path_getter(a.path, pyfn) for a in ck.args
                             if a.kind not in ("launch", "device_global") and
                             _indirect_path(a.path)]
        self.attr_sigs = tuple(_sig(get(pyfn, ())) for get in self.attr_getters)
        # (push position, metadata entry) per device_global: addresses from the database
        by_offset = {a.push_offset: order[id(a)] for a in slots}
        self.globals = [(by_offset[e["argument_offset"]], e) for e in ck.device_globals]
        for a in ck.args:
            pos = order.get(id(a), -1)
            if a.kind == "ptr":
                self.ptrs.append((path_getter(a.path, pyfn), pos,
                                  layout(dev.element_type(a.dtype))[1], a.dtype, a.path))
            elif a.kind == "device_global":
                continue
            elif a.kind == "scalar":
                self.scalars.append((path_getter(a.path, pyfn), pos, a.dtype.kind == "b"
                                     or np.dtype(a.dtype).kind == "b"))
                self.scalar_paths.append((pos, a.path, np.dtype(a.dtype)))
            else:
                self.launch_slots.append((a.path[1], a.path[2], pos))

    def arguments(self, pyfn: Any, args: tuple, launch: Any, context: Any = None,
                  device: Any = None, image: Any = None) -> bytes:
        """The packed arguments of a launch (pointers checked); device_globals are at
        their addresses on `device` for the kernels of `image` (a kernel bundle, or None
        for the default image)."""
        values: list[Any] = [0] * self.n
        for pos, entry in self.globals:
            values[pos] = device_globals.address(device, entry, image)
        for get, pos, align, dtype, path in self.ptrs:
            p = get(pyfn, args)
            if p is None:
                continue  # the null pointer
            try:
                a = p.allocation
            except AttributeError:
                raise exception(errc.kernel_argument, f"kernel argument {_name(path)} must "
                                f"be a USM pointer, got {type(p).__name__}") from None
            if a.freed:
                a.check_live()  # raises
            if context is not None and a.context is not context:
                raise exception(errc.invalid, f"kernel argument {_name(path)}: pointer from "
                                "another context")
            address = a.address + p.byte_offset
            if address % align:
                raise exception(errc.kernel_argument, f"pointer {_name(path)} is not "
                                f"aligned to its element type {dtype} ({align} bytes)")
            values[pos] = address
        for get, pos, is_bool in self.scalars:
            v = get(pyfn, args)
            values[pos] = int(bool(v)) if is_bool else v
        if self.launch_slots:
            known = self.last_launch
            if known[0] is not launch:
                known = self.last_launch = (launch, [(pos, _launch_value(launch, what, d))
                                                     for what, d, pos in self.launch_slots])
            for pos, value in known[1]:
                values[pos] = value
        try:
            push = self.packer.pack(*values)
        except struct.error as ex:
            raise exception(errc.kernel_argument, self.misfit(values) or
                            f"a kernel argument does not fit its type: {ex}") from None
        return push

    def misfit(self, values: list) -> str | None:
        """Which scalar argument does not fit its type, and why (for the error)."""
        for pos, path, dtype in self.scalar_paths:
            v = values[pos]
            if pos < 0 or dtype.kind not in "iu" or isinstance(v, float):
                continue
            info = np.iinfo(dtype)
            if not info.min <= int(v) <= info.max:
                return (f"kernel argument {_name(path)} = {v} does not fit its type "
                        f"{dtype} (whose range is {info.min} to {info.max})")
        return None


def _launch_value(launch: Any, what: str, d: int) -> int:
    if what == "range":
        g = launch.get_global_range() if hasattr(launch, "get_global_range") else launch
        return int(g[d])
    return int(launch.get_offset()[d])


def _name(path: tuple) -> str:
    if path[0] == "param":
        return f"#{path[1]}" + "".join(f".{p}" for p in path[2:])
    return path_name(path)


def _indirect_path(path: tuple) -> bool:
    """Whether a capture path goes through attributes of a captured object or a device
    function's cells: what it holds is not part of the key a kernel is prepared under."""
    return path[0] == "fncell" or (path[0] != "param" and len(path) > (
        2 if path[0] == "cell" else 3))


class ArgumentBlock:
    """A launch's packed arguments in host-visible device memory, for a kernel whose
    arguments outgrow the push constants. The command keeps it alive until it completes;
    then its memory goes back to the allocator, which reuses it only once the work
    submitted before has completed."""

    __slots__ = ("allocation",)

    def __init__(self, device: Any, data: bytes) -> None:
        allocator = scheduler_for(device).allocators[True]
        self.allocation = Allocation(allocator, allocator.allocate(len(data)), 0, len(data),
                                     alloc.host, None, device)
        self.allocation.host_bytes()[:] = np.frombuffer(data, np.uint8)

    @property
    def address(self) -> int:
        return self.allocation.address

    def __del__(self) -> None:
        self.allocation.free()


# -- cache keys --------------------------------------------------------------------------------

def _sig(v: Any, depth: int = 0) -> Any:
    t = type(v)
    if t in (int, float, bool):
        return t
    if hasattr(v, "allocation") and hasattr(v, "byte_offset"):
        return ("p", dtype_key(v.dtype))
    if isinstance(v, np.generic):
        return v.dtype
    if isinstance(v, dev.work_group_memory):
        return ("w", v.dtype, v.shape)
    st = getattr(t, "__vksycl_struct__", None)
    if st is not None:
        return ("s", t, tuple(_sig(getattr(v, n), depth) for n, ft in st.fields
                              if not hasattr(ft, "bits")))
    if t is pytypes.FunctionType and v.__closure__ and depth < 4:
        return _closure_sig(v, depth + 1)
    try:
        hash(v)
        return ("o", v)
    except TypeError:
        return ("id", id(v))


def _closure_sig(f: Any, depth: int) -> Any:
    """A closure the kernel reaches by a path is keyed as the kernel is: by its code, its
    defaults (compiled in) and the types of what it captures (kernel arguments), not by
    identity, since the function that defines it makes a new one at each call."""
    kwdefaults = tuple(sorted((f.__kwdefaults__ or {}).items()))
    try:
        hash((f.__defaults__, kwdefaults))
    except TypeError:
        return ("o", f)
    cells = []
    for c in f.__closure__:
        try:
            cells.append(_sig(c.cell_contents, depth))
        except ValueError:  # not bound yet
            cells.append(None)
    return ("f", f.__code__, f.__defaults__, kwdefaults, tuple(cells))


_GLOBAL_NAMES: dict[Any, tuple[str, ...]] = {}


def _global_names(pyfn: Any) -> tuple[str, ...]:
    """The module globals the compiled code may depend on (modules and host-only names
    aside)."""
    code = pyfn.__code__
    names = _GLOBAL_NAMES.get(code)
    if names is None:
        g = pyfn.__globals__
        names = tuple(sorted(n for n in _names(code) - host_names(pyfn) if n in g and
                             not isinstance(g[n], pytypes.ModuleType)))
        _GLOBAL_NAMES[code] = names
    return names


def _global_sig(v: Any) -> Any:
    """Numbers by value (they are compiled in), pointers and structs by type, functions by
    identity."""
    if isinstance(v, int | float | bool | np.generic):
        return (type(v), v)
    return _sig(v)


_IMMUTABLE = (int, float, bool, usm_ptr, type(None))


def immutable(v: Any) -> bool:
    """Numbers, pointers, None and enum members: an argument that packs the same whenever
    the same object comes again."""
    return type(v) in _IMMUTABLE or isinstance(v, np.generic | Enum)


def _stable(v: Any) -> bool:
    """Whether the same object always has the same cache signature: immutable values,
    device_globals, classes (keyed by identity), functions without cells (structs,
    closures and other objects may change)."""
    t = type(v)
    return (immutable(v) or t is device_global or t is type or
            (t is pytypes.FunctionType and not v.__closure__))


def _keyed_alike(last: Any, now: Any) -> bool:
    """Whether `now` gives the cache key `last` gave: the same object, or a pointer to the
    same element type (a fresh allocation each launch)."""
    return last is now or (type(now) is usm_ptr and type(last) is usm_ptr and
                           now.dtype is last.dtype)


def _all_keyed_alike(last: tuple, now: tuple) -> bool:
    return all(map(_keyed_alike, last, now))


_CONTENTS = operator.attrgetter("cell_contents")
_PREPARED: dict[Any, Prepared] = {}
# (code, launch variant) -> (captured objects, globals, Prepared) of the last launch whose
# captures were all `_stable`: a launch capturing objects keyed alike skips the key
_LAST: dict[Any, tuple[tuple, tuple, Prepared]] = {}


def _prepare(pyfn: Any, captured: tuple, globals_: tuple, spec_key: tuple, spec_fn: Any
             ) -> Prepared:
    last = _LAST.get((pyfn.__code__, spec_key))
    if last is not None and (all(map(operator.is_, last[0], captured)) or
                             _all_keyed_alike(last[0], captured)) and \
            (all(map(operator.is_, last[1], globals_)) or _all_keyed_alike(last[1], globals_)):
        p = last[2]
    else:
        key = (pyfn.__code__, spec_key, tuple(_sig(v) for v in captured),
               tuple(_global_sig(v) for v in globals_))
        p = _PREPARED.get(key)
        if p is None:
            spec = spec_fn()
            ck = load_or_compile(pyfn, spec, key)
            p = _PREPARED[key] = Prepared(ck, pyfn, key)
        if all(map(_stable, captured)) and all(map(_stable, globals_)):
            _LAST[(pyfn.__code__, spec_key)] = (captured, globals_, p)
    if p.attr_getters:
        sigs = tuple(_sig(get(pyfn, ())) for get in p.attr_getters)
        if sigs != p.attr_sigs:  # an attribute changed type: the kernel for the new ones
            key = (p.key, sigs)
            p = _PREPARED.get(key)
            if p is None:
                ck = load_or_compile(pyfn, spec_fn(), key, sigs)
                p = _PREPARED[key] = Prepared(ck, pyfn, key)
    if p.spec_getters:  # compiled with captured values as constants: one variant per value
        values = tuple(frozen(get(pyfn, ())) for get in p.spec_getters)
        variant = p.variants.get(values)
        if variant is None:
            ck = load_or_compile(pyfn, spec_fn(), (p.key, values), values)
            if ck.spec_values != values:
                raise exception(errc.build, f"kernel {ck.name}: captured values changed "
                                "while it compiled")
            variant = p.variants[values] = Prepared(ck, pyfn, (p.key, values))
        return variant
    return p


# -- launching ---------------------------------------------------------------------------------

def _kernel_function(kernel: Any) -> tuple[Any, Any]:
    """(python function, free-function kernel info or None)."""
    info = getattr(kernel, "__vksycl_kernel__", None)
    if info is not None:
        return info.function, info
    if isinstance(kernel, pytypes.FunctionType):
        return kernel, None
    if isinstance(kernel, pytypes.MethodType):
        raise exception(errc.invalid, "a kernel must be a function, not a bound method")
    raise exception(errc.invalid, f"a kernel must be a Python function, got "
                    f"{type(kernel).__name__}")


def _shape(launch: Any, device: Any) -> tuple[str, int, tuple[int, ...], bool]:
    if launch is None:
        return "single_task", 1, (1,), False
    if hasattr(launch, "get_local_range"):
        local = tuple(launch.get_local_range())
        return "nd_range", len(local), local, any(launch.get_offset())
    dims = len(launch)
    vk = device.vulkan
    big = vk.max_compute_work_group_invocations >= 256 and \
        vk.max_compute_work_group_size[0] >= 256
    return "range", dims, (RANGE_LOCAL if big else RANGE_LOCAL_SMALL)[dims], False


def _scratch(properties: Any) -> int:
    for p in properties or ():
        if isinstance(p, dev.work_group_scratch_size):
            return p.nbytes
    return 0


def _device_has(properties: Any, info: Any) -> tuple[str, ...] | None:
    """The aspect names a device_has property lists (at launch, or a free function
    kernel's own), or None."""
    own = info.properties if info is not None else ()
    for p in (*(properties or ()), *own):
        if isinstance(p, device_has):
            return p.names()
    return None


def _groups(ck: CompiledKernel, launch: Any, device: Any) -> tuple[int, int, int]:
    kind, dims = ck.spec.kind, ck.spec.dims
    if kind == "single_task":
        return (1, 1, 1)
    g = tuple(launch.get_global_range()) if kind == "nd_range" else tuple(launch)
    local = list(ck.spec.local)
    local[0] *= ck.coarsen
    counts = [-(-g[d] // local[d]) for d in range(dims)][::-1] + [1] * (3 - dims)
    limits = _limits(device)
    if ck.spec.fold_groups:
        total = counts[0] * counts[1] * counts[2]
        x = min(total, limits[0])
        y = -(-total // x)
        if y > limits[1]:
            raise exception(errc.nd_range, f"range {g} needs {total} work-groups, more "
                            "than this device can dispatch")
        return (x, y, 1)
    if dims == 1 and counts[0] > limits[0]:
        x = limits[0]
        y = -(-counts[0] // x)
        if y > limits[1]:
            raise exception(errc.nd_range, f"{g[0]} work-items need more work-groups than "
                            "this device can dispatch")
        return (x, y, 1)
    for c, lim in zip(counts, limits, strict=True):
        if c > lim:
            raise exception(errc.nd_range, f"range {g} needs {counts} work-groups; this "
                            f"device dispatches at most {limits}")
    return (counts[0], counts[1], counts[2])


def _too_many_groups(launch: Any, local: tuple[int, ...], device: Any) -> bool:
    """Whether a 2-/3-dimensional launch needs more work-groups along a dimension than
    the device dispatches (its kernel then numbers work-groups linearly)."""
    g = tuple(launch.get_global_range()) if hasattr(launch, "get_global_range") else \
        tuple(launch)
    limits = _limits(device)
    return any(-(-g[d] // local[d]) > limits[len(g) - 1 - d] for d in range(len(g)))


def _limits(device: Any) -> tuple[int, int, int]:
    """maxComputeWorkGroupCount of the device."""
    return device.vulkan.max_compute_work_group_count


def _check(p: Prepared, device: Any) -> None:
    ck = p.ck
    vk = device.vulkan
    used = [a for a in ck.aspects if a in aspect.__members__] + \
        [_CAPABILITY_ASPECTS[c] for c in ck.capabilities if c in _CAPABILITY_ASPECTS]
    for a in used:
        if not device.has(getattr(aspect, a)):
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} uses {a}, which "
                            f"{vk.name} does not support")
    ops = vk.properties.get("subgroupSupportedOperations", 0)
    for cap in ck.capabilities:
        feature = _CAPABILITY_FEATURES.get(cap)
        if feature is not None and not vk.features.get(feature, False):
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} needs the Vulkan "
                            f"feature {feature} (SPIR-V {cap}), which {vk.name} lacks")
        bit = _SUBGROUP_BITS.get(cap)
        if bit is not None and not ops & bit:
            raise exception(errc.kernel_not_supported, f"kernel {ck.name} uses sub-group "
                            f"operations ({cap}) that {vk.name} does not support")
    if ck.push_size > vk.max_push_constants_size:
        raise exception(errc.kernel_argument, f"kernel {ck.name} needs {ck.push_size} bytes "
                        f"of arguments; this device takes {vk.max_push_constants_size}")
    n = 1
    for s in ck.local_size:
        n *= s
    if n > vk.max_compute_work_group_invocations or any(
            s > m for s, m in zip(ck.local_size, vk.max_compute_work_group_size, strict=True)):
        raise exception(errc.nd_range, f"work-group size {ck.spec.local} exceeds this "
                        "device's limits")
    p.checked.add(id(vk))


def _variant(pyfn: Any, info: Any, shape: tuple, launch: Any, device: Any,
             properties: Any, args_in_memory: bool = False,
             ) -> tuple[tuple, Callable[[], KernelSpec]]:
    """The cache key of the kernel a launch of this shape runs, and how to make its spec."""
    kind, dims, local, has_offset = shape
    param_types = info.param_types() if info is not None else None
    scratch = _scratch(properties)
    fold = dims > 1 and _too_many_groups(launch, local, device)
    sets = indirect_sets(properties, info)
    if sets is not None:
        check_sets(sets)
    has = _device_has(properties, info)

    def spec() -> KernelSpec:
        name = info.name if info is not None else kernel_name(pyfn)
        return KernelSpec(name, kind, dims, local, has_offset, param_types, scratch, fold,
                          args_in_memory, sets, virtual.digest(sets) if sets else "", has)

    return (kind, dims, local, has_offset, scratch, param_types, fold, args_in_memory, sets,
            virtual.version() if sets else 0, has), spec


class _Plan:
    """What launches of one kernel with one launch object (ranges are immutable) and no
    properties share: the variant keys, and the last command, which the next launch with
    the same arguments submits again."""

    __slots__ = ("classes", "code", "info", "kind", "last", "launch", "names", "prepared",
                 "variants")

    def __init__(self, pyfn: Any, launch: Any, info: Any, kind: str, variants: tuple
                 ) -> None:
        self.code = pyfn.__code__  # plans are found by its id: the plan keeps it alive
        self.names = _global_names(pyfn)
        self.launch = launch
        self.info = info
        self.kind = kind
        self.variants = variants  # (push-constant variant, argument-block variant)
        self.classes = virtual.version()  # the polymorphic classes virtual calls know
        # (prepared kernel, push constants, command, context, captures record, arguments
        # record) of the last launch, replaced whole so threads launching the same kernel
        # never see a mix of two launches. The arguments record is (the arguments object,
        # the pointers among them) when every argument is immutable, else None.
        self.last: tuple[Prepared | None, bytes, KernelLaunch | None, Any, tuple | None,
                         tuple | None] = (None, b"", None, None, None, None)
        # (captured objects, globals, prepared kernel, pointers among them) of the last
        # launch whose captures were all `_stable` and whose kernel reads no attributes
        # of them: a launch capturing objects keyed alike runs the same prepared kernel
        self.prepared: tuple[tuple, tuple, Prepared, tuple] | None = None


# (id of the kernel's code, id of the device) -> plan: hashing a code object hashes its
# bytecode, which costs more than the rest of a repeated launch's checks
_PLANS: dict[tuple[int, int], _Plan] = {}


def _known_plan(pyfn: Any, info: Any, launch: Any, device: Any) -> _Plan | None:
    """The plan of the last launch of this kernel on this device, if it was made for
    this launch object and the polymorphic classes virtual calls know are unchanged."""
    code = pyfn.__code__
    plan = _PLANS.get((id(code), id(device)))
    if plan is not None and plan.code is code and plan.launch is launch and \
            plan.info is info and plan.classes == virtual.version():
        return plan
    return None


def _plan(pyfn: Any, info: Any, launch: Any, device: Any, properties: Any) -> _Plan:
    if properties is None:
        plan = _known_plan(pyfn, info, launch, device)
        if plan is not None:
            return plan
    if launch is not None:  # a plan is kept per launch object, so this runs once for it
        check_work_items(launch)
    shape = _shape(launch, device)
    if info is not None:
        info.check_launch(shape[0], shape[1])
    plan = _new_plan(pyfn, info, launch, device, properties, shape)
    if properties is None:
        _PLANS[(id(pyfn.__code__), id(device))] = plan
    return plan


def _new_plan(pyfn: Any, info: Any, launch: Any, device: Any, properties: Any,
              shape: tuple) -> _Plan:
    return _Plan(pyfn, launch, info, shape[0], (
        _variant(pyfn, info, shape, launch, device, properties),
        _variant(pyfn, info, shape, launch, device, properties, True)))


def _prepared(pyfn: Any, plan: _Plan, device: Any) -> tuple[Prepared, tuple | None]:
    """The prepared kernel a launch runs: its arguments in push constants where they fit
    the device's, else the variant reading them from an argument block. With it, the
    plan's record of the captured objects when they are the very objects it holds
    (immutable, so the same arguments unless a pointer was freed since), else None."""
    cells = pyfn.__closure__
    captured = tuple(map(_CONTENTS, cells)) if cells else ()
    names = plan.names
    globals_ = tuple(map(pyfn.__globals__.get, names)) if names else ()
    known = plan.prepared
    if known is not None:
        if all(map(operator.is_, known[0], captured)) and \
                all(map(operator.is_, known[1], globals_)):
            return known[2], known
        if _all_keyed_alike(known[0], captured) and _all_keyed_alike(known[1], globals_):
            return known[2], None
    p = _prepare(pyfn, captured, globals_, *plan.variants[0])
    if p.ck.push_size > device.vulkan.max_push_constants_size:
        p = _prepare(pyfn, captured, globals_, *plan.variants[1])
    if not p.attr_getters and not p.spec_getters and all(map(_stable, captured)) and \
            all(map(_stable, globals_)):
        pointers = tuple(v for v in (*captured, *globals_) if type(v) is usm_ptr)
        record = plan.prepared = (captured, globals_, p, pointers)
        return p, record
    return p, None


def _launch(device: Any, kernel: Any, launch: Any, properties: Any,
            args: tuple | list | None, context: Any = None, image: Any = None
            ) -> KernelLaunch:
    pyfn, info = _kernel_function(kernel)
    if info is not None:
        param_types = info.param_types()
        if args is None:
            raise exception(errc.invalid, f"free function kernel {info.name} needs its "
                            "arguments (use syclexp.nd_launch / single_task with arguments)")
        if len(args) != len(param_types):
            raise exception(errc.invalid, f"kernel {info.name} takes {len(param_types)} "
                            f"arguments, got {len(args)}")
    plan = _plan(pyfn, info, launch, device, properties)
    p, record = _prepared(pyfn, plan, device)
    last = plan.last
    vk = device.vulkan
    if id(vk) not in p.checked:
        _check(p, device)
    push = p.arguments(pyfn, args or (), launch, context, device, image)
    arg_record = _arg_record(args) if type(args) is tuple and image is None else None
    if p is last[0] and push == last[1]:
        if last[4] is not record or last[3] is not context or last[5] is not arg_record:
            plan.last = (p, push, last[2], context, record, arg_record)
        return last[2]
    ck = p.ck
    keep: tuple = ()
    if ck.spec.args_in_memory:
        block = ArgumentBlock(device, push)
        push, keep = _ADDRESS.pack(block.address), (block,)
    gkey = (id(vk), launch if plan.kind == "range" else (
        None if launch is None else tuple(launch.get_global_range())))
    groups = p.groups.get(gkey)
    if groups is None:
        if len(p.groups) > 256:
            p.groups.clear()
        groups = p.groups[gkey] = _groups(ck, launch, device)
    command = KernelLaunch(ck.name, ck.binary, ck.entry, push, groups, keep_alive=keep)
    if not keep:  # an argument block is the launch's own
        plan.last = (p, push, command, context, record, arg_record)
    return command


def build_launch(device: Any, kernel: Any, launch: Any, properties: Any = None,
                 context: Any = None) -> KernelLaunch:
    """The command for a closure kernel (captured values become arguments). With a
    context, every pointer argument must belong to it. Launching the function of the last
    launch again, with the same launch object and capturing the very same objects, gets
    the last command back after identity checks alone: a loop of launches pays for no
    argument packing."""
    if properties is None and type(kernel) is pytypes.FunctionType:
        plan = _known_plan(kernel, None, launch, device)
        if plan is not None:
            last = plan.last
            if last[4] is not None and last[3] is context and _repeats(kernel, plan, last):
                return last[2]
    return _launch(device, kernel, launch, properties, None, context=context)


def _repeats(pyfn: Any, plan: _Plan, last: tuple) -> bool:
    """Whether a launch under `plan` runs the command of its `last` launch again, as far as
    the kernel's captures and globals and the pointers they hold go (the caller checks
    the context and the arguments)."""
    record = last[4]
    return _same_captures(pyfn, record, plan.names) and not last[0].globals and \
        not any(map(_FREED, record[3]))


_FREED = operator.attrgetter("allocation.freed")


def _arg_record(args: tuple) -> tuple | None:
    """(the arguments, the pointers among them) when every argument is `immutable`, else
    None."""
    if not args or not all(map(immutable, args)):
        return None
    return (args, tuple(v for v in args if type(v) is usm_ptr))


def _same_captures(kernel: Any, record: tuple, names: tuple[str, ...]) -> bool:
    """Whether a closure holds the very objects a plan's record holds, in its cells and
    in the globals `names` its code reads."""
    cells = kernel.__closure__
    if cells is not None and not all(map(operator.is_, record[0], map(_CONTENTS, cells))):
        return False
    return not names or all(map(operator.is_, record[1], map(kernel.__globals__.get, names)))


def build_launch_args(device: Any, kernel: Any, launch: Any, args: tuple | list,
                      properties: Any = None, context: Any = None,
                      image: Any = None) -> KernelLaunch:
    """The command for a kernel whose arguments are passed explicitly; `image` is the
    kernel bundle it comes from (its device_image_scope instances). Passing the very
    arguments object of the last launch again (the free function layer keeps its
    converted arguments while the caller's are the same objects), its arguments all
    immutable, gets the last command back after identity checks alone."""
    if properties is None and image is None:
        info = getattr(kernel, "__vksycl_kernel__", None)
        plan = None if info is None else _known_plan(info.function, info, launch, device)
        if plan is not None:
            last = plan.last
            arg_record = last[5]
            if arg_record is not None and arg_record[0] is args and last[4] is not None \
                    and last[3] is context and _repeats(info.function, plan, last) and \
                    not any(map(_FREED, arg_record[1])):
                return last[2]
    return _launch(device, kernel, launch, properties, args, context=context, image=image)


def compiled(device: Any, kernel: Any, launch: Any, properties: Any = None) -> CompiledKernel:
    """The compiled kernel a launch would use (for `spirv()`, `spirv_asm()`, reflection)."""
    pyfn, info = _kernel_function(kernel)
    plan = _new_plan(pyfn, info, launch, device, properties, _shape(launch, device))
    return _prepared(pyfn, plan, device)[0].ck


def unsupported(device: Any, ck: CompiledKernel) -> exception | None:
    """The exception a launch of `ck` on `device` would raise for a missing feature or
    limit (aspects, SPIR-V capabilities, push-constant size, work-group size), or None."""
    try:
        _check(pytypes.SimpleNamespace(ck=ck, checked=set()), device)
    except exception as ex:
        return ex
    return None


def _command_group_launch(device: Any, kernel: Any, launch: Any, properties: Any,
                          context: Any) -> KernelLaunch:
    """What a handler's `parallel_for` / `single_task` of a closure enqueues: the launch's
    kernel properties checked against its range and device, then its command."""
    if properties is not None:
        properties = launch_properties(properties, launch, device)
    return build_launch(device, kernel, launch, properties, context)


_handler.use_kernel_front_end(_command_group_launch)

__all__ = ["build_launch", "build_launch_args", "compiled", "unsupported"]
