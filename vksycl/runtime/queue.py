"""`sycl.queue`: where command groups are submitted, in order or out of order."""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final, NoReturn

from .. import info
from ..exceptions import errc, exception, exception_list
from ..properties import find, property
from ..ranges import nd_range
from ..ranges import range as sycl_range  # not the builtin
from . import buffers
from .commands import Command
from .context import context, default_context, scheduler_for
from .event import consume, event
from .handler import PYTHON_KERNELS, closure_launch, handler
from .host_commands import Barrier
from .platform import device, select_device
from .submission import Part

_log = logging.getLogger("vksycl.queue")
_RANGES: Final = (sycl_range, nd_range)
_SIZE_TYPES: Final = (int, tuple)  # `parallel_for(n, body)`, `parallel_for((n, m), body)`
_PRUNE_AT: Final = 64  # outstanding events kept before completed ones are first dropped


class queue_state(enum.Enum):
    """`syclexp.queue_state`: whether a queue runs its commands or records them into a
    command_graph."""

    executing = 0
    recording = 1


class _Errors:
    """A queue's asynchronous errors. Calling it reports one: the engine keeps the
    reporter of each launch's queue with its batch until the batch is done."""

    __slots__ = ("items", "lock")

    def __init__(self, lock: Any) -> None:
        self.items: list[BaseException] = []
        self.lock = lock

    def __call__(self, err: BaseException) -> None:
        with self.lock:
            self.items.append(err)

    def take(self) -> list[BaseException]:
        """The errors reported so far, forgotten here."""
        with self.lock:
            items, self.items = self.items, []
        return items


class queue:
    """`queue()`, `queue(selector)`, `queue(device)`, `queue(context, device|selector)`,
    each with `property_list=[...]` and `async_handler=`, which may also follow in SYCL's
    positional order: `queue(selector, async_handler, property_list)`."""

    def __init__(self, *args: Any, property_list: Iterable[Any] = (),
                 async_handler: Callable[[exception_list], None] | None = None) -> None:
        ctx = None
        if args and isinstance(args[0], context):
            ctx, args = args[0], args[1:]
        target: Any
        rest: list[Any]
        target, *rest = args if args else (None,)
        if isinstance(target, list):  # queue(property_list)
            target, rest = None, [target, *rest]
        if rest and isinstance(rest[-1], list) and not property_list:
            property_list = rest.pop()
        if rest and callable(rest[0]) and async_handler is None:
            async_handler = rest.pop(0)
        if rest:
            raise exception(errc.invalid, "queue takes ([context,] device or selector"
                            "[, async_handler][, property_list])")
        dev = target if isinstance(target, device) else select_device(target)
        if ctx is None:
            ctx = default_context(dev.get_platform())
        elif not ctx.has_device(dev):
            raise exception(errc.invalid, "the queue's device is not in its context")
        self._device, self._context = dev, ctx
        self._properties = list(property_list)
        self._in_order = find(self._properties, property.queue.in_order) is not None
        self._profiling = find(self._properties, property.queue.enable_profiling) is not None
        self._async_handler = async_handler
        self._scheduler = scheduler_for(dev)
        self._lock = threading.RLock()  # errors of eager work are reported while held
        # its methods, bound once: every launch and wait takes the lock
        self._acquire: Callable[[], Any] = self._lock.acquire
        self._release: Callable[[], Any] = self._lock.release
        self._last: event | None = None
        # what `wait` waits for: events, and the submissions and batch parts of others
        self._outstanding: list[Any] = []
        # pruning scans every outstanding entry: it waits until their number doubled since
        # the last scan, so a long run of launches in flight costs no scan per launch
        self._prune_at = _PRUNE_AT
        # passed to the engine with every launch: one object (not a method bound per
        # launch, which batches would keep alive and the collector would then scan)
        self._errors = _Errors(self._lock)
        self.recording_graph: Any = None  # set while a command_graph records this queue

    # -- queries ---------------------------------------------------------------------
    def get_device(self) -> Any:
        return self._device

    def get_context(self) -> context:
        return self._context

    def get_info(self, param: Any) -> Any:
        if param is info.queue.device:
            return self._device
        if param is info.queue.context:
            return self._context
        if param is info.queue.reference_count:
            return 1
        raise exception(errc.invalid, f"unknown queue info descriptor {param!r}")

    def is_in_order(self) -> bool:
        return self._in_order

    def has_property(self, kind: type) -> bool:
        return find(self._properties, kind) is not None

    def get_property(self, kind: type) -> Any:
        p = find(self._properties, kind)
        if p is None:
            raise exception(errc.invalid, f"the queue has no property {kind.__name__}")
        return p

    def get_backend(self) -> Any:
        return self._device.get_backend()

    # -- submission ------------------------------------------------------------------
    def submit(self, cgf: Callable[[handler], Any], depends_on: Any = None) -> event:
        if not callable(cgf):
            raise exception(errc.invalid, "submit takes a command group function of a "
                            f"handler, got {type(cgf).__name__}")
        h = handler(self)  # what _shortcut does, one call less per command group
        if depends_on is not None:
            h.depends_on(depends_on)
        cgf(h)
        return self._enqueue(h)

    def _enqueue(self, h: handler) -> event:
        """Hands the handler's command to the recording graph, or runs it."""
        command = h.command
        if command is None:
            command = _empty()
        deps = h._deps
        if deps and self.recording_graph is None:
            for d in deps:  # an event recorded into a graph: record into it too
                if type(d) is event:  # a plain event (its lack of the attribute costs)
                    continue
                begin = getattr(d, "_vksycl_record_transitively", None)
                if begin is not None:
                    begin(self)
        if self.recording_graph is not None:
            return self.recording_graph._record_from_queue(self, command, h)
        if h.requirements:
            ev = buffers.enqueue(self, command, h)
        else:
            ev = self.execute(command, deps)
        for hook in h.enqueued:
            hook(ev)
        return ev

    def execute(self, command: Command, deps: list[event]) -> event:
        self._acquire()  # not `with`: every launch passes here, and `with` costs more
        try:
            if self._in_order and self._last is not None:
                deps = [*deps, self._last]
            ev = self._scheduler.execute(command, deps, self._profiling and command.profiled,
                                         self._errors)
            self._last = ev
            # What `wait` will wait for: the work of a plain event handed to the device
            # (what its own `wait` waits for), so that the event goes as soon as its caller
            # lets go of it; one part per batch, the launches joining it after the first
            # being waited for with it. Any other event is kept itself.
            work: Any = ev._submission if type(ev) is event and ev._issued else None
            outstanding = self._outstanding
            if work is None:
                work = ev
            elif type(work) is Part and outstanding:
                last = outstanding[-1]
                if type(last) is Part and last.batch is work.batch and \
                        last.report is work.report:
                    return ev
            if len(outstanding) >= self._prune_at:
                self._prune()
            self._outstanding.append(work)
        finally:
            self._release()
        return ev

    def _prune(self) -> None:
        """Forgets completed work. A queue's commands mostly finish in order, so the
        finished ones at the front go first, each asked once, up to the first one still
        running; only a list still as long as the threshold is scanned whole (a host
        task or another device's work holding the front)."""
        outstanding = self._outstanding
        done = 0
        for w in outstanding:
            if not _complete(w):
                break
            done += 1
        del outstanding[:done]
        if len(outstanding) >= self._prune_at:
            outstanding[:] = [w for w in outstanding if not _complete(w)]
        self._prune_at = max(_PRUNE_AT, 2 * len(outstanding))

    def _shortcut(self, fill: Callable[[handler], Any], depends_on: Any) -> event:
        """Runs a command group function on a new handler and enqueues its command."""
        h = handler(self)
        if depends_on is not None:
            h.depends_on(depends_on)
        fill(h)
        return self._enqueue(h)

    def single_task(self, kernel: Callable, depends_on: Any = None, properties: Any = None
                    ) -> event:
        """`single_task(kernel)`, or in SYCL's order `single_task(event(s), kernel)`."""
        kernel, depends_on = _events_first(kernel, depends_on)
        return self._shortcut(lambda h: h.single_task(kernel, properties), depends_on)

    def parallel_for(self, launch: Any, kernel: Any, *rest: Any, depends_on: Any = None,
                     properties: Any = None) -> event:
        """`parallel_for(range, kernel)`, or in SYCL's orders `parallel_for(range, event(s),
        kernel)` and `parallel_for(range, [event(s),] reduction..., kernel)`; the events
        may also come after the kernel or as `depends_on`."""
        if not rest and depends_on is None and properties is None and \
                self.recording_graph is None and type(kernel) in PYTHON_KERNELS:
            kind = type(launch)
            if kind in _SIZE_TYPES:
                launch, kind = sycl_range(launch), sycl_range
            if kind in _RANGES:
                return self.execute(closure_launch(self._device, self._context, kernel,
                                                   launch), [])
        elif rest and depends_on is None and properties is None and \
                self.recording_graph is None and type(rest[-1]) in PYTHON_KERNELS and \
                type(launch) in _RANGES:
            # `parallel_for(range, reduction..., kernel)` over USM: no command group needed
            reductions = (kernel, *rest[:-1])
            if all(getattr(type(r), "__vksycl_reduction__", False) for r in reductions):
                return self.execute(closure_launch(self._device, self._context, rest[-1],
                                                   launch, None, reductions), [])
        args = (kernel, *rest)
        if depends_on is None and len(args) > 1:
            if _are_events(args[0]):
                depends_on, args = args[0], args[1:]
            elif _are_events(args[-1]):
                depends_on, args = args[-1], args[:-1]
        h = handler(self)  # what _shortcut does, without a function per launch
        if depends_on is not None:
            h.depends_on(depends_on)
        h.parallel_for(launch, *args, properties=properties)
        return self._enqueue(h)

    def memcpy(self, dest: Any, src: Any, num_bytes: Any = None, offset: Any = 0,
               depends_on: Any = None) -> event:
        """`memcpy(dest, src, num_bytes)`; to or from a device_global, `num_bytes`
        defaults to its size and `offset` counts bytes into it (handler.memcpy)."""
        offset, depends_on = _events_last(offset, depends_on)
        return self._shortcut(lambda h: h.memcpy(dest, src, num_bytes, offset), depends_on)

    def copy(self, src: Any, dest: Any, count: Any = None, start_index: Any = 0,
             depends_on: Any = None) -> event:
        """`copy(src, dest, count)`; to or from a device_global, `count` defaults to all
        its elements and `start_index` counts elements into it (handler.copy)."""
        start_index, depends_on = _events_last(start_index, depends_on)
        return self._shortcut(lambda h: h.copy(src, dest, count, start_index), depends_on)

    def memset(self, ptr: Any, value: Any, num_bytes: Any, depends_on: Any = None) -> event:
        return self._shortcut(lambda h: h.memset(ptr, value, num_bytes), depends_on)

    def fill(self, ptr: Any, pattern: Any, count: Any, depends_on: Any = None) -> event:
        return self._shortcut(lambda h: h.fill(ptr, pattern, count), depends_on)

    def prefetch(self, ptr: Any, num_bytes: Any, depends_on: Any = None) -> event:
        return self._shortcut(lambda h: h.prefetch(ptr, num_bytes), depends_on)

    def mem_advise(self, ptr: Any, num_bytes: Any, advice: Any, depends_on: Any = None
                   ) -> event:
        return self._shortcut(lambda h: h.mem_advise(ptr, num_bytes, advice), depends_on)

    def ext_oneapi_submit_barrier(self, events: Iterable[event] = ()) -> event:
        return self._shortcut(lambda h: h.ext_oneapi_barrier(events), None)

    # -- an application's semaphores (after sycl_ext_oneapi_bindless_images) ----------
    def ext_oneapi_wait_external_semaphore(self, semaphore: Any, wait_value: Any = None,
                                           depends_on: Any = None) -> event:
        """`(sem)`, `(sem, wait_value)`, each optionally followed by an event or a list:
        work submitted after it waits on the device for the application's semaphore."""
        if depends_on is None and _are_events(wait_value):
            wait_value, depends_on = None, wait_value
        return self._shortcut(
            lambda h: h.ext_oneapi_wait_external_semaphore(semaphore, wait_value), depends_on)

    def ext_oneapi_signal_external_semaphore(self, semaphore: Any, signal_value: Any = None,
                                             depends_on: Any = None) -> event:
        """`(sem)`, `(sem, signal_value)`, each optionally followed by an event or a
        list: the device signals the application's semaphore once the work submitted
        before it is done."""
        if depends_on is None and _are_events(signal_value):
            signal_value, depends_on = None, signal_value
        return self._shortcut(
            lambda h: h.ext_oneapi_signal_external_semaphore(semaphore, signal_value),
            depends_on)

    # -- command graphs (sycl_ext_oneapi_graph) ----------------------------------------
    def ext_oneapi_graph(self, graph: Any, depends_on: Any = None) -> event:
        """Runs an executable command_graph after `depends_on` (an event or a list)."""
        return self._shortcut(lambda h: h.ext_oneapi_graph(graph), depends_on)

    def ext_oneapi_get_state(self) -> queue_state:
        return queue_state.executing if self.recording_graph is None else \
            queue_state.recording

    def ext_oneapi_get_graph(self) -> Any:
        """The modifiable command_graph this queue records into."""
        recorder = self.recording_graph
        graph = None if recorder is None else recorder.graph()
        if graph is None:
            raise exception(errc.invalid, "the queue is not recording to a command_graph")
        return graph

    # -- synchronisation -------------------------------------------------------------
    def wait(self) -> None:
        """Waits for every command submitted so far, then forgets them (a thread waiting
        at the same time still finds them). Raises errc.runtime once the device is
        lost."""
        if self.recording_graph is not None:
            raise exception(errc.invalid, "wait on a queue recording to a command_graph")
        pending = self._outstanding[:]  # one step (the list copies itself): no lock
        if len(pending) > 1:
            # The latest command waiting in an open batch goes to the device now, behind
            # the work it runs, rather than once the waits reach it (a wait submits its
            # own batch).
            last = pending[-1]
            if isinstance(last, event):
                last = last._submission
            if last is not None and not last.submitted:
                last.flush()
        for w in pending:
            w.wait()
        self._acquire()  # not `with`: a launch + wait passes here, and `with` costs more
        try:
            outstanding, n = self._outstanding, len(pending)
            # Events are only appended, each a new one, so the same length and last event
            # mean the very list seen before the waits: nothing came or went since.
            if len(outstanding) == n and (not n or outstanding[-1] is pending[-1]):
                outstanding.clear()
            elif outstanding[:n] == pending:
                del outstanding[:n]
            else:  # pruned meanwhile
                self._outstanding = [w for w in outstanding if not _complete(w)]
            self._prune_at = max(_PRUNE_AT, 2 * len(self._outstanding))
        finally:
            self._release()
        engine = self._scheduler.engine
        if engine.lost is not None:
            self._device_lost(pending)
        out = engine.debug_output
        if out is not None and out.failure is not None:  # a kernel's assertion failed
            out.raise_failure()

    def _device_lost(self, pending: list[Any]) -> NoReturn:
        """The device was lost: the errors of the commands it took down become the
        queue's asynchronous errors (batched ones are reported to it already), and the
        wait raises."""
        engine = self._scheduler.engine
        engine.report_failures()
        with self._lock:
            known = self._errors.items
            for w in pending:
                work = w._submission if isinstance(w, event) else w
                err = work.error if work is not None else None
                if err is not None and not any(err is k for k in known):
                    known.append(err)
        raise engine.lost_error()

    def throw_asynchronous(self) -> None:
        errors = [e for e in self._errors.take() if consume(e)]
        if not errors:
            return
        # the queue's handler, else its context's (SYCL 2020, 4.13.1.2)
        report = self._async_handler or self._context.async_handler
        if report is not None:
            report(exception_list(errors))
            return
        first = errors[0]
        if isinstance(first, exception):
            raise first
        raise exception(errc.runtime, f"asynchronous error: {first!r}") from first

    def wait_and_throw(self) -> None:
        """Waits, then hands the asynchronous errors to the async handler (or raises the
        first), even when the wait raised (a lost device)."""
        try:
            self.wait()
        finally:
            self.throw_asynchronous()


def _complete(work: Any) -> bool:
    """Whether an entry of a queue's outstanding work (an event, or the submission or
    batch part of one) is done."""
    return work.is_complete() if isinstance(work, event) else work.done()


def _events_first(kernel: Any, depends_on: Any) -> tuple[Any, Any]:
    """(kernel, dependencies) from arguments where the events may come before the kernel,
    as in SYCL's queue shortcuts."""
    if depends_on is None or not (callable(depends_on) or
                                  hasattr(depends_on, "_vksycl_command")):
        return kernel, depends_on
    if _are_events(kernel):
        return depends_on, kernel
    return kernel, depends_on


def _are_events(v: Any) -> bool:
    return isinstance(v, event) or (isinstance(v, list | tuple) and
                                    all(isinstance(e, event) for e in v))


def _events_last(where: Any, depends_on: Any) -> tuple[Any, Any]:
    """(offset, dependencies) where SYCL's `memcpy(dest, src, n, events)` /
    `copy(src, dest, n, events)` put the events in the offset's place."""
    if depends_on is None and _are_events(where):
        return 0, where
    return where, depends_on


def _empty() -> Command:
    return Barrier()
