"""The Kompute engine: the one module that imports `kp`.

Everything the runtime asks of Vulkan goes through an `Engine` (one per physical device):
buffers, cached pipelines, dispatch ops, and submissions drawn from a pool of reusable
sequences. Nothing here knows about SYCL commands; it only moves bytes and runs shaders.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import operator
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from spirv_gen.binary import rename_entry_point

from ..exceptions import errc, exception

_log = logging.getLogger("vksycl.engine")

# kp installs a root logging handler on import; keep its chatter out of users' logs.
import kp  # noqa: E402

logging.getLogger("kp").setLevel(logging.ERROR)

_WORD = 4
_MAX_IN_FLIGHT = 64
# sequences one recording may have in flight: replays back to back need not wait on the
# host for the previous one (the device queue orders them)
_RECORDING_COPIES = 3
_PIPELINE_CACHE_SIZE = 1024


@dataclass(eq=False)
class Buffer:
    """A Vulkan buffer of `nbytes` (rounded up to whole words) and its device address."""

    tensor: kp.Tensor
    nbytes: int
    host: np.ndarray | None  # a live uint8 view of host-visible memory, else None
    address: int
    released: bool = False


Bound = tuple[Buffer, int, int]  # a descriptor binding: (buffer, byte offset, byte size)


@dataclass(eq=False)
class Program:
    """SPIR-V ready for Kompute: its entry point renamed to "main" where needed."""

    spirv: bytes
    key: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.key = hashlib.blake2b(self.spirv, digest_size=16).digest()


_OP = operator.attrgetter("op")


class Dispatch:
    """One recorded dispatch: a pipeline, its work-group count and its push constants.
    Recorded, it starts with a memory barrier on all earlier work, unless `barrier` is
    False (a graph leaves it out where the DAG has no edge)."""

    __slots__ = ("algo", "barrier", "groups", "op", "push")

    def __init__(self, algo: kp.Algorithm, push: np.ndarray, groups: tuple[int, int, int],
                 barrier: bool = True) -> None:
        self.algo, self.push, self.groups, self.barrier = algo, push, groups, barrier
        self.op = kp.OpAlgoDispatch(algo, push, list(groups))
        if not barrier:
            self.op.set_barrier(False)


class Recording:
    """Dispatches recorded once into sequences of their own (a command graph's segment)
    and submitted again at each replay. A replay takes a sequence no submission is
    running; with none idle it records another (up to `_RECORDING_COPIES`), else waits
    for the oldest. Timed recordings are recorded again at each replay: their timestamp
    queries are reset while recording."""

    __slots__ = ("_busy", "_count", "_idle", "_lock", "ops", "retired", "timed")

    def __init__(self, dispatches: Iterable[Dispatch], timed: bool) -> None:
        self.ops = tuple(map(_OP, dispatches))
        self.timed = timed
        self.retired = False  # replaced by an update: its sequences go back to the pool
        self._idle: collections.deque[kp.Sequence] = collections.deque()
        self._busy: collections.deque[Submission] = collections.deque()
        self._count = 0
        # threads replaying one graph; reentrant, as a wait inside `_take_locked` gives
        # a sequence back through `_returned`
        self._lock = threading.RLock()

    def _take(self, engine: Engine) -> kp.Sequence:
        with self._lock:
            return self._take_locked(engine)

    def _take_locked(self, engine: Engine) -> kp.Sequence:
        while self._busy and self._busy[0].finished:
            self._busy.popleft()
        if not self._idle:
            if self._count < _RECORDING_COPIES:
                self._count += 1
                seq = (engine._manager.sequence(0, len(self.ops) + 1) if self.timed
                       else engine._spare_sequence())
                self._record(seq)
                return seq
            self._busy.popleft().wait()  # its sequence comes back idle
        seq = self._idle.pop()
        if self.timed:
            seq.clear()
            self._record(seq)
        return seq

    def _record(self, seq: kp.Sequence) -> None:
        for op in self.ops:
            seq.record(op)

    def retire(self, engine: Engine) -> None:
        """Replaced by an update: the sequences return to the engine's pool (now if
        idle, else when their submissions finish), so updates do not create and destroy
        command buffers."""
        with self._lock:
            self.retired = True
            idle, self._idle = self._idle, collections.deque()
            self._count -= len(idle)
        for seq in idle:
            engine._adopt(seq, self)

    def _returned(self, seq: kp.Sequence, engine: Engine) -> None:
        """A sequence whose submission finished: kept for the next replay, or, once the
        recording is retired, given to the engine's pool (a replay after that, by a
        submission made before the update, records a sequence again)."""
        with self._lock:
            if not self.retired:
                self._idle.append(seq)
                return
            self._count -= 1
        engine._adopt(seq, self)


class Submission:
    """Work handed to the device queue; `wait` returns its sequence once, to the pool or
    to the recording it belongs to."""

    __slots__ = ("_engine", "_lock", "_owner", "_sequence", "_timed", "_timestamps")

    def __init__(self, engine: Engine, sequence: kp.Sequence, timed: bool,
                 owner: Recording | None = None) -> None:
        self._engine = engine
        self._sequence: kp.Sequence | None = sequence
        self._timestamps: list[int] | None = None
        self._timed = timed
        self._owner = owner
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            seq = self._sequence
            if seq is None:
                return
            engine = self._engine
            spin = engine.spin_wait_s
            started = time.perf_counter()
            if spin and engine.last_wait_s <= 2 * spin:
                # A blocking fence wait wakes up tens of microseconds after the device is
                # done; polling briefly first keeps short commands' latency low. Polling
                # takes a core from the work on a CPU device, so after a wait longer than
                # the spin could cover, the next wait blocks at once.
                deadline = started + spin
                while seq.is_running() and time.perf_counter() < deadline:
                    seq.eval_await(0)
            if seq.is_running():
                seq.eval_await()
            engine.last_wait_s = time.perf_counter() - started
            self._finish(seq)

    @property
    def finished(self) -> bool:
        """Known to be complete (waited for, or found done), without asking Vulkan."""
        return self._sequence is None

    def done(self) -> bool:
        with self._lock:
            seq = self._sequence
            if seq is None:
                return True
            seq.eval_await(0)
            if seq.is_running():
                return False
            self._finish(seq)
            return True

    def _finish(self, seq: kp.Sequence) -> None:
        if self._timed:
            period = self._engine.timestamp_period
            self._timestamps = [int(t * period) for t in seq.get_timestamps()]
        self._sequence = None
        if self._owner is None:
            self._engine._recycle(seq, self._timed)
        else:
            self._owner._returned(seq, self._engine)

    def timestamps_ns(self) -> list[int]:
        """Device timestamps in nanoseconds: the start, then one after each dispatch."""
        self.wait()
        return self._timestamps or []


class Engine:
    """One Vulkan device driven through one `kp.Manager`."""

    def __init__(self, index: int, timestamp_period: float = 1.0, spin_wait_s: float = 0.0,
                 max_timestamps: int = 0):
        self.index = index
        self.timestamp_period = timestamp_period
        self.spin_wait_s = spin_wait_s  # how long a wait polls before it blocks
        self.last_wait_s = 0.0  # how long the last wait for a submission took
        self._max_timestamps = max(max_timestamps, 2)
        self._manager = kp.Manager(index)
        self._submit_lock = threading.Lock()
        self._pool: dict[bool, collections.deque[kp.Sequence]] = {
            False: collections.deque(), True: collections.deque()}
        self._cache_lock = threading.Lock()
        self._ops: dict[tuple, Dispatch] = {}  # (pipeline key, push, groups) -> op
        self._in_flight: collections.deque[Submission] = collections.deque()
        self._pipelines: collections.OrderedDict[tuple, kp.Algorithm] = (
            collections.OrderedDict()
        )
        self._pipelines_by_buffer: dict[int, set[tuple]] = collections.defaultdict(set)
        self._programs: dict[bytes, Program] = {}
        self._programs_by_object: dict[tuple[int, str], tuple[bytes, Program]] = {}
        self._placeholder: Buffer | None = None  # bound by kernels that bind no buffer
        # id(sequence) -> the ops it holds recorded (kept alive, so ids stay theirs)
        self._recorded: dict[int, tuple | None] = {}

    # -- memory -----------------------------------------------------------------------
    def buffer(self, nbytes: int, host_visible: bool) -> Buffer:
        """A new buffer; raises errc.memory_allocation when the device cannot satisfy it."""
        words = max(1, -(-nbytes // _WORD))
        kind = kp.TensorTypes.host if host_visible else kp.TensorTypes.storage
        # np.zeros is lazily paged: for device-local buffers nothing is touched.
        try:
            tensor = self._manager.tensor_t(np.zeros(words, dtype=np.uint32), kind)
        except Exception as err:  # vulkan-hpp raises std exceptions as RuntimeError
            raise exception(
                errc.memory_allocation,
                f"the device could not allocate {nbytes} bytes ({err})",
            ) from None
        host = tensor.data().view(np.uint8) if host_visible else None
        return Buffer(tensor, words * _WORD, host, tensor.device_address())

    def release(self, buffer: Buffer) -> None:
        """Frees a buffer now, and forgets every pipeline bound to it. Host memory that
        numpy arrays still view is freed when the last of them goes (by kp.Tensor's
        destructor), so a view kept past `sycl.free` reads stale data, never unmapped
        memory."""
        if buffer.released:
            return
        buffer.released = True
        with self._cache_lock:
            stale = self._pipelines_by_buffer.pop(id(buffer), set())
            for key in stale:
                self._pipelines.pop(key, None)
            if stale:
                self._ops = {k: op for k, op in self._ops.items() if k[0] not in stale}
        host, buffer.host = buffer.host, None
        if host is not None and _viewed(host.base):
            return
        buffer.tensor.destroy()

    # -- programs and pipelines ---------------------------------------------------------
    def program(self, spirv: bytes, entry: str = "main") -> Program:
        """The program for a module; the same bytes object is looked up without hashing."""
        known = self._programs_by_object.get((id(spirv), entry))
        if known is not None and known[0] is spirv:
            return known[1]
        key = hashlib.blake2b(spirv + entry.encode(), digest_size=16).digest()
        prog = self._programs.get(key)
        if prog is None:
            # Kompute binds the entry point "main" only.
            renamed = spirv if entry == "main" else rename_entry_point(spirv, entry, "main")
            prog = self._programs[key] = Program(renamed)
        self._programs_by_object[(id(spirv), entry)] = (spirv, prog)
        return prog

    def dispatch(
        self,
        program: Program,
        groups: tuple[int, int, int],
        push_constants: bytes = b"",
        bound: Sequence[Bound] = (),
    ) -> Dispatch:
        """A dispatch op. Kernels that reach memory through device addresses share one
        pipeline per (program, push-constant size) whatever memory they touch and whatever
        their work-group count; kernels with descriptor bindings (`bound`) get one per set of
        bound ranges. The op itself is reused when the same arguments come again (a loop)."""
        key = (program.key, len(push_constants),
               tuple((id(b), off, n) for b, off, n in bound) if bound else ())
        op_key = (key, push_constants, groups)
        with self._cache_lock:
            op = self._ops.get(op_key)
            if op is not None:
                return op
            algo = self._pipelines.get(key)
            if algo is None:
                algo = self._build_pipeline(key, program, bound, len(push_constants))
            else:
                self._pipelines.move_to_end(key)
            push = (np.frombuffer(push_constants, dtype=np.uint32) if push_constants
                    else _NO_PUSH)
            op = self._ops[op_key] = Dispatch(algo, push, groups)
            if len(self._ops) > _PIPELINE_CACHE_SIZE:
                self._ops.pop(next(iter(self._ops)))
            return op

    def without_barrier(self, d: Dispatch) -> Dispatch:
        """The same dispatch with no barrier before it, for work independent of what was
        recorded since the last barrier."""
        if not d.barrier:
            return d
        return Dispatch(d.algo, d.push, d.groups, barrier=False)

    def _build_pipeline(self, key: tuple, program: Program, bound: Sequence[Bound],
                        push_size: int) -> kp.Algorithm:
        for b, _, _ in bound:
            if b.released:
                raise exception(errc.invalid, "a kernel argument points to freed memory")
        # Kompute builds no pipeline for an algorithm without tensors: bind a placeholder.
        tensors = [b.tensor for b, _, _ in bound] or [self._placeholder_buffer().tensor]
        template = np.zeros(push_size // _WORD, dtype=np.uint32) if push_size else _NO_PUSH
        algo = self._manager.algorithm(tensors, program.spirv, [1, 1, 1], _NO_PUSH, template)
        if bound:
            algo.bind_ranges([(off, n) for _, off, n in bound])
        self._pipelines[key] = algo
        for b, _, _ in bound:
            self._pipelines_by_buffer[id(b)].add(key)
        while len(self._pipelines) > _PIPELINE_CACHE_SIZE:
            self._pipelines.popitem(last=False)
        return algo

    def _placeholder_buffer(self) -> Buffer:
        if self._placeholder is None:
            self._placeholder = self.buffer(_WORD, host_visible=False)
        return self._placeholder

    # -- submission ----------------------------------------------------------------------
    def submit(self, dispatches: Iterable[Dispatch], timed: bool = False) -> Submission:
        """Records the dispatches into a pooled sequence and submits it. A sequence that
        last recorded the very same ops (a launch repeated in a loop) is submitted again
        as it is: recording costs more than the submission itself."""
        ops = tuple(map(_OP, dispatches))
        seq = self._take_sequence(timed, len(ops))
        recorded = self._recorded.get(id(seq))
        if timed or recorded is None or len(recorded) != len(ops) or \
                not all(map(operator.is_, recorded, ops)):
            seq.clear()
            for op in ops:
                seq.record(op)
            # timestamp queries are reset while recording: timed sequences always record
            self._recorded[id(seq)] = None if timed else ops
        return self._start(seq, timed)

    def record(self, dispatches: Iterable[Dispatch], timed: bool = False) -> Recording:
        """Dispatches to be recorded once and submitted by `replay` many times."""
        return Recording(dispatches, timed)

    def _adopt(self, seq: kp.Sequence, recording: Recording) -> None:
        """Takes a retired recording's sequence into the pool, remembering what it holds
        recorded (timed ones are dropped: their timestamp count is the recording's)."""
        if not recording.timed:
            self._recorded[id(seq)] = recording.ops
            self._recycle(seq, False)

    def _spare_sequence(self) -> kp.Sequence:
        """An idle pooled sequence, cleared, for a recording; a new one if none."""
        try:
            seq = self._pool[False].pop()
        except IndexError:
            return self._manager.sequence()
        self._recorded.pop(id(seq), None)
        seq.clear()
        return seq

    def replay(self, recording: Recording) -> Submission:
        """Submits a recording as it was recorded."""
        self._make_room()
        sub = self._start(recording._take(self), recording.timed, recording)
        recording._busy.append(sub)
        return sub

    def _start(self, seq: kp.Sequence, timed: bool, owner: Recording | None = None
               ) -> Submission:
        """Hands a recorded sequence to the device: the one place work is submitted."""
        with self._submit_lock:
            seq.eval_async()
        sub = Submission(self, seq, timed, owner)
        self._in_flight.append(sub)
        return sub

    def _make_room(self) -> None:
        """Bounds the submissions in flight: past the limit, waits for the oldest."""
        if len(self._in_flight) >= _MAX_IN_FLIGHT:
            self._pop_in_flight(wait=True)

    def _take_sequence(self, timed: bool, n_ops: int) -> kp.Sequence:
        # Pools and the in-flight list are deques: their appends and pops are atomic, so
        # threads running deferred commands share them without a lock.
        self._make_room()
        pool = self._pool[timed]
        if not pool:
            self._reclaim()
        if timed and n_ops + 1 > self._max_timestamps:  # too few timestamps: new sequences
            for seq in self._pool[True]:
                self._recorded.pop(id(seq), None)
            self._pool[True].clear()
            self._max_timestamps = n_ops + 1
        try:
            return pool.pop()
        except IndexError:
            if timed:
                return self._manager.sequence(0, self._max_timestamps)
            return self._manager.sequence()

    def _reclaim(self) -> None:
        """Stops tracking finished submissions (their sequences went back to the pool)."""
        try:
            while self._in_flight[0].done():
                self._in_flight.popleft()
        except IndexError:
            pass

    def _pop_in_flight(self, wait: bool) -> None:
        try:
            sub = self._in_flight.popleft()
        except IndexError:
            return
        if wait:
            sub.wait()

    def _recycle(self, seq: kp.Sequence, timed: bool) -> None:
        self._pool[timed].append(seq)

    def last_submission(self) -> Submission | None:
        """The latest submission still tracked (completing it completes every earlier
        one: each dispatch starts with a barrier on all work before it in the queue)."""
        try:
            return self._in_flight[-1]
        except IndexError:
            return None

    def synchronize(self) -> None:
        while self._in_flight:
            self._pop_in_flight(wait=True)


def _viewed(mapped: np.ndarray) -> bool:
    """Whether numpy arrays besides the buffer's own view hold the mapped array: every
    view's base is that array (numpy collapses chains of views). Three references are
    ours: the buffer's own view, this parameter and getrefcount's argument."""
    return sys.getrefcount(mapped) > 3


_NO_PUSH = np.zeros(0, dtype=np.uint32)
