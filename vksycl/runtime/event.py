"""`sycl.event`: the completion and profiling of one command."""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from .. import info
from ..exceptions import errc, exception
from ..info import event_command_status
from .engine import Engine
from .submission import Part, Submission


def consume(err: BaseException) -> bool:
    """True the first time an asynchronous error is reported: an event's wait_and_throw
    and its queue's throw_asynchronous report each error once between them."""
    if getattr(err, "_vksycl_reported", False):
        return False
    with contextlib.suppress(AttributeError):  # an exception type without a __dict__
        err._vksycl_reported = True  # type: ignore[attr-defined]
    return True


class _EventFields:
    """`sycl.event`'s fields in a source checkout where vksycl's native module, which holds
    them in C (`native/event_core.c`), was not built: the two must agree
    (tests/test_event_core.py checks that they do)."""

    __slots__ = ("__weakref__", "_deps", "_engine", "_error", "_issued", "_issued_signal",
                 "_profiling", "_submission", "_times")

    def __init__(self, engine: Engine | None = None, profiling: bool = False,
                 submission: Submission | Part | None = None) -> None:
        self._engine = engine
        self._issued = engine is None or submission is not None
        self._issued_signal: Any = None
        self._submission = submission
        self._error: BaseException | None = None
        self._profiling = profiling
        self._times: list[int] | Callable[[], list[int]] | None = None
        self._deps: tuple[weakref.ref[event], ...] = ()

    def is_complete(self) -> bool:
        return self._issued and (self._submission is None or self._submission.done())

    def ordered_on(self, engine: Engine) -> bool:
        """True when work submitted to `engine` from now on runs after this event's work:
        it completed, or its GPU work is already in that engine's queue."""
        if not self._issued:
            return False
        return self._engine is engine or self.is_complete()


# Every launch makes an event, and most ask an earlier one whether it completed or is
# ordered before the launch's work: in C these cost no interpreted call. The fields: the
# engine running its work (None for a default event); whether every step was handed to
# the device or run (`_issued`; its `_issued_signal`, a threading.Event, only for
# deferred commands); the Submission or Part of its work; its asynchronous error; whether
# its queue profiles, and the times (submit, start, end ns) or the function computing
# them once the work is done; weak references to the events it waited for (weak, so that
# a long in-order chain of events does not keep every event alive).
_FIELDS: Any
try:
    from .._native import EventCore as _FIELDS
except ImportError:  # a source checkout where vksycl's C was not built
    _FIELDS = _EventFields


class event(_FIELDS):  # type: ignore[misc]
    """A command's completion: `wait()`, `get_info(sycl.info.event.command_execution_status)`,
    `get_profiling_info(...)` on a queue made with `property.queue.enable_profiling()`;
    `event()` is a completed event."""

    __slots__ = ()

    is_complete = _FIELDS.is_complete  # named here for the API reference

    @classmethod
    def completed(cls) -> event:
        e = cls()
        e._issued = True
        return e

    def _defer(self) -> None:
        """Marks the event as issued later, by another thread."""
        self._issued = False
        self._issued_signal = threading.Event()

    def _mark_issued(self) -> None:
        self._issued = True
        if self._issued_signal is not None:
            self._issued_signal.set()

    # -- state -------------------------------------------------------------------------
    # `e.wait()` waits for one event and `sycl.event.wait([e1, e2])` for a list, as in
    # SYCL: called on the class, `self` is the list. Plain methods rather than a
    # descriptor choosing between the two, so that a launch + wait pays for no extra call.
    def wait(self: event | Iterable[event]) -> None:
        if not isinstance(self, event):
            for e in self:
                e.wait()
            return
        if not self._issued:
            self.check_not_blocked("wait")
            self._issued_signal.wait()
        sub = self._submission
        if sub is not None:
            sub.wait()
            out = self._engine.debug_output if self._engine is not None else None
            if out is not None and out.failure is not None:  # a kernel's assertion failed
                out.raise_failure()

    def check_not_blocked(self, what: str) -> None:
        """Refuses to wait for a command that waits (perhaps through other commands) for
        a host accessor this thread holds open: the wait would never end."""
        seen: set[int] = set()
        todo: list[event] = [self]
        me = threading.get_ident()
        while todo:
            e = todo.pop()
            if id(e) in seen or e.is_complete():
                continue
            seen.add(id(e))
            gate = getattr(e, "host_accessor", None)
            if gate is not None and getattr(e, "thread", None) == me:
                raise exception(errc.invalid, f"{what}: a command waits for an open "
                                f"host_accessor ({gate}) this thread holds; release the "
                                "host_accessor first (waiting here would never end)")
            todo += e.get_wait_list()

    def wait_and_throw(self: event | Iterable[event]) -> None:
        """Waits; then raises the event's asynchronous error (for a list: waits for every
        event, then raises the first error among them)."""
        if not isinstance(self, event):
            events = list(self)
            for e in events:
                e.wait()
            for e in events:
                e.wait_and_throw()
            return
        self.wait()
        err = self._error
        if err is None and self._submission is not None:
            err = self._submission.error  # its batch could not be submitted
        if err is not None and consume(err):
            raise err

    def get_info(self, param: Any) -> Any:
        if param is info.event.command_execution_status:
            if self.is_complete():
                return event_command_status.complete
            sub = self._submission
            if not self._issued or (sub is not None and not sub.submitted):
                if sub is not None:  # waiting in a batch: asking sends the batch
                    sub.flush()
                return event_command_status.submitted
            return event_command_status.running
        raise exception(errc.invalid, f"unknown event info descriptor {param!r}")

    def get_profiling_info(self, param: Any) -> int:
        if not self._profiling:
            raise exception(errc.invalid, "profiling information needs a queue constructed "
                            "with sycl.property.queue.enable_profiling()")
        self.wait()
        if callable(self._times):
            self._times = self._times()
        times = self._times or [0, 0, 0]
        keys = (info.event_profiling.command_submit, info.event_profiling.command_start,
                info.event_profiling.command_end)
        for key, value in zip(keys, times, strict=True):
            if param is key:
                return value
        raise exception(errc.invalid, f"unknown profiling descriptor {param!r}")

    def get_wait_list(self) -> list[event]:
        """The events this event's command waited for (those still referenced)."""
        return [e for e in (ref() for ref in self._deps) if e is not None]


def host_now_ns() -> int:
    return time.perf_counter_ns()
