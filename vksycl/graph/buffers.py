"""The buffers a graph's nodes use (sycl_ext_oneapi_graph 7.11.3, 9.1.1): what a graph
must be promised before it takes them, the edges their accessors imply, and when the host
data they start from is read.

Edges follow SYCL's rules as they do between eager command groups
(`runtime/dependencies.py`): one `AccessTracker` per memory object per graph, whose
tokens are the graph's nodes, so a node follows the earlier nodes it reads after, writes
after or writes over, and readers do not follow each other. A buffer's host data is
copied to the device when a command that reads it is recorded, since the graph may run
after the host data is gone; a graph promised `assume_data_outlives_buffer` copies
nothing then, and its first run uploads the data as an eager command group would."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..exceptions import errc, exception
from ..runtime.buffers import accessor
from ..runtime.dependencies import AccessTracker
from ..runtime.handler import handler
from ..runtime.queue import queue
from ..runtime.storage import Storage, lock


def _region(acc: accessor) -> tuple[Storage, int, int, bool]:
    """The memory object an accessor reaches, its byte range, and whether it writes."""
    return acc.buffer._storage, acc._first, acc._end, acc.access_mode.writes


def needs_host_data(acc: accessor) -> bool:
    """Whether a command reads what the buffer held before it: write-only and no_init
    accessors do not, and no host data is copied for them (9.1.1)."""
    return acc.access_mode.reads and not acc.no_init


def distinct(accessors: Iterable[accessor]) -> list[accessor]:
    """One accessor per distinct access (memory, range, mode, no_init), in order: what a
    graph's run requires of the buffers its nodes use."""
    seen: dict[tuple, accessor] = {}
    for acc in accessors:
        s, first, end, _ = _region(acc)
        seen.setdefault((id(s), first, end, acc.access_mode, acc.no_init), acc)
    return list(seen.values())


class BufferUse:
    """One modifiable graph's view of the buffers its nodes use: the promises it was made,
    and per memory object the accesses a later node may have to follow."""

    def __init__(self, outlives_graph: bool, data_outlives_buffer: bool) -> None:
        self.outlives_graph = outlives_graph
        self.data_outlives_buffer = data_outlives_buffer
        self._trackers: dict[Storage, AccessTracker] = {}
        # each node with buffers, and the handlers whose accessors it stands for (a
        # dynamic command group's node: all of them), in the order the nodes were added
        self._uses: list[tuple[Any, list[handler]]] = []

    def check(self, handlers: Iterable[handler], what: str) -> None:
        """Refuses command groups whose accessors the graph cannot take (before anything
        is recorded)."""
        for h in handlers:
            for acc in h.requirements:
                self.check_accessor(acc, what)

    def check_accessor(self, acc: accessor, what: str) -> None:
        if not self.outlives_graph:
            raise exception(errc.invalid, f"{what} uses a buffer: a command_graph takes "
                            "buffers only when made with property.graph."
                            "assume_buffer_outlives_graph()")
        acc.buffer._storage.check_live(what)
        if acc._host_task:
            raise exception(errc.feature_not_supported, f"{what} uses an accessor made with "
                            "sycl.host_task: host tasks of a graph reach buffers through "
                            "USM or kernels, not host_task accessors")
        if acc.access_mode.writes and acc.buffer.writes_back():
            raise exception(errc.invalid, f"{what} writes a buffer that writes back to host "
                            "memory when released, which a graph cannot capture: "
                            "buf.set_write_back(False) or buf.set_final_data(None) first")

    def dependencies(self, handlers: Iterable[handler]) -> list[Any]:
        """The nodes that the accessors of `handlers` must follow, once each."""
        deps: dict[Any, None] = {}
        for h in handlers:
            for acc in h.requirements:
                s, first, end, writes = _region(acc)
                tracker = self._trackers.get(s)
                if tracker is not None:
                    deps.update(dict.fromkeys(tracker.conflicts(first, end, writes)))
        return list(deps)

    def add(self, graph: Any, n: Any, handlers: list[handler], copy_host_data: bool,
            q: queue) -> None:
        """Node `n` uses the accessors of `handlers`: later nodes follow it where SYCL's
        rules say; host accessors ask `graph` whether it records; the host data its
        commands read is copied to the device now when `copy_host_data`."""
        if not any(h.requirements for h in handlers):
            return
        for h in handlers:
            for acc in h.requirements:
                self.take(graph, acc, copy_host_data, q)
        self._uses.append((n, list(handlers)))
        self._track(n, handlers)

    def take(self, graph: Any, acc: accessor, copy_host_data: bool, q: queue) -> None:
        """The graph uses `acc`'s buffer: host accessors ask it whether it records, and
        what the host wrote last goes to the device now if the accessor reads it and
        `copy_host_data` (the graph's copy of the host data)."""
        s = acc.buffer._storage
        with lock:
            s.graphs.add(graph)
            if copy_host_data and s.host_newer and needs_host_data(acc):
                s.upload(q)

    def retrack(self) -> None:
        """Nodes added from now on follow the nodes' current accessors (a dynamic
        parameter replaced one); the edges already made stay as they are (7.5.2)."""
        self._trackers = {}
        for n, handlers in self._uses:
            self._track(n, handlers)

    def _track(self, n: Any, handlers: list[handler]) -> None:
        for h in handlers:
            for acc in h.requirements:
                s, first, end, writes = _region(acc)
                self._trackers.setdefault(s, AccessTracker()).record(first, end, writes, n)
