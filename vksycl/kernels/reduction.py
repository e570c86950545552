"""`sycl.reduction` and `sycl.span` on the host, and the launch of a kernel with
reductions: the reduction objects name the targets and combiners, the launch allocates
each reduction's per-work-group partials and builds one `ReductionLaunch` (the kernel's
dispatch, then its finishing dispatch). `vksycl/compiler/reduction.py` says how the
kernel combines."""

from __future__ import annotations

import types as pytypes
import weakref
from typing import Any

import numpy as np

from ..compiler.device import BinaryOp
from ..compiler.kernel import fingerprint
from ..compiler.reduction import ReductionSpec
from ..exceptions import errc, exception
from ..properties import property as sycl_property
from ..ranges import check_work_items, nd_range
from ..ranges import range as sycl_range
from ..runtime.commands import ReductionLaunch
from ..runtime.context import scheduler_for
from ..runtime.usm import Allocation, alloc
from ..runtime.usm import ptr as usm_ptr
from .device_checks import check_supported, group_counts
from .marshal import ADDRESS, ArgumentBlock
from .plans import Plan, prepared_for
from .variants import launch_shape, launch_variant

# work-groups of a one-dimensional range reduction at most: each work-item then combines
# many items before the work-group combines, and the finishing pass reads few partials.
# Enough to fill a GPU (an H100 holds 1056 work-groups of 256 at once); a CPU device
# runs work-groups a few at a time, so more only add partials.
_GRID_GROUPS = {"cpu": 64, "gpu": 1024}


class span:
    """`sycl.span(ptr, n)`: n consecutive elements from a USM pointer, the target of an
    array reduction (each reducer element `s[j]` reduces into `ptr[j]`)."""

    __slots__ = ("extent", "ptr")

    def __init__(self, ptr: Any, extent: int) -> None:
        if type(ptr) is not usm_ptr:
            raise exception(errc.invalid, f"a span needs a USM pointer, got "
                            f"{type(ptr).__name__}")
        if not isinstance(extent, int | np.integer) or extent <= 0:
            raise exception(errc.invalid, f"a span needs a positive length, got {extent!r}")
        self.ptr = ptr
        self.extent = int(extent)

    def size(self) -> int:
        return self.extent

    def __len__(self) -> int:
        return self.extent


def _known_identity(op: str, dtype: np.dtype) -> Any:
    """The identity SYCL's known_identity gives a function object on a type, or None."""
    if dtype.kind == "b":
        return {"logical_and": True, "logical_or": False, "bit_and": True,
                "bit_or": False, "bit_xor": False, "plus": False, "minimum": True,
                "maximum": False}.get(op)
    if op == "logical_and" or op == "logical_or":
        return None
    if op in ("plus", "bit_or", "bit_xor"):
        return dtype.type(0)
    if op == "multiplies":
        return dtype.type(1)
    if dtype.kind == "f":
        if op == "bit_and":
            return None
        return dtype.type(np.inf if op == "minimum" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type({"bit_and": -1 if dtype.kind == "i" else info.max,
                       "minimum": info.max, "maximum": info.min}[op])


_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _combiner_key(fn: pytypes.FunctionType) -> str:
    key = _KEYS.get(fn)
    if key is None:
        key = _KEYS[fn] = fingerprint(fn)
    return key


class reduction:
    """`sycl.reduction(target, combiner)` / `sycl.reduction(target, identity, combiner)`,
    `property_list=[sycl.property.reduction.initialize_to_identity()]`. The target is a
    USM pointer to the result or a `sycl.span`; the combiner a SYCL function object
    (`sycl.plus()`, ...) or a Python function compiled as device code, which needs an
    identity. Without initialize_to_identity the result is combined with the target's
    value when the kernel starts."""

    __slots__ = ("spec", "target")
    # what a kernel that captures one is told
    __vksycl_host_only__ = ("a sycl.reduction, a host object: in the kernel, combine "
                            "through its reducer, the body's parameter after the work-item")

    def __init__(self, target: Any, *args: Any, property_list: Any = None) -> None:
        if len(args) == 1:
            identity, combiner = None, args[0]
        elif len(args) == 2:
            identity, combiner = args
        else:
            raise exception(errc.invalid, "reduction(target, [identity,] combiner) takes "
                            f"2 or 3 arguments, got {1 + len(args)}")
        ptr, extent = (target.ptr, target.extent) if isinstance(target, span) else \
            (target, 1)
        if type(ptr) is not usm_ptr:
            raise exception(errc.invalid, "a reduction's target is a USM pointer or a "
                            f"sycl.span, got {type(target).__name__}")
        ptr.allocation.check_live()
        if ptr.allocation.nbytes - ptr.byte_offset < extent * ptr.dtype.itemsize:
            raise exception(errc.invalid, f"the reduction's target ({extent} x "
                            f"{ptr.dtype}) runs past the end of its allocation")
        dtype = ptr.dtype
        if isinstance(combiner, type) and issubclass(combiner, BinaryOp):
            combiner = combiner()
        if isinstance(combiner, BinaryOp):
            op, fn, key = combiner.op, None, ""
            known = _known_identity(op, dtype)
            if known is None and op in ("logical_and", "logical_or", "bit_and"):
                raise exception(errc.invalid, f"{op} does not apply to {dtype} elements")
        elif isinstance(combiner, pytypes.FunctionType):
            op, fn, key, known = None, combiner, _combiner_key(combiner), None
        else:
            raise exception(errc.invalid, "a reduction's combiner is a SYCL function object "
                            "(sycl.plus(), ...) or a Python function, got "
                            f"{type(combiner).__name__}")
        if identity is None:
            if known is None:
                raise exception(errc.invalid, "a reduction with a user combiner "
                                f"({combiner.__qualname__}) needs its identity: "
                                "sycl.reduction(target, identity, combiner)")
            identity = known
        try:
            value = np.asarray(identity).astype(dtype, casting="same_kind" if dtype.kind
                                                != "b" else "unsafe").item()
        except (TypeError, ValueError):
            raise exception(errc.invalid, f"identity {identity!r} is not a {dtype} value") \
                from None
        initialize = any(isinstance(p, sycl_property.reduction.initialize_to_identity)
                         for p in (property_list or ()))
        self.target = ptr
        self.spec = ReductionSpec(dtype.str, op, value, extent, initialize, key, fn)


class _Partials:
    """A launch's per-work-group partials in device memory; the command keeps them until
    it completes, then the memory goes back to the allocator."""

    __slots__ = ("allocation", "ptr")

    def __init__(self, device: Any, context: Any, count: int, dtype: np.dtype) -> None:
        allocator = scheduler_for(device).allocators[False]
        nbytes = max(count * dtype.itemsize, 4)
        self.allocation = Allocation(allocator, allocator.allocate(nbytes), 0, nbytes,
                                     alloc.device, context, device)
        self.ptr = usm_ptr(self.allocation, 0, dtype)

    def __del__(self) -> None:
        self.allocation.free()


# (id of the kernel's code, id of the device, the reductions) -> the plan of its last
# launch with that launch object
_PLANS: dict[tuple, Plan] = {}


def build_reduction_launch(device: Any, kernel: Any, launch: Any,
                           reductions: tuple[reduction, ...], properties: Any,
                           context: Any) -> ReductionLaunch:
    """The command of a closure kernel with reductions (properties already checked)."""
    for r in reductions:
        if not isinstance(r, reduction):
            raise exception(errc.invalid, "parallel_for(range, reduction..., kernel): "
                            f"{type(r).__name__} is not a sycl.reduction")
    if type(kernel) is not pytypes.FunctionType:
        raise exception(errc.invalid, "a kernel with reductions is a Python function "
                        f"taking the work-item and one reducer each, got "
                        f"{type(kernel).__name__}")
    if type(launch) is not sycl_range and type(launch) is not nd_range:
        raise exception(errc.invalid, "reductions run in parallel_for over a sycl.range or "
                        "sycl.nd_range")
    specs = tuple(r.spec for r in reductions)
    key = (id(kernel.__code__), id(device), specs)
    plan = _PLANS.get(key) if properties is None else None
    if plan is None or plan.code is not kernel.__code__ or plan.launch is not launch:
        check_work_items(launch)
        shape = launch_shape(launch, device)
        plan = Plan(kernel, launch, None, shape[0], (
            launch_variant(kernel, None, shape, launch, device, properties,
                           reductions=specs),
            launch_variant(kernel, None, shape, launch, device, properties, True,
                           reductions=specs)))
        if properties is None:
            if len(_PLANS) > 256:
                _PLANS.clear()
            _PLANS[key] = plan
    p, _ = prepared_for(kernel, plan, device)
    ck = p.ck
    if id(device.vulkan) not in p.checked:
        check_supported(p, device)
    if ck.spec.kind == "range" and ck.spec.dims == 1:
        per_group = ck.spec.local[0]
        kind = "cpu" if device.is_cpu() else "gpu"
        groups = (max(1, min(-(-launch[0] // per_group), _GRID_GROUPS[kind])), 1, 1)
    else:
        groups = group_counts(ck, launch, device)
    count = groups[0] * groups[1] * groups[2]
    partials = [_Partials(device, context, count * s.extent,
                          s.accumulator.dtype) for s in specs]
    hidden: list[Any] = []
    for r, part in zip(reductions, partials, strict=True):
        hidden += [r.target, part.ptr]
    first = p.arguments(kernel, (*hidden, 0), launch, context, device)
    finish = p.arguments(kernel, (*hidden, count), launch, context, device)
    keep: tuple = tuple(partials)
    if ck.spec.args_in_memory:
        blocks = ArgumentBlock(device, first), ArgumentBlock(device, finish)
        first, finish = (ADDRESS.pack(b.address) for b in blocks)
        keep += blocks
    return ReductionLaunch(ck.name, ck.binary, ck.entry, first, groups, keep_alive=keep,
                           finish_push_constants=finish)
