"""The memory object behind `sycl.buffer`s (SYCL 2020 4.7.2), on the device-address
memory model.

A buffer's memory object (shared by its sub-buffers and reinterpretations) is an
allocation from the device's caching allocator plus a host copy: the user's array where
one was given, else one made when a host accessor first needs it. Data moves only when an
access needs it: a kernel's accessor uploads the host copy if the host wrote last, a host
accessor downloads the device copy if a kernel wrote last, and release writes back only
where a kernel or a host accessor could have written.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Protocol

import numpy as np

from ..exceptions import errc, exception
from .context import scheduler_for
from .dependencies import AccessTracker
from .event import event
from .memops import MemCopy, Span
from .usm import Allocation, alloc, release_collected

# Guards every tracker: a command group's dependencies are found and its event recorded
# as one step, whichever thread submits it.
lock = threading.RLock()


class Graph(Protocol):
    """A command_graph that uses a buffer, as the buffer asks it (graphs sit above the
    runtime)."""

    def records_now(self) -> bool: ...


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays are the same bytes in the same order (one C-contiguous block
    from the same address), not merely overlapping."""
    return a.flags.c_contiguous and b.flags.c_contiguous and a.nbytes == b.nbytes and \
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


class Storage:
    """The memory of a buffer and of the buffers that view it."""

    def __init__(self, nbytes: int, host: np.ndarray | None, final: np.ndarray | None
                 ) -> None:
        self.nbytes = nbytes
        self.host = host  # flat uint8 view of the host copy (contiguous), or None
        self.final = final  # where release writes back (None: nowhere)
        self.write_back = True
        self.allocation: Allocation | None = None
        self.context: Any = None
        self.device: Any = None
        self.host_newer = host is not None  # the device copy lacks what the host holds
        self.device_newer = False
        self.written = False  # a kernel or a host accessor could have written
        self.released = False
        self.tracker = AccessTracker()
        self.graphs: weakref.WeakSet[Graph] = weakref.WeakSet()
        self.ref = weakref.ref(self)  # what launches compare (accessor launch keys)

    # -- device side --------------------------------------------------------------------
    def bind(self, queue: Any, what: str) -> None:
        """Allocates the device copy on the queue's device, in its context: a buffer
        lives in the context where it is first used."""
        ctx, dev = queue._context, queue._device
        if ctx is self.context and dev is self.device and not self.released:
            return
        with lock:  # threads making the buffer's first accessors at once allocate once
            self._bind_locked(ctx, dev, what)

    def _bind_locked(self, ctx: Any, dev: Any, what: str) -> None:
        self.check_live(what)
        if self.allocation is None:
            allocator = scheduler_for(dev).allocators[False]
            # an empty buffer still has an address to pass (SYCL allows a range of 0)
            self.allocation = Allocation(allocator, allocator.allocate(max(self.nbytes, 1)), 0,
                                         self.nbytes, alloc.device, ctx, dev)
            self.context, self.device = ctx, dev
            return
        if ctx is not self.context:
            raise exception(errc.invalid, f"{what}: the buffer is used in another context "
                            "(a buffer belongs to the context of the queue that used it "
                            "first)")
        if dev != self.device:
            raise exception(errc.invalid, f"{what}: the buffer's memory is on another "
                            "device of the context than the queue's")

    def upload(self, queue: Any) -> event | None:
        """Copies the host copy to the device if the host wrote last; the copy waits for
        the writing host accessors still open, and commands after it wait for it."""
        if not self.host_newer:
            return None
        ev = self._transfer(queue, MemCopy(Span(None, self.host, 0, self.nbytes),
                                           Span(self.allocation, None, 0, self.nbytes)))
        self.host_newer = False
        return ev

    def _transfer(self, queue: Any, command: MemCopy) -> event:
        """Runs a copy of the whole memory between its host and device copies after every
        access to it but the read-only host accessors, and records it as a write. A
        read-only host accessor's region is the same on both sides (a device write to it
        waits for the accessor), so the copy need not wait for it; the accessor stays
        tracked, so the writers after the copy still do (a reading command group while a
        read-only host accessor is open must not wait for it, as readers never wait for
        each other)."""
        tracker = self.tracker
        readers = [a for a in tracker.accesses if not a[2] and _is_gate(a[3])]
        deps = [t for t in tracker.conflicts(0, self.nbytes, True)
                if not any(t is r[3] for r in readers)]
        ev = queue.execute(command, deps)
        tracker.record(0, self.nbytes, True, ev)
        tracker.accesses += readers
        return ev

    def discard_host(self) -> None:
        """A no_init access over the whole memory: what the host holds is not needed."""
        self.host_newer = False

    def access(self, first: int, end: int, writes: bool, token: Any) -> None:
        self.tracker.record(first, end, writes, token)
        if writes:
            self.device_newer = True
            self.written = True
        if len(self.tracker.accesses) > 16:
            self.tracker.forget(_finished)

    # -- host tasks -----------------------------------------------------------------------
    def for_host_task(self, queue: Any, first: int, end: int, writes: bool) -> list[event]:
        """What a host task's access of [first, end) must follow: the earlier accesses it
        conflicts with, and a copy of the device copy to the host copy if a kernel wrote
        last (made before the task, so the host copy holds what the task reads)."""
        if self.device_newer:
            host = self.host_copy_made()
            self._transfer(queue, MemCopy(Span(self.allocation, None, 0, self.nbytes),
                                          Span(None, host, 0, self.nbytes)))
            self.device_newer = False
        return self.tracker.conflicts(first, end, writes)

    def host_access(self, first: int, end: int, writes: bool, ev: event) -> None:
        """A host task's access: what it writes reaches the device before a kernel reads
        it (the next device access uploads the host copy)."""
        self.tracker.record(first, end, writes, ev)
        if writes:
            self.host_newer = True
            self.written = True

    def host_copy_made(self) -> np.ndarray:
        if self.host is None:
            self.host = np.zeros(self.nbytes, np.uint8)
        return self.host

    # -- host side ----------------------------------------------------------------------
    def host_waits(self, first: int, end: int, writes: bool, discard: bool) -> list[Any]:
        """The unfinished accesses a host access of [first, end) must follow before it
        takes the host copy: those it conflicts with and, where the host copy is to be
        downloaded (a kernel wrote last, and the access does not discard it all), every
        writer of the memory, since the download copies all of it: a writer of another
        region still running would be copied half done, and what it writes after lost,
        the host copy counting as current once downloaded."""
        tracker = self.tracker
        tokens = tracker.conflicts(first, end, writes)
        if self.device_newer and not discard:
            tokens += tracker.conflicts(0, self.nbytes, False)
        return [t for t in tokens if not t.is_complete()]

    def wait(self, tokens: list[Any], what: str) -> None:
        """Waits for the accesses `host_waits` found, refusing the waits that would never
        end: for an open host accessor this thread holds, or a command waiting for one
        (one that another thread holds is waited for, as SYCL's host accessors wait)."""
        for token in tokens:
            gate = getattr(token, "host_accessor", None)
            if gate is not None and not token.is_complete() and \
                    token.thread == threading.get_ident():
                raise exception(errc.invalid, f"{what}: the buffer has an open "
                                f"host_accessor ({gate}); release it first (a second one "
                                "would wait for it forever)")
            token.check_not_blocked(what)
            token.wait()

    def host_copy(self) -> np.ndarray:
        """The current host copy (flat bytes), downloaded if a kernel wrote last; made
        when the buffer had no host data."""
        self.host_copy_made()
        if self.device_newer:
            self.download(self.host)
            self.device_newer = False
        return self.host

    def host_update(self, device: Span) -> tuple[MemCopy, Any]:
        """`handler.update_host`: the command copying a range of the device copy to the
        host copy, and what to call with its event (host accessors wait for it)."""
        self.host_copy_made()
        first, end = device.offset, device.offset + device.nbytes
        whole = first == 0 and end == self.nbytes

        def done(ev: event) -> None:
            self.tracker.record(first, end, True, ev)
            if whole:
                self.device_newer = False

        return MemCopy(device, Span(None, self.host, first, device.nbytes)), done

    def download(self, target: np.ndarray) -> None:
        sched = scheduler_for(self.device)
        errors: list[BaseException] = []
        cmd = MemCopy(Span(self.allocation, None, 0, self.nbytes),
                      Span(None, target, 0, self.nbytes))
        sched.execute(cmd, [], False, errors.append).wait()
        if errors:
            raise errors[0]

    def check_live(self, what: str) -> None:
        if self.released:
            raise exception(errc.invalid, f"{what}: the buffer was released")

    def check_not_recorded(self, what: str) -> None:
        """Buffer Limitations (sycl_ext_oneapi_graph): no host accessor to a buffer that
        a graph records commands on."""
        for g in list(self.graphs):
            if g.records_now():
                raise exception(errc.invalid, f"{what}: the buffer is used by a "
                                "command_graph that is recording; end the recording first")

    def release(self) -> None:
        """Waits for every access, writes back where something could have written, and
        returns the device memory."""
        if self.released:
            return
        self.wait_all()
        self.released = True
        final = self.final
        if self.written and self.write_back and final is not None:
            host = self.host
            if host is not None and _same_memory(final, host):
                self.host_copy()  # the user's own array: downloaded in place
            elif not self.device_newer:
                np.copyto(final, self.host_copy().view(final.dtype).reshape(final.shape))
            elif final.flags.c_contiguous and not (
                    host is not None and np.may_share_memory(final, host)):
                self.download(final.reshape(-1).view(np.uint8))
            else:  # through bytes of its own: the host copy stays as the user left it
                data = np.empty(self.nbytes, np.uint8)
                self.download(data)
                np.copyto(final, data.view(final.dtype).reshape(final.shape))
        if self.allocation is not None:
            self.allocation.free()
            self.allocation = None

    def wait_all(self) -> None:
        """Waits for the device work using the memory (open host accessors aside)."""
        with lock:
            tokens = self.tracker.tokens()
        tokens = [t for t in tokens if getattr(t, "host_accessor", None) is None]
        for token in tokens:
            token.check_not_blocked("release")
        for token in tokens:
            token.wait()

    def __del__(self) -> None:
        """The last buffer viewing the memory is gone: release as `buf.release()` would
        (a failure is printed by Python; during interpreter teardown nothing is left to
        write back with)."""
        if self.released or sys.is_finalizing():
            return
        release_collected(self.release, "buffer-release")


def _finished(token: Any) -> bool:
    return token.is_complete()


def _is_gate(token: Any) -> bool:
    """Whether an access is a host accessor's (its gate), not a command's event."""
    return getattr(token, "host_accessor", None) is not None
