"""Work handed to the device: the dispatches the engine makes, submissions of recorded
sequences, and the commands batched into one.

A `Submission` is one `vkQueueSubmit` of one sequence. Eager commands that arrive while
the device is busy share an open batch (a `Submission` not yet submitted); each gets a
`Part` of it. Waiting for a part, or asking whether it is done, is asking the batch, and
waiting submits the batch first if it is still open. A batch's timestamps hold one entry
after each dispatch, so a part's own start and end are the entries around its dispatches.

The engine sits above this module and makes these objects; they reach back to it only
through `Submitter`, what they ask of it, a base class of the engine's. Kompute's objects
(sequences, ops, pipelines) pass through here untouched: only the engine imports `kp`.
"""

from __future__ import annotations

import collections
import threading
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from mypy_extensions import mypyc_attr

from ..exceptions import errc, exception
from . import faults

# sequences one recording may have in flight: replays back to back need not wait on the
# host for the previous one (the device queue orders them)
RECORDING_COPIES = 3

ErrorReport = Callable[[BaseException], None]


def reraise(err: BaseException) -> None:
    """The error report of work run in the submitting thread: its errors reach the
    caller at once."""
    raise err


class Dispatch:
    """One dispatch the engine made: `op`, its Kompute op, recorded into sequences as it
    is, and the pipeline (`algo`), push constants and work-group count it was made of.
    Recorded, it starts with a memory barrier on all earlier work, unless `barrier` is
    False (a graph leaves it out where the DAG has no edge). `name` is its kernel's, for
    error messages. `part` is None, except for a dispatch whose memory its owner rewrites
    between launches (an argument ring's slot): the latest eager submission (or batch
    part) holding it, once that owner set it (others keep no submission, and so no
    queue's error report, alive)."""

    __slots__ = ("algo", "barrier", "groups", "name", "op", "part", "push")

    def __init__(self, op: object, algo: object, push: np.ndarray,
                 groups: tuple[int, int, int], barrier: bool, name: str) -> None:
        self.op, self.algo, self.push, self.groups, self.barrier, self.name = (
            op, algo, push, groups, barrier, name)
        # a Submission or Part, or an owner's stand-in with `finished` and `done()`
        self.part: Any = None


class Submitter:
    """What submissions and recordings ask of the engine that made them: its lock, how
    long a wait polls and may block, its clock, its pool of sequences, the submission of
    its open batch, and the errors of waits that fail. The engine derives from it, so
    that compiled code reads these attributes and calls these methods directly: a wait's
    return to its caller is part of every launch + wait."""

    lock: threading.RLock
    spin_wait_s: float
    last_wait_s: float
    wait_timeout_ns: int
    timestamp_period: float
    debug_output: Any  # what kernels print and assert (`device_output`), or None

    @abstractmethod
    def flush(self, batch: Submission | None = None) -> None: ...

    @abstractmethod
    def timed_out(self, sub: Submission) -> BaseException: ...

    @abstractmethod
    def wait_failed(self, err: BaseException, sub: Submission) -> BaseException: ...

    @abstractmethod
    def calibrate(self, offset_ns: int) -> None: ...

    @abstractmethod
    def clock_offset_ns(self) -> int: ...

    @abstractmethod
    def recycle(self, seq: Any, timed: bool) -> None: ...

    @abstractmethod
    def idle_besides(self, sub: Submission) -> bool: ...

    @abstractmethod
    def spare_sequence(self, timestamps: int | None = None) -> Any: ...

    @abstractmethod
    def adopt(self, seq: Any, recording: Recording) -> None: ...


class Submission:
    """One sequence for the device: open (a batch still taking commands), submitted, then
    finished. `wait` returns the sequence once, to the engine's pool or to the recording
    it belongs to; a submission that failed holds its `error` and has nothing to wait
    for."""

    __slots__ = ("_engine", "_lock", "_owner", "_sequence", "_timed", "_timestamps",
                 "checked_at", "error", "n_ops", "reports", "submitted")

    def __init__(self, engine: Submitter, sequence: Any, timed: bool,
                 owner: Recording | None = None, submitted: bool = True) -> None:
        self._engine = engine
        self._sequence: Any = sequence
        self._timestamps: list[int] | None = None
        self._timed = timed
        self._owner = owner
        self._lock = threading.Lock()
        self.submitted = submitted
        self.error: BaseException | None = None
        self.n_ops = 0  # dispatches recorded (a batch's grow as commands join)
        # when a batch opened or last found the device busy (perf_counter seconds)
        self.checked_at = 0.0
        # where a failed batch's error is reported (the queues of its commands), each
        # with an exception of its own once it failed; a submission made at once raises
        # to its caller instead
        self.reports: dict[ErrorReport, BaseException | None] = {}

    def wait(self, spin: bool = True) -> None:
        """Submits the batch first if it is still open. `spin=False` blocks at once (a
        background thread waiting, whose latency no one sees). Raises errc.runtime when
        the device is lost, or when the wait blocks longer than the engine's wait
        timeout (the work goes on, and a later wait waits for it again)."""
        if not self.submitted:
            self._engine.flush(self)
        if self._sequence is None:  # done, or failed: not waiting for a thread's lock
            return
        lock = self._lock
        lock.acquire()  # not `with`: a launch + wait passes here, and `with` costs more
        try:
            seq = self._sequence
            if seq is None:
                return
            # A blocking fence wait wakes up tens of microseconds after the device is
            # done; polling briefly first keeps short commands' latency low. Polling
            # takes a core from the work on a CPU device, so after a wait longer than
            # the spin could cover, the next wait blocks at once. A wait that finds the
            # work done tells nothing of how long the device takes, and leaves that
            # choice as it was: waits for earlier work found done (a graph's earlier
            # segments, events waited for in turn) would otherwise make the next long
            # wait poll. The poll keeps the interpreter's lock: handing it to another
            # thread at every poll costs more than the poll.
            if not seq.finish_if_signaled():
                engine = self._engine
                started = time.perf_counter()
                poll = engine.spin_wait_s if spin else 0.0
                if poll and engine.last_wait_s <= 2 * poll:
                    deadline = started + poll
                    while not seq.finish_if_signaled():
                        if time.perf_counter() >= deadline:
                            self._block(seq)
                            break
                else:
                    self._block(seq)
                if spin:
                    engine.last_wait_s = time.perf_counter() - started
            self._finish(seq)
            return
        except exception:
            raise
        except Exception as err:  # Kompute's: the device was lost
            failure = err
        finally:
            lock.release()
        # reported once this submission's lock is free: the engine takes its own lock,
        # which a thread may hold while it waits for this lock
        raise self._engine.wait_failed(failure, self)

    def _block(self, seq: Any) -> None:
        """Waits for the device with the interpreter's lock released, up to the engine's
        wait timeout."""
        if faults.armed:
            faults.check("wait")
        seq.eval_await(self._engine.wait_timeout_ns)
        if seq.is_running():
            raise self._engine.timed_out(self)

    @property
    def finished(self) -> bool:
        """Known to be complete (waited for, or found done), without asking Vulkan."""
        return self._sequence is None

    def done(self) -> bool:
        """Whether the device finished it; never waits, and never submits an open batch."""
        if self._sequence is None:
            return self.submitted
        if not self.submitted:
            return False
        if not self._lock.acquire(False):  # (not blocking: positional, a keyword costs parsing)
            # Another thread waits for it (the engine's watcher): ask the fence alone,
            # under the engine's lock, where no sequence is taken from the pool and reset.
            # Never blocking for that lock keeps lock order free of cycles (a caller may
            # hold the allocator's); without it, the answer is "not yet".
            lock = self._engine.lock
            if not lock.acquire(False):
                return False
            try:
                seq = self._sequence
                return seq is None or seq.fence_signaled()
            except Exception as err:  # Kompute's: the device was lost
                failure = err
            finally:
                lock.release()
        else:
            try:
                seq = self._sequence
                if seq is None:
                    return True
                if not seq.finish_if_signaled():  # keeps the interpreter's lock
                    return False
                self._finish(seq)
                return True
            except Exception as err:
                failure = err
            finally:
                self._lock.release()
        # a lost device fails the submission: there is nothing left to wait for
        self._engine.wait_failed(failure, self)
        return self._sequence is None

    def flush(self) -> None:
        """Submits the batch now if it is still open."""
        if not self.submitted:
            self._engine.flush(self)

    def fail(self, code: errc, message: str) -> None:
        """Its submission failed, or its device was lost: nothing more of it runs, every
        wait returns, and each queue with commands in it gets an error of its own."""
        self.error = exception(code, message)
        for report in self.reports:
            self.reports[report] = exception(code, message)
        self.submitted = True
        self._sequence = None

    def error_for(self, report: ErrorReport | None) -> BaseException | None:
        """The error a command reported through `report` sees."""
        return (report is not None and self.reports.get(report)) or self.error

    def _finish(self, seq: Any) -> None:
        engine = self._engine
        out = engine.debug_output
        if out is not None:  # before `_sequence` is None: no wait for this returns first
            out.drain(engine, self)
        if self._timed:
            done_ns = time.perf_counter_ns()
            ts = [int(t * engine.timestamp_period) for t in seq.get_timestamps()]
            if ts:
                engine.calibrate(done_ns - ts[-1])
            self._timestamps = ts
        self._sequence = None
        if self._owner is None:
            engine.recycle(seq, self._timed)
        else:
            self._owner.returned(seq, engine)

    def timestamps_ns(self) -> list[int]:
        """Device timestamps in the host's clock (nanoseconds): the start, then one after
        each dispatch. The offset is the engine's best estimate when they are asked for,
        the same for every submission then: one fixed when each finished would order two
        submissions' times by how late the host saw each finish."""
        self.wait()
        offset = self._engine.clock_offset_ns()
        return [t + offset for t in self._timestamps or ()]


class Part:
    """One command's dispatches in a batch: it completes with the batch, and its
    timestamps are the batch's around its own dispatches."""

    __slots__ = ("batch", "count", "first", "report")

    def __init__(self, batch: Submission, first: int, count: int,
                 report: ErrorReport | None) -> None:
        self.batch, self.first, self.count, self.report = batch, first, count, report

    def wait(self, spin: bool = True) -> None:
        self.batch.wait(spin)

    def done(self) -> bool:
        return self.batch.done()

    def flush(self) -> None:
        self.batch.flush()

    @property
    def finished(self) -> bool:
        return self.batch.finished

    @property
    def submitted(self) -> bool:
        return self.batch.submitted

    @property
    def error(self) -> BaseException | None:
        return self.batch.error_for(self.report)

    def timestamps_ns(self) -> list[int]:
        ts = self.batch.timestamps_ns()
        return ts[self.first: self.first + self.count + 1]


@mypyc_attr(allow_interpreted_subclasses=True)  # a command graph is one
class Recording:
    """Dispatch ops recorded once into sequences of their own (a command graph's segment)
    and submitted again at each replay. A replay takes a sequence no submission is
    running (the oldest's fence asked first); with none idle it records another (up to
    `RECORDING_COPIES`), else waits for the oldest. Timed recordings are recorded again
    at each replay: their timestamp queries are reset while recording."""

    __slots__ = ("_busy", "_count", "_idle", "_lock", "dispatches", "retired", "timed")

    def __init__(self, dispatches: tuple[Dispatch, ...], timed: bool) -> None:
        self.dispatches = dispatches
        self.timed = timed
        self.retired = False  # replaced by an update: its sequences go back to the pool
        self._idle: collections.deque[Any] = collections.deque()
        self._busy: collections.deque[Submission] = collections.deque()
        self._count = 0
        # threads replaying one graph; reentrant, as a wait inside `take` gives a
        # sequence back through `returned`
        self._lock = threading.RLock()

    def take(self, engine: Submitter) -> Any:
        while True:
            with self._lock:
                busy = self._busy
                while busy:
                    sub = busy[0]
                    if not sub.finished and not self._idle:
                        # a later submission's wait finishes earlier ones on the device
                        # (a fence covers all work submitted before it) but not here:
                        # asking the oldest's fence costs less than recording a copy or
                        # waiting (a thread waiting for it finishes it itself)
                        sub.done()
                    if not sub.finished:
                        break
                    busy.popleft()
                    if sub.error is not None:  # it failed: its sequence never comes back
                        self._count -= 1
                if self._idle:
                    seq = self._idle.pop()
                    if self.timed:
                        seq.clear()
                        self._record(seq)
                    return seq
                if self._count < RECORDING_COPIES:
                    seq = engine.spare_sequence(len(self.dispatches) if self.timed
                                                else None)
                    self._count += 1  # once made: making one may fail (out of memory)
                    self._record(seq)
                    return seq
                oldest = self._busy[0] if self._busy else None
            # waited for with this lock free: finishing a submission hands its sequence
            # back through `returned`, which takes this lock, on whichever thread waits
            # for it (the engine's watcher too); none busy: one is on its way back
            if oldest is None:
                time.sleep(0)
            else:
                oldest.wait()

    def started(self, sub: Submission) -> None:
        self._busy.append(sub)

    def _record(self, seq: Any) -> None:
        for d in self.dispatches:
            seq.record(d.op)

    def retire(self, engine: Submitter) -> None:
        """Replaced by an update: the sequences return to the engine's pool (now if
        idle, else when their submissions finish), so updates do not create and destroy
        command buffers."""
        with self._lock:
            self.retired = True
            idle, self._idle = self._idle, collections.deque()
            self._count -= len(idle)
        for seq in idle:
            engine.adopt(seq, self)

    def returned(self, seq: Any, engine: Submitter) -> None:
        """A sequence whose submission finished: kept for the next replay, or, once the
        recording is retired, given to the engine's pool (a replay after that, by a
        submission made before the update, records a sequence again)."""
        with self._lock:
            if not self.retired:
                self._idle.append(seq)
                return
            self._count -= 1
        engine.adopt(seq, self)
