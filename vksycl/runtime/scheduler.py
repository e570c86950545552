"""The eager scheduler: runs commands on one device as soon as their dependencies allow.

The fast path runs in the caller's thread: a command whose dependencies completed or are
already in the same Vulkan queue is lowered and submitted at once (the dispatch barrier
Kompute records orders it after earlier work in the queue). Host tasks, and commands
waiting on work that is not yet in the queue, run on a thread of their own.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence

from .allocator import Allocator
from .commands import Command, GpuStep, LowerContext, SemaphoreStep
from .engine import Buffer, Engine
from .event import event, host_now_ns
from .submission import Part, Submission, reraise

_log = logging.getLogger("vksycl.scheduler")

STAGING_BYTES = 16 << 20


class Scheduler:
    """One per device: the engine, its USM allocators (device-local, host-visible), shared
    staging memory, and the clock calibration."""

    def __init__(self, engine: Engine, heap_bytes: dict[bool, int]) -> None:
        self.engine = engine
        self.allocators = {host: Allocator(engine, host, size) for host, size in heap_bytes.items()}
        for a in self.allocators.values():
            a.siblings = [b for b in self.allocators.values() if b is not a]
        self.staging_bytes = STAGING_BYTES
        self._staging: list[Buffer] = []
        self._staging_lock = threading.RLock()
        self.eager = LowerContext(engine, self._shared_staging)

    def _shared_staging(self, i: int) -> Buffer:
        while len(self._staging) <= i:
            self._staging.append(self.engine.buffer(self.staging_bytes, host_visible=True))
        return self._staging[i]

    def execute(self, command: Command, deps: Sequence[event], profiling: bool,
                on_error: Callable[[BaseException], None]) -> event:
        engine = self.engine
        if command.runs_on_host:
            ordered = False
        elif len(deps) == 1:  # an in-order queue's last command, or one depends_on
            ordered = deps[0].ordered_on(engine)
        else:
            ordered = all(d.ordered_on(engine) for d in deps)
        if ordered and not profiling and command.one_dispatch:
            # The common eager launch, in short: what `_run` does for its dispatch,
            # submitted or batched, its errors raised to the caller (those of a batch it
            # joins, to the queue). The event is made once the dispatch is on its way.
            ev = event(engine, False,
                       engine.submit((command.dispatch(engine),), False, on_error))
            if deps:
                ev._deps = (weakref.ref(deps[0]),) if len(deps) == 1 else \
                    tuple(map(weakref.ref, deps))
            return ev
        ev = event(engine, profiling)
        if deps:
            ev._deps = tuple(weakref.ref(d) for d in deps)
        if not ordered:
            ev._defer()
            threading.Thread(target=self._run_deferred, args=(command, deps, ev, on_error),
                             daemon=True, name="vksycl-deferred").start()
        else:
            self._run(command, deps, ev, reraise)
        return ev

    def _run_deferred(self, command, deps, ev, on_error) -> None:
        try:
            for d in deps:
                d.wait()
        finally:
            self._run(command, deps, ev, on_error)

    def _run(self, command: Command, deps: Sequence[event], ev: event,
             on_error: Callable[[BaseException], None]) -> None:
        submitted_at = host_now_ns()
        host_times: list[int] = []
        submissions: list[Submission | Part] = []
        try:
            if command.needs_staging:
                with self._staging_lock:
                    self._run_steps(command, deps, ev, submissions, host_times, on_error)
                    if ev._submission is not None:  # staging is free once it is done
                        ev._submission.wait()
            else:
                self._run_steps(command, deps, ev, submissions, host_times, on_error)
        except BaseException as err:  # the caller's, or the queue's async handler
            ev._error = err
            if submissions and ev._submission is None:
                ev._submission = submissions[-1]  # the work that went out before it failed
            on_error(err)
        finally:
            if ev._profiling:
                ev._times = lambda: self._profile(submitted_at, submissions, host_times)
            ev._mark_issued()

    def _run_steps(self, command, deps, ev, submissions, host_times, on_error) -> None:
        pending: list = []
        deps_done = False
        timed = ev._profiling
        ran_host_last = False
        for step in command.lower(self.eager):
            if isinstance(step, SemaphoreStep):
                ran_host_last = False
                if pending:
                    submissions.append(self.engine.submit(pending, timed, on_error))
                    pending = []
                submissions.append(self.engine.external_semaphores(step.waits, step.signals,
                                                                   on_error))
                continue
            if isinstance(step, GpuStep):
                ran_host_last = False
                if step.recording is not None:  # pre-recorded: submitted as it is
                    if pending:
                        submissions.append(self.engine.submit(pending, timed, on_error))
                        pending = []
                    submissions.append(self.engine.replay(step.recording))
                    continue
                pending += step.dispatches
                if step.flush:
                    # a later host step waits for exactly this much (a staging window the
                    # host refills): it goes to the device now, not in an open batch
                    sub = self.engine.submit(pending, timed, on_error)
                    sub.flush()
                    submissions.append(sub)
                    pending = []
                continue
            if not deps_done:
                for d in deps:
                    d.wait()
                deps_done = True
            if pending:
                submissions.append(self.engine.submit(pending, timed, on_error))
                pending = []
            for s in submissions[: len(submissions) - step.lag]:
                s.wait()
            host_times.append(host_now_ns())
            step.run()
            host_times.append(host_now_ns())
            ran_host_last = True
        if pending:
            submissions.append(self.engine.submit(pending, timed, on_error))
        if submissions and not ran_host_last:
            # Each dispatch starts with a barrier on everything before it in the queue, so
            # the last submission completes after every earlier one.
            ev._submission = submissions[-1]

    def _profile(self, submitted_at: int, submissions: list[Submission | Part],
                 host_times: list[int]) -> list[int]:
        """(submit, start, end) in the host clock; the engine moves device timestamps into
        it with one offset per submission, so the commands of one batch keep their
        order."""
        starts, ends = list(host_times[::2]), list(host_times[1::2])
        for sub in submissions:
            ts = sub.timestamps_ns()
            if len(ts) >= 2:
                starts.append(ts[0])
                ends.append(ts[-1])
        start = max(submitted_at, min(starts, default=submitted_at))
        end = max(start + 1, max(ends, default=start + 1))
        return [submitted_at, start, end]
