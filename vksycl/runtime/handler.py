"""`sycl.handler`: a command group collects its dependencies and exactly one command."""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType, MappingProxyType, MethodType
from typing import Any, Final, NoReturn, Protocol

import numpy as np
from mypy_extensions import mypyc_attr

from ..exceptions import errc, exception
from ..ranges import nd_range
from ..ranges import range as sycl_range  # not the builtin
from . import crossdevice, device_globals, external_semaphores, memops
from .commands import Command
from .context import context
from .event import event
from .host_commands import Barrier, HostTask
from .memops import Span
from .platform import backend, device
from .usm import ptr as usm_ptr
from .usm import stored


class Queue(Protocol):
    """The `sycl.queue` a command group is submitted to, as its handler uses it (the
    queue sits above this module: it makes the handlers)."""

    recording_graph: Any  # the command_graph recording the queue, if one does
    # its device and context, read as attributes on the launch path of every command
    # group, where they cost less than `get_device()` / `get_context()`
    _device: device
    _context: context

    def get_device(self) -> device: ...

    def get_context(self) -> context: ...

    def get_backend(self) -> backend: ...


class interop_handle:
    """What a host task may ask of the backend: here, the queue's device and context."""

    def __init__(self, q: Queue) -> None:
        self._queue = q

    def get_backend(self) -> Any:
        return self._queue.get_backend()

    def get_native_queue(self) -> Queue:
        return self._queue


PYTHON_KERNELS: Final = (FunctionType, MethodType)  # a closure or function, a kernel method
KernelFrontEnd = Callable[..., Command]
_kernel_front_end: KernelFrontEnd  # set by `use_kernel_front_end`, before any launch


def use_kernel_front_end(build: KernelFrontEnd) -> None:
    """Registers how a Python kernel becomes a command, its kernel properties checked on
    the way: the launch glue and the kernel properties live above the runtime, which knows
    commands, not Python kernels. A command group hands it the accessors it requires
    (`handler.requirements`): those are the only ones its kernel may use, or their buffers
    would go untracked; a launch outside a command group hands None."""
    global _kernel_front_end
    _kernel_front_end = build


def closure_launch(dev: device, ctx: context, kernel: Callable, launch: Any,
                   properties: Any = None, reductions: tuple = ()) -> Command:
    """The command of a Python kernel launched on a queue's device and context: what a
    handler enqueues, and what the queue's common launch (a plain closure, no properties)
    builds without one. `reductions` are the `sycl.reduction`s of `parallel_for(range,
    reduction..., kernel)`, which the front end checks."""
    return _kernel_front_end(dev, kernel, launch, properties, ctx, reductions, None)


# the arguments of a handler that set none
_NO_ARGUMENTS: Final[Mapping[int, Any]] = MappingProxyType({})


# compiled (`mypyc_modules`), it stays a class command graphs' handlers derive from
@mypyc_attr(allow_interpreted_subclasses=True)
class handler:
    """A command group's handler (`q.submit(lambda h: ...)`): one command per group
    (`parallel_for`, `single_task`, `memcpy`, `copy`, `fill`, `host_task`, ...), its
    dependencies (`depends_on`, accessors, `require`) and kernel arguments (`set_args`)."""

    # called with the command's event once it is enqueued (a copy into a device_global's
    # host instance tells the database which event writes it)
    enqueued: list[Callable[[event], None]] | tuple = ()
    # What most command groups leave as it is, a class attribute until set: a handler is
    # made per command group, and each attribute it sets costs on every launch.
    command: Command | None = None
    # (kernel, launch, properties) of the kernel enqueued: a graph builds the command
    # again from it when a node's range or arguments are updated
    launch_recipe: tuple | None = None
    # the reductions of the kernel enqueued (parallel_for(range, reduction..., kernel))
    reductions: tuple = ()
    # the arguments of a `sycl.kernel` object: the very tuple `set_args` took when it
    # alone set them (arguments 0, 1, ..., the common spelling, passed on as it is), a
    # dict by index once `set_arg` set one, or None (typed Any: mypyc leaves a class
    # default of None undefined on an attribute typed as a union of dict and tuple)
    _kernel_args: Any = None

    def __init__(self, q: Queue) -> None:
        self._queue = q
        self._deps: list[event] = []
        # the buffer accessors the command group uses: they order it after earlier
        # command groups on the same memory
        self.requirements: list[Any] = []

    # -- dependencies ----------------------------------------------------------------
    def depends_on(self, events: event | Iterable[event]) -> None:
        if type(events) is event and type(self) is handler and \
                self._queue.recording_graph is None:
            self._deps.append(events)  # a plain event, which no graph must be asked about
            return
        if isinstance(events, event):
            events = [events]
        elif not isinstance(events, Iterable):
            raise exception(errc.invalid, "depends_on expects an event or a list of events, "
                            f"got {type(events).__name__}")
        else:
            events = list(events)
            for e in events:
                if not isinstance(e, event):
                    raise exception(errc.invalid,
                                    f"depends_on expects events, got {type(e).__name__}")
        self._check_dependencies(events)
        self._deps += events

    def _check_dependencies(self, events: list[event]) -> None:
        """Refuses the events a graph would refuse (from outside the recording graph's
        recordings, or of a graph no longer recording) when they are declared, before
        the command group builds (and perhaps compiles) its command."""
        recorder = self._queue.recording_graph
        if recorder is not None:
            recorder.check_dependencies(events)
            return
        for e in events:
            if type(e) is event:  # a plain event (its lack of the attribute costs)
                continue
            still_recording = getattr(e, "_vksycl_graph_still_records", None)
            if still_recording is not None:
                still_recording()

    def require(self, acc: Any) -> None:
        """Makes the command group use an accessor's buffer (a placeholder accessor, or
        one made with this handler, which calls this itself)."""
        if hasattr(acc, "_vksycl_dynamic_parameter"):
            raise exception(errc.invalid, "require(dynamic_parameter) is for command groups "
                            "added to a command_graph with command_graph.add")
        if getattr(type(acc), "__vksycl_accessor__", None) != "global":
            raise exception(errc.invalid, "require takes a sycl.accessor, got "
                            f"{type(acc).__name__}")
        acc.bind(self._queue)
        if not any(r is acc for r in self.requirements):
            self.requirements.append(acc)

    @property
    def dependencies(self) -> list[event]:
        return self._deps

    def _set(self, command: Command) -> None:
        if self.command is not None:
            raise exception(errc.invalid, "a command group may submit only one command")
        self.command = command

    # -- kernels ---------------------------------------------------------------------
    def set_arg(self, index: Any, value: Any) -> None:
        """Sets argument `index` of the `sycl.kernel` object this command group enqueues;
        indices, count and types are checked against the kernel when it is enqueued."""
        if type(index) is not int or index < 0:
            raise exception(errc.invalid, f"set_arg takes a non-negative argument index, got "
                            f"{index!r}")
        if type(value) not in _PLAIN_ARGUMENTS and hasattr(value, "_vksycl_dynamic_parameter"):
            _refuse_dynamic_parameter()
        self._arguments_by_index()[index] = value

    def set_args(self, *values: Any) -> None:
        """Sets arguments 0, 1, ... of the `sycl.kernel` object this command group enqueues."""
        if type(self) is not handler:  # a subclass's set_arg sees each one
            for i, v in enumerate(values):
                self.set_arg(i, v)
            return
        for v in values:
            if type(v) not in _PLAIN_ARGUMENTS and hasattr(v, "_vksycl_dynamic_parameter"):
                _refuse_dynamic_parameter()
        if self._kernel_args is None:
            self._kernel_args = values
            return
        args = self._arguments_by_index()
        for i in range(len(values)):
            args[i] = values[i]

    def _arguments_by_index(self) -> dict[int, Any]:
        """The kernel arguments set so far as a dict by index, from now on."""
        args = self._kernel_args
        if isinstance(args, dict):
            return args
        by_index: dict[int, Any] = dict(enumerate(args or ()))
        self._kernel_args = by_index
        return by_index

    def single_task(self, kernel: Callable, properties: Any = None) -> None:
        self._set(self._launch(kernel, None, properties))

    def parallel_for(self, launch: Any, kernel: Any, *rest: Any, properties: Any = None
                     ) -> None:
        """`parallel_for(range, kernel)`, or with reductions `parallel_for(range,
        reduction..., kernel)` where the kernel takes the work-item and one reducer each."""
        if rest:
            self.reductions = (kernel, *rest[:-1])
            kernel = rest[-1]
        if type(launch) is sycl_range or type(launch) is nd_range:
            self._set(self._launch(kernel, launch, properties))
            return
        if isinstance(launch, int | tuple | list):
            launch = sycl_range(launch)
        if not isinstance(launch, sycl_range | nd_range):
            raise exception(errc.invalid, "parallel_for expects a sycl.range or sycl.nd_range, "
                            f"got {type(launch).__name__}")
        self._set(self._launch(kernel, launch, properties))

    def _launch(self, kernel: Callable, launch: Any, properties: Any) -> Command:
        self.launch_recipe = (kernel, launch, properties)
        q = self._queue
        dev, ctx = q._device, q._context
        # a `sycl.kernel` object builds its command from the arguments set by index (a
        # Python function has no such attribute, and asking it would cost an exception)
        command = None if type(kernel) in PYTHON_KERNELS else \
            getattr(kernel, "_vksycl_command", None)
        if command is None:
            return _kernel_front_end(dev, kernel, launch, properties, ctx, self.reductions,
                                     self.requirements)
        if self.reductions:
            raise exception(errc.invalid, "reductions run in Python kernels, not in "
                            "sycl.kernel objects")
        return command(dev, launch, self._kernel_args or _NO_ARGUMENTS, properties, ctx,
                       self.requirements)

    def host_task(self, fn: Callable[..., Any]) -> None:
        try:
            wants_handle = len(inspect.signature(fn).parameters) == 1
        except (TypeError, ValueError):
            wants_handle = False
        args = (interop_handle(self._queue),) if wants_handle else ()
        self._set(HostTask(fn, args, self.requirements))

    # -- memory ----------------------------------------------------------------------
    def memcpy(self, dest: Any, src: Any, num_bytes: Any = None,
               offset: Any = 0) -> None:
        """`memcpy(dest, src, num_bytes)`; with a device_global on one side,
        `memcpy(g, src, num_bytes=sizeof, offset=0)` / `memcpy(dest, g, ...)`, `offset`
        counting bytes into the variable."""
        to, of = _device_global(dest), _device_global(src)
        if to is None and of is None:
            if num_bytes is None or offset:
                raise exception(errc.invalid, "memcpy(dest, src, num_bytes) between USM "
                                "pointers or arrays takes a size and no offset")
            n = _size(num_bytes, "memcpy")
            s = memops.resolve(src, n, self._queue, "memcpy source", writable=False,
                               cross_device=True)
            d = memops.resolve(dest, n, self._queue, "memcpy destination", writable=True,
                               cross_device=True)
            self._set(crossdevice.copy_command(s, d, self._queue))
            return
        if to is not None and of is not None:
            raise exception(errc.invalid, "memcpy between two device_globals: copy through "
                            "USM memory")
        g = to if to is not None else of
        assert g is not None  # neither a device_global returned above
        n = g["size"] if num_bytes is None else _size(num_bytes, "memcpy")
        at = _size(offset, "memcpy offset")
        if to is not None:
            s = memops.resolve(src, n, self._queue, "memcpy source", writable=False)
            d = device_globals.span(self._queue, to, at, n, "memcpy to a device_global", True)
            if d.allocation is None:  # the host instance
                self.enqueued = [functools.partial(device_globals.host_written,
                                                   to["unique_id"])]
        else:
            d = memops.resolve(dest, n, self._queue, "memcpy destination", writable=True)
            s = device_globals.span(self._queue, g, at, n, "memcpy from a device_global",
                                    False)
        self._set(memops.MemCopy(s, d))

    def copy(self, src: Any, dest: Any, count: Any = None, start_index: Any = 0
             ) -> None:
        """`copy(src, dest, count)`: count elements of the source's element type; with a
        device_global on one side, `count` defaults to all its elements and `start_index`
        counts elements into the variable."""
        if _is_accessor(src) or _is_accessor(dest):
            self._accessor_copy(src, dest, count, start_index)
            return
        itemsize = _itemsize(src, dest)
        g = _device_global(dest) or _device_global(src)
        if g is None:
            if count is None or start_index:
                raise exception(errc.invalid, "copy(src, dest, count) between USM pointers "
                                "or arrays takes a count and no start_index")
            self.memcpy(dest, src, _size(count, "copy") * itemsize)
            return
        n = g["size"] // itemsize if count is None else _size(count, "copy")
        first = _size(start_index, "copy start_index")
        if first < 0 or n < 0 or (first + n) * itemsize > g["size"]:
            raise exception(errc.invalid, f"copy of {n} elements from index {first}: "
                            f"device_global {g['unique_id']} has {g['size'] // itemsize}")
        self.memcpy(dest, src, n * itemsize, first * itemsize)

    def _accessor_copy(self, src: Any, dest: Any, count: Any, start_index: Any) -> None:
        """`copy(acc, dest)` / `copy(src, acc)` / `copy(acc, acc)`: the whole accessed
        range, into or from a USM pointer, a numpy array or another accessor."""
        if count is not None or start_index:
            raise exception(errc.invalid, "copy with an accessor copies its whole range: "
                            "no count or start_index")
        if _is_accessor(src) and _is_accessor(dest) and \
                np.dtype(src.dtype).itemsize != np.dtype(dest.dtype).itemsize:
            raise exception(errc.invalid, f"copy from {src.dtype} to {dest.dtype} elements")
        if _is_accessor(src) != _is_accessor(dest):
            # SYCL's copy(acc, T*) has one T: an array or pointer of another element type
            # would take the bytes reinterpreted (raises, as copies between USM and arrays)
            _itemsize(src, dest)
        if _is_accessor(src) and not src.access_mode.reads:
            raise exception(errc.invalid, "copy from a write_only accessor")
        if _is_accessor(dest) and not dest.access_mode.writes:
            raise exception(errc.invalid, "copy into a read_only accessor")
        if _is_accessor(src):
            sources = src.spans("copy source", self.requirements)
            n = sum(sp.nbytes for sp in sources)
            targets = dest.spans("copy destination", self.requirements) \
                if _is_accessor(dest) else [memops.resolve(dest, n, self._queue,
                                                           "copy destination", writable=True)]
            room = sum(sp.nbytes for sp in targets)
            if room < n:
                raise exception(errc.invalid, f"copy of {n} bytes into an accessor of {room}")
        else:
            targets = dest.spans("copy destination", self.requirements)
            n = sum(sp.nbytes for sp in targets)
            sources = [memops.resolve(src, n, self._queue, "copy source", writable=False)]
        pairs = memops.paired(sources, targets, n)
        self._set(memops.in_pieces([memops.MemCopy(a, b) for a, b in pairs]))

    def fill(self, ptr: Any, pattern: Any, count: Any = None) -> None:
        """`fill(ptr, pattern, count)`, or `fill(acc, value)` over an accessor's range."""
        if _is_accessor(ptr):
            if count is not None:
                raise exception(errc.invalid, "fill(acc, value) fills the accessor's whole "
                                "range: no count")
            if not ptr.access_mode.writes:
                raise exception(errc.invalid, "fill through a read_only accessor")
            raw = _pattern_bytes(ptr, pattern)
            if len(raw) != np.dtype(ptr.dtype).itemsize:
                raise exception(errc.invalid, f"fill(acc, value): the value has {len(raw)} "
                                f"bytes, an element of the accessor {np.dtype(ptr.dtype)}")
            runs = ptr.spans("fill", self.requirements)
            self._set(memops.in_pieces([memops.Fill(run, raw) for run in runs]))
            return
        if count is None:
            raise exception(errc.invalid, "fill(ptr, pattern, count) takes a count")
        raw = _pattern_bytes(ptr, pattern)
        d = memops.resolve(ptr, _size(count, "fill") * len(raw), self._queue, "fill",
                           writable=True)
        self._set(memops.Fill(d, raw))

    def update_host(self, acc: Any) -> None:
        """Brings the host copy of an accessor's buffer up to date once the command
        group's dependencies are done (SYCL 2020 handler::update_host)."""
        if not _is_accessor(acc):
            raise exception(errc.invalid, f"update_host takes a sycl.accessor, got "
                            f"{type(acc).__name__}")
        runs = acc.spans("update_host", self.requirements)
        storage = acc.buffer._storage
        whole = Span(runs[0].allocation, None, runs[0].offset,
                     runs[-1].offset + runs[-1].nbytes - runs[0].offset)
        command, done = storage.host_update(whole)
        self._set(command)
        self.enqueued = [done]

    def memset(self, ptr: Any, value: Any, num_bytes: Any) -> None:
        d = memops.resolve(ptr, _size(num_bytes, "memset"), self._queue, "memset", writable=True)
        self._set(memops.Fill(d, bytes([int(value) & 0xFF]), "memset"))

    def prefetch(self, ptr: Any, num_bytes: Any) -> None:
        memops.resolve(ptr, _size(num_bytes, "prefetch"), self._queue, "prefetch", writable=False)
        self._set(Barrier("prefetch"))

    def mem_advise(self, ptr: Any, num_bytes: Any, advice: Any) -> None:
        memops.resolve(ptr, _size(num_bytes, "mem_advise"), self._queue,
                       "mem_advise", writable=False)
        self._set(Barrier("mem_advise"))

    def ext_oneapi_barrier(self, events: Iterable[event] = ()) -> None:
        self.depends_on(list(events))
        self._set(Barrier("ext_oneapi_barrier"))

    def ext_oneapi_wait_external_semaphore(self, semaphore: Any, wait_value: Any = None
                                           ) -> None:
        """Work submitted after this command group waits, on the device, until the
        application's semaphore is signalled (a timeline one: reaches `wait_value`)."""
        self._set(external_semaphores.semaphore_command(self._queue, semaphore, wait_value,
                                                        signal=False))

    def ext_oneapi_signal_external_semaphore(self, semaphore: Any, signal_value: Any = None
                                             ) -> None:
        """The device signals the application's semaphore (a timeline one: to
        `signal_value`) once the work submitted before this command group is done."""
        self._set(external_semaphores.semaphore_command(self._queue, semaphore, signal_value,
                                                        signal=True))

    def ext_oneapi_graph(self, graph: Any) -> None:
        """Runs an executable command_graph (sycl_ext_oneapi_graph); in a command group
        recorded into another graph, adds it as a sub-graph node."""
        command = getattr(graph, "_vksycl_graph_command", None)
        if command is None:
            raise exception(errc.invalid, "ext_oneapi_graph takes an executable "
                            f"command_graph, got {type(graph).__name__}")
        self._set(command(self))


# argument types that are never dynamic parameters (asked before the attribute, which
# a USM pointer or a number lacks, and a missing attribute costs an exception)
_PLAIN_ARGUMENTS: Final = frozenset((int, float, bool, usm_ptr))


def _refuse_dynamic_parameter() -> NoReturn:
    """A graph's dynamic_parameter is no argument of a queue's command group."""
    raise exception(errc.invalid, "a dynamic_parameter is an argument of command groups "
                    "added to its graph with command_graph.add, not of command groups "
                    "submitted to a queue")


def check_set_args(values: Mapping[int, Any] | tuple, names: list[str], what: str) -> None:
    """Every argument of a kernel object set, by index (`set_arg`) or as the tuple
    `set_args` took, and none beyond its count; `what` names the kernel in the messages."""
    n = len(names)
    indices = range(len(values)) if isinstance(values, tuple) else values
    extra = sorted(i for i in indices if not 0 <= i < n)
    if extra:
        raise exception(errc.invalid, f"{what} has {n} arguments; set_arg set index "
                        f"{extra[0]}")
    unset = [i for i, _ in enumerate(names) if i not in indices]
    if unset:
        raise exception(errc.invalid, f"argument {unset[0]} ({names[unset[0]]}) of {what} is "
                        "not set (handler.set_arg)")


def _is_accessor(x: Any) -> bool:
    return getattr(type(x), "__vksycl_accessor__", None) == "global"


def _device_global(x: Any) -> dict[str, Any] | None:
    """What a host copy needs of a device_global (unique id, size, host access), or None
    for anything else."""
    return getattr(x, "__vksycl_device_global__", None)


def _size(n: Any, what: str) -> int:
    """A count or size in bytes: an integer (a float is a mistake, not a size)."""
    try:
        return operator.index(n)
    except TypeError:
        raise exception(errc.invalid, f"{what} takes an integer size, got "
                        f"{type(n).__name__} {n!r}") from None


def _itemsize(src: Any, dest: Any) -> int:
    """The size of the element type both sides share (SYCL's `copy<T>` has one T)."""
    s, d = getattr(src, "dtype", None), getattr(dest, "dtype", None)
    if s is not None and d is not None and np.dtype(s) != np.dtype(d):
        raise exception(errc.invalid, f"copy from {np.dtype(s)} to {np.dtype(d)} elements: "
                        "both sides need one element type (memcpy copies bytes, and "
                        "ptr.astype(t) views a pointer as another type)")
    for dtype in (s, d):
        if dtype is not None:
            return np.dtype(dtype).itemsize
    return 1


def _pattern_bytes(ptr: Any, pattern: Any) -> bytes:
    """The bytes of one fill pattern: a numpy scalar or array, bytes, a Python number
    taken as the pointer's element type, or a value of its struct (its fields)."""
    dtype = getattr(ptr, "dtype", None)
    if dtype is not None and np.dtype(dtype).names is not None and \
            not isinstance(pattern, bytes | bytearray | np.generic | np.ndarray | int | float):
        return np.asarray(stored(pattern, np.dtype(dtype)), np.dtype(dtype)).tobytes()
    if isinstance(pattern, bytes | bytearray):
        raw = bytes(pattern)
    elif isinstance(pattern, np.generic | np.ndarray):
        raw = np.ascontiguousarray(pattern).tobytes()
    elif isinstance(pattern, int | float | bool):
        raw = np.asarray(pattern, dtype=getattr(ptr, "dtype", np.uint8)).tobytes()
    elif hasattr(pattern, "tobytes"):
        raw = pattern.tobytes()
    else:
        raise exception(errc.invalid, f"cannot fill with a {type(pattern).__name__}")
    if not raw:
        raise exception(errc.invalid, "the fill pattern is empty")
    return raw
