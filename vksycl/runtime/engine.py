"""The Kompute engine: the one module that imports Kompute (`vksycl._kp`, as `kp`).

Everything the runtime asks of Vulkan goes through an `Engine` (one per physical device):
buffers, cached pipelines, dispatch ops, and submissions drawn from a pool of reusable
sequences. Nothing here knows about SYCL commands; it only moves bytes and runs shaders.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from mypy_extensions import mypyc_attr

from spirv_gen.binary import rename_entry_point

from .. import config
from ..exceptions import errc, exception
from . import faults, validation
from .devices import NativeHandles
from .submission import Dispatch, ErrorReport, Part, Recording, Submission, Submitter
from .views import viewed

_log = logging.getLogger("vksycl.engine")


@mypyc_attr(native_class=False)
class _NoKompute:
    """Stands for the Kompute module where it cannot load: it links the Vulkan loader, and
    `import vksycl` must work on a machine without one. Any use raises the reason."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    def __getattr__(self, name: str) -> Any:
        raise exception(errc.runtime, f"vksycl's Kompute module could not load "
                                      f"({self._reason}): install the Vulkan loader, "
                                      "libvulkan.so.1 (Debian/Ubuntu package libvulkan1)")


# kp installs a root logging handler on import; keep its chatter out of users' logs.
try:
    from .. import _kp as kp  # type: ignore[attr-defined]  # patched Kompute, private
except ImportError as missing:
    kp = _NoKompute(str(missing))  # type: ignore[assignment]

logging.getLogger("kp").setLevel(logging.ERROR)
if not isinstance(kp, _NoKompute):
    # VKSYCL_VALIDATE: every manager made from here on runs the Khronos validation layer,
    # its messages echoed to stderr and kept (Kompute patch 0018; runtime/validation.py)
    kp.Manager.enable_validation(validation.requested(), True)
    validation.add_source(kp.Manager.take_validation_messages)


def kompute_module() -> str:
    """Where the Kompute module was loaded from, or why it could not load."""
    if isinstance(kp, _NoKompute):
        return f"not loadable ({kp._reason})"
    return str(kp.__file__)


_WORD: Final = 4
_MAX_IN_FLIGHT: Final = 64
_PIPELINE_CACHE_SIZE: Final = 1024
# dispatches an open batch takes before it is submitted anyway (a timed one: as many as
# its sequence has timestamps for, one after each)
_BATCH_OPS: Final = 512
# recordings of submissions of their own remembered by their dispatches
_RECORDINGS: Final = 64
# timestamps a timed sequence has room for (one after each dispatch): a profiling queue's
# commands batch too
_BATCH_TIMESTAMPS: Final = 129
# how long the submitting threads must have been quiet before the watcher thread sends an
# open batch (while they submit, they send batches themselves)
_WATCH_QUIET_S: Final = 0.0005
_FOREVER_NS: Final = 2**64 - 1  # a wait with no timeout
# the Vulkan results (as vulkan-hpp spells them in Kompute's errors) that mean no memory
_OUT_OF_MEMORY = re.compile(r"ErrorOutOf(Device|Host|Pool)Memory|ErrorFragmentedPool")


@mypyc_attr(native_class=False)
@dataclass(eq=False)
class Buffer:
    """A Vulkan buffer of `nbytes` (rounded up to whole words) and its device address."""

    tensor: kp.Tensor
    nbytes: int
    host: np.ndarray | None  # a live uint8 view of host-visible memory, else None
    address: int
    released: bool = False


Bound = tuple[Buffer, int, int]  # a descriptor binding: (buffer, byte offset, byte size)


@mypyc_attr(native_class=False)
@dataclass(eq=False)
class Program:
    """SPIR-V ready for Kompute: its entry point renamed to "main" where needed. `name`
    is its kernel's, for error messages."""

    spirv: bytes
    name: str = "main"
    key: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.key = hashlib.blake2b(self.spirv, digest_size=16).digest()


# the dtype of push constants, passed positionally: `dtype=np.uint32` costs a keyword
# and a conversion on every launch with new argument values
_PUSH_WORD: Final = np.dtype(np.uint32)


def _push_words(push_constants: bytes) -> np.ndarray:
    """Push constants as the uint32 words Kompute takes (no copy)."""
    return np.frombuffer(push_constants, _PUSH_WORD) if push_constants else _NO_PUSH


def _dispatch(algo: kp.Algorithm, push: np.ndarray, groups: tuple[int, int, int],
              name: str, barrier: bool = True) -> Dispatch:
    """A dispatch of a pipeline over `groups` work-groups with `push` constants; without
    `barrier`, its op waits on no earlier work."""
    op = kp.OpAlgoDispatch(algo, push, list(groups))
    if not barrier:
        op.set_barrier(False)
    return Dispatch(op, algo, push, groups, barrier, name)


class Engine(Submitter):
    """One Vulkan device driven through one `kp.Manager`."""

    def __init__(self, index: int, queue_family: int, timestamp_period: float = 1.0,
                 spin_wait_s: float = 0.0, batch_window_s: float = 0.0,
                 extensions: tuple[str, ...] = (), native: NativeHandles | None = None):
        self.index = index
        self.timestamp_period = timestamp_period
        self.spin_wait_s = spin_wait_s  # how long a wait polls before it blocks
        self.last_wait_s = 0.0  # how long the last wait for a submission took
        # how long an open batch takes commands before the next submission sends it; 0
        # submits every command at once
        self.batch_window_s = batch_window_s
        # how long a wait may block before it raises (VKSYCL_WAIT_TIMEOUT_S)
        timeout_s = config.wait_timeout_s()
        self.wait_timeout_ns = int(timeout_s * 1e9) if timeout_s else _FOREVER_NS
        # why the device is lost, once it is: every later call refuses work
        self.lost: str | None = None
        # sequences of submissions failed by a lost device, which the device may still
        # be running: never destroyed
        self._abandoned: list[kp.Sequence] = []
        self._max_timestamps = _BATCH_TIMESTAMPS
        if native is None:
            # optional device extensions: Kompute enables those the device has, and the
            # features they bring (the patch set's device creation)
            self._manager = kp.Manager(index, [queue_family], list(extensions))
        else:  # an application's device (Kompute patch 0014): its handles stay its own
            self._manager = kp.Manager(native.instance, native.physical_device,
                                       native.device, native.queue_family_index,
                                       native.queue_index)
        self.native = native
        self.closed = False  # its Vulkan objects were released (`close`)
        # a sequence kept for its timeline semaphore, whose value 0 is reached from the
        # start: what a completed submission's native event is
        self._anchor: kp.Sequence | None = None
        # the batch, the in-flight list and the Vulkan queue (submissions from any thread)
        self.lock = threading.RLock()
        # its methods, bound once: every submission takes the lock
        self._acquire: Callable[[], Any] = self.lock.acquire
        self._release: Callable[[], Any] = self.lock.release
        self._wakeup = threading.Condition(self.lock)  # a batch opened: the watcher runs
        self._watcher: threading.Thread | None = None
        self._batch: Submission | None = None  # open: commands join it until it is flushed
        self._failed: list[Submission] = []  # batches whose submission failed, to report
        self._last_submit_at = float("-inf")
        self._clock_offset: int | None = None  # host ns minus device ns
        self.submissions = 0  # vkQueueSubmit calls so far
        # the device's debug buffer (`device_output`), once a kernel prints or asserts:
        # every submission drains it as it completes
        self.debug_output: Any = None
        # the application's semaphores each open batch waits for and signals (carried
        # into its vkQueueSubmit), and the timeline points the next submission must wait
        # for: those of an empty submission that waited, whose own commands cannot order
        # the work after it
        self._carried: dict[Submission, tuple[list[tuple[int, int]],
                                              list[tuple[int, int]]]] = {}
        self._gate: list[tuple[int, int]] = []
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
        # (program, push size, bindings) -> the pipeline kernels with descriptor bindings
        # share
        self._bases: dict[tuple, kp.Algorithm] = {}
        self.pipelines_built = 0  # Vulkan pipelines created so far
        # id(sequence) -> the ops it holds recorded (kept alive, so ids stay theirs)
        self._recorded: dict[int, tuple | None] = {}
        # dispatches -> the sequence that recorded them last, for submissions of their
        # own: the entry holds while that sequence's `_recorded` says so
        self._recordings: dict[tuple, kp.Sequence] = {}
        # (buffer, the last work that may read it) to free once that completed
        self._retiring: collections.deque[tuple[Buffer, Submission | Part | None]] = (
            collections.deque())

    # -- memory -----------------------------------------------------------------------
    def buffer(self, nbytes: int, host_visible: bool, host_writes_only: bool = False
               ) -> Buffer:
        """A new buffer; raises errc.memory_allocation when the device cannot satisfy it.
        `host_writes_only`: host-visible memory the host never reads goes in the device's
        own memory where the device maps it (a resizable BAR), so that kernels read it
        without a round trip over the bus; the host's reads of it would be slow."""
        self._check_usable()
        words = max(1, -(-nbytes // _WORD))
        kind = kp.TensorTypes.storage if not host_visible else \
            kp.TensorTypes.host_device_local if host_writes_only else kp.TensorTypes.host
        # np.zeros is lazily paged: for device-local buffers nothing is touched.
        try:
            if faults.armed:
                faults.check("allocate")
            tensor = self._manager.tensor_t(np.zeros(words, dtype=np.uint32), kind)
        except Exception as err:  # vulkan-hpp raises std exceptions as RuntimeError
            raise self._failure(err, f"the device could not allocate {nbytes} bytes",
                                errc.memory_allocation) from None
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
        if host is not None and viewed(host):
            return
        buffer.tensor.destroy()

    def release_after(self, buffer: Buffer) -> None:
        """Frees a buffer once the work submitted so far (which may read it) completed:
        at the next submission that finds it done. Never blocks nor locks, so a
        finalizer may call it."""
        if not self.closed:  # closing freed every buffer
            self._retiring.append((buffer, self.last_submission()))

    def _release_retired(self) -> None:
        """Frees retired buffers, oldest first, while the work they waited for is done
        (what completes a later submission completes the earlier ones). The caller holds
        `lock`."""
        retiring = self._retiring
        while retiring:
            buffer, sub = retiring[0]
            if sub is not None and not sub.done():
                return
            retiring.popleft()
            self.release(buffer)

    # -- programs and pipelines ---------------------------------------------------------
    def program(self, spirv: bytes, entry: str = "main", name: str | None = None
                ) -> Program:
        """The program for a module (`name`: its kernel's, else the entry point's); the
        same bytes object is looked up without hashing."""
        known = self._programs_by_object.get((id(spirv), entry))
        if known is not None and known[0] is spirv:
            return known[1]
        key = hashlib.blake2b(spirv + entry.encode(), digest_size=16).digest()
        prog = self._programs.get(key)
        if prog is None:
            # Kompute binds the entry point "main" only.
            renamed = spirv if entry == "main" else rename_entry_point(spirv, entry, "main")
            prog = self._programs[key] = Program(renamed, name or entry)
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
        their work-group count; kernels with descriptor bindings (`bound`) share it too,
        with a descriptor set of their own per set of bound ranges. The op itself is
        reused when the same arguments come again (a loop)."""
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
            op = self._ops[op_key] = _dispatch(algo, _push_words(push_constants), groups,
                                               program.name)
            if len(self._ops) > _PIPELINE_CACHE_SIZE:
                self._ops.pop(next(iter(self._ops)))
            return op

    def with_push(self, d: Dispatch, push_constants: bytes, groups: tuple[int, int, int]
                  ) -> Dispatch:
        """A dispatch of `d`'s pipeline over `groups` work-groups with other push
        constants (a launch repeated with new argument values, or of another size):
        nothing is looked up or cached, the pipeline being `d`'s own."""
        return _dispatch(d.algo, _push_words(push_constants), groups, d.name)

    def indirect(self, d: Dispatch, buffer: Buffer, offset: int) -> None:
        """Makes `d`, not yet recorded, read its work-group counts when it runs, from
        three uint32 at `offset` bytes into host-visible `buffer` (an argument ring's
        slot): one recorded dispatch then serves launches of any size."""
        op: Any = d.op  # Kompute's OpAlgoDispatch
        op.set_indirect(buffer.tensor, offset)

    def without_barrier(self, d: Dispatch) -> Dispatch:
        """The same dispatch with no barrier before it, for work independent of what was
        recorded since the last barrier."""
        if not d.barrier:
            return d
        return _dispatch(d.algo, d.push, d.groups, d.name, barrier=False)

    def _build_pipeline(self, key: tuple, program: Program, bound: Sequence[Bound],
                        push_size: int) -> kp.Algorithm:
        for b, _, _ in bound:
            if b.released:
                raise exception(errc.invalid, "a kernel argument points to freed memory")
        if bound:
            base = self._base_pipeline(program, push_size, len(bound))
            algo = self._manager.algorithm_sharing(base, [b.tensor for b, _, _ in bound])
            algo.bind_ranges([(off, n) for _, off, n in bound])
        else:
            algo = self._new_pipeline([self._placeholder_buffer().tensor], program, push_size)
        self._pipelines[key] = algo
        for b, _, _ in bound:
            self._pipelines_by_buffer[id(b)].add(key)
        while len(self._pipelines) > _PIPELINE_CACHE_SIZE:
            self._pipelines.popitem(last=False)
        return algo

    def _new_pipeline(self, tensors: list, program: Program, push_size: int
                      ) -> kp.Algorithm:
        """A pipeline of its own (about 0.2 ms of the driver's time). Kompute builds none
        for an algorithm without tensors, so kernels binding nothing bind a placeholder."""
        template = np.zeros(push_size // _WORD, dtype=np.uint32) if push_size else _NO_PUSH
        self.pipelines_built += 1
        return self._manager.algorithm(tensors, program.spirv, [1, 1, 1], _NO_PUSH, template)

    def _base_pipeline(self, program: Program, push_size: int, bindings: int
                       ) -> kp.Algorithm:
        """The pipeline that every set of bound ranges of a kernel with descriptor
        bindings runs (each with a descriptor set of its own, Kompute patch 0011), built
        once over placeholders: a launch on fresh memory or a graph's pointer update makes
        no new pipeline."""
        key = (program.key, push_size, bindings)
        base = self._bases.get(key)
        if base is None:
            base = self._bases[key] = self._new_pipeline(
                [self._placeholder_buffer().tensor] * bindings, program, push_size)
        return base

    def _placeholder_buffer(self) -> Buffer:
        if self._placeholder is None:
            self._placeholder = self.buffer(_WORD, host_visible=False)
        return self._placeholder

    # -- submission ----------------------------------------------------------------------
    # Eager commands go out at once while the device is idle. While it is busy, or while
    # the host submits faster than a window apart (a burst), they join an open batch, one
    # sequence recorded command after command, which is submitted when the device would
    # otherwise go idle (seen by the watcher thread, or by a submission once a window has
    # passed since the batch opened or last found the device busy), when anything waits
    # for one of its commands, before work that must follow it (a graph replay, a
    # synchronize), or once it holds `_BATCH_OPS` dispatches.
    def submit(self, dispatches: Sequence[Dispatch], timed: bool = False,
               report: ErrorReport | None = None) -> Submission | Part:
        """Records the dispatches and hands them to the device, now or in a batch.
        `report` receives the error should the batch they join fail to submit."""
        self._check_usable()
        dispatches = tuple(dispatches)
        now = time.perf_counter()
        part: Submission | Part
        self._acquire()  # not `with`: every launch passes here, and `with` costs more
        try:
            burst = now - self._last_submit_at < self.batch_window_s
            self._last_submit_at = now
            batch = self._batch
            if batch is not None:
                room = self._max_timestamps - 1 if timed else _BATCH_OPS
                if batch._timed is not timed or batch.n_ops + len(dispatches) > room:
                    self._flush_locked(batch)
                    batch = None
            if batch is not None:
                part = self._join(batch, dispatches, report)
                if batch.n_ops >= room:
                    self._flush_locked(batch)
                elif now - batch.checked_at >= self.batch_window_s:
                    if not self._busy(burst=False):
                        self._flush_locked(batch)  # the device is idle
                    else:
                        batch.checked_at = now  # busy: look again a window later
            elif self._busy(burst):
                part = self._open(dispatches, timed, report, now)
            else:
                part = self._submit_now(dispatches, timed)
            for d in dispatches:
                if d.part is not None:  # its owner follows its submissions
                    d.part = part
        finally:
            self._release()
            if self._failed:  # a batch it flushed failed, or the device was lost
                self.report_failures()
        return part

    def _busy(self, burst: bool) -> bool:
        """Whether the device is still running the latest submission, so that a command
        should wait in a batch (never when batching is off). During a burst of
        submissions a submission not known to be done is taken to be running without
        asking the device."""
        if not self.batch_window_s or not self._in_flight:
            return False
        last = self._in_flight[-1]
        return not last.finished and (burst or not last.done())

    def _submit_now(self, dispatches: tuple[Dispatch, ...], timed: bool) -> Submission:
        """One submission of its own. A sequence that last recorded the very same
        dispatches (a launch repeated in a loop, or one of a few launched in turn: two
        buffers swapped each launch) is submitted again as it is: recording costs more
        than the submission itself."""
        seq = self._take_sequence(timed, len(dispatches))
        recorded = self._recorded
        if timed:  # timestamp queries are reset while recording: timed ones always record
            _record(seq, dispatches)
            recorded[id(seq)] = None
        # Dispatches compare by identity: `!=` of two tuples of them is a C loop.
        elif recorded.get(id(seq)) != dispatches:
            seq = self._sequence_for(dispatches, seq)
            if recorded.get(id(seq)) != dispatches:
                _record(seq, dispatches)
                recorded[id(seq)] = dispatches
                if len(self._recordings) >= _RECORDINGS:
                    self._recordings.clear()
                self._recordings[dispatches] = seq
        return self._start(seq, timed)

    def _sequence_for(self, dispatches: tuple[Dispatch, ...], top: kp.Sequence
                      ) -> kp.Sequence:
        """The sequence a submission of its own of `dispatches` runs, `top` being the
        one taken from the pool, which recorded others: the idle sequence that recorded
        these last, else `top` if its recording is of no use, else the sequence idle
        the longest (a new one if none), `top` going back to the pool with its
        recording for its dispatches to come again."""
        pool = self._pool[False]
        seq = self._recordings.get(dispatches)
        if seq is not None and self._recorded.get(id(seq)) == dispatches:
            try:
                pool.remove(seq)  # atomic: other threads only give sequences back
            except ValueError:  # in flight
                seq = None
        else:
            seq = None
        if seq is None and self._recorded.get(id(top)) is None:
            return top
        pool.append(top)
        if seq is None:
            seq = pool.popleft() if len(pool) > 1 else self._new_sequence()
        return seq

    def _open(self, dispatches: tuple[Dispatch, ...], timed: bool,
              report: ErrorReport | None, now: float) -> Part:
        """A new batch holding these dispatches; the watcher submits it once the device
        idles."""
        seq = self._take_sequence(timed, len(dispatches))
        self._recorded[id(seq)] = None
        seq.clear()
        batch = self._batch = Submission(self, seq, timed, submitted=False)
        batch.checked_at = now
        part = self._join(batch, dispatches, report)
        self._watch_batches()
        return part

    def _watch_batches(self) -> None:
        """Starts the watcher thread once, and tells it a batch opened."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, daemon=True,
                                             name=f"vksycl-batches-{self.index}")
            self._watcher.start()
        self._wakeup.notify()

    def _join(self, batch: Submission, dispatches: tuple[Dispatch, ...],
              report: ErrorReport | None) -> Part:
        seq = batch._sequence
        for d in dispatches:
            seq.record(d.op)
        part = Part(batch, batch.n_ops, len(dispatches), report)
        batch.n_ops += len(dispatches)
        if report is not None and report not in batch.reports:
            batch.reports[report] = None
        return part

    def flush(self, batch: Submission | None = None) -> None:
        """Submits the open batch (if it is `batch`, when one is named)."""
        with self.lock:
            open_batch = self._batch
            if open_batch is not None and (batch is None or batch is open_batch):
                self._flush_locked(open_batch)
            failed = self._failed
        if failed:
            self.report_failures()

    def _flush_locked(self, batch: Submission) -> None:
        self._make_room()  # may raise (a timeout): the batch stays open
        self._batch = None
        seq = batch._sequence
        waits, signals = self._carried.pop(batch, ((), ()))
        try:
            if faults.armed:
                faults.check("submit")
            if not batch.n_ops:  # semaphores alone: an empty command buffer, not the last
                seq.begin()
            self._send(seq, waits, signals, empty=not batch.n_ops)
        except Exception as err:  # out of memory, or the device was lost
            failure = self._failure(
                err, f"a batch of {_dispatches(batch.n_ops)} could not be submitted")
            batch.fail(failure.code(), failure.what())
            self._failed.append(batch)
            if self.lost is None:  # it never ran: its sequence serves again
                self._recorded[id(seq)] = None
                self.recycle(seq, batch._timed)
            return
        batch.submitted = True
        self.submissions += 1
        self._in_flight.append(batch)

    def report_failures(self) -> None:
        """Tells the queues of the batched commands of failed submissions, outside the
        engine's lock (a queue reports while holding its own). A report that raises (a
        command run in the submitting thread raises its error there) raises once every
        queue was told."""
        with self.lock:
            failed, self._failed = self._failed, []
        raised = None
        for batch in failed:
            for report, err in batch.reports.items():
                try:
                    report(err)  # type: ignore[arg-type]
                except BaseException as ex:
                    raised = raised or ex
        if raised is not None:
            raise raised

    def _watch(self) -> None:
        """Submits an open batch that no submission has looked at for a while, once the
        work before it is done: the device would idle otherwise. While threads keep
        submitting, they send batches themselves, and this thread stays off the
        interpreter's lock (it sleeps, or blocks in Vulkan, with the lock released)."""
        while True:
            self._await_batch()
            time.sleep(_WATCH_QUIET_S)
            with self.lock:
                batch = self._batch
                quiet = batch is not None and \
                    time.perf_counter() - self._last_submit_at >= _WATCH_QUIET_S
                last = self._in_flight[-1] if quiet and self._in_flight else None
            if not quiet:
                continue
            try:
                if last is not None:
                    last.wait(spin=False)
            except exception:  # a timeout or a lost device: the work's waiters hear of it
                pass
            except Exception:
                _log.exception("waiting for the work before an open batch failed")
            with contextlib.suppress(exception):  # a timeout making room: as above
                self.flush(batch)

    def _await_batch(self) -> None:
        """Returns once a batch is open. (A method of its own: compiled code would take
        the batch seen here for the one read later.)"""
        with self.lock:
            while self._batch is None:
                self._wakeup.wait()

    def record(self, dispatches: Iterable[Dispatch], timed: bool = False) -> Recording:
        """Dispatches to be recorded once and submitted by `replay` many times."""
        return Recording(tuple(dispatches), timed)

    def adopt(self, seq: kp.Sequence, recording: Recording) -> None:
        """Takes a retired recording's sequence into the pool, remembering what it holds
        recorded (timed ones are dropped: their timestamp count is the recording's)."""
        if not recording.timed:
            self._recorded[id(seq)] = recording.dispatches
            self.recycle(seq, False)

    def spare_sequence(self, timestamps: int | None = None) -> kp.Sequence:
        """A sequence for a recording: with room for `timestamps` dispatches' timestamps,
        a new one; else an idle pooled one, cleared (a new one if none)."""
        if timestamps is not None:
            return self._new_sequence(timestamps + 1)
        try:
            seq = self._pool[False].pop()
        except IndexError:
            return self._new_sequence()
        self._recorded.pop(id(seq), None)
        seq.clear()
        return seq

    def replay(self, recording: Recording) -> Submission:
        """Submits a recording as it was recorded, after every command before it."""
        self._check_usable()
        try:
            with self.lock:
                if self._batch is not None:
                    self._flush_locked(self._batch)
                self._make_room()
                sub = self._start(recording.take(self), recording.timed, recording)
                recording.started(sub)
        finally:
            if self._failed:
                self.report_failures()
        return sub

    def _start(self, seq: kp.Sequence, timed: bool, owner: Recording | None = None,
               signals: Sequence[tuple[int, int]] = ()) -> Submission:
        """Hands a recorded sequence to the device (the engine's lock held): the one
        place work is submitted, eagerly or by a graph, besides a batch's flush. A
        sequence the device refuses goes back where it came from. `signals`: the
        application's semaphores it signals (an empty submission's)."""
        try:
            if faults.armed:
                faults.check("submit")
            if self._gate or signals:
                self._send(seq, (), signals, empty=bool(signals))
            else:  # what `_send` does then, without a call per launch
                seq.eval_async()
        except Exception as err:  # out of memory, or the device was lost
            if owner is None:
                self.recycle(seq, timed)
            else:
                owner.returned(seq, self)
            raise self._failure(err, "the device refused a submission") from None
        self.submissions += 1
        sub = Submission(self, seq, timed, owner)
        in_flight = self._in_flight
        in_flight.append(sub)
        if len(in_flight) >= _MAX_IN_FLIGHT:  # once the device has the work, not before
            self._forget_finished()
        return sub

    def _send(self, seq: kp.Sequence, waits: Sequence[tuple[int, int]],
              signals: Sequence[tuple[int, int]], empty: bool) -> None:
        """vkQueueSubmit of a sequence (the engine's lock held), waiting for the gate
        and `waits` before its commands and signalling `signals` once they and all work
        before them are done. An empty submission that waited becomes the gate: the
        next submission's commands wait for its timeline point."""
        gate = self._gate
        if gate or waits or signals:
            seq.set_submit_semaphores([*gate, *waits], list(signals))
        seq.eval_async()
        if empty and (gate or waits):
            semaphore, value = seq.timeline()
            self._gate = [(semaphore, value)]
        elif gate:
            self._gate = []

    def external_semaphores(self, waits: Sequence[tuple[int, int]],
                            signals: Sequence[tuple[int, int]],
                            report: ErrorReport | None = None) -> Submission | Part:
        """Makes the device wait for the application's semaphores (VkSemaphore, value)
        before the work submitted next, or signal them once the work submitted so far
        is done, in the same vkQueueSubmit as that work. A wait ends the open batch and
        opens one that later work joins; a signal ends the open batch, or goes alone
        in an empty submission when none is open. What is returned completes with the
        submission that carries them."""
        with self.lock:
            self._check_usable()
            batch = self._batch
            if waits:
                if batch is not None:
                    self._flush_locked(batch)
                seq = self._take_sequence(False, 0)
                self._recorded[id(seq)] = None
                seq.clear()
                batch = self._batch = Submission(self, seq, False, submitted=False)
                self._carried[batch] = (list(waits), [])
                self._watch_batches()
            elif batch is None:
                seq = self._take_sequence(False, 0)
                self._recorded[id(seq)] = None
                seq.clear()
                seq.begin()  # an empty command buffer
                return self._start(seq, False, signals=signals)
            else:
                self._carried.setdefault(batch, ([], []))[1].extend(signals)
            part = Part(batch, batch.n_ops, 0, report)
            if report is not None and report not in batch.reports:
                batch.reports[report] = None
            if signals:
                self._flush_locked(batch)
        if self._failed:
            self.report_failures()
        return part

    def _make_room(self) -> None:
        """Bounds the submissions in flight: past the limit, forgets those at the front
        known to be finished, else waits for the oldest."""
        in_flight = self._in_flight
        if len(in_flight) >= _MAX_IN_FLIGHT:
            self._forget_finished()
            if len(in_flight) >= _MAX_IN_FLIGHT:
                self._pop_in_flight()

    def _forget_finished(self) -> None:
        """Forgets the submissions at the front known to be finished, all at once
        (launches waited for one by one would otherwise forget one each). A submission
        reaching the limit does it once it was handed to the device: freeing the ones
        forgotten then costs a launch + wait nothing, where before it, it delayed one
        submission in `_MAX_IN_FLIGHT` by their deallocation."""
        in_flight = self._in_flight
        while in_flight and in_flight[0].finished:
            in_flight.popleft()

    def _take_sequence(self, timed: bool, n_ops: int) -> kp.Sequence:
        self._make_room()
        if self._retiring:
            self._release_retired()
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
            return self._new_sequence(self._max_timestamps if timed else 0)

    def _new_sequence(self, timestamps: int = 0) -> kp.Sequence:
        """A new sequence (a command pool and buffer) with room for `timestamps`."""
        try:
            if faults.armed:
                faults.check("allocate")
            return self._manager.sequence(0, timestamps)
        except Exception as err:
            raise self._failure(err, "the device could not make a command buffer",
                                errc.memory_allocation) from None

    def _reclaim(self) -> None:
        """Stops tracking finished submissions (their sequences went back to the pool)."""
        try:
            while self._in_flight[0].done():
                self._in_flight.popleft()
        except IndexError:
            pass

    def _pop_in_flight(self) -> None:
        """Waits for the oldest submission in flight, then stops tracking it (one that
        times out stays tracked: the process must not tear down what the device runs)."""
        try:
            sub = self._in_flight[0]
        except IndexError:
            return
        sub.wait()
        with contextlib.suppress(ValueError):  # another thread took it meanwhile
            self._in_flight.remove(sub)

    def idle_besides(self, sub: Submission) -> bool:
        """Whether no submission but `sub` may be running on the device, taken under the
        lock work is submitted under so none starts meanwhile (without waiting for it:
        the caller holds `sub`'s lock; taken elsewhere, the answer is no)."""
        if not self.lock.acquire(False):
            return False
        try:
            return all(s is sub or s.finished for s in self._in_flight)
        finally:
            self.lock.release()

    def recycle(self, seq: kp.Sequence, timed: bool) -> None:
        # Pools are deques: their appends and pops are atomic, so a submission finishing
        # in another thread gives its sequence back without the engine's lock.
        self._pool[timed].append(seq)

    def calibrate(self, offset_ns: int) -> None:
        """A timed submission seen done at host time H with its last timestamp D says the
        host clock minus the device's is at most H - D; the least such bound is kept."""
        if self._clock_offset is None or offset_ns < self._clock_offset:
            self._clock_offset = offset_ns

    def clock_offset_ns(self) -> int:
        """The host clock minus the device's, as well as known so far."""
        return self._clock_offset or 0

    def last_submission(self) -> Submission | None:
        """The latest work handed to the engine, an open batch included (completing it
        completes every earlier one: each dispatch starts with a barrier on all work
        before it in the queue)."""
        batch = self._batch
        if batch is not None:
            return batch
        try:
            return self._in_flight[-1]
        except IndexError:
            return None

    def synchronize(self) -> None:
        self.flush()
        while self._in_flight:
            self._pop_in_flight()
        if self._retiring:
            with self.lock:  # a submission on another thread releases them too
                self._release_retired()

    # -- native handles ---------------------------------------------------------------------
    def native_handles(self) -> tuple[int, int, int, int, int]:
        """(VkInstance, VkPhysicalDevice, VkDevice, VkQueue, queue family index) of the
        engine's device, as integers."""
        instance, physical, device, queue, family = self._manager.native_handles()
        return instance, physical, device, queue, family

    def native_buffer(self, buffer: Buffer) -> tuple[int, int]:
        """(VkBuffer, VkDeviceMemory) of a buffer the engine made, as integers."""
        if buffer.released or self.closed:
            raise exception(errc.invalid, "the buffer was released")
        vk_buffer, memory = buffer.tensor.native_handles()
        return vk_buffer, memory

    def native_timeline(self, sub: Submission | Part | None) -> tuple[int, int]:
        """(VkSemaphore, value): a timeline semaphore and the value it reaches once `sub`
        completes (an open batch is submitted first). A completed submission, or None
        (work with nothing on the device), gives value 0 of a semaphore the engine keeps:
        reached from the start. Raises errc.feature_not_supported where submissions
        complete through fences."""
        if isinstance(sub, Part):
            sub = sub.batch
        semaphore, value, seq = 0, 0, None
        if sub is not None:
            sub.flush()
            with sub._lock:
                seq = sub._sequence
                if seq is not None:
                    semaphore, value = seq.timeline()
        if seq is None:
            with self.lock:
                if self._anchor is None:
                    self._anchor = self._new_sequence()
                semaphore = self._anchor.timeline()[0]
        if not semaphore:
            raise exception(errc.feature_not_supported, "the device's submissions complete "
                            "through fences: it has no timeline semaphores to share")
        return semaphore, value

    def close(self) -> None:
        """Waits for the work in flight, then destroys every Vulkan object the engine
        made on its device (buffers, pipelines, command pools, semaphores), never the
        device, queue or instance. Every later call that would give the device work
        raises errc.invalid."""
        with self.lock:
            if self.closed:
                return
            self.synchronize()
            self.closed = True
            self._manager.destroy()

    # -- errors ---------------------------------------------------------------------------
    # A lost device stays lost: whatever was in flight or batched fails (errc.runtime,
    # reported to the queues of batched commands), and each later call that would give it
    # work raises (`submit`, `replay` and `buffer` ask `_check_usable` first: two
    # attribute reads of a compiled class). A wait that outlasts the timeout raises but
    # loses nothing: the work goes on, and a later wait waits for it again.
    def _failure(self, err: BaseException, what: str, code: errc = errc.runtime
                 ) -> exception:
        """The sycl.exception for an error Kompute raised while doing `what`: out of
        memory is errc.memory_allocation; a lost device is lost for good."""
        text = f"{what}: {err}"
        if "ErrorDeviceLost" in str(err):
            return self._lose(text)
        if _OUT_OF_MEMORY.search(str(err)):
            code = errc.memory_allocation
        return exception(code, text)

    def _lose(self, reason: str) -> exception:
        """Marks the device lost (the first reason stays): every submission in flight or
        batched fails, its sequence kept (the device may still run it), and the queues
        of batched commands hear of it at the next report, outside this lock."""
        with self.lock:
            if self.lost is None:
                self.lost = reason
                pending = [s for s in self._in_flight if not s.finished]
                if self._batch is not None:
                    pending.append(self._batch)
                    self._batch = None
                self._carried.clear()
                self._in_flight.clear()
                message = self.lost_error().what()
                for sub in pending:
                    self._abandoned.append(sub._sequence)
                    sub.fail(errc.runtime, message)
                    self._failed.append(sub)
        return self.lost_error()

    def lost_error(self) -> exception:
        return exception(errc.runtime, f"the device was lost ({self.lost}); nothing more "
                         "runs on it")

    def _check_usable(self) -> None:
        """What a lost or closed engine answers to anything that would give its device
        work: an exception."""
        if self.lost is not None:
            raise self.lost_error()
        if self.closed:
            raise exception(errc.invalid, "vksycl released its use of this device "
                            "(release_native_device): nothing more runs on it")

    def wait_failed(self, err: BaseException, sub: Submission) -> exception:
        """The error of a wait for `sub` (or of a question whether it is done) that
        Kompute failed."""
        return self._failure(err, f"waiting for {self.describe(sub)}")

    def timed_out(self, sub: Submission) -> exception:
        """The error of a wait for `sub` that outlasted the wait timeout, naming what the
        device is still running when that is earlier work."""
        message = (f"{self.describe(sub)} did not complete within "
                   f"{self.wait_timeout_ns / 1e9:g} s (VKSYCL_WAIT_TIMEOUT_S): it hangs, or "
                   "needs longer; it may still be running, and a later wait waits again")
        for earlier in list(self._in_flight):
            if earlier is sub:
                break
            if not earlier.done():
                message += f"; the device is still running {self.describe(earlier)}, " \
                           "submitted before it"
                break
        return exception(errc.runtime, message)

    def describe(self, sub: Submission) -> str:
        """What a submission runs, for messages: its kernels where the engine knows
        them (a submission of its own, a graph's segment), else its size."""
        owner = sub._owner
        dispatches = owner.dispatches if owner is not None else \
            self._recorded.get(id(sub._sequence))
        if not dispatches:
            return f"a batch of {_dispatches(sub.n_ops)}" if sub.n_ops else "a submission"
        names = list(dict.fromkeys(d.name for d in dispatches))
        what = f"kernel {names[0]}" if len(names) == 1 else f"kernels {', '.join(names)}"
        return what + (" (a command graph's)" if owner is not None else "")


def _record(seq: kp.Sequence, dispatches: tuple[Dispatch, ...]) -> None:
    """Records a sequence anew with the dispatches' ops."""
    seq.clear()
    for d in dispatches:
        seq.record(d.op)


def _dispatches(n: int) -> str:
    return f"{n} dispatch" if n == 1 else f"{n} dispatches"


_NO_PUSH: Final = np.zeros(0, dtype=np.uint32)
