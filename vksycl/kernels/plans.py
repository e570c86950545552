"""Launch plans and the identity checks that let a repeated launch submit its last
command again, without fetching or packing a single argument.

A plan is what launches of one kernel on one device with one launch object share: the
keys of the variants it runs and the last command. The prepared kernels behind plans are
cached under the signatures of `cache_keys`. A launch gets the last command back only
while every check below holds; each guards something that would make that command wrong:

- The kernel's code, by identity, found by its id: hashing a code object hashes its
  bytecode, which costs more than the rest of a repeated launch. The plan holds the code,
  so its id is not reused while the plan lives.
- The launch object, by identity: ranges are immutable, so the same object gives the same
  shape, work-group counts and range arguments. Equal ranges in a new object just make a
  new plan (and check their work-items once). A launch of another size whose
  `launch_facts` are the last plan's, and whose captures and arguments are the very
  objects of the last one, takes its command with the new sizes and work-group counts
  (sizes are launch arguments, never compiled in), under no plan of its own while sizes
  keep changing; a size launched twice running gets a plan that takes the last one's
  variants and prepared kernel rather than working them out again (`resized_plan`).
- The free function kernel info, by identity: one function is a kernel per template
  instantiation, each with its own parameter types and properties.
- Launch properties: a launch with some never finds or keeps a plan, since they are
  checked at each launch and choose the variant.
- The polymorphic classes virtual calls know (`virtual.version()`): a class defined since
  the kernel compiled may be a target of its virtual calls, so any change makes a new
  plan, whose variants are keyed by the classes known now.
- The captured cells, each by identity: a factory makes a new closure at each call, but the
  objects in its cells are the arguments. The same object packs the same only if it is
  `immutable` (numbers, pointers, None, enum members) or `_stable` (its signature cannot
  change: device_globals, classes, functions without cells); the plan records the
  captures only when all are. Equality would not do: 1, 1.0 and True are equal but key
  different kernels, and comparing arbitrary objects (numpy arrays) costs or fails.
- The globals the code reads (`global_names`), each by identity: numbers among them are
  compiled in and functions among them are called, so rebinding one changes the kernel.
- Kernels that read attributes of captured objects, or were compiled with captured values
  as constants, are never recorded: those can change while the captured objects stay.
- The pointers among the recorded captures and arguments, for being freed: a pointer is
  immutable but its allocation is not; the last command would reach freed memory, so
  the launch takes the full way, which raises.
- device_globals: a kernel using them always packs its arguments, since their addresses
  are looked up per device and kernel bundle at each launch; so does a kernel compiled in
  checked mode, whose table of live allocations changes with every allocation.
- The context, by identity: pointers were checked against the last launch's only.
- The arguments record: explicit arguments count as the last launch's only when the very
  tuple comes again (the free function layer keeps its converted tuple while the
  caller's arguments are the same objects) and every argument is immutable; a list can
  change in place. The last few launches are also kept by their arguments object, so a
  loop swapping two buffers finds each one's command. The kernel bundle a launch comes
  from does not count: only device_globals differ between bundles, and a kernel using
  them never repeats (above).

A launch that fails a check only because numbers or pointers read straight into a slot
of the push constants are new values of the same kind (a number of the same type, a
pointer to the same element type: the same prepared kernel), the last launch's captures
being stable and the rest the very objects, repacks those values alone into the last
launch's bytes (`new_captures`, `new_arguments`); once the plan's argument ring is
settled, a run of such launches changing the same cells or arguments (a streak: a time
step each launch) checks those values alone and the rest by identity (`streak`). Any
other launch that fails a check packs its arguments; if it runs the prepared kernel of
the plan's last launch and its bytes equal that launch's, it still gets the last command
back, the packed bytes being exact. A launch reading its arguments from an argument
block is never kept: the block is its own. `Plan.last` is replaced whole, so threads
launching the same kernel never see a mix of two launches.

Finding the prepared kernel has its own shortcut: captures and globals that are the very
objects of the last launch, pointers to the same element types, or accessors of the same
element type, dimensions and mode (or local shape) (`_keyed_alike`), give the same key
without computing it. Element types compare by identity, since numpy's dtype equality
ignores what a pointer dtype points to. Accessors take this shortcut (`_keyed`: their
signature is fixed when they are made), the records keeping their keys rather than them
(an accessor keeps its buffer alive, and a buffer writes back when it goes). A launch
capturing a new accessor gets the last command back when the accessor's launch key (its
memory, region and element type as kernels see it) and mode are the kept one's, and the
accessor passes the launch checks of the command group launching it (`required`: live
memory, an accessor that command group requires); a loop over a few buffers finds each
one's command by those keys (`accessor_command`).
"""

from __future__ import annotations

import types as pytypes
from enum import Enum
from typing import Any, Final

import numpy as np

from ..compiler import virtual
from ..compiler.captures import frozen
from ..compiler.device_global import device_global
from ..compiler.kernel import CompiledKernel, load_or_compile
from ..compiler.virtual import classes_version
from ..exceptions import errc, exception
from ..ranges import check_work_items
from ..runtime.commands import KernelLaunch
from ..runtime.usm import ptr as usm_ptr
from .cache_keys import global_names, global_signature, signature, value_key
from .marshal import Prepared, Slot
from .variants import launch_facts, launch_variant

_IMMUTABLE_TYPES: Final = frozenset((int, float, bool, usm_ptr, type(None)))
_OTHER_IMMUTABLE: Final = (np.generic, Enum)


def immutable(v: Any) -> bool:
    """Numbers, pointers, None and enum members: an argument that packs the same whenever
    the same object comes again."""
    return type(v) in _IMMUTABLE_TYPES or isinstance(v, _OTHER_IMMUTABLE)


def all_immutable(values: tuple) -> bool:
    """Whether every value is `immutable`."""
    return all(type(v) in _IMMUTABLE_TYPES or isinstance(v, _OTHER_IMMUTABLE)
               for v in values)


def _stable(v: Any) -> bool:
    """Whether the same object always has the same cache signature: immutable values,
    device_globals, classes (keyed by identity), functions without cells (structs,
    closures and other objects may change)."""
    t = type(v)
    return (immutable(v) or t is device_global or t is type or
            (t is pytypes.FunctionType and not v.__closure__))


def _keyed(v: Any) -> bool:
    """Whether the same object always has the same cache signature: `_stable` values, and
    accessors (element type, dimensions, mode and local shape are fixed when one is
    made)."""
    return _stable(v) or hasattr(type(v), "__vksycl_accessor__")


class _AccessorKey:
    """What a record keeps of an accessor a launch captured: what keys its kernel, not the
    accessor, which would keep its buffer alive (and the buffer's write-back from
    happening) until the next launch of the kernel."""

    __slots__ = ("cls", "dims", "dtype", "launch", "what")

    def __init__(self, acc: Any) -> None:
        self.cls, self.dtype, self.dims = type(acc), acc.dtype, acc.dims
        self.what = _accessor_what(acc)
        key = getattr(acc, "_vksycl_launch_key", None)
        self.launch = None if key is None else key()

    def matches(self, acc: Any) -> bool:
        return type(acc) is self.cls and acc.dtype is self.dtype and \
            acc.dims == self.dims and _accessor_what(acc) == self.what


def _accessor_what(acc: Any) -> Any:
    """The rest of an accessor's key: a local one's shape, a global one's access mode."""
    return tuple(acc.shape) if type(acc).__vksycl_accessor__ == "local" else acc.access_mode


def _kept(v: Any) -> Any:
    """What a record keeps of a captured object (an accessor's key for an accessor)."""
    return _AccessorKey(v) if hasattr(type(v), "__vksycl_accessor__") else v


def _keyed_alike(last: Any, now: Any) -> bool:
    """Whether a global `now` gives the cache key `last` gave: the same object, a pointer
    to the same element type (a fresh allocation each launch), or an accessor matching
    the key kept of the last one (a new accessor each command group)."""
    return last is now or (type(now) is usm_ptr and type(last) is usm_ptr and
                           now.dtype is last.dtype) or (type(last) is _AccessorKey and
                                                        last.matches(now))


# plain Python numbers: a new one each launch is a new value, never a new kernel
NUMBER_TYPES: Final = frozenset((int, float, bool))


def _captured_alike(last: Any, now: Any) -> bool:
    """`_keyed_alike` for a captured value, where a number is also keyed by its type alone
    (it is an argument; a global number is compiled in): a new value each launch, the
    time step of a simulation, runs the same kernel."""
    return last is now or (type(now) is type(last) and type(now) in NUMBER_TYPES) or \
        _keyed_alike(last, now)


def _all_keyed_alike(last: tuple, now: tuple) -> bool:
    return all(map(_keyed_alike, last, now))


def _all_captured_alike(last: tuple, now: tuple) -> bool:
    return all(map(_captured_alike, last, now))


# The identity checks every launch makes, as generator loops: compiled (`mypyc_modules`),
# such a loop over a tuple is C, where `all(map(operator.is_, ...))` calls through the
# builtins.


def same_objects(kept: tuple, now: tuple) -> bool:
    """Whether `now` holds the very objects `kept` holds, index by index."""
    n = len(kept)
    if len(now) != n:
        return False
    return all(kept[i] is now[i] for i in range(n))


def contents(cells: tuple | None) -> tuple:
    """The objects in a function's closure cells."""
    return () if cells is None else tuple([c.cell_contents for c in cells])


def globals_read(fn: Any, names: tuple[str, ...]) -> tuple:
    """The module globals `names` of a function, None for one not bound."""
    if not names:
        return ()
    found = fn.__globals__
    return tuple([found.get(name) for name in names])


def same_contents(kept: tuple, cells: tuple) -> bool:
    """Whether a function's closure `cells` hold the very objects `kept` holds
    (`same_objects` with `contents`, making no tuple)."""
    n = len(cells)
    return len(kept) == n and all(kept[i] is cells[i].cell_contents for i in range(n))


def same_globals(kept: tuple, fn: Any, names: tuple[str, ...]) -> bool:
    """Whether the module globals `names` of a function are the very objects `kept`
    holds (`same_objects` with `globals_read`, making no tuple)."""
    found: dict = fn.__globals__
    n = len(names)
    return len(kept) == n and all(kept[i] is found.get(names[i]) for i in range(n))


def any_freed(pointers: tuple) -> bool:
    """Whether the allocation of one of `pointers` was freed."""
    return any(p.allocation.freed for p in pointers)


_PREPARED: dict[Any, Prepared] = {}
# (code, launch variant) -> (captured objects, globals, Prepared) of the last launch whose
# captures were all `_keyed`: a launch capturing objects keyed alike skips the key
_LAST: dict[Any, tuple] = {}


def _prepare(pyfn: Any, captured: tuple, globals_: tuple, spec_key: tuple, spec_fn: Any
             ) -> Prepared:
    last = _LAST.get((pyfn.__code__, spec_key))
    if last is not None and (same_objects(last[0], captured) or
                             _all_captured_alike(last[0], captured)) and \
            (same_objects(last[1], globals_) or _all_keyed_alike(last[1], globals_)):
        p = last[2]
    else:
        key = (pyfn.__code__, spec_key, tuple(signature(v) for v in captured),
               tuple(global_signature(v) for v in globals_))
        p = _prepared(pyfn, key, spec_fn)
        if all(map(_keyed, captured)) and all(map(_keyed, globals_)):
            _LAST[(pyfn.__code__, spec_key)] = (tuple(map(_kept, captured)),
                                                tuple(map(_kept, globals_)), p)
    if p.attr_getters:
        sigs = tuple(signature(get(pyfn, ())) for get in p.attr_getters)
        if sigs != p.attr_sigs:  # an attribute changed type: the kernel for the new ones
            attr_key = (p.key, sigs)
            known = _PREPARED.get(attr_key)
            if known is None:
                ck = load_or_compile(pyfn, spec_fn(), attr_key, sigs)
                known = _PREPARED[attr_key] = Prepared(ck, pyfn, attr_key)
            p = known
    if p.spec_getters:  # compiled with captured values as constants: one variant per value
        values = tuple(frozen(get(pyfn, ())) for get in p.spec_getters)
        spec_last = p.last_spec
        if spec_last is not None and same_objects(spec_last[0], values):
            return spec_last[1]
        keys = value_key(values)
        variant = p.variants.get(keys)
        if variant is None:
            ck = load_or_compile(pyfn, spec_fn(), (p.key, keys), values)
            if value_key(ck.spec_values) != keys:
                raise exception(errc.build, f"kernel {ck.name}: captured values changed "
                                "while it compiled")
            variant = p.variants[keys] = Prepared(ck, pyfn, (p.key, keys))
        p.last_spec = (values, variant)
        return variant
    return p


class Ways:
    """How many launches went past a repeat's identity checks, by the way they looked
    further: plans made (and made from a plan for another size, and of those the
    launches that took the last launch's command with their sizes packed in), repacks
    of changed captures or arguments tried, the kept launches and the commands kept by
    accessors looked among. Compiled code calls the functions
    that take these ways directly, so this is how tests, and `launch_opcodes.py`, see
    which way a spelling takes."""

    def __init__(self) -> None:
        self.plans = 0
        self.resized = 0
        self.new_sizes = 0
        self.repacks = 0
        self.kept = 0
        self.by_accessors = 0

    def counts(self) -> dict[str, int]:
        return {"plans": self.plans, "resized": self.resized, "new_sizes": self.new_sizes,
                "repacks": self.repacks, "kept": self.kept, "by_accessors": self.by_accessors}


WAYS: Final = Ways()


class Plan:
    """What launches of one kernel with one launch object (ranges are immutable) and no
    properties share: the variant keys, and the last command, which the next launch with
    the same arguments submits again."""

    __slots__ = (
        "by_accessors",
        "classes",
        "code",
        "facts",
        "info",
        "kept",
        "kind",
        "last",
        "last_resize",
        "launch",
        "names",
        "prepared",
        "recent",
        "repacks",
        "ring",
        "ring_of",
        "sizes",
        "streak",
        "variants",
    )

    def __init__(self, pyfn: Any, launch: Any, info: Any, kind: str, variants: tuple,
                 facts: tuple, names: tuple[str, ...] | None = None) -> None:
        self.code = pyfn.__code__  # plans are found by its id: the plan keeps it alive
        # the globals its code reads (`names`: another plan's of the same code)
        self.names = global_names(pyfn) if names is None else names
        self.launch = launch
        self.info = info
        self.kind = kind
        self.variants = variants  # (push-constant variant, argument-block variant)
        self.facts = facts  # the launch's `launch_facts`, which chose the variants
        self.classes = virtual.version()  # the polymorphic classes virtual calls know
        # (prepared kernel, push constants, command, context, captures record, arguments
        # record) of the last launch, replaced whole so threads launching the same kernel
        # never see a mix of two launches. The arguments record is (the arguments object,
        # the pointers among them) when every argument is immutable, else None.
        # (Plain `tuple`s here: their identity is what later launches compare.)
        self.last: tuple = (None, b"", None, None, None, None)
        # (captured objects, globals, prepared kernel, pointers among them) of the last
        # launch whose captures were all `_keyed` and whose kernel reads no attributes
        # of them, accessors kept as their keys: a launch capturing objects keyed alike
        # runs the same prepared kernel, and one capturing the very same objects (all
        # `_stable` then, an accessor's key being none of them) may get the last command
        self.prepared: tuple | None = None
        # push constants -> (prepared kernel, context, command) of recent launches: a loop
        # over a few arrays (or buffers) launches each one's command again
        self.recent: dict[bytes, tuple] = {}
        # the launch keys of the captured accessors -> (context, prepared kernel, command,
        # captures record) for launches whose other captures are the very objects of the
        # plan's record: a loop over a few buffers finds each one's command without
        # packing its arguments, and its record becomes the last launch's
        self.by_accessors: dict[tuple, tuple] = {}
        # id(object) -> (object, `last`) of recent launches, by their arguments object, or
        # for closures their function: a loop swapping two buffers, or alternating
        # between closures over two arrays, finds each one's launch (the entry holds the
        # object, so its id is not reused while it is kept)
        self.kept: dict[int, tuple] = {}
        # launches of the prepared kernel `ring_of` with values new to `recent` so far;
        # once there were a few, (that prepared kernel, the argument ring its launches
        # run from (`argument_ring`), or False if the argument-block variant cannot take
        # the packed arguments as they are): one object, so that threads launching other
        # prepared kernels never see one's ring with another's kernel
        self.repacks = 0
        self.ring_of: Prepared | None = None
        self.ring: tuple[Prepared, Any] | None = None
        # while launches keep bringing new numbers in the same closure cells or explicit
        # arguments (a time step) and the ring is settled, the `streak.Streak` that checks
        # the next such launch at those alone; it holds only while its launch is `last`
        self.streak: Any = None
        # the launch object of the last launch of another size that ran as this plan's
        # last launch resized, with no plan of its own (`launch._new_size`): the same size
        # coming next gets one, so a size that then repeats is found as a plan
        self.last_resize: Any = None
        # (`last` when they were worked out, {launch object: (its packed arguments,
        # work-group counts, origin)}) of launches of other sizes that ran as that last
        # launch resized: a few sizes in turn (a shrinking active set, again and again)
        # look their launches up rather than checking, packing and counting again
        self.sizes: tuple[tuple | None, dict] = (None, {})

    def take_ring(self, like: Plan) -> None:
        """Takes `like`'s argument ring (and what settles it) for the same prepared
        kernel: closures of one code launched in turn (over other arrays, of other sizes)
        replace each other's plans, and would each make a ring anew."""
        self.ring, self.ring_of, self.repacks = like.ring, like.ring_of, like.repacks


# (id of the kernel's code, id of the device) -> plan: hashing a code object hashes its
# bytecode, which costs more than the rest of a repeated launch's checks
_PLANS: dict[tuple[int, int], Plan] = {}


class _Latest:
    """What `_PLANS` held for the code and device looked up or planned last, (code,
    device, plan or None): a loop launching one kernel finds its plan by identity alone,
    before the dict's hashing. One tuple, replaced whole, so that threads never see one
    entry's plan with another's code."""

    def __init__(self) -> None:
        self.entry: tuple[Any, Any, Plan | None] = (None, None, None)


_LATEST: Final = _Latest()


def latest_plan(pyfn: Any, info: Any, device: Any) -> Plan | None:
    """The plan of the last launch of this kernel on this device, whatever its launch
    object, while the polymorphic classes virtual calls know are unchanged."""
    code = pyfn.__code__
    latest_code, latest_device, plan = _LATEST.entry
    if latest_code is not code or latest_device is not device:
        plan = _PLANS.get((id(code), id(device)))
        _LATEST.entry = (code, device, plan)
    if plan is None or plan.code is not code or plan.info is not info or \
            plan.classes != classes_version[0]:
        return None
    return plan


def known_plan(pyfn: Any, info: Any, launch: Any, device: Any) -> Plan | None:
    """`latest_plan` if it was made for a launch of the same type and values (a new
    `sycl.range(n)` per call, the common spelling, finds it: ranges are tuples, compared
    in C). The plan takes the newest launch object, so a launch repeating it is found by
    identity."""
    plan = latest_plan(pyfn, info, device)
    if plan is None:
        return None
    known = plan.launch
    if known is not launch:
        if type(known) is not type(launch) or known != launch:
            return None
        plan.launch = launch
    return plan


def plan_for(pyfn: Any, info: Any, launch: Any, device: Any, properties: Any) -> Plan:
    """The plan a launch runs under: the known one, else a new one (kept when the launch
    has no properties). A launch of another size with the facts of the known plan's
    (`launch_facts`) gets a new plan with that plan's variants and prepared kernel
    (`resized_plan`)."""
    if properties is None:
        plan = known_plan(pyfn, info, launch, device)
        if plan is not None:
            return plan
    facts = checked_facts(launch, info, device)
    if properties is not None:
        return new_plan(pyfn, info, launch, device, properties, facts)
    like = latest_plan(pyfn, info, device)
    plan = None if like is None else resized_plan(pyfn, info, launch, device, like, facts)
    if plan is None:
        plan = new_plan(pyfn, info, launch, device, None, facts)
        _keep(plan, pyfn, device)
    return plan


def resized_plan(pyfn: Any, info: Any, launch: Any, device: Any, like: Plan,
                 facts: tuple | None = None) -> Plan | None:
    """A plan for a launch of another size than `like`'s (the kernel's latest plan on
    this device) with its facts (`launch_facts`, worked out here unless given): made
    with `like`'s variants and prepared kernel, so that a size changing every launch
    costs no plan's making; None for other facts."""
    if facts is None:
        facts = checked_facts(launch, info, device)
    if like.facts != facts:
        return None
    WAYS.resized += 1
    plan = Plan(pyfn, launch, info, facts[0][0], like.variants, facts, like.names)
    plan.prepared = like.prepared
    plan.take_ring(like)
    _keep(plan, pyfn, device)
    return plan


def checked_facts(launch: Any, info: Any, device: Any) -> tuple:
    """A launch's `launch_facts`, once its work-items and (for a free function kernel)
    its kind and dimensions are checked: once per plan, and for each launch of a new
    size."""
    if launch is not None:
        check_work_items(launch)
    facts = launch_facts(launch, device)
    if info is not None:
        info.check_launch(facts[0][0], facts[0][1])
    return facts


def _keep(plan: Plan, pyfn: Any, device: Any) -> None:
    """Makes `plan` the one later launches of the kernel on the device find."""
    code = pyfn.__code__
    _PLANS[(id(code), id(device))] = plan
    _LATEST.entry = (code, device, plan)


def new_plan(pyfn: Any, info: Any, launch: Any, device: Any, properties: Any,
             facts: tuple) -> Plan:
    """A plan for a launch with these facts (`launch_facts`): its push-constant and
    argument-block variants."""
    WAYS.plans += 1
    shape = facts[0]
    return Plan(pyfn, launch, info, shape[0], (
        launch_variant(pyfn, info, shape, launch, device, properties),
        launch_variant(pyfn, info, shape, launch, device, properties, True)), facts)


def prepared_for(pyfn: Any, plan: Plan, device: Any) -> tuple[Prepared, tuple | None]:
    """The prepared kernel a launch runs: its arguments in push constants where they fit
    the device's, else the variant reading them from an argument block. With it, the
    plan's record of the captured objects when they are the very objects it holds
    (immutable, so the same arguments unless a pointer was freed since), else None."""
    captured = contents(pyfn.__closure__)
    globals_ = globals_read(pyfn, plan.names)
    known = plan.prepared
    if known is not None:
        if same_objects(known[0], captured) and same_objects(known[1], globals_):
            return known[2], known
        if _all_captured_alike(known[0], captured) and _all_keyed_alike(known[1], globals_):
            if known[3] is None:  # accessors among the captures: a record of this launch
                return known[2], _keyed_record(plan, captured, globals_, known[2])
            if all(map(_stable, captured)) and all(map(_stable, globals_)):
                # closures of one code over other objects (a factory's, or one per
                # array): the record follows the newest, so its repeats are found again
                return known[2], _stable_record(plan, captured, globals_, known[2])
            return known[2], None
    p = _prepare(pyfn, captured, globals_, *plan.variants[0])
    if p.ck.push_size > device.vulkan.max_push_constants_size:
        p = _prepare(pyfn, captured, globals_, *plan.variants[1])
    if not p.attr_getters and not p.spec_getters and all(map(_keyed, captured)) and \
            all(map(_keyed, globals_)):
        if all(map(_stable, captured)) and all(map(_stable, globals_)):
            return p, _stable_record(plan, captured, globals_, p)
        pointers = tuple(v for v in (*captured, *globals_) if type(v) is usm_ptr)
        if pointers:
            plan.prepared = (tuple(map(_kept, captured)), tuple(map(_kept, globals_)), p,
                             pointers)
            return p, None
        return p, _keyed_record(plan, captured, globals_, p)
    if p.attr_getters and not p.spec_getters and all(map(_stable, captured)) and \
            all(map(_stable, globals_)):
        return p, _attribute_record(pyfn, captured, globals_, p)
    return p, None


def _prepared(pyfn: Any, key: tuple, spec_fn: Any) -> Prepared:
    """The prepared kernel cached under `key`, compiled (or loaded) the first time."""
    p = _PREPARED.get(key)
    if p is None:
        p = _PREPARED[key] = Prepared(load_or_compile(pyfn, spec_fn(), key), pyfn, key)
    return p


def block_variant(pyfn: Any, plan: Plan, p: Prepared) -> CompiledKernel | None:
    """The argument-block variant of the prepared kernel `p` (the plan's push-constant
    one, of a kernel reading no attributes and compiled with no values), under `p`'s key
    with the variant's spec (no signature computed again), when it reads the same
    fields at the same offsets over the same work-groups, so the same packed bytes and
    group counts serve both."""
    spec_key, spec_fn = plan.variants[1]
    ck = _prepared(pyfn, (p.key[0], spec_key, *p.key[2:]), spec_fn).ck
    return ck if argument_layout(ck) == argument_layout(p.ck) else None


def argument_layout(ck: CompiledKernel) -> tuple:
    """What two variants of a kernel must share for one's packed arguments to serve the
    other: where each argument lies, the values compiled in, and the work-groups."""
    return (ck.args_size, ck.coarsen, ck.spec.local, ck.spec_values,
            [(a.path, a.kind, a.piece, a.push_offset, str(a.dtype)) for a in ck.args])


def _attribute_record(pyfn: Any, captured: tuple, globals_: tuple, p: Prepared
                      ) -> tuple | None:
    """A record of a launch whose kernel reads attributes of captured objects (a kernel
    method's `self.x`): the values they hold now, when all are `_stable`, so a repeat
    that finds the very same values gets the last command. Not the plan's `prepared`:
    the attributes are read again at each launch."""
    attributes = tuple(get(pyfn, ()) for get in p.attr_getters)
    if not all(map(_stable, attributes)):
        return None
    pointers = tuple(v for v in (*captured, *globals_, *attributes) if type(v) is usm_ptr)
    return (captured, globals_, p, pointers, attributes)


def _same_attributes(pyfn: Any, record: tuple) -> bool:
    """Whether the attributes an attribute record kept are the very objects read now."""
    try:
        return same_objects(record[4], tuple([get(pyfn, ()) for get in
                                              record[2].attr_getters]))
    except AttributeError:  # one was deleted: the full launch says which
        return False


def _stable_record(plan: Plan, captured: tuple, globals_: tuple, p: Prepared) -> tuple:
    """The plan's record of a launch whose captures are all `_stable`: repeats of it may
    get its command back once its pointers are checked for being freed."""
    pointers = tuple(v for v in (*captured, *globals_) if type(v) is usm_ptr)
    record: tuple = (captured, globals_, p, pointers)  # one object: its identity counts
    plan.prepared = record
    return record


def _keyed_record(plan: Plan, captured: tuple, globals_: tuple, p: Prepared) -> tuple:
    """The plan's record of a launch capturing accessors (kept as their keys). The
    commands kept by accessor launch keys hold for the other captures of the record they
    were made under: other objects among those forget them."""
    record: tuple = (tuple(map(_kept, captured)), tuple(map(_kept, globals_)), p, None)
    known = plan.prepared
    if known is None or known[2] is not p or not _same_besides_accessors(known, record):
        plan.by_accessors.clear()
    plan.prepared = record
    return record


def _same_besides_accessors(a: tuple, b: tuple) -> bool:
    return all(x is y or (type(x) is _AccessorKey and type(y) is _AccessorKey)
               for x, y in zip((*a[0], *a[1]), (*b[0], *b[1]), strict=True))


def repeats(pyfn: Any, plan: Plan, last: tuple, required: list | None) -> bool:
    """Whether a launch under `plan` runs the command of its `last` launch again, as far as
    the kernel's captures and globals and the pointers they hold go (the caller checks
    the context and the arguments); accessors among the captures must be among those the
    launching command group requires (`required`)."""
    record = last[4]
    if record[3] is None:  # accessors kept as their keys: every buffer command group
        if last[0].packs_always:
            return False
        cells = pyfn.__closure__
        if cells is not None and not _launch_alike(record[0], contents(cells),
                                                   required):
            return False
        names = plan.names
        return not names or _launch_alike(record[1], map(pyfn.__globals__.get, names),
                                          required)
    return same_captures(pyfn, record, plan.names) and not last[0].packs_always and \
        (len(record) == 4 or _same_attributes(pyfn, record)) and \
        not any_freed(record[3])


def _repackable(kept: Any, now: Any) -> bool:
    """Whether `now` in place of `kept` keeps the kernel's cache key and only changes a
    slot's bytes: a number of the same type, or a pointer to the same element type."""
    t = type(now)
    if t is not type(kept):
        return False
    if t is usm_ptr:
        return now.dtype is kept.dtype
    return t in NUMBER_TYPES or isinstance(now, np.number | np.bool_)


def changed_numbers(slots: dict[int, Slot], changes: list
                    ) -> tuple[tuple[int, Slot], ...] | None:
    """The (index, slot) pairs of `changes` among `slots` (a prepared kernel's cell or
    parameter slots) when every change is a number there (what a run of launches bringing
    a new time step changes); else None."""
    if any(type(v) is usm_ptr for _, v in changes):
        return None
    changing = tuple((i, s) for i, s in slots.items() if any(s is c for c, _ in changes))
    return changing if len(changing) == len(changes) else None


def _repacked_record(last: tuple) -> bool:
    """Whether the last launch's record allows repacking: captures all `_stable` and kept
    as they were, a kernel reading no attributes of them nor device_globals."""
    record, p = last[4], last[0]
    return record is not None and len(record) == 4 and record[3] is not None and \
        not p.packs_always and not p.attr_getters and not p.spec_getters


def new_captures(kernel: Any, plan: Plan, last: tuple) -> tuple | None:
    """(record, changes) of a closure launched after `last` whose captures differ from it
    only in `_repackable` values that are closure cells or module globals read straight
    into one slot each (a new time step each launch, the other of two buffers): its
    record, made the plan's, and the (slot, value) pairs to repack; else None."""
    WAYS.repacks += 1
    if not _repacked_record(last):
        return None
    record, p = last[4], last[0]
    captured = contents(kernel.__closure__)
    changes: list[tuple[Slot, Any]] = []
    if not _changes(record[0], captured, p.cell_slots, changes):
        return None
    names = plan.names
    globals_ = globals_read(kernel, names)
    if not same_objects(record[1], globals_):
        for name, kept, now in zip(names, record[1], globals_, strict=True):
            if kept is not now:  # a number among them is compiled in
                slot = p.global_slots.get(name)
                if slot is None or type(now) is not usm_ptr or not _repackable(kept, now):
                    return None
                changes.append((slot, now))
    pointers = _pointers(record[3], changes, captured + globals_)
    if pointers is None:
        return None
    record = (captured, globals_, p, pointers)
    plan.prepared = record
    return record, changes


def _changes(kept: tuple, now: tuple, slots: dict[int, Slot], changes: list) -> bool:
    """Adds the (slot, value) of each value in `now` that is not the one `kept` holds at
    its index to `changes`; False if one is not `_repackable` into a slot of its own."""
    for i, v in enumerate(now):
        k = kept[i]
        if k is not v:
            slot = slots.get(i)
            if slot is None or not _repackable(k, v):
                return False
            changes.append((slot, v))
    return True


def new_arguments(kernel: Any, plan: Plan, last: tuple, args: tuple) -> tuple | None:
    """(arguments record, changes) of a launch of explicit arguments after `last`, its
    captures the very objects of `last`'s, its arguments differing from `last`'s (all
    `immutable`) only in `_repackable` values read straight into one slot each: the
    (slot, value) pairs to repack; else None."""
    WAYS.repacks += 1
    known = last[5]
    if known is None or len(known[0]) != len(args) or not _repacked_record(last) or \
            not repeats(kernel, plan, last, None):  # a record without accessors
        return None
    changes: list[tuple[Slot, Any]] = []
    if not _changes(known[0], args, last[0].param_slots, changes):
        return None
    pointers = _pointers(known[1], changes, args)  # the others are `last`'s: immutable
    return None if pointers is None else ((args, pointers), changes)


def _pointers(kept: tuple, changes: list, values: tuple) -> tuple | None:
    """The pointers among `values`, whose earlier ones were `kept`, now that `changes`
    were made to them; None if one was freed (the full packing raises)."""
    for _, v in changes:
        if type(v) is usm_ptr:
            kept = tuple(c for c in values if type(c) is usm_ptr)
            break
    return None if any_freed(kept) else kept


def remember_last(plan: Plan, last: tuple, kernel: Any) -> None:
    """Makes `last` the plan's last launch, also kept by its arguments object (when it has
    an arguments record), or by its function (a closure whose captures are all `_stable`:
    one capturing accessors would keep their buffers, and so their write-back, waiting)."""
    plan.last = last
    record = last[4]
    key = last[5][0] if last[5] is not None else kernel if type(
        kernel) is pytypes.FunctionType and record is not None and record[3] is not None \
        else None  # (a bound method would keep its whole `self` alive)
    if key is not None:
        kept = plan.kept
        if len(kept) >= _KEPT:
            kept.clear()
        kept[id(key)] = (key, last)


def kept_launch(plan: Plan, key: Any) -> tuple | None:
    """The `last` of a recent launch kept by `key` (its arguments object or function)."""
    WAYS.kept += 1
    entry = plan.kept.get(id(key))
    return None if entry is None or entry[0] is not key else entry[1]


_KEPT: Final = 8


def arguments_record(args: tuple) -> tuple | None:
    """(the arguments, the pointers among them) when every argument is `immutable`, else
    None."""
    if not args or not all_immutable(args):
        return None
    return (args, tuple(v for v in args if type(v) is usm_ptr))


def _launch_alike(kept_values: tuple, values: Any, required: list | None) -> bool:
    """Whether the captures or globals a kernel reads are the kept objects, or accessors
    launching as the ones kept as keys, whose launch checks then run against the
    accessors the command group requires, `required`."""
    for kept, now in zip(kept_values, values):  # noqa: B905 (the cells or globals of one code)
        if kept is not now and not (type(kept) is _AccessorKey and type(now) is kept.cls
                                    and now._vksycl_launches_as(kept, required)):
            return False
    return True


def accessor_command(pyfn: Any, plan: Plan, context: Any, required: list | None
                     ) -> KernelLaunch | None:
    """The command of an earlier launch under `plan` whose captures were the objects
    this launch captures, accessors aside, and accessors with the launch keys of this
    launch's (whose launch checks then run), made the plan's last launch so that repeats
    of this one find it at once (a chain of command groups on a buffer after a loop over
    others); None if there was none."""
    WAYS.by_accessors += 1
    record = plan.prepared
    if record is None or record[3] is not None or record[2].packs_always or \
            not plan.by_accessors:
        return None
    keys: list[tuple] = []
    accessors: list[Any] = []
    cells = pyfn.__closure__
    if cells is not None and not _keyed_by_accessors(record[0], contents(cells), keys,
                                                     accessors):
        return None
    names = plan.names
    if names and not _keyed_by_accessors(record[1], map(pyfn.__globals__.get, names), keys,
                                         accessors):
        return None
    hit = plan.by_accessors.get(tuple(keys))
    if hit is None or hit[0] is not context or hit[1] is not record[2]:
        return None
    for acc in accessors:
        acc._vksycl_check_launch(required)
    command = hit[2]
    plan.last = (hit[1], command.push_constants, command, context, hit[3], None)
    return command


def _keyed_by_accessors(kept: tuple, now: Any, keys: list, accessors: list) -> bool:
    """Whether captures are the kept objects, accessors aside (collected with their launch
    keys)."""
    for k, v in zip(kept, now, strict=True):
        if k is v:
            continue
        if type(k) is not _AccessorKey or not k.matches(v):
            return False
        if k.launch is not None:
            keys.append(v._vksycl_launch_key())
            accessors.append(v)
    return True


def remember_accessor_command(plan: Plan, record: tuple | None, context: Any,
                              command: KernelLaunch) -> None:
    """Keeps a launch's command by the launch keys of its accessors (`accessor_command`)."""
    if record is None or record[3] is not None:
        return
    keys = tuple(k.launch for k in (*record[0], *record[1]) if type(k) is _AccessorKey and
                 k.launch is not None)
    if keys:
        known = plan.by_accessors
        if len(known) >= 16:
            known.clear()
        known[keys] = (context, record[2], command, record)


def same_captures(kernel: Any, record: tuple, names: tuple[str, ...]) -> bool:
    """Whether a closure holds the very objects a plan's record holds, in its cells and
    in the globals `names` its code reads."""
    cells = kernel.__closure__
    if cells is not None and not same_contents(record[0], cells):
        return False
    return not names or same_globals(record[1], kernel, names)
