"""Launching free function kernels (seed 004): `kernel_function`, the traits,
`single_task` / `nd_launch`, and the conversion of arguments to the parameter types.

Arguments passed to `nd_launch` / `single_task` convert as C++ converts arguments to
parameters (a float to a `float32` parameter, an int to a wider or narrower integer,
enums to their underlying type). Values set by index (`handler.set_arg`) must match the
parameter type instead, as the spec requires; Python `int` / `float` / `bool`, which have
no width, match any parameter of their kind whose range holds them.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Final

import numpy as np

from ..access import access_mode
from ..compiler.free_function import FreeFunctionKernel
from ..compiler.typesys import (
    AccessorType,
    LocalAccessorType,
    PtrType,
    Scalar,
    Struct,
    dtype_of,
)
from ..exceptions import errc, exception, invalid
from ..info import device as dinfo
from ..ranges import check_work_items, nd_range
from ..runtime.handler import check_set_args, handler
from ..runtime.queue import queue
from ..runtime.usm import ptr as ptr_type
from ..types import dtype_key
from .launch import build_launch_args
from .plans import NUMBER_TYPES, immutable, same_objects
from .properties import launch_config, sub_group_size, work_group_size


class kernel_function_s:
    """`syclexp.kernel_function(f)`: names a free function kernel (or one instantiation of
    a template) for `nd_launch` / `single_task`."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: FreeFunctionKernel) -> None:
        self.kernel = kernel

    def __repr__(self) -> str:
        return f"kernel_function({self.kernel.name})"


def _info(f: Any) -> FreeFunctionKernel | None:
    if type(f) is FreeFunctionKernel:  # the decorated function, as most launches pass it
        return f
    if isinstance(f, kernel_function_s):
        return f.kernel
    return getattr(f, "__vksycl_kernel__", None)


def free_function_kernel(f: Any) -> FreeFunctionKernel:
    """The free function kernel `f` names; `errc.invalid` for anything else."""
    info = _info(f)
    if info is None:
        raise invalid(f"{getattr(f, '__name__', repr(f))} is not a free function kernel "
                      "(decorate it with @syclexp.nd_range_kernel(dims) or "
                      "@syclexp.single_task_kernel)")
    return info


def kernel_function(f: Any) -> kernel_function_s:
    """`kernel_function(f)`: the kernel function object of the free function kernel `f`, for
    `nd_launch` and `single_task`."""
    info = free_function_kernel(f)
    ks = info._kernel_function
    if ks is None:
        ks = info._kernel_function = kernel_function_s(info)
    return ks


def is_nd_range_kernel(f: Any, dims: Any) -> bool:
    """Whether `f` is a free function kernel declared with `nd_range_kernel(dims)`."""
    info = _info(f)
    return info is not None and info.kind == "nd_range" and info.dims == dims


def is_single_task_kernel(f: Any) -> bool:
    """Whether `f` is a free function kernel declared with `single_task_kernel`."""
    info = _info(f)
    return info is not None and info.kind == "single_task"


def is_kernel(f: Any) -> bool:
    """Whether `f` is a free function kernel."""
    return _info(f) is not None


# -- argument conversion ----------------------------------------------------------------------

# the types the converters test for, made once: `str | bytes` in a call makes a union
# object at each conversion of a new argument value
_TEXT: Final = (str, bytes)
_FLOATS: Final = (float, np.floating)


def _scalar_converter(t: Scalar, where: str) -> Any:
    """C++ implicit conversion of an arithmetic value to parameter type `t`; strings,
    None and containers are no arithmetic values, even where Python would convert them."""

    def not_a_number(v: Any) -> exception:
        return invalid(f"{where} is a {t!r}, got {type(v).__name__} {v!r}")

    if t.is_bool:
        def to_bool(v: Any) -> bool:
            numeric = hasattr(v, "__index__") or hasattr(v, "__float__")
            if isinstance(v, _TEXT) or not numeric:
                raise not_a_number(v)
            return bool(v)

        return to_bool
    if t.is_float:
        finfo = np.finfo(t.dtype)
        big = float(finfo.max)

        def to_float(v: Any) -> float:
            f = v
            if type(v) is not float:  # a Python float, the common case, is one already
                if isinstance(v, _TEXT):
                    raise not_a_number(v)
                try:
                    f = float(v)
                except OverflowError:  # an int past any float's range
                    raise invalid(f"{where}: {v!r} does not fit {t!r}") from None
                except (TypeError, ValueError):
                    raise not_a_number(v) from None
            if abs(f) > big and math.isfinite(f):
                raise invalid(f"{where}: {v!r} does not fit {t!r}")
            return f

        return to_float
    bits, signed = t.bits, t.is_signed
    mask = (1 << bits) - 1
    half = 1 << (bits - 1)

    def to_int(v: Any) -> int:
        if isinstance(v, _FLOATS):
            if not math.isfinite(v):
                raise invalid(f"{where}: {v!r} cannot convert to {t!r}")
            v = int(v)  # towards zero, as C++ converts (numpy floats have no __trunc__)
        elif isinstance(v, _TEXT):
            raise not_a_number(v)
        try:
            i = int(v) & mask
        except (TypeError, ValueError):
            raise not_a_number(v) from None
        return i - (1 << bits) if signed and i >= half else i

    return to_int


def _pointer_checker(t: PtrType, where: str) -> Any:
    """Checks a pointer argument: a USM pointer to the element type (pointer element
    types by what they point to, which dtype equality ignores), or None for null."""
    dtype = dtype_of(t.elem)
    key = dtype_key(dtype)

    def check(v: Any) -> Any:
        if v is None or (type(v) is ptr_type and v.dtype is dtype):
            return v
        if not hasattr(v, "allocation") or dtype_key(v.dtype) != key:
            got = f"a pointer to {v.dtype}" if hasattr(v, "allocation") else type(v).__name__
            raise invalid(f"{where} is a pointer to {dtype}, got {got}")
        return v

    return check


def _accessor_checker(t: AccessorType | LocalAccessorType, where: str) -> Any:
    """Checks an accessor argument: of the parameter's kind, element type and dimensions,
    and for a global one its access mode (a read_write accessor also passes as a
    read-only one, as C++ converts it)."""
    key = dtype_key(dtype_of(t.elem))
    modes: tuple | None = None
    if isinstance(t, LocalAccessorType):
        kind = "local"
    else:
        kind = "global"
        modes = (access_mode.read, access_mode.read_write) if t.mode is access_mode.read \
            else (t.mode,)

    def check(v: Any) -> Any:
        got = getattr(type(v), "__vksycl_accessor__", None)
        if got != kind:
            what = type(v).__name__ if got is None else f"a {got} accessor"
            raise invalid(f"{where} is a {t!r}, got {what}")
        if dtype_key(v.dtype) != key or v.dims != t.dims or (
                modes is not None and v.access_mode not in modes):
            mode = "" if modes is None else f", {v.access_mode.name}"
            raise invalid(f"{where} is a {t!r}, got an accessor of {v.dtype}, {v.dims} "
                          f"dimensions{mode}")
        return v

    return check


def _struct_checker(t: Struct, where: str) -> Any:
    cls = t.pyclass

    def check(v: Any) -> Any:
        if not isinstance(v, cls):
            raise invalid(f"{where} is a {cls.__name__}, got {type(v).__name__}")
        return v

    return check


def _kinds_match(t: Scalar, v: Any) -> bool:
    """Whether a value's type matches a scalar parameter (for set_arg)."""
    if isinstance(v, np.generic):
        return v.dtype == t.dtype
    if t.is_bool:
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if t.is_int:
        if not isinstance(v, int):
            return False
        lo = -(1 << (t.bits - 1)) if t.is_signed else 0
        hi = (1 << (t.bits - 1)) if t.is_signed else (1 << t.bits)
        return lo <= v < hi
    return isinstance(v, float)


_RECENT_ARGUMENTS: Final = 4  # argument tuples a plan keeps converted
_UNSET: Final = object()  # an index set_arg did not set


_SAME: Final = 0
_NUMBERS: Final = 1  # only numbers differ
_OTHERS: Final = 2


def _differing(values: tuple, kept: tuple) -> int:
    """How `values` differ from the very objects `kept`: not at all (`_SAME`), in plain
    Python numbers alone (`_NUMBERS`), or otherwise (`_OTHERS`, a length too). Numbers
    that changed convert as fast as a lookup among recent argument tuples would find
    them (a new time step never comes again), so such a launch is not looked up there,
    nor kept."""
    n = len(values)
    if len(kept) != n:
        return _OTHERS
    found = _SAME
    for i in range(n):
        v = values[i]
        if v is not kept[i]:
            if type(v) not in NUMBER_TYPES:
                return _OTHERS
            found = _NUMBERS
    return found


def _converted(converters: list, values: tuple, latest: tuple[tuple, tuple] | None
               ) -> tuple[tuple, bool]:
    """`values` each through its converter, and whether they are all immutable (so that
    the conversion may be kept). A value that is the very object at its index in
    `latest` (immutable values and their conversion) takes that conversion: a launch
    bringing one new number converts that number alone."""
    out = []
    kept = True
    was, done = latest if latest is not None else ((), ())
    reuse = len(was) == len(values)
    for i in range(len(values)):
        v = values[i]
        if reuse and v is was[i]:
            out.append(done[i])
            continue
        out.append(converters[i](v))
        if kept and not immutable(v):
            kept = False
    return tuple(out), kept


class Plan:
    """How one free function kernel takes its arguments and checks its launches."""

    __slots__ = ("checked_device", "checked_devices", "checked_launch", "convert",
                 "enum_params", "kernel", "last", "last_set", "latest", "local", "match",
                 "missed", "names", "sub_group", "types")

    def __init__(self, kernel: FreeFunctionKernel) -> None:
        self.kernel = kernel
        self.checked_launch: Any = None  # the last range object checked (ranges are immutable)
        # the ids of the arguments of the latest launches whose arguments were all
        # immutable -> (arguments, converted), oldest first: a loop swapping two buffers
        # launches each pair again (the entry holds the arguments: their ids stay theirs)
        self.last: dict[tuple[int, ...], tuple[tuple, tuple]] = {}
        # the arguments of the latest launch whose arguments were all immutable, and
        # whether that launch found none of `last`
        self.latest: tuple[tuple, tuple] | None = None
        self.missed = False
        # (arguments set by index, matched) of the last kernel-object enqueue
        self.last_set: tuple[tuple, tuple] | None = None
        self.types = kernel.param_types()
        self.names = list(inspect.signature(kernel.function).parameters)
        ann = kernel.annotations()
        self.enum_params = {i: ann[n] for i, n in enumerate(self.names)
                            if isinstance(ann.get(n), type) and issubclass(ann[n], Enum)}
        self.convert = []
        self.match = []
        for i, t in enumerate(self.types):
            where = f"argument {i} ({self.names[i]}) of {kernel.name}"
            if isinstance(t, PtrType):
                c = _pointer_checker(t, where)
                self.convert.append(c)
                self.match.append(c)
            elif isinstance(t, Struct):
                c = _struct_checker(t, where)
                self.convert.append(c)
                self.match.append(c)
            elif isinstance(t, AccessorType | LocalAccessorType):
                c = _accessor_checker(t, where)
                self.convert.append(c)
                self.match.append(c)
            else:
                self.convert.append(self._enum_aware(i, _scalar_converter(t, where), where))
                self.match.append(self._matcher(i, t, where))
        wgs = next((p for p in kernel.properties if isinstance(p, work_group_size)), None)
        self.local = wgs.sizes if wgs is not None else None
        sgs = next((p for p in kernel.properties if isinstance(p, sub_group_size)), None)
        self.sub_group = sgs.size if sgs is not None else None
        self.checked_devices: set[int] = set()
        self.checked_device: Any = None  # the last device launched on, checked

    def _enum_aware(self, i: int, conv: Any, where: str) -> Any:
        cls = self.enum_params.get(i)
        if cls is None or issubclass(cls, int):
            return conv

        def check(v: Any) -> Any:
            if not isinstance(v, cls):
                raise invalid(f"{where} is a {cls.__name__}, got {type(v).__name__}")
            return conv(v.value)

        return check

    def _matcher(self, i: int, t: Scalar, where: str) -> Any:
        cls = self.enum_params.get(i)
        conv = _scalar_converter(t, where)
        if cls is not None:
            def check_enum(v: Any) -> Any:
                if not isinstance(v, cls):
                    raise invalid(f"{where} is a {cls.__name__}, got {type(v).__name__}")
                return conv(v.value)

            return check_enum

        # a Python float matches any float parameter, a bool a bool one: no more to ask
        exact = float if t.is_float else bool if t.is_bool else None

        def check(v: Any) -> Any:
            if type(v) is exact:
                return v
            if not _kinds_match(t, v):
                got = v.dtype if isinstance(v, np.generic) else type(v).__name__
                raise invalid(f"{where} is a {t!r}, got {got} {v!r}")
            return v

        return check

    def converted(self, args: tuple) -> tuple:
        """The arguments of `nd_launch` / `single_task`, converted to the parameter types.
        The very immutable objects of a recent launch get its converted tuple back: the
        launch glue then knows the arguments by identity alone. Against the latest
        launch, new numbers alone convert by themselves (`_differing`); a launch missing
        the recent ones right after another did is not kept: it would only push out the
        tuples of launches that do come back."""
        latest = self.latest
        if latest is not None:
            differ = _differing(args, latest[0])
            if differ == _SAME:
                return latest[1]
            if differ == _NUMBERS:  # the common new time step: only those convert
                converted, _ = _converted(self.convert, args, latest)
                self.latest = (args, converted)
                return converted
        ids = tuple([id(a) for a in args])
        last = self.last
        known = last.get(ids)
        if known is not None:
            self.latest, self.missed = known, False
            return known[1]
        n = len(args)
        if n != len(self.convert):
            raise invalid(f"{self.kernel.name} takes {len(self.convert)} arguments, got "
                          f"{n}")
        converted, kept = _converted(self.convert, args, latest)
        if kept:
            entry = self.latest = (args, converted)
            if not self.missed:
                if len(last) >= _RECENT_ARGUMENTS:
                    del last[next(iter(last))]
                last[ids] = entry
        self.missed = True
        return converted

    def matched(self, values: Mapping[int, Any] | tuple) -> tuple:
        """The arguments set by index (a tuple: arguments 0, 1, ... set by `set_args`):
        every one set, each matching its parameter."""
        last = self.last_set
        n = len(self.match)
        if isinstance(values, tuple):
            now: tuple = values
            if len(now) != n:
                check_set_args(now, self.names, self.kernel.name)
        else:
            given: dict = values if type(values) is dict else dict(values)
            now = tuple([given.get(i, _UNSET) for i in range(n)])
            if len(values) != n or any(v is _UNSET for v in now):  # indices 0..n-1 only
                check_set_args(values, self.names, self.kernel.name)
        if last is not None and same_objects(now, last[0]):
            return last[1]
        matched, kept = _converted(self.match, now, last)
        if kept:
            self.last_set = (now, matched)
        return matched

    def check_device(self, device: Any) -> None:
        vk = device.vulkan
        if self.sub_group is not None and \
                self.sub_group not in device.get_info(dinfo.sub_group_sizes):
            raise exception(errc.kernel_not_supported, f"{self.kernel.name} needs "
                            f"sub-groups of {self.sub_group}; {vk.name} has "
                            f"{device.get_info(dinfo.sub_group_sizes)}")
        self.checked_devices.add(id(vk))

    def check_local(self, launch: Any) -> None:
        local = tuple(launch.get_local_range())
        if local != self.local:
            raise exception(errc.nd_range, f"{self.kernel.name} has the property "
                            f"work_group_size{self.local}, launched with local range {local}")


_PLANS: Final[dict[FreeFunctionKernel, Plan]] = {}


def plan(kernel: FreeFunctionKernel) -> Plan:
    p = _PLANS.get(kernel)
    if p is None:
        p = _PLANS[kernel] = Plan(kernel)
    return p


def launch_command(device: Any, kernel: FreeFunctionKernel, launch: Any, args: tuple,
                   properties: Any, p: Plan, context: Any = None,
                   required: list | None = None, image: Any = None) -> Any:
    """The command of one launch of a free function kernel, arguments already converted,
    in a command group requiring the accessors `required` (None outside one); `image` is
    the kernel bundle it is launched from, if any."""
    if device is not p.checked_device:
        if id(device.vulkan) not in p.checked_devices:
            p.check_device(device)
        p.checked_device = device
    if launch is not None and launch is not p.checked_launch and \
            launch != p.checked_launch:  # a new nd_range of the same values: checked
        if launch.dimensions != kernel.dims:
            raise invalid(f"{kernel.name} is an nd_range_kernel({kernel.dims}), launched "
                          f"with a {launch.dimensions}-dimensional nd_range")
        check_work_items(launch)
        if p.local is not None:
            p.check_local(launch)
        p.checked_launch = launch
    command = build_launch_args(device, kernel, launch, args, properties, context, required,
                                image)
    for record in RECORDERS:
        record(device, kernel, launch, args, properties, context)
    return command


# what records each launch while an autodiff tape is active (`autodiff.Tape`), called with
# the launch's device, kernel, nd_range, converted arguments, properties and context
RECORDERS: Final[list[Callable[..., None]]] = []


class Relaunch:
    """A free function kernel with the arguments it was launched with: what a command
    graph builds a kernel node's command from again when its range changes
    (`update_nd_range`), through the handler's launch path as for kernel objects."""

    __slots__ = ("args", "kernel", "plan")

    def __init__(self, kernel: FreeFunctionKernel, args: tuple, p: Plan) -> None:
        self.kernel, self.args, self.plan = kernel, args, p

    def _vksycl_command(self, device: Any, launch: Any, values: Mapping[int, Any] | tuple,
                        properties: Any, context: Any, required: list | None) -> Any:
        return launch_command(device, self.kernel, launch, self.args, properties, self.plan,
                              context, required)


# -- enqueue functions ------------------------------------------------------------------------

def _enqueue(h: handler, kernel: FreeFunctionKernel, launch: Any, args: tuple,
             properties: Any, p: Plan) -> None:
    """The launch as the command of a command group, with the recipe a graph needs."""
    q = h._queue
    h._set(launch_command(q.get_device(), kernel, launch, args, properties, p,
                          q.get_context(), h.requirements))
    h.launch_recipe = (Relaunch(kernel, args, p), launch, properties)


def _submit(target: Any, kernel: FreeFunctionKernel, launch: Any, args: tuple,
            properties: Any) -> Any:
    p = _PLANS.get(kernel) or plan(kernel)
    converted = p.converted(args)
    if type(target) is queue and target.recording_graph is None:
        # what queue.submit does for a command group of this one command, without one
        return target.execute(launch_command(target._device, kernel, launch, converted,
                                             properties, p, target._context), [])
    if isinstance(target, handler):
        _enqueue(target, kernel, launch, converted, properties, p)
        return None
    if not hasattr(target, "submit"):
        raise invalid(f"expected a queue or a handler, got {type(target).__name__}")
    return target.submit(lambda h: _enqueue(h, kernel, launch, converted, properties, p))


def single_task(target: Any, k: Any, *args: Any) -> Any:
    """`syclexp.single_task(q | h, kernel_function(f), *args)`."""
    kernel = k if type(k) is FreeFunctionKernel else free_function_kernel(k)
    if kernel.kind != "single_task":
        raise invalid(f"{kernel.name} is an nd_range_kernel({kernel.dims}); launch it with "
                      "nd_launch")
    return _submit(target, kernel, None, args, None)


def nd_launch(target: Any, r: Any, k: Any, *args: Any) -> Any:
    """`syclexp.nd_launch(q | h, nd_range | launch_config, kernel_function(f), *args)`."""
    properties = None
    if type(r) is not nd_range and isinstance(r, launch_config):
        r, properties = r.range, r.properties
    if not isinstance(r, nd_range):
        raise invalid(f"nd_launch takes a sycl.nd_range or a launch_config, got "
                      f"{type(r).__name__}")
    # (the decorated function, as most launches pass it, names its kernel itself)
    kernel = k if type(k) is FreeFunctionKernel else free_function_kernel(k)
    if kernel.kind != "nd_range":
        raise invalid(f"{kernel.name} is a single_task_kernel; launch it with single_task")
    return _submit(target, kernel, r, args, properties)  # its dimensions: launch_command


__all__ = ["is_kernel", "is_nd_range_kernel", "is_single_task_kernel",
           "kernel_function", "kernel_function_s", "nd_launch", "single_task"]
