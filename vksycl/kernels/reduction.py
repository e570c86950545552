"""`sycl.reduction` and `sycl.span` on the host, and the launch of a kernel with
reductions: the reduction objects name the targets and combiners, the launch allocates
each reduction's per-work-group partials and the counter its work-groups count themselves
in with, and builds one `ReductionLaunch`. `vksycl/compiler/reduction.py` says how the
kernel combines."""

from __future__ import annotations

import collections
import functools
import operator
import threading
import types as pytypes
import weakref
from typing import Any

import numpy as np

from ..access import no_init, read_write, write_only
from ..compiler.device import BinaryOp
from ..compiler.kernel import fingerprint
from ..compiler.reduction import ReductionSpec
from ..exceptions import errc, exception
from ..properties import Property
from ..properties import property as sycl_property
from ..ranges import MAX_WORK_ITEMS, check_work_items, nd_range
from ..ranges import range as sycl_range
from ..runtime import memops
from ..runtime.buffers import accessor, buffer
from ..runtime.commands import ReductionLaunch
from ..runtime.context import scheduler_for
from ..runtime.handler import handler
from ..runtime.usm import ptr as usm_ptr
from .device_checks import check_supported, group_counts
from .marshal import ADDRESS, ArgumentBlock, LaunchMemory
from .plans import Plan, any_freed, prepared_for, repeats, same_objects
from .variants import launch_facts, launch_variant

# work-groups of a one-dimensional range reduction: the first count that leaves each
# work-item at most _ITEMS_PER_WORK_ITEM items, else the last. Each work-item combines
# many items before the work-group combines, and the last work-group reads few partials.
# Measured on an H100 (1056 work-groups of 256 resident at once; benchmarks/RESULTS.md):
# at 16M float32 one wave of 1056 took 1.20-1.22x torch's time against 1.27-1.30x for
# 2112, at 256M 2112 1.04x against 1.05-1.08x. A CPU device runs work-groups a few at a
# time, so more only add partials.
_GRID_GROUPS = {"cpu": (64,), "gpu": (1056, 2112)}
_ITEMS_PER_WORK_ITEM = 512


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
    if dtype.kind == "f" and op.startswith("bit_"):
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


@functools.cache
@functools.lru_cache(maxsize=256)
def _identity_of(op: str, dtype: np.dtype) -> Any:
    """The known identity of a SYCL function object on a type, as a Python value (found
    once per pair: a reduction object is made at each launch)."""
    known = _known_identity(op, dtype)
    if known is None:
        raise exception(errc.invalid, f"{op} does not apply to {dtype} elements")
    return _converted(known, dtype)


def _converted(identity: Any, dtype: np.dtype) -> Any:
    """The identity as a value of the target's type: a number it holds exactly (for an
    integer or bool target an integer in its range, as C++ deduces one type for the
    target and the identity; for a float target any number whose conversion does not
    overflow)."""
    bad = exception(errc.invalid, f"identity {identity!r} is not a {dtype} value")
    exact = dtype.kind in "biu"
    if not isinstance(identity, bool | int | float | np.bool_ | np.integer | np.floating) \
            or (exact and isinstance(identity, float | np.floating)):
        raise bad
    try:
        with np.errstate(over="ignore"):
            value = dtype.type(identity)
    except (TypeError, ValueError, OverflowError):
        raise bad from None
    if exact and int(value) != int(identity):
        raise bad
    if not exact and np.isinf(value) and not np.isinf(identity):
        raise bad
    return value.item()


_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _combiner_key(fn: pytypes.FunctionType) -> str:
    key = _KEYS.get(fn)
    if key is None:
        key = _KEYS[fn] = fingerprint(fn)
    return key


class reduction:
    """`sycl.reduction(target, combiner)` / `sycl.reduction(target, identity, combiner)`,
    `property_list=[sycl.property.reduction.initialize_to_identity()]`. The target is a
    USM pointer to the result, a `sycl.span`, or a one-element `sycl.buffer` followed by
    the command group's handler (`sycl.reduction(buf, h, sycl.plus())`); the combiner a
    SYCL function object (`sycl.plus()`, ...) or a Python function compiled as device
    code, which needs an identity. Without initialize_to_identity the result is combined
    with the target's value when the kernel starts."""

    __slots__ = ("spec", "target")
    __vksycl_reduction__ = True  # how the queue's shortcut knows one (it sits below)
    # what a kernel that captures one is told
    __vksycl_host_only__ = ("a sycl.reduction, a host object: in the kernel, combine "
                            "through its reducer, the body's parameter after the work-item")

    def __init__(self, target: Any, *args: Any, property_list: Any = None) -> None:
        if property_list is None and args and _is_property_list(args[-1]):
            *args, property_list = args  # C++'s order: the property list last
        if isinstance(property_list, Property):
            property_list = [property_list]
        if isinstance(target, buffer):
            target, args = _buffer_target(target, tuple(args), property_list)
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
            raise exception(errc.invalid, "a reduction's target is a USM pointer, a "
                            f"sycl.span or a sycl.buffer, got {type(target).__name__}")
        ptr.allocation.check_live()
        if ptr.allocation.nbytes - ptr.byte_offset < extent * ptr.dtype.itemsize:
            raise exception(errc.invalid, f"the reduction's target ({extent} x "
                            f"{ptr.dtype}) runs past the end of its allocation")
        dtype = ptr.dtype
        if isinstance(combiner, type) and issubclass(combiner, BinaryOp):
            combiner = combiner()
        if isinstance(combiner, BinaryOp):
            op, fn, key = combiner.op, None, ""
            known = _identity_of(op, dtype)
        elif isinstance(combiner, pytypes.FunctionType):
            op, fn, key, known = None, combiner, _combiner_key(combiner), None
        else:
            raise exception(errc.invalid, "a reduction's combiner is a SYCL function object "
                            "(sycl.plus(), ...) or a Python function, got "
                            f"{type(combiner).__name__}")
        if identity is not None:
            value = _converted(identity, dtype)
        elif known is not None:
            value = known
        else:
            raise exception(errc.invalid, "a reduction with a user combiner "
                            f"({combiner.__qualname__}) needs its identity: "
                            "sycl.reduction(target, identity, combiner)")
        self.target = ptr
        self.spec = _spec(dtype, op, value, extent, isinstance(target, span),
                          _initializes(property_list), key, fn)


_INITIALIZE = sycl_property.reduction.initialize_to_identity


def _initializes(property_list: Any) -> bool:
    if property_list:
        for p in property_list:
            if isinstance(p, _INITIALIZE):
                return True
    return False


# the values of a reduction -> its spec: a new `sycl.reduction` per launch (as users write
# it) gets the very spec object of the last, which the launch then knows by identity
_SPECS: dict[tuple, ReductionSpec] = {}


def _spec(dtype: np.dtype, *values: Any) -> ReductionSpec:
    key = (dtype, *values, type(values[1]))  # 1 and 1.0 are equal identities of other types
    try:
        spec = _SPECS.get(key)
    except TypeError:  # an unhashable identity
        return ReductionSpec(dtype.str, *values)
    if spec is None:
        if len(_SPECS) >= 256:
            _SPECS.clear()
        spec = _SPECS[key] = ReductionSpec(dtype.str, *values)
    return spec


def _buffer_target(buf: buffer, args: tuple, property_list: Any) -> tuple[usm_ptr, tuple]:
    """The element a buffer reduction combines into, through an accessor the command
    group requires (so it is ordered with the buffer's other users), and the arguments
    after the handler."""
    if not args or not isinstance(args[0], handler):
        raise exception(errc.invalid, "a buffer reduction takes the command group's handler "
                        "after the buffer: sycl.reduction(buf, h, combiner)")
    if buf.size() != 1:
        raise exception(errc.invalid, f"a buffer reduction's buffer holds one element, this "
                        f"one {buf.size()}")
    acc = accessor(buf, args[0], *((write_only, no_init) if _initializes(property_list)
                                   else (read_write,)))
    storage = buf._storage
    return usm_ptr(storage.allocation, acc._first, buf.dtype), tuple(args[1:])


def _is_property_list(v: Any) -> bool:
    return isinstance(v, Property) or (isinstance(v, list | tuple) and
                                       all(isinstance(p, Property) for p in v))


class _Partials(LaunchMemory):
    """A launch's per-work-group partials in device memory, as 32-bit words."""

    __slots__ = ("count", "ptr")

    def __init__(self, device: Any, context: Any, count: int) -> None:
        super().__init__(device, max(count * 4, 4), False, context)
        self.count = count
        self.ptr = usm_ptr(self.allocation, 0, np.dtype(np.uint32))


class _Counters:
    """A device's pool of zero 32-bit counters in device memory of one context, one per
    reduction command. The kernel's last work-group sets its counter back to zero, so a counter
    returns zero; it is handed out again once the work submitted before its command went
    has completed (as the allocator reuses memory)."""

    SLAB = 1024  # counters zeroed at once, in one fill

    def __init__(self, device: Any, context: Any) -> None:
        self.device, self.context = device, context
        self.scheduler = scheduler_for(device)
        self.free: list[usm_ptr] = []
        self.pending: collections.deque = collections.deque()
        self.slabs: list[Any] = []  # their allocations, kept for the process
        # launches from several threads; reentrant: a collection in `take` may `give`
        self.lock = threading.RLock()

    def take(self) -> usm_ptr:
        with self.lock:
            pending = self.pending
            while pending and pending[0][0].done():
                self.free.append(pending.popleft()[1])
            if not self.free:
                slab = memops.initialized_allocation(self.device, self.scheduler, None,
                                                     4 * self.SLAB, self.context)
                self.slabs.append(slab)
                self.free += [usm_ptr(slab, 4 * k, np.dtype(np.uint32))
                              for k in reversed(range(self.SLAB))]
            return self.free.pop()

    def give(self, counter: usm_ptr) -> None:
        last = self.scheduler.engine.last_submission()
        with self.lock:
            if last is None or last.finished:
                self.free.append(counter)
            else:
                self.pending.append((last, counter))


# (device, context) -> its counters
_COUNTERS: dict[tuple, _Counters] = {}


class _Counter:
    """A reduction command's counter, given back to its pool when the command goes."""

    __slots__ = ("pool", "ptr")

    def __init__(self, device: Any, context: Any) -> None:
        pool = _COUNTERS.get((device, context))
        if pool is None:
            pool = _COUNTERS[device, context] = _Counters(device, context)
        self.pool = pool
        self.ptr = pool.take()

    def __del__(self) -> None:
        self.pool.give(self.ptr)


# (id of the kernel's code, id of the device, the reductions, the launch's values) -> its
# plan and its work-group counts by compiled kernel: a new range object with the same
# values (the common spelling) finds them too
_PLANS: dict[tuple, _Entry] = {}


class _Entry:
    """What launches of one reduction kernel with the same launch values share: the plan,
    the work-group counts by compiled kernel, and (prepared kernel, packed arguments,
    command, partials, context) of the last launch, whose command a launch with the same
    arguments submits again (eager submissions of it run one after another, so they may
    share its partials; a graph records a copy with its own)."""

    __slots__ = ("groups", "last", "plan")

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.groups: dict[int, tuple[int, int, int]] = {}
        self.last: tuple | None = None


def _groups(ck: Any, launch: Any, device: Any) -> tuple[int, int, int]:
    """The work-groups of a reduction kernel's first dispatch: a bounded number for the
    grid-stride loop of a one-dimensional range, else one per work-group of the range.
    The kernel indexes the partials (one per work-group and element of a reduction) with
    32-bit integers, so a launch with more than 2**31 - 1 of them is refused rather than
    left to write past its partials."""
    if ck.spec.kind != "range" or ck.spec.dims != 1:
        groups = group_counts(ck, launch, device)
    else:
        counts = _GRID_GROUPS["cpu" if device.is_cpu() else "gpu"]
        local = ck.spec.local[0]
        cap = next((c for c in counts if c * local * _ITEMS_PER_WORK_ITEM >= launch[0]),
                   counts[-1])
        groups = (max(1, min(-(-launch[0] // local), cap)), 1, 1)
    count = groups[0] * groups[1] * groups[2]
    words = max(s.extent * s.words for s in ck.spec.reductions)
    if count * words > MAX_WORK_ITEMS:
        raise exception(errc.nd_range, f"{launch!r} needs {count * words} words of partial "
                        f"results ({count} work-groups, {words} each): more than 2**31 - 1 "
                        "(use a smaller range or span)")
    return groups


def _launch_key(launch: Any) -> tuple:
    if type(launch) is sycl_range:
        return tuple(launch)
    return (tuple(launch.get_global_range()), tuple(launch.get_local_range()),
            tuple(launch.get_offset()))


def build_reduction_launch(device: Any, kernel: Any, launch: Any,
                           reductions: tuple[reduction, ...], properties: Any,
                           context: Any, required: list | None) -> ReductionLaunch:
    """The command of a closure kernel with reductions (properties already checked), in a
    command group requiring the accessors `required` (None outside one)."""
    for r in reductions:
        if not isinstance(r, reduction):
            raise exception(errc.invalid, "parallel_for(range, reduction..., kernel): "
                            f"{type(r).__name__} is not a sycl.reduction")
    if type(kernel) is not pytypes.FunctionType and not (
            type(kernel) is pytypes.MethodType and
            type(kernel.__func__) is pytypes.FunctionType):
        raise exception(errc.invalid, "a kernel with reductions is a Python function "
                        f"taking the work-item and one reducer each, got "
                        f"{type(kernel).__name__}")
    if type(launch) is not sycl_range and type(launch) is not nd_range:
        raise exception(errc.invalid, "reductions run in parallel_for over a sycl.range or "
                        "sycl.nd_range")
    specs = tuple(r.spec for r in reductions)
    targets = tuple(r.target for r in reductions)
    if properties is None:
        last = _LAST.get(id(kernel.__code__))
        if last is not None and last[5].code is kernel.__code__ and last[0] == launch and \
                last[1] is device and \
                last[2] is context and same_objects(last[3], specs) and \
                all(map(operator.eq, last[4], targets)) and \
                repeats(kernel, last[5], last[6], required) and not any_freed(targets):
            return last[6][2]
    key = (id(kernel.__code__), id(device), specs, _launch_key(launch))
    entry = _PLANS.get(key) if properties is None else None
    if entry is None or entry.plan.code is not kernel.__code__:
        check_work_items(launch)
        entry = _Entry(_plan(kernel, launch, device, properties, specs))
        if properties is None:
            if len(_PLANS) > 256:
                _PLANS.clear()
            _PLANS[key] = entry
    p, record = prepared_for(kernel, entry.plan, device)
    ck = p.ck
    if id(device.vulkan) not in p.checked:
        check_supported(p, device)
    groups = entry.groups.get(id(ck))
    if groups is None:
        groups = entry.groups[id(ck)] = _groups(ck, launch, device)
    count = groups[0] * groups[1] * groups[2]
    last = entry.last
    if last is not None and last[0] is p and last[4] is context:
        # the arguments of the last launch, partials included: its command runs again
        packed = p.arguments(kernel, _hidden(reductions, last[3]), launch, context, required,
                             device)
        if packed == last[1]:
            _remember(kernel, launch, device, context, specs, targets, entry.plan,
                      (p, packed, last[2], context, record, None))
            return last[2]
    scratch = _scratch(device, context, specs, count)
    packed = p.arguments(kernel, _hidden(reductions, scratch), launch, context, required,
                         device)
    command = _command(p, device, context, groups, packed, scratch)
    entry.last = (p, packed, command, scratch, context)
    if properties is None:
        _remember(kernel, launch, device, context, specs, targets, entry.plan,
                  (p, packed, command, context, record, None))
    return command


def compiled_reduction(device: Any, kernel: Any, launch: Any,
                       reductions: tuple[reduction, ...], properties: Any = None) -> Any:
    """The compiled kernel a launch with reductions runs (its arguments in registers)."""
    plan = _plan(kernel, launch, device, properties, tuple(r.spec for r in reductions))
    return prepared_for(kernel, plan, device)[0].ck


def _plan(kernel: Any, launch: Any, device: Any, properties: Any, specs: tuple) -> Plan:
    """A plan for a reduction launch: its push-constant and argument-block variants."""
    facts = launch_facts(launch, device)
    shape = facts[0]
    return Plan(kernel, launch, None, shape[0], (
        launch_variant(kernel, None, shape, launch, device, properties, reductions=specs),
        launch_variant(kernel, None, shape, launch, device, properties, True,
                       reductions=specs)), facts)


# id(kernel code) -> (launch, device, context, specs, targets, plan, `last` as the
# plan module keeps it) of the last reduction launch of that code (the plan holds the
# code, so its id is not reused while the entry lives): a repeat with the very same
# reductions and captures, and targets at the same addresses (`out + k` makes a new
# pointer each call), gets its command back without packing arguments
_LAST: dict[int, tuple] = {}


def _remember(kernel: Any, launch: Any, device: Any, context: Any, specs: tuple,
              targets: tuple, plan: Plan, last: tuple) -> None:
    if last[4] is None or last[4][3] is None:  # no record of the captures to check
        _LAST.pop(id(kernel.__code__), None)
        return
    if len(_LAST) >= 256:
        _LAST.clear()
    _LAST[id(kernel.__code__)] = (launch, device, context, specs, targets, plan, last)


def _scratch(device: Any, context: Any, specs: tuple[ReductionSpec, ...],
             count: int) -> tuple[list[_Partials], _Counter]:
    """A command's partials (`count` work-groups' of each reduction) and counter."""
    return ([_Partials(device, context, count * s.extent * s.words) for s in specs],
            _Counter(device, context))


def _hidden(reductions: tuple[reduction, ...],
            scratch: tuple[list[_Partials], _Counter]) -> tuple:
    """The hidden arguments of a reduction kernel: each reduction's target and partials,
    then the counter."""
    partials, counter = scratch
    out: list[Any] = []
    for r, part in zip(reductions, partials, strict=True):
        out += [r.target, part.ptr]
    return (*out, counter.ptr)


def _command(p: Any, device: Any, context: Any, groups: tuple[int, int, int],
             packed: bytes, scratch: tuple[list[_Partials], _Counter]) -> ReductionLaunch:
    """The launch with `packed` arguments; its copy for a graph packs the same arguments
    with partials and a counter of its own."""
    ck = p.ck
    partials, counter = scratch
    keep: tuple = (*partials, counter)
    push = packed
    if ck.spec.args_in_memory:
        block = ArgumentBlock(device, packed)
        push = ADDRESS.pack(block.address)
        keep += (block,)

    def copy() -> ReductionLaunch:
        fresh = ([_Partials(device, context, part.count) for part in partials],
                 _Counter(device, context))
        out = bytearray(packed)
        n = len(partials)
        for a in ck.args:
            if a.path[0] == "param" and a.path[1] < 2 * n and a.path[1] % 2 == 1:
                ADDRESS.pack_into(out, a.push_offset,
                                  fresh[0][a.path[1] // 2].allocation.address)
            elif a.path == ("param", 2 * n):
                ADDRESS.pack_into(out, a.push_offset, fresh[1].ptr.address)
        return _command(p, device, context, groups, bytes(out), fresh)

    return ReductionLaunch(ck.name, ck.binary, ck.entry, push, groups, keep_alive=keep,
                           copy=copy)
