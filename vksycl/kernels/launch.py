"""From a Python kernel and a launch shape to a `KernelLaunch` command: the glue above
the compiler (which knows nothing of queues) and the runtime (which knows nothing of
Python kernels).

The first launch of a kernel shape makes a plan (`plans`): the compiled variant it runs
(`variants`), compiled or loaded from the caches and prepared with a marshaller of its
arguments (`marshal`), checked against the device (`device_checks`). Later launches only
fetch, pack and build the command, or, when the plan's identity checks hold, get the last
command back, which keeps eager launches cheap. A launch changing only numbers or
pointers (a new time step, the other of two buffers) repacks them into the last launch's
bytes and makes its command from the last one's (`KernelLaunch.with_push`), looking
nothing else up.

Importing this module registers `build_launch` with the runtime
(`runtime.handler.use_kernel_front_end`): handlers and the queue's shortcut call it
directly, with no layer between.
"""

from __future__ import annotations

import struct
import types as pytypes
from typing import Any, Final

from ..compiler.free_function import FreeFunctionKernel
from ..compiler.kernel import CompiledKernel
from ..exceptions import errc, exception
from ..runtime import handler as _handler
from ..runtime.argument_slots import BUILDS
from ..runtime.commands import KernelLaunch
from ..runtime.handler import PYTHON_KERNELS
from . import graph_arguments  # noqa: F401  (registers the graphs' argument memory)
from .argument_ring import ArgumentRing
from .device_checks import check_supported, group_counts
from .fusion import Origin
from .marshal import ADDRESS, LAUNCH_VALUE, ArgumentBlock, Prepared, launch_value
from .plans import (
    WAYS,
    Plan,
    accessor_command,
    any_freed,
    arguments_record,
    block_variant,
    changed_numbers,
    checked_facts,
    kept_launch,
    known_plan,
    latest_plan,
    new_arguments,
    new_captures,
    new_plan,
    plan_for,
    prepared_for,
    remember_accessor_command,
    remember_last,
    repeats,
    resized_plan,
)
from .properties import launch_properties
from .reduction import build_reduction_launch
from .streak import Streak, relaunched, with_push
from .variants import launch_facts

# commands a plan keeps by their push constants
_RECENT: Final = 16
# launches of other sizes a plan keeps (`_sized`)
_SIZES_KEPT: Final = 256
# launches with values new to a plan's recent ones before the next run from its argument
# ring: a loop stepping a value, not a few values in turn
RING_AFTER: Final = 4


def _kernel_function(kernel: Any) -> tuple[Any, Any]:
    """(python function, free-function kernel info or None)."""
    info = getattr(kernel, "__vksycl_kernel__", None)
    if info is not None:
        return info.function, info
    if isinstance(kernel, pytypes.FunctionType):
        return kernel, None
    if isinstance(kernel, pytypes.MethodType) and \
            isinstance(kernel.__func__, pytypes.FunctionType):
        return kernel, None  # its `self` is read at each launch, as a captured object
    raise exception(errc.invalid, f"a kernel must be a Python function, got "
                    f"{type(kernel).__name__}")


def _launch(device: Any, kernel: Any, launch: Any, properties: Any,
            args: tuple | list | None, context: Any, required: list | None,
            image: Any = None, plan: Plan | None = None) -> KernelLaunch:
    """The command of a launch, built in full (`plan`: the known plan, when the caller
    found it; `required`: the accessors the launching command group requires)."""
    pyfn, info = _kernel_function(kernel)
    if info is not None:
        param_types = info.param_types()
        if args is None:
            raise exception(errc.invalid, f"free function kernel {info.name} needs its "
                            "arguments (use syclexp.nd_launch / single_task with arguments)")
        if len(args) != len(param_types):
            raise exception(errc.invalid, f"kernel {info.name} takes {len(param_types)} "
                            f"arguments, got {len(args)}")
        shaped = info.shaped(args)
        if shaped is not info:  # local_accessor shapes: a kernel of their own
            info, plan = shaped, None
    if plan is None:
        plan = plan_for(pyfn, info, launch, device, properties)
    p, record = prepared_for(pyfn, plan, device)
    last = plan.last
    vk = device.vulkan
    if id(vk) not in p.checked:
        check_supported(p, device)
    push = p.arguments(pyfn, args or (), launch, context, required, device, image)
    arg_record = arguments_record(args) if type(args) is tuple else None
    hit = plan.recent.get(push)  # the last launch's command among them
    if hit is not None and hit[0] is p and hit[1] is context:
        command = hit[2]
        if last[2] is not command or last[4] is not record or last[5] is not arg_record:
            _remember(plan, (p, push, command, context, record, arg_record), pyfn)
        return command
    ck = p.ck
    keep: tuple = ()
    if ck.spec.args_in_memory:
        block = ArgumentBlock(device, push)
        push, keep = ADDRESS.pack(block.address), (block,)
    groups = _groups(p, plan.kind, launch, device)
    command = KernelLaunch(ck.name, ck.binary, ck.entry, push, groups, keep_alive=keep,
                           origin=Origin.of(pyfn, ck, launch))
    if not keep:  # an argument block is the launch's own
        _keep_recent(plan, push, p, context, command)
        _remember(plan, (p, push, command, context, record, arg_record), pyfn)
    return command


def _groups(p: Prepared, kind: str, launch: Any, device: Any) -> tuple[int, int, int]:
    """The work-group counts of a launch of prepared kernel `p`, kept by its global
    range (a few sizes in turn find theirs)."""
    key = (id(device.vulkan), launch if kind == "range" else (
        None if launch is None else tuple(launch.get_global_range())))
    groups = p.groups.get(key)
    if groups is None:
        if len(p.groups) > 256:
            p.groups.clear()
        groups = p.groups[key] = group_counts(p.ck, launch, device)
    return groups


def _remember(plan: Plan, last: tuple, pyfn: Any) -> None:
    """Makes `last` the plan's last launch, its command also kept by its accessors."""
    remember_last(plan, last, pyfn)
    remember_accessor_command(plan, last[4], last[3], last[2])


def _keep_recent(plan: Plan, push: bytes, p: Prepared, context: Any,
                 command: KernelLaunch) -> None:
    recent = plan.recent
    if len(recent) >= _RECENT:
        recent.clear()
    recent[push] = (p, context, command)


def _repacked(plan: Plan, last: tuple, changes: list, pyfn: Any, launch: Any,
              context: Any, device: Any, record: tuple, arg_record: tuple | None
              ) -> KernelLaunch | None:
    """The command of a launch that differs from `last` only in `changes` ((slot, value)
    pairs): a recent launch's with the same bytes (two buffers in turn), else `last`'s
    command with the repacked bytes. None when a value does not fit (the full way says
    why)."""
    p = last[0]
    push = p.repacked(last[1], changes, context, device)
    if push is None:
        return None
    hit = plan.recent.get(push)
    if hit is not None and hit[0] is p and hit[1] is context:
        command = hit[2]
    else:
        ring = _ring_for(plan, p, last, pyfn, device)
        command = with_push(last, push, pyfn, launch, ring)
        _keep_recent(plan, push, p, context, command)
    remember_last(plan, (p, push, command, context, record, arg_record), pyfn)
    return command


def _ring_for(plan: Plan, p: Prepared, last: tuple, pyfn: Any, device: Any) -> Any:
    """The argument ring of prepared kernel `p`'s launches with new values, once there
    were `RING_AFTER` of them (False when its argument-block variant cannot take them);
    None before."""
    if BUILDS.depth:  # a graph's command: recorded, never launched from a ring
        return None
    settled = plan.ring
    if settled is not None and settled[0] is p:
        return settled[1]
    if plan.ring_of is not p:  # counted for another prepared kernel
        plan.repacks, plan.ring_of = 0, p
    if last[2].bound:
        return None
    plan.repacks += 1
    if plan.repacks < RING_AFTER:
        return None
    ck = block_variant(pyfn, plan, p)
    ring = False if ck is None else ArgumentRing(device, ck, last[2])
    plan.ring = (p, ring)
    return ring


def build_launch(device: Any, kernel: Any, launch: Any, properties: Any = None,
                 context: Any = None, reductions: tuple = (), required: list | None = None
                 ) -> KernelLaunch:
    """The command for a closure kernel (captured values become arguments): what a
    handler's `parallel_for` / `single_task` and the queue's shortcut enqueue. With a
    context, every pointer argument must belong to it; kernel properties are checked
    against the launch's range and device first (`launch_properties`). Launching the
    function of the last launch again, over a launch of the same values and capturing the
    very same objects, gets the last command back after identity checks alone: a loop of
    launches pays for no argument packing. With `reductions`, the launch of a reduction
    kernel (`kernels/reduction.py`). `required`: the accessors of the launching command
    group, the only ones the kernel may use (None outside a command group)."""
    if reductions:
        if properties is not None:
            properties = launch_properties(properties, launch, device)
        return build_reduction_launch(device, kernel, launch, reductions, properties, context,
                                      required)
    if properties is not None:
        properties = launch_properties(properties, launch, device)
    elif type(kernel) in PYTHON_KERNELS:
        plan = known_plan(kernel, None, launch, device)
        if plan is not None:
            # read once (another thread may end it meanwhile), as a Streak: a call in C
            streak: Streak | None = plan.streak
            if streak is not None:  # asked first: while one runs, none repeats
                command = streak.closure(plan, kernel, launch, context)
                if command is not None:
                    return command
            last = plan.last
            if last[4] is not None and last[3] is context and \
                    repeats(kernel, plan, last, required):
                return last[2]
            command = _closure_command(kernel, plan, launch, context, device, required)
            if command is not None:
                return command
        else:
            command = _new_size(kernel, None, launch, None, context, device, required)
            if command is not None:
                return command
        return _launch(device, kernel, launch, None, None, context, required, plan=plan)
    return _launch(device, kernel, launch, properties, None, context, required)


def _closure_command(kernel: Any, plan: Plan, launch: Any, context: Any, device: Any,
                     required: list | None) -> KernelLaunch | None:
    """The command of a closure launched under `plan`, not a repeat of its last launch,
    found without packing its arguments: a recent closure's whose captures are the
    same, the last one's repacked with new numbers or pointers (which may begin a streak,
    `streak.Streak`), or the command kept for the accessors it captures; None if there is
    none."""
    last = plan.last
    kept = kept_launch(plan, kernel)  # one of a few closures launched in turn
    if kept is not None and kept is not last and kept[3] is context and \
            repeats(kernel, plan, kept, required):
        remember_last(plan, kept, kernel)
        return kept[2]
    if last[3] is context:
        new = new_captures(kernel, plan, last)
        if new is not None:
            command = _repacked(plan, last, new[1], kernel, launch, context, device, new[0],
                                None)
            if command is not None:
                _begin_streak(plan, command, last[0].cell_slots, new[1])
                return command
    return accessor_command(kernel, plan, context, required)


def _begin_streak(plan: Plan, command: KernelLaunch, slots: dict, changes: list) -> None:
    """Makes the launch of `command`, just repacked from `changes`, the start of a
    streak (`Plan.streak`) when it is still the plan's last launch, those changes are new
    numbers in `slots`, and its prepared kernel's ring is settled (made, or found
    impossible)."""
    last, settled = plan.last, plan.ring
    if last[2] is command and settled is not None and settled[0] is last[0]:
        changing = changed_numbers(slots, changes)
        if changing:
            plan.streak = Streak(last, changing, settled[1])


def build_launch_args(device: Any, kernel: Any, launch: Any, args: tuple | list,
                      properties: Any = None, context: Any = None,
                      required: list | None = None, image: Any = None) -> KernelLaunch:
    """The command for a kernel whose arguments are passed explicitly; `image` is the
    kernel bundle it comes from (its device_image_scope instances). Passing the very
    arguments object of the last launch again (the free function layer keeps its
    converted arguments while the caller's are the same objects), its arguments all
    immutable, gets the last command back after identity checks alone; one changing only
    numbers or pointers repacks them alone."""
    plan = None
    if properties is None:
        info: Any = kernel if type(kernel) is FreeFunctionKernel else \
            getattr(kernel, "__vksycl_kernel__", None)
        plan = None if info is None else known_plan(info.function, info, launch, device)
        if plan is not None:
            streak: Streak | None = plan.streak  # as a Streak: a call in C
            if streak is not None:
                command = streak.arguments(plan, info.function, launch, args, context)
                if command is not None:
                    return command
            last = plan.last
            arg_record = last[5]
            if arg_record is None or arg_record[0] is not args:
                last = kept_launch(plan, args) or last  # one of a few launched in turn
                arg_record = last[5]
            if arg_record is not None and arg_record[0] is args and last[4] is not None \
                    and last[3] is context and not any_freed(arg_record[1]) and \
                    repeats(info.function, plan, last, required):
                plan.last = last  # a kept one too: its repeats find it first from now on
                return last[2]
            command = _arguments_command(info.function, plan, launch, args, context, device)
            if command is not None:
                return command
        elif info is not None:
            command = _new_size(info.function, info, launch, args, context, device, required)
            if command is not None:
                return command
    return _launch(device, kernel, launch, properties, args, context, required, image=image,
                   plan=plan)


def _arguments_command(pyfn: Any, plan: Plan, launch: Any, args: tuple | list,
                       context: Any, device: Any) -> KernelLaunch | None:
    """The command of a launch of explicit arguments under `plan` differing from its last
    launch's only in numbers or pointers: the last one's repacked; None if there is
    none."""
    last = plan.last
    if last[3] is not context or type(args) is not tuple:
        return None
    new = new_arguments(pyfn, plan, last, args)
    if new is None:
        return None
    command = _repacked(plan, last, new[1], pyfn, launch, context, device, last[4], new[0])
    if command is not None:
        _begin_streak(plan, command, last[0].param_slots, new[1])
    return command


def _new_size(pyfn: Any, info: Any, launch: Any, args: Any, context: Any, device: Any,
              required: list | None) -> KernelLaunch | None:
    """The command of a launch of another size than the last launch of its kernel on
    this device, with that launch's very captures and arguments (`args`, None for a
    closure) and its facts (`launch_facts`): that launch's command with the new sizes
    packed in, over the new work-groups. Sizes are launch arguments, so nothing is
    compiled, looked up or packed again, and once the kernel's argument ring is settled,
    the launch runs from it (its slots' dispatches read the work-group counts from
    memory), recording nothing new. While sizes keep changing no plan is made for them:
    the last plan stays the kernel's, untouched; a size launched twice running gets a
    plan of its own (`resized_plan`), which its later repeats find. None if there is no
    such launch (the full way then)."""
    like = latest_plan(pyfn, info, device)
    if like is None or launch is None:
        return None
    last = like.last
    arg_record = last[5]
    if last[4] is None or last[3] is not context or type(launch) is not type(like.launch):
        return None
    if args is None:
        if arg_record is not None:
            return None
    elif arg_record is None or arg_record[0] is not args or any_freed(arg_record[1]):
        return None
    if not repeats(pyfn, like, last, required):
        return None
    again = like.last_resize == launch
    like.last_resize = launch
    plan: Plan | None = None
    if again:
        plan = resized_plan(pyfn, info, launch, device, like)
        if plan is None:  # other facts: the full way
            return None
    sized = _sized(like, last, launch, info, device, pyfn, plan is None)
    if sized is None:
        return None
    push, groups, origin = sized
    p = last[0]
    ring = _ring_for(like, p, last, pyfn, device)  # launches of new sizes settle it too
    command = ring.launch(push, origin, groups) if isinstance(ring, ArgumentRing) else \
        last[2].with_push(push, origin, groups)
    WAYS.new_sizes += 1
    if plan is not None:  # made before `like`'s ring was settled, perhaps just now
        plan.take_ring(like)
        _keep_recent(plan, push, p, context, command)
        _remember(plan, (p, push, command, context, last[4], arg_record), pyfn)
    return command


def _sized(like: Plan, last: tuple, launch: Any, info: Any, device: Any, pyfn: Any,
           check: bool) -> tuple[bytes, tuple[int, int, int], Origin] | None:
    """(packed arguments, work-group counts, origin) of a launch of `like`'s last launch
    `last` over `launch`, another size; None when it does not fit `last`'s slots or (with
    `check`) its facts differ from `like`'s. Kept by launch object while `last` stays the
    plan's last launch (sizes change without making it another), a few hundred at most:
    a size coming again finds them at the cost of a lookup; its facts were checked when
    they were worked out, and launch objects are immutable."""
    kept, known = like.sizes
    if kept is not last:
        known = {}
        like.sizes = (last, known)
    found = known.get(launch)
    if found is not None:  # its origin names the closure launched now
        origin = relaunched(found[2], pyfn, launch)
        return found if origin is found[2] else (found[0], found[1], origin)
    if check and like.facts != checked_facts(launch, info, device):
        return None
    p = last[0]
    push = _resized(p, last[1], launch)
    if push is None:
        return None
    found = (push, _groups(p, like.kind, launch, device),
             relaunched(last[2].origin, pyfn, launch))
    if len(known) >= _SIZES_KEPT:
        known.clear()
    known[launch] = found
    return found


def _resized(p: Prepared, push: bytes, launch: Any) -> bytes | None:
    """`push`, the packed arguments of an earlier launch of `p`, with the sizes and
    offsets of `launch` in the slots the code reads them from (a launch of another
    size); None when one does not fit its slot (the full packing says why). Here rather
    than in the interpreted marshaller: every launch of a new size runs it."""
    slots = p.launch_slots
    if not slots:
        return push
    out = bytearray(push)
    try:
        for what, d, _, at in slots:
            LAUNCH_VALUE.pack_into(out, at, launch_value(launch, what, d))
    except (struct.error, OverflowError):
        return None
    return bytes(out)


def compiled(device: Any, kernel: Any, launch: Any, properties: Any = None) -> CompiledKernel:
    """The compiled kernel a launch would use (for `spirv()`, `spirv_asm()`, reflection)."""
    pyfn, info = _kernel_function(kernel)
    plan = new_plan(pyfn, info, launch, device, properties, launch_facts(launch, device))
    return prepared_for(pyfn, plan, device)[0].ck


_handler.use_kernel_front_end(build_launch)

__all__ = ["build_launch", "build_launch_args", "compiled"]
