"""Launches whose argument values change each time (a new time step, a counter), run from
pre-recorded work: their arguments go into slots of host-visible memory that a variant of
the kernel reads, each slot with a dispatch of its own whose one push constant is the
slot's address. The memory is a Vulkan buffer of the ring's own, not USM: it lives as long
as the plans that take it over (a plan made from the last one for another size or
closure), and would keep a block of the caching allocator from ever going back. The
host only writes it, so it lies in the device's own memory where the device maps that
(a resizable BAR): on an H200 a kernel reading its arguments from host memory took a
microsecond longer per launch + wait.

A dispatch carrying new push constants must be made and recorded anew (a Kompute op, a
command buffer the driver builds): most of what such a launch costs. A slot's dispatch
stays the same, so a launch waited for before the next reuses one slot and submits the
sequence that recorded it last, recording nothing; launches in flight together take
slots of their own, the ring growing up to `_MOST_SLOTS` (beyond, a launch dispatches its
push constants as before). A slot is rewritten only once the last submission holding its
dispatch (`Dispatch.part`) is finished.

A slot's dispatch reads its work-group counts from the slot too (`vkCmdDispatchIndirect`),
after the arguments: launches of other sizes (sizes are launch arguments) run from the
same slots and recordings as launches with new values.

A `RingLaunch` holds its packed arguments and work-group counts and writes them into a
slot when it is dispatched, so a command kept and launched again (a repeat, a recent
value) is right even after its slot went to another launch: it takes a slot again.
Graphs record it as the push-constant launch it stands for (`for_graph`).
"""

from __future__ import annotations

import collections
import struct
import threading
from collections.abc import Callable
from typing import Any, Final

from ..compiler.kernel import CompiledKernel
from ..runtime.commands import Command, KernelLaunch
from ..runtime.context import scheduler_for
from ..runtime.engine import Buffer, Engine
from ..runtime.submission import Dispatch
from .marshal import ADDRESS

_SLOTS_PER_BLOCK: Final = 64
_MOST_SLOTS = 1024
_ALIGN: Final = 16  # a slot's start: the widest argument field's alignment and more
# a slot's work-group counts (x, y, z), as vkCmdDispatchIndirect reads them
COUNTS: Final = struct.Struct("<3I")



class _Known:
    """The `part` of a slot's dispatch before its first submission (finished), and
    between a claim and its submission (not)."""

    def __init__(self, finished: bool) -> None:
        self.finished = finished

    def done(self) -> bool:
        return self.finished


_NEVER_SUBMITTED: Final = _Known(True)
_PENDING: Final = _Known(False)


class _Slot:
    __slots__ = ("claim", "counts", "dispatch", "memory", "span")

    def __init__(self, dispatch: Dispatch, memory: memoryview, start: int, size: int,
                 counts: int) -> None:
        self.dispatch, self.memory, self.span = dispatch, memory, slice(start, start + size)
        self.counts = slice(counts, counts + COUNTS.size)  # where its dispatch reads them
        # the claim whose bytes it holds: a number, not the launch, which the slot would
        # keep alive for as long as the ring takes to come round (the collector then
        # scans launches by the thousand)
        self.claim = 0


class ArgumentRing:
    """The slots of one prepared kernel's launches on one device (a plan's, and those of
    the plans made from it for new sizes): its argument-block variant, each slot with
    its launch's work-group counts."""

    def __init__(self, device: Any, ck: CompiledKernel, like: KernelLaunch) -> None:
        self.engine: Engine = scheduler_for(device).engine
        groups = like.groups
        # a launch of the plan's push-constant kernel: what its launches share, and the
        # pipeline a launch finding no slot free dispatches
        self.first = like
        # the pipeline's dispatch (never submitted) the slots' dispatches are made from:
        # the engine caches it, so it follows no submission
        self.template = self.engine.dispatch(
            self.engine.program(ck.binary, ck.entry, ck.name), groups, ADDRESS.pack(0))
        self.size = ck.args_size
        self.counts_at = -(-self.size // 4) * 4  # within a slot
        self.stride = -(-(self.counts_at + COUNTS.size) // _ALIGN) * _ALIGN
        # the counts of launches of the first's size
        self.first_counts = COUNTS.pack(*groups)
        self.slots: collections.deque[_Slot] = collections.deque()
        self.newest: _Slot | None = None  # the last of `slots`
        self.buffers: list[Buffer] = []
        self.free: list[_Slot] = []  # made, never claimed
        self.claims = 0  # numbers each claim
        self.lock = threading.Lock()
        # its methods, bound once: every launch from the ring takes the lock
        self._acquire: Callable[[], Any] = self.lock.acquire
        self._release: Callable[[], Any] = self.lock.release

    @property
    def made(self) -> int:
        """Slots made so far."""
        return len(self.buffers) * _SLOTS_PER_BLOCK

    @property
    def like(self) -> tuple | None:
        """(engine, a push-constant dispatch of the plan's kernel), once there was one."""
        return self.first._dispatched or self.first._like

    def launch(self, push: bytes, origin: Any, groups: tuple[int, int, int]) -> RingLaunch:
        """A launch of the plan's kernel with the packed arguments `push`, over `groups`
        work-groups (launches of any size share a ring). Where no slot is free it falls
        back to its push constants, through a dispatch of the plan's pipeline (as
        `KernelLaunch.with_push` launches do) rather than one cached by its bytes."""
        return RingLaunch(self, push, origin, groups)

    def claim(self, data: bytes, counts: bytes) -> _Slot | None:
        """A slot holding `data` and work-group `counts` from now on, under a claim
        number of its own (`_Slot.claim`),
        once the work that read it is known to be finished: the newest (launches waited
        for one by one reuse one slot, and its recording), else the oldest, else a new
        one; once `_MOST_SLOTS` were made, the oldest if the device is done with it,
        else None. The slots stay in the order of their claims, newest last. Threads
        launching the plan's kernel at once claim one at a time. Finished is what the
        engine was told (the work was waited for, or found done), never asked of Vulkan:
        a query costs microseconds on some drivers, and finding the device idle would
        end the engine's batching."""
        self._acquire()  # not `with`: every launch from the ring passes here
        try:
            slot = self.newest  # it stays last
            if slot is None or not slot.dispatch.part.finished:
                slots = self.slots
                if slots and slots[0].dispatch.part.finished:
                    slot = slots.popleft()
                else:
                    made = self._new_slot()
                    if made is None:
                        if not slots[0].dispatch.part.done():
                            return None
                        made = slots.popleft()
                    slot = made
                slots.append(slot)
                self.newest = slot
            memory = slot.memory
            memory[slot.span] = data
            memory[slot.counts] = counts
            self.claims += 1
            slot.claim = self.claims
            slot.dispatch.part = _PENDING
            return slot
        finally:
            self._release()

    def keep(self, slot: _Slot, claim: int) -> bool:
        """Whether `slot` still holds the bytes of its claim numbered `claim`; if it does,
        no claim takes it until the launch about to submit its dispatch was submitted."""
        with self.lock:
            if slot.claim != claim:
                return False
            slot.dispatch.part = _PENDING
            return True

    def _new_slot(self) -> _Slot | None:
        if not self.free:
            if self.made >= _MOST_SLOTS:
                return None
            buffer = self.engine.buffer(self.stride * _SLOTS_PER_BLOCK, host_visible=True,
                                        host_writes_only=True)
            self.buffers.append(buffer)
            assert buffer.host is not None  # host-visible memory
            memory = buffer.host.data  # a memoryview of its bytes
            for k in reversed(range(_SLOTS_PER_BLOCK)):
                start = k * self.stride
                d = self.engine.with_push(self.template, ADDRESS.pack(buffer.address + start),
                                          self.template.groups)
                self.engine.indirect(d, buffer, start + self.counts_at)
                d.part = _NEVER_SUBMITTED  # the engine follows its submissions
                self.free.append(_Slot(d, memory, start, self.size, start + self.counts_at))
        return self.free.pop()

    def __del__(self) -> None:
        for buffer in self.buffers:
            self.engine.release_after(buffer)


class RingLaunch(KernelLaunch):
    """A push-constant kernel launch (`push_constants`, over `groups` work-groups) that
    eager submissions run through its plan's argument ring, `ring`. What every launch of
    the plan's kernel shares (its name, module and entry point) it takes from the ring's
    first launch."""

    _slot: _Slot | None = None  # the slot it claimed last
    _claim = 0  # and the number of that claim

    def __init__(self, ring: ArgumentRing, push_constants: bytes, origin: Any,
                 groups: tuple[int, int, int]) -> None:
        first = ring.first
        self.name, self.spirv, self.entry = first.name, first.spirv, first.entry
        self.groups = groups
        # the first launch's counts packed once: most launches from a ring have its size
        self.counts = ring.first_counts if groups == first.groups else COUNTS.pack(*groups)
        self.ring, self.push_constants, self.origin = ring, push_constants, origin

    def dispatch(self, engine: Engine) -> Dispatch:
        slot, ring = self._slot, self.ring
        if slot is not None and ring.keep(slot, self._claim):
            return slot.dispatch  # it still holds our bytes
        if engine is not ring.engine:
            return super().dispatch(engine)
        slot = ring.claim(self.push_constants, self.counts)
        if slot is None:  # every slot in flight: the push constants themselves
            self._like = ring.like
            return super().dispatch(engine)
        # no other claim takes the slot before this launch is submitted
        self._slot, self._claim = slot, slot.claim
        return slot.dispatch

    def for_graph(self) -> Command:
        """A graph pre-records its dispatch: the push constants, no slot."""
        return KernelLaunch(self.name, self.spirv, self.entry, self.push_constants,
                            self.groups, origin=self.origin)
